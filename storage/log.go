package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// Errors returned by Log methods.
var (
	// ErrOffsetOutOfRange is returned for reads outside [LogStartOffset, LogEndOffset].
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")
	// ErrClosed is returned by every method of a closed Log.
	ErrClosed = errors.New("storage: log closed")
	// ErrCorrupt marks data on disk that fails its checks (as opposed to IO errors).
	ErrCorrupt = errors.New("storage: corrupt data")
	// ErrInvalidBatch is returned by Append for records that are not whole v2 batches.
	ErrInvalidBatch = errors.New("storage: invalid record batch")
	// ErrLogFailed is returned by writes once a write or fsync failed: the
	// log stays offline until it is reopened (fsync errors are never retried).
	ErrLogFailed = errors.New("storage: log offline after IO failure")
	// ErrUnexpectedOffset is returned by AppendAsFollower for batches that
	// do not continue the log: a base offset below the log end offset or
	// below the previous batch's end (Kafka's UnexpectedAppendOffsetException).
	ErrUnexpectedOffset = errors.New("storage: unexpected append offset")
)

// LogConfig holds the topic-level settings a Log honours. Field comments
// give the Kafka config name.
type LogConfig struct {
	SegmentBytes          int64 // segment.bytes
	SegmentMs             int64 // segment.ms
	RetentionMs           int64 // retention.ms, -1 = unlimited
	RetentionBytes        int64 // retention.bytes, -1 = unlimited
	IndexIntervalBytes    int32 // index.interval.bytes
	SegmentIndexBytes     int32 // segment.index.bytes: max size of .index; roll when full
	FlushIntervalMessages int64 // flush.messages; 1 = fsync before Append returns
	FlushMs               int64 // flush.ms, honoured by Manager.Run
	FileDeleteDelayMs     int64 // file.delete.delay.ms (unused: deleted files stay readable while pinned)
	Delete, Compact       bool  // cleanup.policy
	DeleteRetentionMs     int64 // delete.retention.ms: how long tombstones outlive a clean
	MinCompactionLagMs    int64 // min.compaction.lag.ms
	MaxCompactionLagMs    int64 // max.compaction.lag.ms; <= 0 means unlimited
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio.
	MinCleanableDirtyRatio float64
}

// DefaultLogConfig returns Kafka's defaults.
func DefaultLogConfig() LogConfig {
	return LogConfig{
		SegmentBytes:           1 << 30,
		SegmentMs:              7 * 24 * 60 * 60 * 1000,
		RetentionMs:            7 * 24 * 60 * 60 * 1000,
		RetentionBytes:         -1,
		IndexIntervalBytes:     4096,
		SegmentIndexBytes:      10 << 20,
		FlushIntervalMessages:  math.MaxInt64,
		FlushMs:                math.MaxInt64,
		FileDeleteDelayMs:      60000,
		Delete:                 true,
		DeleteRetentionMs:      24 * 60 * 60 * 1000,
		MaxCompactionLagMs:     math.MaxInt64,
		MinCleanableDirtyRatio: 0.5,
	}
}

func (c LogConfig) sanitized() LogConfig {
	d := DefaultLogConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.IndexIntervalBytes < 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.SegmentIndexBytes < offsetIndexEntrySize*2 {
		c.SegmentIndexBytes = d.SegmentIndexBytes
	}
	if c.FlushIntervalMessages <= 0 {
		c.FlushIntervalMessages = 1
	}
	if c.FlushMs < 0 {
		c.FlushMs = d.FlushMs
	}
	if c.MaxCompactionLagMs <= 0 {
		c.MaxCompactionLagMs = d.MaxCompactionLagMs
	}
	if c.DeleteRetentionMs < 0 {
		c.DeleteRetentionMs = d.DeleteRetentionMs
	}
	if c.MinCleanableDirtyRatio < 0 || c.MinCleanableDirtyRatio > 1 {
		c.MinCleanableDirtyRatio = d.MinCleanableDirtyRatio
	}
	return c
}

// LogOptions configures OpenLog.
type LogOptions struct {
	FS     vfs.FS
	Dir    string // the partition directory, "topic-N"
	Config LogConfig
	Now    func() time.Time // defaults to time.Now
	Logger *slog.Logger     // defaults to discarding
	// RecoveryPoint is the offset up to which the log is known flushed; the
	// segments from the one containing it onwards are scanned. -1 = unknown
	// (scan everything).
	RecoveryPoint int64
	// LogStartOffset is the checkpointed log start offset, -1 if unknown.
	LogStartOffset int64
	// CleanerCheckpoint is the checkpointed first dirty offset of a
	// compacted log (cleaner-offset-checkpoint), 0 if unknown.
	CleanerCheckpoint int64
	// OnFailure, when set, is called once, outside the log's locks, with
	// the error of the write, fsync or roll that took the log offline.
	OnFailure func(err error)
}

// AppendInfo describes an append.
type AppendInfo struct {
	FirstOffset, LastOffset int64
	LogStartOffset          int64
}

// Log is one partition's log: a list of segments, the newest of which (the
// active segment) takes appends.
//
// Lock order: cleanMu, then syncMu, then writeMu, then mu, then a segment's or index's own mutex.
// writeMu serializes every mutation and is held across file IO; mu guards
// the fields readers snapshot and is never held across file IO.
type Log struct {
	fs vfs.FS
	// dir is the partition directory; a move to another log directory
	// (move.go) replaces it under cleanMu, syncMu and writeMu.
	dir    atomic.Pointer[string]
	now    func() time.Time
	logger *slog.Logger
	// onFailure is LogOptions.OnFailure; a move (move.go) replaces it.
	// REQUIRES: mu to read or replace after OpenLog.
	onFailure func(error)

	// cleanMu serializes cleans of this log; it is taken before writeMu.
	cleanMu sync.Mutex
	// syncMu serializes group-commit fsyncs (syncTo); it is taken before
	// writeMu and never while holding it.
	syncMu sync.Mutex

	writeMu sync.Mutex
	epochs  *leaderEpochCache // REQUIRES: writeMu to mutate, mu to read
	// dirDirty records a segment created since the directory was last
	// synced: fsyncing a new file's data does not make its name durable.
	dirDirty bool // REQUIRES: writeMu
	// txns is the open transactions as of the log end offset. A published
	// state is never modified: writers replace it.
	txns *txnState // REQUIRES: writeMu to replace, mu to read
	// producers is the sequence state of every producer as of the log end
	// offset. Unlike txns it is updated in place by the writer.
	producers producerStates // REQUIRES: writeMu and mu to mutate, either to read
	// producersRemoved records an ExpireProducers since the last snapshot
	// was written, so that Close writes one even at an unchanged log end.
	producersRemoved bool // REQUIRES: writeMu
	// snapshots holds the offsets of the snapshot files, ascending.
	snapshots []int64 // REQUIRES: writeMu

	mu struct {
		sync.Mutex
		segments       []*segment
		cfg            LogConfig
		logStartOffset int64
		logEndOffset   int64
		highWatermark  int64
		recoveryPoint  int64
		lastFlush      time.Time
		waitCh         chan struct{}
		// changes counts wakeLocked calls (not wakeAppendLocked ones);
		// watchers are the Waiters woken with them, each with its key
		// (waiter.go).
		changes  uint64
		watchers map[*Waiter]int
		closed   bool
		failed   error
		// cleanerCheckpoint is the first dirty offset (cleaner.go).
		cleanerCheckpoint int64
		// uncleanable is set when a clean failed on the log's data.
		uncleanable bool
		// truncations counts truncations (TruncateTo and
		// TruncateFullyAndStartAt), which rewrite segment bytes a move
		// (move.go) may have copied.
		truncations uint64
	}
}

// OpenLog opens (or creates) the log in o.Dir, recovering it as described
// in the package documentation.
func OpenLog(o LogOptions) (*Log, error) {
	if o.FS == nil {
		o.FS = vfs.OS
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	cfg := o.Config.sanitized()
	l := &Log{fs: o.FS, now: o.Now, logger: o.Logger.With("dir", o.Dir), onFailure: o.OnFailure}
	l.dir.Store(&o.Dir)
	l.mu.cfg = cfg
	l.mu.cleanerCheckpoint = max(o.CleanerCheckpoint, 0)
	if err := o.FS.MkdirAll(o.Dir); err != nil {
		return nil, fmt.Errorf("storage: create log dir: %w", err)
	}
	segs, err := l.loadSegments(cfg, o.RecoveryPoint, o.LogStartOffset, l.mu.cleanerCheckpoint)
	if err != nil {
		return nil, err
	}
	l.mu.segments = segs
	leo := segs[len(segs)-1].nextOffset
	start := segs[0].baseOffset
	if o.RecoveryPoint > leo && o.LogStartOffset <= leo {
		// Offsets below the recovery point were flushed: a crash cannot
		// have lost them (issue 11 item 14: the last segment file deleted
		// from outside lost them silently).
		l.logger.Error("storage: log ends below its checkpointed recovery point: flushed data is missing (segment file deleted from outside, damage at the end, or a truncation not checkpointed before a crash)",
			"partition", filepath.Base(o.Dir), "offsets_from", leo, "offsets_to", o.RecoveryPoint-1)
	}
	if o.LogStartOffset > leo {
		// Data up to the checkpointed log start was lost (a crash before
		// it was flushed). Start empty there rather than reuse offsets.
		var bytes int64
		for _, s := range segs {
			bytes += s.size
		}
		l.logger.Error("storage: log end below checkpointed log start (data lost in a crash); discarding its segments, restarting log at the log start",
			"log_end_offset", leo, "log_start_offset", o.LogStartOffset, "bytes", bytes)
		for _, s := range segs {
			if err := s.remove(); err != nil {
				return nil, err
			}
		}
		seg, err := createSegment(o.FS, o.Dir, o.LogStartOffset, cfg, o.Now())
		if err != nil {
			return nil, err
		}
		if err := seg.sync(); err != nil {
			seg.close()
			return nil, err
		}
		segs = []*segment{seg}
		l.mu.segments = segs
		leo = o.LogStartOffset
	}
	if o.LogStartOffset > start {
		start = o.LogStartOffset
	}
	if l.snapshots, err = l.listSnapshots(); err != nil {
		l.closeSegments()
		return nil, err
	}
	if l.txns, l.producers, err = l.rebuildStateLocked(segs, leo); err != nil {
		l.closeSegments()
		return nil, err
	}
	// Recovery may have created, truncated or removed files.
	if err := o.FS.SyncDir(o.Dir); err != nil {
		l.closeSegments()
		return nil, fmt.Errorf("storage: sync log dir: %w", err)
	}
	l.mu.logEndOffset = leo
	l.mu.logStartOffset = start
	l.mu.highWatermark = start
	l.mu.recoveryPoint = leo
	l.mu.lastFlush = o.Now()
	if l.epochs, err = loadLeaderEpochCache(o.FS, o.Dir); err != nil {
		l.logger.Warn("storage: dropping unreadable leader epoch checkpoint", "err", err)
		l.epochs = &leaderEpochCache{fs: o.FS, file: filepath.Join(o.Dir, leaderEpochCheckpointFile)}
	}
	changed := l.epochs.truncateFromEnd(leo)
	changed = l.epochs.truncateFromStart(start) || changed
	if changed {
		if err := l.epochs.persist(); err != nil {
			l.closeSegments()
			return nil, err
		}
	}
	return l, nil
}

// loadSegments lists, opens and recovers the segments of the directory.
func (l *Log) loadSegments(cfg LogConfig, recoveryPoint, logStart, cleanerCheckpoint int64) ([]*segment, error) {
	if err := l.completeSwaps(); err != nil {
		return nil, err
	}
	names, err := l.fs.ReadDir(l.Dir())
	if err != nil {
		return nil, fmt.Errorf("storage: list log dir: %w", err)
	}
	var bases []int64
	present := map[string]bool{}
	for _, name := range names {
		present[name] = true
	}
	for _, name := range names {
		switch {
		case strings.HasSuffix(name, deletedSuffix), strings.HasSuffix(name, cleanedSuffix),
			strings.HasSuffix(name, swapSuffix), strings.HasSuffix(name, tmpSuffix):
			l.logger.Info("storage: removing leftover file", "file", name)
			if err := l.fs.Remove(filepath.Join(l.Dir(), name)); err != nil {
				return nil, fmt.Errorf("storage: remove leftover %s: %w", name, err)
			}
		case strings.HasSuffix(name, indexSuffix), strings.HasSuffix(name, timeIndexSuffix), strings.HasSuffix(name, txnIndexSuffix):
			stem := name[:strings.LastIndexByte(name, '.')]
			if !present[stem+logSuffix] {
				if err := l.fs.Remove(filepath.Join(l.Dir(), name)); err != nil {
					return nil, fmt.Errorf("storage: remove orphan index %s: %w", name, err)
				}
			}
		default:
			if base, ok := parseSegmentBase(name); ok {
				bases = append(bases, base)
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	now := l.now()
	if len(bases) == 0 {
		seg, err := createSegment(l.fs, l.Dir(), max(logStart, 0), cfg, now)
		if err != nil {
			return nil, err
		}
		return []*segment{seg}, nil
	}
	var segs []*segment
	fail := func(err error) ([]*segment, error) {
		for _, s := range segs {
			s.close()
		}
		return nil, err
	}
	partition := filepath.Base(l.Dir())
	for i, base := range bases {
		seg, needsRebuild, err := openSegment(l.fs, l.Dir(), base, cfg, now)
		if err != nil {
			return fail(err)
		}
		segs = append(segs, seg)
		last := i == len(bases)-1
		nextBase := int64(-1)
		if !last {
			nextBase = bases[i+1]
		}
		// Kafka's recovery point: the segments wholly below it were
		// flushed and are not scanned again; the others are. The last
		// one always is (its tail is where a crash tears writes).
		mustRecover := last || recoveryPoint < 0 || nextBase > recoveryPoint
		if !mustRecover && !needsRebuild {
			err := seg.loadTail()
			if err == nil && seg.nextOffset > nextBase {
				err = fmt.Errorf("%w: segment %d ends at offset %d, past the next segment's base %d", ErrCorrupt, base, seg.nextOffset, nextBase)
			}
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					return fail(err)
				}
				l.logger.Warn("storage: segment does not match its index; scanning it", "segment", base, "reason", err)
				mustRecover = true
			}
		}
		if mustRecover || needsRebuild {
			// Damage found in a closed segment never costs the
			// segments after it (they were synced after it, so they
			// are intact): it is kept and stepped over (recover).
			if _, err := seg.recover(cfg, l.logger, recoverLimits{recoveryPoint: recoveryPoint, nextBase: nextBase, partition: partition}); err != nil {
				return fail(err)
			}
		}
	}
	// Offsets missing between segments (a segment file deleted from
	// outside) are data lost: say so.
	// Below the first segment this is also what a crash right after
	// retention leaves (the log start checkpoint lags), hence a warning;
	// between segments only compaction leaves gaps, below the cleaner
	// checkpoint.
	if logStart >= 0 && segs[0].baseOffset > logStart {
		l.logger.Warn("storage: log starts above its checkpointed log start offset (retention before a crash, or segments deleted from outside)",
			"partition", partition, "offsets_from", logStart, "offsets_to", segs[0].baseOffset-1)
	}
	for i := 1; i < len(segs); i++ {
		if segs[i-1].nextOffset < segs[i].baseOffset && len(segs[i-1].damage()) == 0 && segs[i].baseOffset > cleanerCheckpoint {
			l.logger.Error("storage: log data missing between segments (segment file deleted from outside?)",
				"partition", partition, "offsets_from", segs[i-1].nextOffset, "offsets_to", segs[i].baseOffset-1)
		}
	}
	for i := 1; i < len(segs); i++ {
		if segs[i-1].nextOffset > segs[i].baseOffset {
			return fail(fmt.Errorf("%w: segment %d overlaps segment %d", ErrCorrupt, segs[i-1].baseOffset, segs[i].baseOffset))
		}
	}
	// Recovered data may only have been in the page cache: make it durable
	// before claiming it as flushed.
	for _, s := range segs {
		if err := s.sync(); err != nil {
			return fail(err)
		}
	}
	return segs, nil
}

func (l *Log) closeSegments() {
	for _, s := range l.mu.segments {
		s.close()
	}
}

// checkWritableLocked returns the error that prevents writes, if any.
// REQUIRES: l.mu held.
func (l *Log) checkWritableLocked() error {
	if l.mu.closed {
		return ErrClosed
	}
	if l.mu.failed != nil {
		return fmt.Errorf("%w: %w", ErrLogFailed, l.mu.failed)
	}
	return nil
}

// fail takes the log offline after a write or sync error and returns err.
func (l *Log) fail(err error) error {
	l.mu.Lock()
	first := l.mu.failed == nil
	if first {
		l.mu.failed = err
		l.logger.Error("storage: log offline after IO failure", "err", err)
	}
	onFailure := l.onFailure
	l.mu.Unlock()
	if first && onFailure != nil {
		onFailure(err)
	}
	return err
}

// wakeLocked closes the channel handed out by Wait.
// REQUIRES: l.mu held.
func (l *Log) wakeLocked() {
	l.mu.changes++
	if l.mu.waitCh != nil {
		close(l.mu.waitCh)
		l.mu.waitCh = nil
	}
	for w, key := range l.mu.watchers {
		w.fire(key)
	}
}

// wakeAppendLocked closes the channel handed out by Wait, for an append:
// the log end offset moved. It does not fire the Waiters of consumers'
// long polls, who read up to the high watermark and are woken when it
// moves (see Waiter).
// REQUIRES: l.mu held.
func (l *Log) wakeAppendLocked() {
	if l.mu.waitCh != nil {
		close(l.mu.waitCh)
		l.mu.waitCh = nil
	}
}

// Append assigns offsets to records (one or more v2 batches, modified in
// place) starting at the log end offset and appends them to the active
// segment, rolling first if needed.
func (l *Log) Append(records []byte) (AppendInfo, error) {
	return l.append(records, appendMode{assignOffsets: true})
}

// AppendWithLogAppendTime is Append after stamping every batch with the log
// append time ts (timestamp type LogAppendTime, max timestamp ts).
func (l *Log) AppendWithLogAppendTime(records []byte, ts int64) (AppendInfo, error) {
	return l.append(records, appendMode{assignOffsets: true, logAppendTime: true, ts: ts})
}

// AppendAsFollower appends batches copied from the partition's leader,
// keeping the leader's offsets, timestamps and partition leader epochs
// (Kafka's appendAsFollower). Every batch must pass its CRC-32C
// (ErrCorrupt), start at or after the log end offset and after the batch
// before it (ErrUnexpectedOffset: gaps are allowed, a compacted leader
// has them), and carry a partition leader epoch no older than the
// previous batch's and the newest in the leader-epoch cache
// (ErrInvalidBatch). Each new epoch is recorded in the leader-epoch cache
// at the base offset of its first batch. Nothing is appended when a batch
// fails.
func (l *Log) AppendAsFollower(records []byte) (AppendInfo, error) {
	return l.append(records, appendMode{})
}

// appendMode selects how append treats the batches it is given.
type appendMode struct {
	// assignOffsets numbers the batches from the log end offset (leader
	// appends); otherwise the batches keep their offsets and are
	// checked (follower appends).
	assignOffsets bool
	// logAppendTime stamps every batch with ts.
	logAppendTime bool
	ts            int64
}

// checkFollowerBatches validates batches copied from a leader against a
// log ending at leo whose newest epoch is latestEpoch (-1 for none).
func checkFollowerBatches(records []byte, hs []batchHeader, leo int64, latestEpoch int32) error {
	next, epoch := leo, latestEpoch
	pos := 0
	for i := range hs {
		b := records[pos : pos+hs[i].TotalSize()]
		pos += hs[i].TotalSize()
		if batchCRC(b) != hs[i].CRC {
			return fmt.Errorf("%w: batch at offset %d fails its CRC", ErrCorrupt, hs[i].BaseOffset)
		}
		if hs[i].BaseOffset < next {
			return fmt.Errorf("%w: batch at offset %d, expected %d or later", ErrUnexpectedOffset, hs[i].BaseOffset, next)
		}
		if e := hs[i].PartitionLeaderEpoch; e >= 0 {
			if e < epoch {
				return fmt.Errorf("%w: batch at offset %d has leader epoch %d, older than %d", ErrInvalidBatch, hs[i].BaseOffset, e, epoch)
			}
			epoch = e
		}
		next = hs[i].LastOffset() + 1
	}
	return nil
}

func (l *Log) append(records []byte, mode appendMode) (AppendInfo, error) {
	l.writeMu.Lock()
	info, syncNeeded, err := l.appendLocked(records, mode)
	l.writeMu.Unlock()
	if err != nil || !syncNeeded {
		return info, err
	}
	// flush.messages reached: the append returns once it is on disk, in
	// an fsync it may share with concurrent appends (syncTo).
	if err := l.syncTo(info.LastOffset + 1); err != nil {
		return AppendInfo{}, err
	}
	return info, nil
}

// appendLocked appends records; syncNeeded reports that flush.messages
// requires them on disk before the append is acknowledged.
// REQUIRES: l.writeMu held.
func (l *Log) appendLocked(records []byte, mode appendMode) (info AppendInfo, syncNeeded bool, err error) {
	l.mu.Lock()
	if err := l.checkWritableLocked(); err != nil {
		l.mu.Unlock()
		return AppendInfo{}, false, err
	}
	cfg := l.mu.cfg
	leo := l.mu.logEndOffset
	active := l.mu.segments[len(l.mu.segments)-1]
	l.mu.Unlock()

	hs, err := splitBatches(records)
	if err != nil {
		return AppendInfo{}, false, err
	}
	if !mode.assignOffsets {
		l.mu.Lock()
		latest := int32(-1)
		if e, ok := l.epochs.latest(); ok {
			latest = e.Epoch
		}
		l.mu.Unlock()
		if err := checkFollowerBatches(records, hs, leo, latest); err != nil {
			return AppendInfo{}, false, err
		}
	}
	next := leo
	maxTs := int64(-1)
	pos := 0
	for i := range hs {
		b := records[pos : pos+hs[i].TotalSize()]
		if mode.assignOffsets {
			setBaseOffset(b, next)
			hs[i].BaseOffset = next
		}
		if mode.logAppendTime {
			setLogAppendTime(b, mode.ts)
			hs[i].MaxTimestamp = mode.ts
			hs[i].Attributes |= timestampTypeBit
		}
		next = hs[i].LastOffset() + 1
		maxTs = max(maxTs, hs[i].MaxTimestamp)
		pos += hs[i].TotalSize()
	}
	info = AppendInfo{FirstOffset: hs[0].BaseOffset, LastOffset: next - 1}
	markers, err := parseMarkers(records, hs)
	if err != nil {
		return AppendInfo{}, false, err
	}
	txns, aborted := planTxns(l.txns, hs, markers)

	if active.shouldRoll(cfg, len(records), maxTs, next-1, l.now()) {
		if active, err = l.rollLocked(cfg); err != nil {
			return AppendInfo{}, false, err
		}
	}
	if err := active.appendBatches(records, hs, cfg); err != nil {
		// Drop whatever part of the write landed, then go offline.
		_ = active.log.Truncate(active.size)
		return AppendInfo{}, false, l.fail(err)
	}
	if len(aborted) > 0 {
		created, err := active.txnIndex.write(aborted)
		l.dirDirty = l.dirDirty || created
		if err != nil {
			_ = active.log.Truncate(active.size)
			return AppendInfo{}, false, l.fail(err)
		}
	}
	epochChanged := false
	for _, h := range hs {
		if h.PartitionLeaderEpoch >= 0 {
			if last, ok := l.epochs.latest(); !ok || h.PartitionLeaderEpoch > last.Epoch {
				l.mu.Lock()
				epochChanged = l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset) || epochChanged
				l.mu.Unlock()
			}
		}
	}
	l.mu.Lock()
	active.commitAppend(len(records), hs)
	active.txnIndex.publish(aborted)
	l.txns = txns
	for i := range hs {
		if hs[i].ProducerID >= 0 {
			l.producers.apply(hs[i], markerAt(markers, i))
		}
	}
	l.mu.logEndOffset = next
	info.LogStartOffset = l.mu.logStartOffset
	unflushed := next - l.mu.recoveryPoint
	l.wakeAppendLocked()
	l.mu.Unlock()
	if epochChanged {
		if err := l.epochs.persist(); err != nil {
			return AppendInfo{}, false, l.fail(err)
		}
	}
	return info, unflushed >= cfg.FlushIntervalMessages, nil
}

// splitBatches parses the headers of the batches in records.
func splitBatches(records []byte) ([]batchHeader, error) {
	if len(records) == 0 {
		return nil, fmt.Errorf("%w: no records", ErrInvalidBatch)
	}
	var hs []batchHeader
	for pos := 0; pos < len(records); {
		h, err := parseBatchHeader(records[pos:])
		if err != nil {
			return nil, fmt.Errorf("%w: at byte %d: %w", ErrInvalidBatch, pos, err)
		}
		if h.TotalSize() > len(records)-pos {
			return nil, fmt.Errorf("%w: batch at byte %d is truncated", ErrInvalidBatch, pos)
		}
		hs = append(hs, h)
		pos += h.TotalSize()
	}
	return hs, nil
}

// rollLocked starts a new active segment at the log end offset.
// REQUIRES: l.writeMu held.
func (l *Log) rollLocked(cfg LogConfig) (*segment, error) {
	l.mu.Lock()
	old := l.mu.segments[len(l.mu.segments)-1]
	leo := l.mu.logEndOffset
	l.mu.Unlock()
	if old.size == 0 {
		return old, nil
	}
	// Let the time index cover the whole closed segment.
	if err := old.timeIndex.maybeAppend(old.maxTimestamp, old.offsetOfMaxTimestamp); err != nil {
		return nil, l.fail(err)
	}
	// Sync the closed segment before the new one exists: after a crash, a
	// segment file then implies that all segments before it are complete,
	// so recovery never finds a gap below an empty newer segment.
	if err := old.sync(); err != nil {
		return nil, l.fail(err)
	}
	// A snapshot per segment bounds the replay after a restart to the
	// segments written since.
	if err := l.writeSnapshotLocked(leo); err != nil {
		return nil, l.fail(err)
	}
	// Every segment below the new one is now durable, names included
	// (the snapshot synced the directory): move the recovery point to
	// the roll, as Kafka does, so that a restart after a crash scans only
	// the segments written since the last checkpoint.
	l.mu.Lock()
	l.mu.recoveryPoint = max(l.mu.recoveryPoint, leo)
	l.mu.Unlock()
	seg, err := createSegment(l.fs, l.Dir(), leo, cfg, l.now())
	if err != nil {
		return nil, l.fail(err)
	}
	l.dirDirty = true
	l.mu.Lock()
	l.mu.segments = append(l.mu.segments, seg)
	l.mu.Unlock()
	l.logger.Debug("storage: rolled segment", "base_offset", leo)
	return seg, nil
}

// Roll forces a new active segment if the current one is not empty.
func (l *Log) Roll() error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	err := l.checkWritableLocked()
	cfg := l.mu.cfg
	l.mu.Unlock()
	if err != nil {
		return err
	}
	_, err = l.rollLocked(cfg)
	return err
}

// LogStartOffset returns the first offset readable.
func (l *Log) LogStartOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.logStartOffset
}

// LogEndOffset returns the offset the next appended record gets (LEO).
func (l *Log) LogEndOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.logEndOffset
}

// HighWatermark returns the high watermark set by SetHighWatermark.
func (l *Log) HighWatermark() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.highWatermark
}

// SetHighWatermark sets the high watermark, clamped to [log start, LEO],
// and wakes waiters if it moved.
func (l *Log) SetHighWatermark(hw int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	hw = max(min(hw, l.mu.logEndOffset), l.mu.logStartOffset)
	if hw != l.mu.highWatermark {
		l.mu.highWatermark = hw
		l.wakeLocked()
	}
}

// Wait returns a channel closed at the next append, truncation or high
// watermark change (or Close). All waiters share one channel. Take the
// channel before checking the condition waited for (for example
// HighWatermark), or a change in between is missed.
func (l *Log) Wait() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if l.mu.waitCh == nil {
		l.mu.waitCh = make(chan struct{})
	}
	return l.mu.waitCh
}

// RecoveryPoint returns the offset below which all data is known durable.
func (l *Log) RecoveryPoint() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.recoveryPoint
}

// Size returns the total size in bytes of the segment files.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.mu.segments {
		n += s.size
	}
	return n
}

// Dir returns the partition directory.
func (l *Log) Dir() string { return *l.dir.Load() }

// SetConfig replaces the log's configuration; it applies to later appends,
// rolls and retention runs.
func (l *Log) SetConfig(c LogConfig) {
	c = c.sanitized()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.cfg = c
	for _, s := range l.mu.segments {
		s.offsetIndex.mu.Lock()
		s.offsetIndex.maxEntries = maxOffsetEntries(c)
		s.offsetIndex.mu.Unlock()
		s.timeIndex.mu.Lock()
		s.timeIndex.maxEntries = maxTimeEntries(c)
		s.timeIndex.mu.Unlock()
	}
}

// Config returns the log's configuration.
func (l *Log) Config() LogConfig {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.cfg
}

// lastFlushTime returns when the log was last flushed.
func (l *Log) lastFlushTime() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.lastFlush
}

// Flush fsyncs every segment with unsynced data and moves the recovery
// point to the log end offset. A failure takes the log offline.
func (l *Log) Flush() error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	err := l.checkWritableLocked()
	l.mu.Unlock()
	if err != nil {
		return err
	}
	return l.flushLocked()
}

// flushLocked syncs dirty segments.
// REQUIRES: l.writeMu held.
func (l *Log) flushLocked() error {
	l.mu.Lock()
	segs := append([]*segment(nil), l.mu.segments...)
	leo := l.mu.logEndOffset
	l.mu.Unlock()
	for _, s := range segs {
		if err := s.sync(); err != nil {
			return l.fail(err)
		}
	}
	if l.dirDirty {
		if err := l.fs.SyncDir(l.Dir()); err != nil {
			return l.fail(fmt.Errorf("storage: sync log dir: %w", err))
		}
		l.dirDirty = false
	}
	l.mu.Lock()
	l.mu.recoveryPoint = max(l.mu.recoveryPoint, leo)
	l.mu.lastFlush = l.now()
	l.mu.Unlock()
	return nil
}

// Close flushes and closes the log. Later calls return ErrClosed.
func (l *Log) Close() error {
	return l.close(true)
}

// discard closes the log without flushing it or writing a producer state
// snapshot: for a log about to be deleted (Manager.DeleteLog), whose
// unsynced data nobody will read, as Kafka's asynchronous delete renames a
// log without flushing it. A crash before the deletion is durable leaves
// an unflushed log, which recovery treats as after any crash.
func (l *Log) discard() error {
	return l.close(false)
}

func (l *Log) close(flush bool) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	failed := l.mu.failed
	l.mu.Unlock()
	var err error
	if failed == nil && flush {
		err = l.flushLocked()
		if err == nil {
			if err = l.snapshotAtCloseLocked(); err != nil {
				err = l.fail(err)
			}
		}
	}
	l.mu.Lock()
	l.mu.closed = true
	l.wakeLocked()
	l.closeSegments()
	l.mu.Unlock()
	return err
}
