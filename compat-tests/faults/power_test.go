package faults

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/storage"
)

// powerBatch builds an uncompressed v2 record batch of n records with
// values of size bytes in leader epoch epoch; the log assigns its offsets.
func powerBatch(rng *rand.Rand, epoch int32, n, size int) []byte {
	var recs []byte
	for i := range n {
		var body []byte
		body = append(body, 0)
		body = binary.AppendVarint(body, 0)
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, -1)
		value := make([]byte, size)
		for j := range value {
			value[j] = byte('a' + rng.IntN(26))
		}
		body = binary.AppendVarint(body, int64(size))
		body = append(body, value...)
		body = binary.AppendVarint(body, 0)
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	b := make([]byte, 61, 61+len(recs))
	binary.BigEndian.PutUint32(b[8:], uint32(61-12+len(recs)))
	binary.BigEndian.PutUint32(b[12:], uint32(epoch))
	b[16] = 2
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], 1_700_000_000_000)
	binary.BigEndian.PutUint64(b[35:], 1_700_000_000_000)
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// readAllBatches reads every batch of l from its log start to its log end.
func readAllBatches(t *testing.T, l *storage.Log) []byte {
	t.Helper()
	var out []byte
	for off, end := l.LogStartOffset(), l.LogEndOffset(); off < end; {
		b, err := l.Read(off, 1<<20, end, true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(b) == 0 {
			t.Fatalf("read at %d below log end %d returned nothing", off, end)
		}
		out = append(out, b...)
		for pos := 0; pos < len(b); {
			length := int(binary.BigEndian.Uint32(b[pos+8:]))
			last := int64(binary.BigEndian.Uint64(b[pos:])) + int64(binary.BigEndian.Uint32(b[pos+23:]))
			off = last + 1
			pos += 12 + length
		}
	}
	return out
}

// copyTree copies the directory src to dst (regular files and
// directories), as the disk held it when the process died.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPowerCutLeavesARecoverablePrefix writes a log with samsa's storage
// (rolls, an occasional flush and checkpoint, leader epochs that grow),
// copies its directory as a SIGKILL would leave it, cuts the power of the
// copy (PowerCut) with many seeds, and reopens the copy with storage: the
// recovered log must be a prefix of the original, batch for batch and
// byte for byte, reach at least the durable offset the model keeps (the
// checkpointed recovery point, the active segment's base), and its
// leader epoch cache must not name an epoch with no batch left. It checks
// the emulation (it loses only what was unsynced, and does lose it) and
// storage recovery of torn, zeroed and missing active segment files.
func TestPowerCutLeavesARecoverablePrefix(t *testing.T) {
	tp := storage.TopicPartition{Topic: "power-topic", Partition: 3}
	var total PowerCutReport
	shorter := 0
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 1))
		root := t.TempDir()
		orig := filepath.Join(root, "orig")
		m, err := storage.OpenManager(storage.ManagerOptions{Dirs: []string{orig}, Now: time.Now})
		if err != nil {
			t.Fatal(err)
		}
		cfg := storage.DefaultLogConfig()
		cfg.SegmentBytes = 4096 + rng.Int64N(8192)
		cfg.IndexIntervalBytes = 256
		l, err := m.CreateLog(tp, [16]byte{1, 2, 3}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		epoch := int32(0)
		checkpointed := int64(0) // durable offset the model must keep
		for range 20 + rng.IntN(60) {
			if rng.IntN(10) == 0 {
				epoch++
			}
			if _, err := l.Append(powerBatch(rng, epoch, 1+rng.IntN(5), 20+rng.IntN(200))); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(25) == 0 {
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
				if err := m.WriteCheckpoints(); err != nil {
					t.Fatal(err)
				}
				checkpointed = l.RecoveryPoint()
			}
		}
		// The roll-time snapshots make every closed segment durable.
		durable := max(checkpointed, activeBase(t, orig, tp))
		want := readAllBatches(t, l)
		cut := filepath.Join(root, "cut")
		copyTree(t, orig, cut)
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		rep, err := PowerCut(cut, rand.New(rand.NewPCG(seed, 2)))
		if err != nil {
			t.Fatal(err)
		}
		total.Add(rep)
		m2, err := storage.OpenManager(storage.ManagerOptions{Dirs: []string{cut}, Now: time.Now})
		if err != nil {
			t.Fatalf("seed %d: reopen after power cut (%v): %v", seed, rep, err)
		}
		l2, ok := m2.Log(tp)
		if !ok {
			t.Fatalf("seed %d: log gone after power cut (%v)", seed, rep)
		}
		got := readAllBatches(t, l2)
		if !bytes.HasPrefix(want, got) {
			t.Errorf("seed %d: recovered log (%d bytes) is not a prefix of the original (%d bytes); cut: %v %v",
				seed, len(got), len(want), rep, rep.Details)
		}
		if leo := l2.LogEndOffset(); leo < durable {
			t.Errorf("seed %d: log end %d after power cut, below the durable offset %d; cut: %v %v",
				seed, leo, durable, rep, rep.Details)
		}
		if len(got) < len(want) {
			shorter++
		}
		if leo, e := l2.LogEndOffset(), l2.LatestEpoch(); leo > 0 {
			lastEpoch := int32(binary.BigEndian.Uint32(lastBatch(got)[12:]))
			if e != lastEpoch {
				t.Errorf("seed %d: latest leader epoch %d, last batch's epoch %d", seed, e, lastEpoch)
			}
		}
		if err := m2.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The emulation must lose something: else this test checks nothing.
	if shorter < 10 || total.PagesZeroed == 0 || total.FilesRemoved == 0 {
		t.Errorf("power cuts too gentle: %d of 40 logs shorter; %v", shorter, total)
	}
	t.Logf("40 power cuts: %d logs shorter; %v", shorter, total)
}

// activeBase returns the base offset of tp's last segment in dir.
func activeBase(t *testing.T, dir string, tp storage.TopicPartition) int64 {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, tp.String(), "*.log"))
	if err != nil || len(matches) == 0 {
		t.Fatalf("no segment in %s: %v", dir, err)
	}
	var base int64
	for _, m := range matches {
		var b int64
		for _, c := range filepath.Base(m)[:20] {
			b = b*10 + int64(c-'0')
		}
		base = max(base, b)
	}
	return base
}

// lastBatch returns the last batch of a sequence of batches.
func lastBatch(b []byte) []byte {
	var last []byte
	for pos := 0; pos < len(b); {
		n := 12 + int(binary.BigEndian.Uint32(b[pos+8:]))
		last = b[pos : pos+n]
		pos += n
	}
	return last
}

// TestPowerLossLeader cuts the power of a partition leader (restarted
// after 1 s, before the controller's session timeout fences it, so that
// only its new registration tells the controller it crashed), of the
// active controller (after 4 s), and of a follower whose leader is killed
// as soon as it is back (PowerLossFollowerKillLeader) under the queue
// workload: each loses the data it had not fsynced (PowerCut; with the
// default flush policy that is most of its active segment). No
// acknowledged record may be lost, duplicated or moved: the other
// replicas have them, and the node must truncate to what it kept and
// catch up, never serve or lead from it.
func TestPowerLossLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	segmentBytes := "16384"
	p := Plan{
		Nodes: 3, Seed: SeedFromEnvOrTime(), Deadline: 3 * time.Minute, Quiet: 2 * time.Second,
		Steps: []Step{
			{Kind: PowerLossLeader, Hold: time.Second, Pick: 0},
			{Kind: PowerLossController, Hold: 4 * time.Second, Pick: 1},
			{Kind: PowerLossFollowerKillLeader, Hold: 3 * time.Second, Pick: 2},
		},
		// Small segments roll every few seconds, so that the cuts meet
		// closed segments, snapshots and fresh active segments too.
		Queue: QueueOptions{Topic: "queue", Partitions: 4, Producers: 2, Interval: 5 * time.Millisecond,
			Group: "queue-group", GroupMembers: 2, Acks: -1,
			TopicConfigs: map[string]*string{"segment.bytes": &segmentBytes}},
	}
	rep, res := RunPlan(t, p)
	if rep.Acked == 0 {
		t.Fatal("no record was acknowledged")
	}
	for _, k := range []Kind{PowerLossLeader, PowerLossController, PowerLossFollowerKillLeader} {
		if n := res.Faults[k]; n != 1 {
			t.Errorf("%d %s steps ran, want 1 (skipped: %v)", n, k, res.Skipped)
		}
	}
	if res.Power == nil || res.Power.Cuts != 3 || res.Power.BytesLost == 0 {
		t.Errorf("power cuts %+v, want 3 that lost data", res.Power)
	}
	if rep.Anomalies() != 0 {
		t.Errorf("anomalies (seed %d):\n%s", p.Seed, rep)
	}
}

// TestSoakStepsPowerLoss: the eighth soak target is the number of power
// cuts, half on leaders and the rest on the controller, the two
// coordinators and a follower whose leader is then killed, in turn;
// SAMSA_FAULTS_POWER_WEIGHT adds the five kinds to
// weighted schedules, which stay unchanged without it.
func TestSoakStepsPowerLoss(t *testing.T) {
	got := map[Kind]int{}
	for _, s := range SoakSteps(5, SoakTargets{LeaderKills: 1, PowerLosses: 12}, time.Second, 2*time.Second) {
		got[s.Kind]++
	}
	want := map[Kind]int{KillLeader: 1, PowerLossLeader: 6, PowerLossController: 2, PowerLossCoordinator: 2,
		PowerLossTxnCoordinator: 1, PowerLossFollowerKillLeader: 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("soak kinds %v, want %v", got, want)
	}
	p := Plan{Seed: 3}
	t.Setenv("SAMSA_FAULTS_TARGETS", "0,0,0,0,0,0,0,4")
	if err := EnvPlan(&p); err != nil {
		t.Fatal(err)
	}
	if n := len(p.Steps); n != 4 {
		t.Errorf("%d steps from eight targets, want 4", n)
	}
	base := []Weight{{KillLeader, 1}}
	if w, ws := WithPowerLoss(base), WithSharePowerLoss(base); len(w) != 1 || len(ws) != 1 {
		t.Errorf("weights without SAMSA_FAULTS_POWER_WEIGHT: %v, share %v", w, ws)
	}
	t.Setenv("SAMSA_FAULTS_POWER_WEIGHT", "2")
	if w := WithPowerLoss(base); len(w) != 6 || w[5] != (Weight{PowerLossFollowerKillLeader, 2}) || len(base) != 1 {
		t.Errorf("weights with SAMSA_FAULTS_POWER_WEIGHT=2: %v", w)
	}
	if w := WithSharePowerLoss(base); len(w) != 7 || w[6] != (Weight{PowerLossShareCoordinator, 2}) {
		t.Errorf("share weights with SAMSA_FAULTS_POWER_WEIGHT=2: %v", w)
	}
}
