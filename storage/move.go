package storage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// Moving a partition's log to another log directory of the broker
// (AlterReplicaLogDirs, KIP-113), while the partition keeps serving.
//
// Kafka copies the log into a "future" replica in the target directory
// with a fetcher thread and swaps it for the current one once it caught
// up. samsa copies files instead, because a Log's segments are immutable
// below their size except for truncation (counted, Log.mu.truncations)
// and compaction (which replaces segment objects):
//
//  1. MoveLog creates "<topic>-<N>.<32 hex>-future" in the target
//     directory with the partition.metadata, and copies every segment's
//     .log bytes up to the size it has at the start of a round, without
//     any of the log's locks (readers pin the segments), in rounds until
//     what is left is small (or moveMaxRounds rounds: a writer faster
//     than the copy would otherwise hold the move off forever). The
//     copies of closed segments are fsynced, their indexes written from
//     memory, and the producer snapshots copied, during the rounds.
//  2. Under cleanMu, syncMu and writeMu (appends, rolls, truncation,
//     retention and the cleaner wait), it copies the rest, writes the
//     indexes of the segments still open or new and the leader-epoch
//     checkpoint, copies the new snapshots, fsyncs those and the
//     directory, and opens the copied segments.
//  3. The commit, one rename per log directory, each synced: the current
//     directory "<topic>-<N>" becomes "<topic>-<N>.<32 hex>-moving", then
//     the future directory becomes "<topic>-<N>" in the target directory.
//  4. The Log takes the copied segments (the old ones close when their
//     last reader releases them), its directory is the new one, and the
//     Manager lists it there. The checkpoints are written, then the
//     "-moving" directory is removed.
//
// A crash before step 3's second rename leaves the current directory
// (possibly renamed "-moving"): OpenManager renames a "-moving" directory
// back when no log directory holds "<topic>-<N>", and removes every
// "-future" directory, so the current log wins until the swap is durable.
// After it, "<topic>-<N>" exists in the target directory and OpenManager
// removes the "-moving" one, taking the offset checkpoints of the
// partition from the source directory when the target's lack them.
// Truncation during the copy starts the copy again; a clean that replaced
// segments meanwhile makes them copied again. The Log object stays the
// same, so every holder of it (replica partitions, fetch sessions,
// producer state) is unaffected.

// Errors of MoveLog.
var (
	// ErrMoveAborted is returned by MoveLog when the log was deleted,
	// closed or taken offline, or CancelMove was called, during the move.
	ErrMoveAborted = errors.New("storage: log move aborted")
	// ErrNoLog is returned by MoveLog for a partition without a log.
	ErrNoLog = errors.New("storage: no log for partition")
	// ErrMoveInProgress is returned by MoveLog while another move of the
	// partition runs.
	ErrMoveInProgress = errors.New("storage: log move in progress")
	// ErrDirNameTooLong is returned by MoveLog when the partition's
	// future directory name would not fit 255 bytes (Kafka answers
	// INVALID_TOPIC_EXCEPTION then).
	ErrDirNameTooLong = errors.New("storage: topic name too long to move its log")
)

const (
	futureDirSuffix = "-future"
	movingDirSuffix = "-moving"
	// moveFinalBytes is how much may be left to copy for the final,
	// locked step; moveMaxRounds bounds the unlocked rounds before it.
	moveFinalBytes = 4 << 20
	moveMaxRounds  = 50
	moveChunk      = 1 << 20
)

// FutureDirNameFits reports whether tp's future directory name
// ("<topic>-<N>.<32 hex>-future", Kafka's too) fits 255 bytes.
func FutureDirNameFits(tp TopicPartition) bool {
	return len(tp.String())+1+32+len(futureDirSuffix) <= maxFileNameBytes
}

// FutureLog describes a move in progress: DescribeLogDirs' future replica.
type FutureLog struct {
	Dir string // the target log directory
	// Size is the bytes copied so far; LogEndOffset the offset below
	// which every record is copied.
	Size, LogEndOffset int64
}

// logMove is one move in progress. REQUIRES: Manager.mu for progress.
type logMove struct {
	dst      string
	cancel   chan struct{}
	progress FutureLog
}

// FutureLogs returns the moves in progress by partition.
func (m *Manager) FutureLogs() map[TopicPartition]FutureLog {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[TopicPartition]FutureLog, len(m.mu.moves))
	for tp, mv := range m.mu.moves {
		out[tp] = mv.progress
	}
	return out
}

// MoveTarget returns the target directory of tp's move in progress.
func (m *Manager) MoveTarget(tp TopicPartition) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mv, ok := m.mu.moves[tp]
	if !ok {
		return "", false
	}
	return mv.dst, true
}

// CancelMove aborts tp's move in progress, if any: MoveLog returns
// ErrMoveAborted and the future directory is removed.
func (m *Manager) CancelMove(tp TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mv, ok := m.mu.moves[tp]; ok {
		select {
		case <-mv.cancel:
		default:
			close(mv.cancel)
		}
	}
}

// MoveLog moves tp's log to the log directory dst (one of
// ManagerOptions.Dirs) while it keeps serving, and returns once the log
// lives there (nil at once when it does already). See the file comment.
func (m *Manager) MoveLog(ctx context.Context, tp TopicPartition, dst string) error {
	if !slices.Contains(m.dirs, dst) {
		return fmt.Errorf("%w: %s", ErrUnknownLogDir, dst)
	}
	if !FutureDirNameFits(tp) {
		return fmt.Errorf("%w: %s", ErrDirNameTooLong, tp)
	}
	if m.LogDirFailed(dst) {
		return fmt.Errorf("%w: log directory %s", ErrLogOffline, dst)
	}
	m.mu.Lock()
	ml, ok := m.mu.logs[tp]
	switch {
	case m.mu.closed:
		m.mu.Unlock()
		return ErrClosed
	case !ok:
		m.mu.Unlock()
		return fmt.Errorf("%w %s", ErrNoLog, tp)
	case ml.dir == dst:
		m.mu.Unlock()
		return nil
	}
	if _, busy := m.mu.moves[tp]; busy {
		m.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrMoveInProgress, tp)
	}
	mv := &logMove{dst: dst, cancel: make(chan struct{}), progress: FutureLog{Dir: dst}}
	m.mu.moves[tp] = mv
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.mu.moves, tp)
		m.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-mv.cancel:
			cancel()
		case <-ctx.Done():
		}
	}()

	future := filepath.Join(dst, setAsideDirName(tp, futureDirSuffix))
	final := filepath.Join(dst, tp.String())
	src := ml.dir
	moving := filepath.Join(src, setAsideDirName(tp, movingDirSuffix))
	m.logger.Info("storage: moving partition log to another log directory", "partition", tp.String(), "from", src, "to", dst)
	err := m.copyAndSwap(ctx, tp, ml, mv, future, final, moving)
	if err != nil {
		if rerr := m.fs.RemoveAll(future); rerr != nil {
			m.logger.Warn("storage: removing the future log of an aborted move", "dir", future, "err", rerr)
		}
		if ctx.Err() != nil && !errors.Is(err, ErrMoveAborted) {
			err = fmt.Errorf("%w: %w", ErrMoveAborted, err)
		}
		return err
	}
	// Checkpoints of the target directory now list tp; until they do,
	// the "-moving" directory tells OpenManager where tp's are.
	m.moveStep("swapped")
	if err := m.WriteCheckpoints(); err != nil {
		m.logger.Warn("storage: writing checkpoints after a move", "err", err)
	} else if err := m.fs.RemoveAll(moving); err != nil {
		m.logger.Warn("storage: removing the old directory of a moved log", "dir", moving, "err", err)
	} else if err := m.fs.SyncDir(src); err != nil {
		m.logger.Warn("storage: sync after removing a moved log's old directory", "dir", src, "err", err)
	}
	m.logger.Info("storage: partition log moved", "partition", tp.String(), "from", src, "to", dst)
	return nil
}

// moveStep calls the test hook at a step of a move.
func (m *Manager) moveStep(step string) {
	if m.testMoveStep != nil {
		m.testMoveStep(step)
	}
}

// copyAndSwap runs steps 1 to 4 of the file comment.
func (m *Manager) copyAndSwap(ctx context.Context, tp TopicPartition, ml *managedLog, mv *logMove, future, final, moving string) error {
	if err := m.fs.MkdirAll(future); err != nil {
		return fmt.Errorf("storage: create %s: %w", future, err)
	}
	if err := writeFileAtomic(m.fs, filepath.Join(future, partitionMetadataFile), encodePartitionMetadata(ml.topicID)); err != nil {
		return err
	}
	c := &moveCopy{fs: m.fs, dir: future, files: map[int64]*copiedSegment{}, snapshots: map[int64]bool{}}
	defer c.closeFiles()
	report := func() {
		m.mu.Lock()
		mv.progress.Size, mv.progress.LogEndOffset = c.size(), c.copiedTo
		m.mu.Unlock()
	}
	commit := func() error {
		m.mu.Lock()
		cur, ok := m.mu.logs[tp]
		m.mu.Unlock()
		if !ok || cur != ml {
			return ErrMoveAborted
		}
		m.moveStep("copied")
		if err := m.fs.Rename(filepath.Join(ml.dir, tp.String()), moving); err != nil {
			return fmt.Errorf("storage: rename %s for the move: %w", tp, err)
		}
		if err := m.fs.SyncDir(ml.dir); err != nil {
			// The rename may be durable or not: either way the
			// current log is found at start. A failed fsync takes
			// the directory offline (dir_failure.go).
			_ = m.fs.Rename(moving, filepath.Join(ml.dir, tp.String()))
			err = fmt.Errorf("storage: sync %s: %w", ml.dir, err)
			m.dirFailed(ml.dir, err)
			return err
		}
		m.moveStep("moved-aside")
		if err := m.fs.Rename(future, final); err != nil {
			if rerr := m.fs.Rename(moving, filepath.Join(ml.dir, tp.String())); rerr != nil {
				return fmt.Errorf("storage: rename %s into place: %w (and back: %w)", future, err, rerr)
			}
			return fmt.Errorf("storage: rename %s into place: %w", future, err)
		}
		if err := m.fs.SyncDir(filepath.Dir(final)); err != nil {
			// The log is in the target directory now, whose fsync
			// failed: the swap goes on, and the directory goes
			// offline with the log (dir_failure.go).
			m.dirFailed(filepath.Dir(final), fmt.Errorf("storage: sync %s: %w", filepath.Dir(final), err))
		}
		m.moveStep("committed")
		m.mu.Lock()
		m.mu.logs[tp] = &managedLog{log: ml.log, dir: mv.dst, topicID: ml.topicID}
		m.mu.Unlock()
		return nil
	}
	l := ml.log
	for attempt := 0; ; attempt++ {
		rounds := 0
		for {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%w: %w", ErrMoveAborted, err)
			}
			left, err := c.round(l)
			report()
			if err != nil {
				return err
			}
			m.moveStep("round")
			if rounds++; left <= moveFinalBytes || rounds >= moveMaxRounds {
				break
			}
		}
		begin := m.now()
		done, err := l.finishMove(c, final, commit, m.dirFailure(mv.dst))
		if err != nil || done {
			if done {
				m.logger.Info("storage: moved log swapped in", "partition", tp.String(), "bytes", c.size(),
					"rounds", rounds, "final_step_ms", m.now().Sub(begin).Milliseconds())
			}
			return err
		}
		if attempt >= moveMaxRounds {
			return fmt.Errorf("%w: the log keeps being truncated", ErrMoveAborted)
		}
	}
}

// moveCopy is the future log's files being copied.
type moveCopy struct {
	fs    vfs.FS
	dir   string
	files map[int64]*copiedSegment
	// truncations is Log.mu.truncations when the copies were started.
	truncations uint64
	// copiedTo is the offset below which the copy is complete.
	copiedTo int64
	// snapshots are the producer snapshots copied (offsets).
	snapshots map[int64]bool
}

// copiedSegment is the copy of one segment's .log.
type copiedSegment struct {
	seg *segment // the segment copied
	f   vfs.File
	n   int64 // bytes copied
	// synced is the bytes fsynced: the rounds sync the copies of closed
	// segments, so that the locked step syncs little.
	synced int64
	// indexed is set once the indexes of the (closed) segment are
	// written and synced.
	indexed bool
}

// sync fsyncs the copy if it grew since its last sync.
func (cs *copiedSegment) sync() error {
	if cs.synced == cs.n {
		return nil
	}
	if err := cs.f.Sync(); err != nil {
		return fmt.Errorf("storage: sync future segment %d: %w", cs.seg.baseOffset, err)
	}
	cs.synced = cs.n
	return nil
}

func (c *moveCopy) size() int64 {
	var n int64
	for _, cs := range c.files {
		n += cs.n
	}
	return n
}

func (c *moveCopy) closeFiles() {
	for _, cs := range c.files {
		if cs.f != nil {
			cs.f.Close()
			cs.f = nil
		}
	}
}

// reset forgets every copy (after a truncation).
func (c *moveCopy) reset() {
	for base, cs := range c.files {
		if cs.f != nil {
			cs.f.Close()
		}
		delete(c.files, base)
	}
	c.copiedTo = 0
	clear(c.snapshots)
}

// copySegment copies s's .log bytes up to size.
func (c *moveCopy) copySegment(s *segment, size int64) error {
	cs := c.files[s.baseOffset]
	if cs != nil && cs.seg != s { // replaced by a clean: copy it again
		cs.f.Close()
		cs = nil
	}
	if cs == nil {
		f, err := c.fs.Create(segmentFileName(c.dir, s.baseOffset, logSuffix))
		if err != nil {
			return fmt.Errorf("storage: create future segment: %w", err)
		}
		cs = &copiedSegment{seg: s, f: f}
		c.files[s.baseOffset] = cs
	}
	if cs.n > size {
		return fmt.Errorf("%w: segment %d shrank during the move", ErrMoveAborted, s.baseOffset)
	}
	buf := make([]byte, min(size-cs.n, moveChunk))
	for cs.n < size {
		b := buf[:min(int64(len(buf)), size-cs.n)]
		if _, err := s.log.ReadAt(b, cs.n); err != nil {
			return fmt.Errorf("storage: read segment %d for the move: %w", s.baseOffset, err)
		}
		if _, err := cs.f.WriteAt(b, cs.n); err != nil {
			return fmt.Errorf("storage: write future segment %d: %w", s.baseOffset, err)
		}
		cs.n += int64(len(b))
	}
	return nil
}

// writeSynced writes data as the file name of the copy and fsyncs it.
func (c *moveCopy) writeSynced(name string, data []byte) error {
	f, err := c.fs.Create(name)
	if err != nil {
		return fmt.Errorf("storage: create %s: %w", filepath.Base(name), err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("storage: write %s: %w", filepath.Base(name), err)
	}
	return nil
}

// writeIndexes writes s's indexes from memory into the copy. For a closed
// segment (whose indexes no longer change until a truncation, which
// starts the copy again) it is done once.
func (c *moveCopy) writeIndexes(s *segment, closed bool) error {
	cs := c.files[s.baseOffset]
	if cs != nil && cs.indexed {
		return nil
	}
	var ib, tb, xb []byte
	s.offsetIndex.mu.Lock()
	for _, e := range s.offsetIndex.entries {
		ib = append(ib, encodeOffsetEntry(e)...)
	}
	s.offsetIndex.mu.Unlock()
	s.timeIndex.mu.Lock()
	for _, e := range s.timeIndex.entries {
		tb = append(tb, encodeTimeEntry(e)...)
	}
	s.timeIndex.mu.Unlock()
	for _, e := range s.txnIndex.snapshot() {
		xb = encodeTxnEntry(xb, e)
	}
	if err := c.writeSynced(segmentFileName(c.dir, s.baseOffset, indexSuffix), ib); err != nil {
		return err
	}
	if err := c.writeSynced(segmentFileName(c.dir, s.baseOffset, timeIndexSuffix), tb); err != nil {
		return err
	}
	if len(xb) > 0 {
		if err := c.writeSynced(segmentFileName(c.dir, s.baseOffset, txnIndexSuffix), xb); err != nil {
			return err
		}
	}
	if cs != nil && closed {
		cs.indexed = true
	}
	return nil
}

// copySnapshots copies the producer snapshots of offsets (files of the
// log's directory src) not copied yet; a snapshot file is never
// rewritten. missingOK skips one deleted meanwhile.
func (c *moveCopy) copySnapshots(src string, offsets []int64, missingOK bool) error {
	for _, off := range offsets {
		if c.snapshots[off] {
			continue
		}
		b, err := readFile(c.fs, segmentFileName(src, off, snapshotSuffix))
		if err != nil {
			if missingOK {
				continue
			}
			return fmt.Errorf("storage: read snapshot %d for the move: %w", off, err)
		}
		if err := c.writeSynced(segmentFileName(c.dir, off, snapshotSuffix), b); err != nil {
			return err
		}
		c.snapshots[off] = true
	}
	return nil
}

// round copies every segment up to the size it has now, without the
// log's write lock, and returns how many bytes the log had beyond what
// the copy holds at the end.
func (c *moveCopy) round(l *Log) (left int64, err error) {
	type pin struct {
		s    *segment
		size int64
	}
	var pins []pin
	l.mu.Lock()
	if err := l.checkWritableLocked(); err != nil {
		l.mu.Unlock()
		return 0, fmt.Errorf("%w: %w", ErrMoveAborted, err)
	}
	if l.mu.truncations != c.truncations {
		c.reset()
		c.truncations = l.mu.truncations
	}
	for _, s := range l.mu.segments {
		if s.acquire() {
			pins = append(pins, pin{s, s.size})
		}
	}
	l.mu.Unlock()
	defer func() {
		for _, p := range pins {
			p.s.release()
		}
	}()
	for i, p := range pins {
		if err := c.copySegment(p.s, p.size); err != nil {
			return 0, err
		}
		if i < len(pins)-1 {
			if err := c.files[p.s.baseOffset].sync(); err != nil {
				return 0, err
			}
			if err := c.writeIndexes(p.s, true); err != nil {
				return 0, err
			}
		}
	}
	l.writeMu.Lock()
	snapshots, dir := slices.Clone(l.snapshots), l.Dir()
	l.writeMu.Unlock()
	if err := c.copySnapshots(dir, snapshots, true); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range l.mu.segments {
		cs := c.files[s.baseOffset]
		switch {
		case cs == nil || cs.seg != s:
			left += s.size
		default:
			left += s.size - cs.n
			if cs.n == s.size && i < len(l.mu.segments)-1 {
				c.copiedTo = max(c.copiedTo, s.nextOffset)
			}
		}
	}
	return left, nil
}

// finishMove is steps 2 to 4 of the file comment: done is false when the
// log was truncated since the copies started (they start again).
func (l *Log) finishMove(c *moveCopy, final string, commit func() error, onFailure func(error)) (done bool, err error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	err = l.checkWritableLocked()
	truncated := l.mu.truncations != c.truncations
	segs := slices.Clone(l.mu.segments)
	cfg := l.mu.cfg
	epochs := slices.Clone(l.epochs.entries)
	l.mu.Unlock()
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrMoveAborted, err)
	}
	if truncated {
		return false, nil
	}
	live := map[int64]bool{}
	for _, s := range segs {
		live[s.baseOffset] = true
		if err := c.copySegment(s, s.size); err != nil {
			return false, err
		}
	}
	for base, cs := range c.files {
		if !live[base] { // deleted by retention meanwhile
			cs.f.Close()
			delete(c.files, base)
		}
	}
	// Copies of segments gone meanwhile (retention, or a truncation that
	// started the copy again) must not be found at open.
	names, err := c.fs.ReadDir(c.dir)
	if err != nil {
		return false, fmt.Errorf("storage: list %s: %w", c.dir, err)
	}
	for _, n := range names {
		if base, ok := parseSegmentBase(n); ok && !live[base] {
			if err := c.fs.Remove(filepath.Join(c.dir, n)); err != nil {
				return false, fmt.Errorf("storage: remove future segment: %w", err)
			}
		}
	}
	for i, s := range segs {
		if err := c.files[s.baseOffset].sync(); err != nil {
			return false, err
		}
		if err := c.writeIndexes(s, i < len(segs)-1); err != nil {
			return false, err
		}
	}
	if err := c.copySnapshots(l.Dir(), l.snapshots, false); err != nil {
		return false, err
	}
	for _, n := range names {
		if off, ok := parseSnapshotOffset(n); ok && !slices.Contains(l.snapshots, off) {
			if err := c.fs.Remove(filepath.Join(c.dir, n)); err != nil {
				return false, fmt.Errorf("storage: remove future snapshot: %w", err)
			}
		}
	}
	if len(epochs) > 0 {
		if err := c.writeSynced(filepath.Join(c.dir, leaderEpochCheckpointFile), encodeLeaderEpochCheckpoint(epochs)); err != nil {
			return false, err
		}
	}
	if err := c.fs.SyncDir(c.dir); err != nil {
		return false, fmt.Errorf("storage: sync %s: %w", c.dir, err)
	}
	c.closeFiles()
	next := make([]*segment, 0, len(segs))
	closeNext := func() {
		for _, s := range next {
			s.closeFiles()
		}
	}
	for _, s := range segs {
		ns, err := reopenMoved(l.fs, c.dir, final, s, cfg)
		if err != nil {
			closeNext()
			return false, err
		}
		next = append(next, ns)
	}
	if err := commit(); err != nil {
		closeNext()
		return false, err
	}
	l.mu.Lock()
	old := l.mu.segments
	l.mu.segments = next
	l.dir.Store(&final)
	l.epochs.file = filepath.Join(final, leaderEpochCheckpointFile)
	l.onFailure = onFailure
	l.wakeLocked()
	l.mu.Unlock()
	l.dirDirty = false
	for _, s := range old {
		s.retire()
	}
	return true, nil
}

// reopenMoved opens the copy (in dir, to be renamed final) of segment s
// and gives it s's state. REQUIRES: the Log's writeMu held.
func reopenMoved(fsys vfs.FS, dir, final string, s *segment, cfg LogConfig) (*segment, error) {
	ns := newSegmentShell(fsys, final, s.baseOffset, cfg, s.created)
	var err error
	if ns.log, err = fsys.OpenReadWrite(segmentFileName(dir, s.baseOffset, logSuffix)); err != nil {
		return nil, fmt.Errorf("storage: open moved segment: %w", err)
	}
	if ns.offsetIndex.file, err = fsys.OpenReadWrite(segmentFileName(dir, s.baseOffset, indexSuffix)); err != nil {
		ns.closeFiles()
		return nil, fmt.Errorf("storage: open moved index: %w", err)
	}
	if ns.timeIndex.file, err = fsys.OpenReadWrite(segmentFileName(dir, s.baseOffset, timeIndexSuffix)); err != nil {
		ns.closeFiles()
		return nil, fmt.Errorf("storage: open moved time index: %w", err)
	}
	entries := s.txnIndex.snapshot()
	if len(entries) > 0 {
		if ns.txnIndex.file, err = fsys.OpenReadWrite(segmentFileName(dir, s.baseOffset, txnIndexSuffix)); err != nil {
			ns.closeFiles()
			return nil, fmt.Errorf("storage: open moved transaction index: %w", err)
		}
	}
	ns.txnIndex.entries = entries
	s.offsetIndex.mu.Lock()
	ns.offsetIndex.entries = slices.Clone(s.offsetIndex.entries)
	s.offsetIndex.mu.Unlock()
	s.timeIndex.mu.Lock()
	ns.timeIndex.entries = slices.Clone(s.timeIndex.entries)
	s.timeIndex.mu.Unlock()
	ns.txnIndexSuspect = s.txnIndexSuspect
	ns.damaged.Store(s.damaged.Load())
	ns.damageReported.Store(s.damageReported.Load())
	ns.appendedFrom.Store(s.appendedFrom.Load())
	ns.size, ns.nextOffset = s.size, s.nextOffset
	ns.maxTimestamp, ns.offsetOfMaxTimestamp = s.maxTimestamp, s.offsetOfMaxTimestamp
	ns.firstBatchTimestamp = s.firstBatchTimestamp
	ns.bytesSinceLastIndexEntry = s.bytesSinceLastIndexEntry
	return ns, nil
}

// settleMoves finishes, at start, the moves a crash interrupted (see the
// file comment) and returns, for each partition whose move had committed,
// the log directory it came from (whose checkpoints still describe it).
func (m *Manager) settleMoves() (map[TopicPartition]string, error) {
	present := map[TopicPartition]bool{}
	type setAside struct{ dir, name string }
	var moving, future []setAside
	for _, dir := range m.dirs {
		names, err := m.fs.ReadDir(dir)
		if err != nil {
			continue // loadDir creates it or fails
		}
		for _, n := range names {
			switch {
			case strings.HasSuffix(n, movingDirSuffix):
				moving = append(moving, setAside{dir, n})
			case strings.HasSuffix(n, futureDirSuffix):
				future = append(future, setAside{dir, n})
			default:
				if tp, ok := parsePartitionDir(n); ok {
					present[tp] = true
				}
			}
		}
	}
	for _, f := range future {
		p := filepath.Join(f.dir, f.name)
		m.logger.Info("storage: removing the future log of a move interrupted before it completed; the move starts again", "dir", p)
		if err := m.fs.RemoveAll(p); err != nil {
			return nil, fmt.Errorf("storage: remove %s: %w", p, err)
		}
		if topic, part, ok := parseSetAsideDirName(f.name, futureDirSuffix); ok {
			m.interrupted[TopicPartition{Topic: topic, Partition: part}] = f.dir
		}
	}
	movedFrom := map[TopicPartition]string{}
	for _, mv := range moving {
		p := filepath.Join(mv.dir, mv.name)
		topic, part, ok := parseSetAsideDirName(mv.name, movingDirSuffix)
		if !ok {
			continue
		}
		tp := TopicPartition{Topic: topic, Partition: part}
		if present[tp] {
			m.logger.Info("storage: removing the old directory of a moved log", "dir", p)
			movedFrom[tp] = mv.dir
			continue // removed once the partition's checkpoints are read
		}
		to := filepath.Join(mv.dir, tp.String())
		m.logger.Warn("storage: a log move was interrupted before it completed; the log stays where it was", "partition", tp.String(), "dir", mv.dir)
		if err := m.fs.Rename(p, to); err != nil {
			return nil, fmt.Errorf("storage: rename %s back: %w", p, err)
		}
		if err := m.fs.SyncDir(mv.dir); err != nil {
			return nil, fmt.Errorf("storage: sync %s: %w", mv.dir, err)
		}
		present[tp] = true
	}
	return movedFrom, nil
}

// InterruptedMoves returns the moves a stop or crash interrupted (their
// future logs were removed at start) by partition, with their target log
// directory, for the owner to start again as Kafka resumes its future
// replicas; each is returned once.
func (m *Manager) InterruptedMoves() map[TopicPartition]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[TopicPartition]string{}
	for tp, dir := range m.interrupted {
		if ml, ok := m.mu.logs[tp]; ok && ml.dir != dir {
			out[tp] = dir
		}
	}
	m.interrupted = nil
	return out
}

// removeMovedAway removes the "-moving" directories settleMoves left for
// their checkpoints.
func (m *Manager) removeMovedAway() error {
	for _, dir := range m.dirs {
		names, err := m.fs.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, n := range names {
			if strings.HasSuffix(n, movingDirSuffix) {
				if err := m.fs.RemoveAll(filepath.Join(dir, n)); err != nil {
					return fmt.Errorf("storage: remove %s: %w", n, err)
				}
			}
		}
	}
	return nil
}
