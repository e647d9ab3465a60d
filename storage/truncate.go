package storage

import (
	"fmt"
	"sort"
)

// TruncateTo removes every batch whose last offset is >= offset (a follower
// diverging from its leader). A batch straddling offset is removed whole, so
// the new log end offset can be below offset. Truncating below the log start
// offset empties the log and restarts it at offset.
func (l *Log) TruncateTo(offset int64) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	if err := l.checkWritableLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	if offset < 0 {
		l.mu.Unlock()
		return fmt.Errorf("%w: truncate to %d", ErrOffsetOutOfRange, offset)
	}
	if offset >= l.mu.logEndOffset {
		// No record to remove, but an epoch may start at the log end with
		// nothing in it: this node became leader and appended nothing
		// before another was elected. Keeping it would make a follower send
		// that epoch as LastFetchedEpoch forever, each answer a diverging
		// epoch that truncates nothing (Kafka's UnifiedLog.truncateTo drops
		// it too).
		changed := l.epochs.truncateFromEnd(l.mu.logEndOffset)
		l.mu.Unlock()
		if changed {
			if err := l.epochs.persist(); err != nil {
				return l.fail(err)
			}
		}
		return nil
	}
	if offset < l.mu.logStartOffset {
		l.mu.Unlock()
		return l.truncateFullyAndStartAtLocked(offset)
	}
	segs := l.mu.segments
	i := sort.Search(len(segs), func(i int) bool { return segs[i].baseOffset > offset }) - 1
	i = max(i, 0)
	keep := segs[i]
	doomed := append([]*segment(nil), segs[i+1:]...)
	l.mu.Unlock()

	plan, err := keep.planTruncate(offset)
	if err != nil {
		return err
	}
	if plan.nextOffset < l.LogStartOffset() {
		// The batch holding offset starts below the log start offset:
		// nothing readable would remain.
		return l.truncateFullyAndStartAtLocked(offset)
	}
	// Unlist the doomed segments before touching files, so that readers
	// never see a half-truncated segment list.
	l.mu.Lock()
	l.mu.segments = l.mu.segments[: i+1 : i+1]
	keep.size = plan.position
	keep.nextOffset = plan.nextOffset
	keep.maxTimestamp, keep.offsetOfMaxTimestamp = plan.maxTimestamp, plan.offsetOfMaxTimestamp
	keep.firstBatchTimestamp = plan.firstTs
	keep.bytesSinceLastIndexEntry = plan.sinceIndex
	l.mu.logEndOffset = plan.nextOffset
	l.mu.truncations++
	l.mu.highWatermark = min(l.mu.highWatermark, plan.nextOffset)
	l.mu.recoveryPoint = min(l.mu.recoveryPoint, plan.nextOffset)
	epochChanged := l.epochs.truncateFromEnd(plan.nextOffset)
	l.wakeLocked()
	l.mu.Unlock()
	for _, s := range doomed {
		if err := s.remove(); err != nil {
			return l.fail(err)
		}
	}
	if err := keep.truncateFiles(plan); err != nil {
		return l.fail(err)
	}
	// Make the truncation durable now: otherwise a crash could bring back
	// the removed batches under offsets that get reused, while the leader
	// epoch checkpoint already forgot their epochs.
	if err := keep.sync(); err != nil {
		return l.fail(err)
	}
	if len(doomed) > 0 {
		if err := l.fs.SyncDir(l.Dir()); err != nil {
			return l.fail(fmt.Errorf("storage: sync log dir: %w", err))
		}
	}
	if epochChanged {
		if err := l.epochs.persist(); err != nil {
			return l.fail(err)
		}
	}
	// Truncation can reopen a transaction (its marker is gone), forget
	// one (its first batch is gone) or take batches out of a producer's
	// window: reload from a snapshot at or below the new end, as Kafka
	// does.
	l.mu.Lock()
	segs = append([]*segment(nil), l.mu.segments...)
	l.mu.Unlock()
	txns, producers, err := l.rebuildStateLocked(segs, plan.nextOffset)
	if err != nil {
		return l.fail(err)
	}
	l.mu.Lock()
	l.txns, l.producers = txns, producers
	l.mu.Unlock()
	return nil
}

// TruncateFullyAndStartAt deletes every segment and restarts the log empty
// at offset (log start = LEO = high watermark = offset).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	err := l.checkWritableLocked()
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: start at %d", ErrOffsetOutOfRange, offset)
	}
	return l.truncateFullyAndStartAtLocked(offset)
}

// REQUIRES: l.writeMu held.
func (l *Log) truncateFullyAndStartAtLocked(offset int64) error {
	l.mu.Lock()
	doomed := l.mu.segments
	cfg := l.mu.cfg
	l.mu.Unlock()
	for _, s := range doomed {
		if err := s.remove(); err != nil {
			return l.fail(err)
		}
	}
	if err := l.deleteSnapshotsLocked(func(int64) bool { return true }); err != nil {
		return l.fail(err)
	}
	seg, err := createSegment(l.fs, l.Dir(), offset, cfg, l.now())
	if err != nil {
		return l.fail(err)
	}
	if err := seg.sync(); err != nil {
		return l.fail(err)
	}
	if err := l.fs.SyncDir(l.Dir()); err != nil {
		return l.fail(fmt.Errorf("storage: sync log dir: %w", err))
	}
	l.mu.Lock()
	l.mu.segments = []*segment{seg}
	l.mu.logStartOffset = offset
	l.mu.truncations++
	l.mu.logEndOffset = offset
	l.mu.highWatermark = offset
	l.mu.recoveryPoint = offset
	l.txns = newTxnState()
	l.producers = producerStates{}
	l.epochs.clear()
	l.wakeLocked()
	l.mu.Unlock()
	if err := l.epochs.persist(); err != nil {
		return l.fail(err)
	}
	return nil
}
