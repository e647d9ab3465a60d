package faults

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Power loss: what a node's log directories look like after its power was
// cut, emulated on the files a SIGKILL left (the page cache survives a
// SIGKILL, so every write the process made is still there; a power cut
// loses what was not fsynced). PowerCut decides, file by file, what samsa
// had made durable, from samsa's own write and fsync discipline
// (storage/doc.go "Durability", storage/log.go rollLocked and
// flushLocked, storage/checkpoint.go writeFileAtomic, broker/node.go
// writeFileSync, controller/quorum), and loses a random part of the rest.
// The model, file by file:
//
//   - The Raft directory (raft.db, a bolt file that fsyncs each commit, and
//     hashicorp/raft's snapshot store, which fsyncs the snapshot and its
//     directory) is kept as it is: everything Raft acknowledged was synced.
//   - Files replaced atomically (write "<name>.tmp", fsync, rename, fsync
//     the directory): the offset checkpoints, meta.properties,
//     producer-id-block, each partition's leader-epoch-checkpoint and
//     partition.metadata, the "%020d.snapshot" state snapshots, the
//     cleaner's .cleaned/.swap/.deleted steps. Kept. A leftover "*.tmp"
//     was not synced yet: deleted or cut to a random length.
//   - Segments other than the last of a partition: a roll syncs the closed
//     segment (log and indexes) before the next one exists, the cleaner
//     syncs what it writes, and truncation is synced at once. Kept.
//   - The last (active) segment: appends are not fsynced (samsa's default,
//     Kafka's: log.flush.interval.messages and flush.ms are Long.MAX), so
//     only what a flush made durable survives for sure. Its durable offset
//     is the larger of the partition's checkpointed recovery point
//     (recovery-point-offset-checkpoint, written after the flush it
//     records) and the newest snapshot's offset (a snapshot at S is
//     written after every batch below S was synced); the batches below it
//     are kept. The rest of the .log file is cut at a random length at or
//     after that point (a quarter of the time to the durable point, a
//     quarter of the time not cut at all), and some 4 KiB pages of what is
//     left above the durable point are zeroed (written back out of order:
//     the file's size reached the disk, its data did not). The .index,
//     .timeindex and .txnindex of the active segment lose a random part of
//     their entries past the durable offset the same way (cut anywhere, so
//     a torn entry is possible, and pages zeroed).
//   - The active segment's names: a roll creates the new segment without
//     syncing the directory (rollLocked sets dirDirty; the next flush or
//     snapshot syncs it), so when no flush is known after the roll
//     (recovery point and snapshots at or below its base) and the segment
//     is not the partition's first, each of its files may be gone: the
//     .log file one time in six, each index file one time in four.
//
// Where the model is unsure it loses more: the recovery point checkpoint
// is written every 5 s, so a flush after it (at a clean start: the log is
// synced when it opens) is not counted, and data it made durable may be
// lost. Not modelled (erring the other way): an unlink or rename not yet
// synced coming back (retention's deleted segments reappearing), because
// the emulation sees only the directory as the SIGKILL left it; data of a
// segment truncated and then appended again after the last checkpoint
// (the checkpointed recovery point may then lie above the truncation,
// and the batches between are kept); and blocks of a synced file
// damaged by the disk itself.
//
// Power loss of one node at a time is what RF=3 with
// min.insync.replicas=2 must survive without losing an acknowledged
// record. Cutting the power of two of three replicas at once may lose
// acknowledged records on Kafka too (with acks=all and the default flush
// policy, a record acknowledged by two replicas that both lose it unsynced
// is gone), so the nemesis never does it.

// ErrPowerCut wraps failures to emulate a power cut on a data directory.
var ErrPowerCut = errors.New("faults: power cut")

// PowerCutReport says what one power cut lost.
type PowerCutReport struct {
	// Partitions is the number of partition directories looked at,
	// Touched the number where something was lost.
	Partitions, Touched int
	// BytesLost counts bytes cut from the ends of files (and whole files
	// removed); PagesZeroed the 4 KiB pages zeroed in what was kept.
	BytesLost   int64
	PagesZeroed int
	// FilesRemoved counts active segment files whose name was lost and
	// leftover .tmp files removed.
	FilesRemoved int
	// Details names, per touched partition, what it lost (a short text).
	Details []string
}

// Add folds o into r.
func (r *PowerCutReport) Add(o PowerCutReport) {
	r.Partitions += o.Partitions
	r.Touched += o.Touched
	r.BytesLost += o.BytesLost
	r.PagesZeroed += o.PagesZeroed
	r.FilesRemoved += o.FilesRemoved
	r.Details = append(r.Details, o.Details...)
}

func (r PowerCutReport) String() string {
	return fmt.Sprintf("%d of %d partitions lost data: %d bytes cut, %d pages zeroed, %d files removed",
		r.Touched, r.Partitions, r.BytesLost, r.PagesZeroed, r.FilesRemoved)
}

// powerPage is the unit of write-back that a power cut can lose inside a
// file that kept its size.
const powerPage = 4096

// Index entry sizes (storage/doc.go).
const (
	offsetIndexEntry = 8
	timeIndexEntry   = 12
	txnIndexEntry    = 34
)

// PowerCut makes the log directory dir look as it would after a power cut
// of the node that wrote it, which must not be running (see the model
// above). rng decides how much of what was not durable is lost.
func PowerCut(dir string, rng *rand.Rand) (PowerCutReport, error) {
	var rep PowerCutReport
	recovery, err := readOffsetCheckpoint(filepath.Join(dir, "recovery-point-offset-checkpoint"))
	if err != nil {
		return rep, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return rep, fmt.Errorf("%w: %w", ErrPowerCut, err)
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			if strings.HasSuffix(e.Name(), ".tmp") {
				if err := loseTmp(path, rng, &rep); err != nil {
					return rep, err
				}
			}
			continue
		}
		if e.Name() == "raft" {
			continue
		}
		topic, part, ok := partitionDirName(e.Name())
		if !ok {
			continue
		}
		rp, known := recovery[topic+" "+strconv.Itoa(int(part))]
		if !known {
			rp = -1
		}
		pr, err := powerCutPartition(path, rp, rng)
		if err != nil {
			return rep, err
		}
		rep.Add(pr)
	}
	return rep, nil
}

// partitionDirName splits "<topic>-<partition>"; directories being deleted
// or set aside ("...-delete", "...-stray") and others do not match.
func partitionDirName(name string) (string, int32, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return "", 0, false
	}
	return name[:i], int32(p), true
}

// readOffsetCheckpoint reads a version 0 offset checkpoint into a map
// keyed by "<topic> <partition>"; a missing file is an empty map.
func readOffsetCheckpoint(path string) (map[string]int64, error) {
	out := map[string]int64{}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPowerCut, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "0" {
		return nil, fmt.Errorf("%w: %s: unknown checkpoint format", ErrPowerCut, path)
	}
	for _, line := range lines[2:] {
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%w: %s: line %q", ErrPowerCut, path, line)
		}
		off, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: line %q", ErrPowerCut, path, line)
		}
		out[f[0]+" "+f[1]] = off
	}
	return out, nil
}

// loseTmp removes a leftover temporary file or cuts it short: it was
// never synced (writeFileAtomic syncs it just before the rename).
func loseTmp(path string, rng *rand.Rand, rep *PowerCutReport) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPowerCut, err)
	}
	if rng.IntN(2) == 0 {
		rep.FilesRemoved++
		rep.BytesLost += fi.Size()
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("%w: %w", ErrPowerCut, err)
		}
		return nil
	}
	n := rng.Int64N(fi.Size() + 1)
	rep.BytesLost += fi.Size() - n
	if err := os.Truncate(path, n); err != nil {
		return fmt.Errorf("%w: %w", ErrPowerCut, err)
	}
	return nil
}

// powerCutPartition applies the model to one partition directory whose
// checkpointed recovery point is rp (-1: none).
func powerCutPartition(dir string, rp int64, rng *rand.Rand) (PowerCutReport, error) {
	rep := PowerCutReport{Partitions: 1}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return rep, fmt.Errorf("%w: %w", ErrPowerCut, err)
	}
	var bases []int64
	durable := rp
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".tmp"):
			if err := loseTmp(filepath.Join(dir, name), rng, &rep); err != nil {
				return rep, err
			}
		case strings.HasSuffix(name, ".log") && len(name) == 24:
			if b, err := strconv.ParseInt(strings.TrimSuffix(name, ".log"), 10, 64); err == nil {
				bases = append(bases, b)
			}
		case strings.HasSuffix(name, ".snapshot") && len(name) == 29:
			if s, err := strconv.ParseInt(strings.TrimSuffix(name, ".snapshot"), 10, 64); err == nil {
				durable = max(durable, s)
			}
		}
	}
	if len(bases) == 0 {
		if rep.BytesLost > 0 || rep.FilesRemoved > 0 {
			rep.Touched = 1
		}
		return rep, nil
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	base := bases[len(bases)-1]
	prefix := filepath.Join(dir, fmt.Sprintf("%020d", base))
	before := rep
	var what []string
	if durable <= base && len(bases) > 1 {
		// No flush is known since the roll that created the segment: its
		// directory entries may never have reached the disk.
		gone, err := loseNames(prefix, rng, &rep)
		if err != nil {
			return rep, err
		}
		what = append(what, gone...)
	}
	lost, err := loseActiveSegment(prefix, base, durable, rng, &rep)
	if err != nil {
		return rep, err
	}
	what = append(what, lost...)
	if rep.BytesLost > before.BytesLost || rep.PagesZeroed > before.PagesZeroed || rep.FilesRemoved > before.FilesRemoved {
		rep.Touched = 1
		rep.Details = append(rep.Details, fmt.Sprintf("%s (active segment %d, durable below offset %d): %s",
			filepath.Base(dir), base, durable, strings.Join(what, ", ")))
	}
	return rep, nil
}

// activeSuffixes are the files of a segment the power cut acts on.
var activeSuffixes = []string{".log", ".index", ".timeindex", ".txnindex"}

// loseNames removes the files of the segment at prefix whose names were
// not durable: the .log one time in six, each index one time in four.
func loseNames(prefix string, rng *rand.Rand, rep *PowerCutReport) ([]string, error) {
	var gone []string
	for _, suffix := range activeSuffixes {
		odds := 4
		if suffix == ".log" {
			odds = 6
		}
		if rng.IntN(odds) != 0 {
			continue
		}
		path := prefix + suffix
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return gone, fmt.Errorf("%w: %w", ErrPowerCut, err)
		}
		if err := os.Remove(path); err != nil {
			return gone, fmt.Errorf("%w: %w", ErrPowerCut, err)
		}
		rep.FilesRemoved++
		rep.BytesLost += fi.Size()
		gone = append(gone, filepath.Base(path)+" removed")
	}
	return gone, nil
}

// loseActiveSegment cuts and damages the unsynced part of each file of the
// active segment (base offset base) that is still there; durable is the
// offset below which every batch was synced.
func loseActiveSegment(prefix string, base, durable int64, rng *rand.Rand, rep *PowerCutReport) ([]string, error) {
	var what []string
	for _, suffix := range activeSuffixes {
		path := prefix + suffix
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return what, fmt.Errorf("%w: %w", ErrPowerCut, err)
		}
		var keep int64
		switch suffix {
		case ".log":
			keep = durableLogBytes(b, durable)
		case ".index":
			keep = durableEntries(b, offsetIndexEntry, func(e []byte) bool {
				return base+int64(binary.BigEndian.Uint32(e[0:4])) < durable
			})
		case ".timeindex":
			keep = durableEntries(b, timeIndexEntry, func(e []byte) bool {
				return base+int64(binary.BigEndian.Uint32(e[8:12])) < durable
			})
		case ".txnindex":
			keep = durableEntries(b, txnIndexEntry, func(e []byte) bool {
				return int64(binary.BigEndian.Uint64(e[18:26])) < durable
			})
		}
		size := int64(len(b))
		if keep >= size {
			continue
		}
		newSize := unsyncedLength(keep, size, rng)
		zeroed := zeroPages(b[:newSize], keep, rng)
		if newSize == size && zeroed == 0 {
			continue
		}
		if err := rewritePrefix(path, b[:newSize], keep); err != nil {
			return what, err
		}
		rep.BytesLost += size - newSize
		rep.PagesZeroed += zeroed
		what = append(what, fmt.Sprintf("%s %d->%d bytes (durable %d, %d pages zeroed)",
			suffix, size, newSize, keep, zeroed))
	}
	return what, nil
}

// durableLogBytes returns the length of the prefix of a .log file holding
// the whole batches whose last offset is below durable.
func durableLogBytes(b []byte, durable int64) int64 {
	var pos int64
	for pos+61 <= int64(len(b)) { // a v2 batch header is 61 bytes
		h := b[pos:]
		baseOffset := int64(binary.BigEndian.Uint64(h[0:8]))
		length := int64(int32(binary.BigEndian.Uint32(h[8:12])))
		last := baseOffset + int64(int32(binary.BigEndian.Uint32(h[23:27])))
		end := pos + 12 + length
		if length < 49 || end > int64(len(b)) || last >= durable {
			break
		}
		pos = end
	}
	return pos
}

// durableEntries returns the length of the leading run of whole entries of
// size n for which durable holds.
func durableEntries(b []byte, n int, durable func([]byte) bool) int64 {
	var pos int
	for pos+n <= len(b) && durable(b[pos:pos+n]) {
		pos += n
	}
	return int64(pos)
}

// unsyncedLength picks the length a file of size bytes, of which the
// first keep are durable, has after the power cut: a quarter of the time
// keep, a quarter of the time size, else anywhere between.
func unsyncedLength(keep, size int64, rng *rand.Rand) int64 {
	switch rng.IntN(4) {
	case 0:
		return keep
	case 1:
		return size
	}
	return keep + rng.Int64N(size-keep+1)
}

// zeroPages zeroes, one time in four each, the 4 KiB pages of b that lie
// past keep (only their part past keep), and returns how many it zeroed.
func zeroPages(b []byte, keep int64, rng *rand.Rand) int {
	n := 0
	for start := keep / powerPage * powerPage; start < int64(len(b)); start += powerPage {
		if rng.IntN(4) != 0 {
			continue
		}
		from, to := max(start, keep), min(start+powerPage, int64(len(b)))
		clear(b[from:to])
		n++
	}
	return n
}

// rewritePrefix makes the file at path hold data, of which the first keep
// bytes are unchanged, writing only what changed.
func rewritePrefix(path string, data []byte, keep int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPowerCut, err)
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		f.Close()
		return fmt.Errorf("%w: %w", ErrPowerCut, err)
	}
	if _, err := f.WriteAt(data[keep:], keep); err != nil {
		f.Close()
		return fmt.Errorf("%w: %w", ErrPowerCut, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%w: %w", ErrPowerCut, err)
	}
	return nil
}

// PowerLossTotals is what a run's power cuts did, as the results file
// keeps it.
type PowerLossTotals struct {
	Cuts        int   `json:"cuts"`
	Touched     int   `json:"partitions_touched"`
	BytesLost   int64 `json:"bytes_lost"`
	PagesZeroed int   `json:"pages_zeroed"`
	Removed     int   `json:"files_removed"`
}

// PowerLosses returns what the nemesis's power cuts did, nil if none ran.
func (nm *Nemesis) PowerLosses() *PowerLossTotals {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	if nm.powerCuts == 0 {
		return nil
	}
	return &PowerLossTotals{Cuts: nm.powerCuts, Touched: nm.power.Touched, BytesLost: nm.power.BytesLost,
		PagesZeroed: nm.power.PagesZeroed, Removed: nm.power.FilesRemoved}
}

// powerLoss cuts the power of node n: SIGKILL, then PowerCut on each of
// its log directories (seeded by the step's Pick, so a seed replays the
// same losses on the same files), a hold, and a restart. The node then
// has no clean shutdown marker, as after any crash: it must recover its
// logs from their last durable state and catch up from the other replicas.
func (nm *Nemesis) powerLoss(ctx context.Context, n *Node, what string, s Step) error {
	if err := n.Kill(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(s.Pick), 0x9043))
	summary, details, err := nm.cutPower(ctx, n, rng)
	if err != nil {
		return err
	}
	nm.logf("nemesis: power cut on node %d (%s): %s; down for %v", n.ID, what, summary, s.Hold)
	for i, d := range details {
		if i == 12 {
			nm.logf("nemesis: power cut: ... and %d more partitions", len(details)-i)
			break
		}
		nm.logf("nemesis: power cut: %s", d)
	}
	holdFor(ctx, s.Hold)
	return n.Restart(ctx)
}

// cutPower makes node n, already SIGKILLed, lose what a power cut loses:
// with lazyfs, its cache of unsynced writes is cleared (the loss counted
// as the bytes by which the log directory's files shrank); without, PowerCut
// emulates the loss on each of its log directories, seeded by rng. The
// loss is added to the nemesis's totals; cutPower returns its summary for
// the log and, without lazyfs, the per-partition details.
func (nm *Nemesis) cutPower(ctx context.Context, n *Node, rng *rand.Rand) (string, []string, error) {
	if n.lazy != nil {
		before := treeBytes(n.DataDir)
		if err := n.clearLazyCache(ctx); err != nil {
			return "", nil, err
		}
		lost := before - treeBytes(n.DataDir)
		nm.mu.Lock()
		nm.powerCuts++
		nm.power.BytesLost += max(lost, 0)
		nm.mu.Unlock()
		return fmt.Sprintf("lazyfs cache cleared, file sizes down by %d bytes", lost), nil, nil
	}
	var rep PowerCutReport
	for _, dir := range []string{n.DataDir, n.SecondDir} {
		if dir == "" {
			continue
		}
		r, err := PowerCut(dir, rng)
		if err != nil {
			return "", nil, err
		}
		rep.Add(r)
	}
	details := rep.Details
	rep.Details = nil
	nm.mu.Lock()
	nm.powerCuts++
	nm.power.Add(rep)
	nm.mu.Unlock()
	return rep.String(), details, nil
}

// powerLossKind is the kind of the i-th power-cut step of a soak: every
// other one a partition leader, the rest the active controller, the group
// coordinator, the transaction coordinator and a follower whose leader
// is then killed (PowerLossFollowerKillLeader) in turn.
func powerLossKind(i int) Kind {
	if i%2 == 0 {
		return PowerLossLeader
	}
	return []Kind{PowerLossController, PowerLossCoordinator, PowerLossTxnCoordinator, PowerLossFollowerKillLeader}[(i/2)%4]
}

// WithPowerLoss adds the five power-cut kinds to a soak's weights, each
// with the weight SAMSA_FAULTS_POWER_WEIGHT names (run.sh --power W);
// without it the weights (and so a seed's schedule) are unchanged.
func WithPowerLoss(weights []Weight) []Weight {
	w, err := strconv.Atoi(os.Getenv("SAMSA_FAULTS_POWER_WEIGHT"))
	if err != nil || w <= 0 {
		return weights
	}
	out := slices.Clone(weights)
	for _, k := range []Kind{PowerLossLeader, PowerLossController, PowerLossCoordinator, PowerLossTxnCoordinator, PowerLossFollowerKillLeader} {
		out = append(out, Weight{Kind: k, Weight: w})
	}
	return out
}

// PowerLossFollowerKillLeader cuts the power of a follower of a workload
// partition (Pick chooses the partition), restarts it at once, and as soon
// as it answers SIGKILLs the partition's leader for the hold. The restarted
// follower lost records it had acknowledged to the leader (they counted
// toward acks=all), so it must have left the ISR, and must not lead,
// before it has fetched them again: Kafka removes a broker that registers
// after an unclean shutdown from every ISR and ELR (KIP-966), and one
// fenced while down is out of them already. With the third replica up to
// date, nothing acknowledged may be lost.
const PowerLossFollowerKillLeader Kind = "power-loss-follower-kill-leader"

// replicasOf returns the leader and replicas of a workload partition.
func (nm *Nemesis) replicasOf(ctx context.Context, p int32) (int32, []int32, error) {
	cl, err := nm.admin()
	if err != nil {
		return 0, nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(nm.Topic)
	req.Topics = append(req.Topics, t)
	rctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return 0, nil, err
	}
	for _, t := range resp.Topics {
		for _, pt := range t.Partitions {
			if pt.Partition == p && pt.Leader >= 0 {
				return pt.Leader, pt.Replicas, nil
			}
		}
	}
	return 0, nil, fmt.Errorf("%w: partition %d has no leader", ErrNoTarget, p)
}

// targetPatience bounds how long a power-cut step looks for its target
// (a metadata request can time out on a loaded machine; a skipped cut is
// a cut not tested).
const targetPatience = 30 * time.Second

// isPowerLoss reports whether k is one of the power-cut kinds.
func (k Kind) isPowerLoss() bool {
	switch k {
	case PowerLossLeader, PowerLossCoordinator, PowerLossController, PowerLossTxnCoordinator, PowerLossFollowerKillLeader:
		return true
	}
	return false
}

// targetOf is target, retried for up to targetPatience for power-cut
// steps.
func (nm *Nemesis) targetOf(ctx context.Context, s Step) (*Node, string, error) {
	n, what, err := nm.target(ctx, s)
	if err == nil || !s.Kind.isPowerLoss() {
		return n, what, err
	}
	perr := pollUntil(ctx, targetPatience, func(ctx context.Context) (bool, error) {
		n, what, err = nm.target(ctx, s)
		return err == nil, err
	})
	if perr != nil {
		return nil, "", perr
	}
	return n, what, nil
}

// pollReplicasOf polls replicasOf for partition p until it answers or
// targetPatience runs out.
func (nm *Nemesis) pollReplicasOf(ctx context.Context, p int32) (leader int32, replicas []int32, err error) {
	err = pollUntil(ctx, targetPatience, func(ctx context.Context) (bool, error) {
		var err error
		leader, replicas, err = nm.replicasOf(ctx, p)
		return err == nil, err
	})
	return leader, replicas, err
}

// powerLossFollowerKillLeader runs a PowerLossFollowerKillLeader step.
func (nm *Nemesis) powerLossFollowerKillLeader(ctx context.Context, s Step) error {
	p := int32(s.Pick % uint32(nm.Partitions))
	leader, replicas, err := nm.pollReplicasOf(ctx, p)
	var follower *Node
	if err == nil {
		var followers []int32
		for _, r := range replicas {
			if r != leader {
				followers = append(followers, r)
			}
		}
		if len(followers) == 0 {
			err = fmt.Errorf("%w: partition %d has no follower", ErrNoTarget, p)
		} else {
			follower = nm.C.NodeByID(followers[int(s.Pick/uint32(nm.Partitions))%len(followers)])
		}
	}
	l := nm.C.NodeByID(leader)
	if err == nil && (follower == nil || l == nil) {
		err = fmt.Errorf("%w: nodes of partition %d", ErrNoTarget, p)
	}
	if err != nil {
		nm.logf("nemesis: %v: skipped: %v", s, err)
		nm.count(s.Kind, true)
		return nm.recover(ctx)
	}
	what := fmt.Sprintf("follower of %s/%d", nm.Topic, p)
	if err := nm.powerLoss(ctx, follower, what, Step{Kind: s.Kind, Pick: s.Pick}); err != nil {
		return err
	}
	if err := l.Kill(); err != nil {
		return err
	}
	nm.logf("nemesis: SIGKILL node %d (leader of %s/%d) as node %d came back from its power cut; down for %v",
		l.ID, nm.Topic, p, follower.ID, s.Hold)
	holdFor(ctx, s.Hold)
	if err := l.Restart(ctx); err != nil {
		return err
	}
	nm.count(s.Kind, false)
	return nm.recover(ctx)
}

// treeBytes sums the sizes of the regular files under dir (best effort).
func treeBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// WithSharePowerLoss is WithPowerLoss for the share soak's weights, with
// PowerLossShareCoordinator too.
func WithSharePowerLoss(weights []Weight) []Weight {
	out := WithPowerLoss(weights)
	if len(out) > len(weights) {
		out = append(out, Weight{Kind: PowerLossShareCoordinator, Weight: out[len(out)-1].Weight})
	}
	return out
}
