package storage

import (
	"fmt"
	"time"
)

// DeleteRecordsBefore moves the log start offset up to offset (DeleteRecords;
// -1 means the high watermark), which must not exceed the high watermark,
// and deletes the segments that lie wholly below it. It returns the new log
// start offset.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	if err := l.checkWritableLocked(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	if offset == -1 {
		offset = l.mu.highWatermark
	}
	if offset < 0 || offset > l.mu.highWatermark {
		hw := l.mu.highWatermark
		l.mu.Unlock()
		return 0, fmt.Errorf("%w: delete before %d above high watermark %d", ErrOffsetOutOfRange, offset, hw)
	}
	if offset <= l.mu.logStartOffset {
		start := l.mu.logStartOffset
		l.mu.Unlock()
		return start, nil
	}
	l.mu.logStartOffset = offset
	n := l.startBreachedPrefixLocked()
	l.epochs.truncateFromStart(offset)
	l.mu.Unlock()
	if err := l.epochs.persist(); err != nil {
		return 0, l.fail(err)
	}
	if _, err := l.deleteOldestLocked(n); err != nil {
		return 0, err
	}
	return offset, nil
}

// startBreachedPrefixLocked counts the oldest segments that end at or below
// the log start offset (never the active segment).
// REQUIRES: l.mu held.
func (l *Log) startBreachedPrefixLocked() int {
	segs := l.mu.segments
	n := 0
	for n < len(segs)-1 && segs[n+1].baseOffset <= l.mu.logStartOffset {
		n++
	}
	return n
}

// EnforceRetention deletes the oldest segments that break retention.ms (by
// their largest timestamp), retention.bytes (by total size) or lie below the
// log start offset. It never deletes the active segment, but rolls it first
// when it alone is expired and not empty, as Kafka does. Only segments wholly
// below the high watermark are deleted. The log start offset advances to the
// first remaining segment.
func (l *Log) EnforceRetention(now time.Time) (deletedSegments int, err error) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	if err := l.checkWritableLocked(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	cfg := l.mu.cfg
	n := l.startBreachedPrefixLocked()
	rollActive := false
	if cfg.Delete {
		segs := l.mu.segments
		hw := l.mu.highWatermark
		upper := func(i int) int64 { // end offset of segment i
			if i+1 < len(segs) {
				return segs[i+1].baseOffset
			}
			return segs[i].nextOffset
		}
		nowMs := now.UnixMilli()
		if cfg.RetentionMs >= 0 {
			t := 0
			// An empty segment other than the active one (a compaction
			// removed every record of it) holds nothing to keep.
			expired := func(t int) bool {
				if segs[t].size == 0 {
					return t < len(segs)-1
				}
				return nowMs-segs[t].maxTimestamp > cfg.RetentionMs
			}
			for t < len(segs) && expired(t) && upper(t) <= hw {
				t++
			}
			if t == len(segs) {
				rollActive = true
				t = len(segs) - 1
			}
			n = max(n, t)
		}
		if cfg.RetentionBytes >= 0 {
			var total int64
			for _, s := range segs {
				total += s.size
			}
			diff := total - cfg.RetentionBytes
			b := 0
			for b < len(segs)-1 && diff-segs[b].size >= 0 && upper(b) <= hw {
				diff -= segs[b].size
				b++
			}
			n = max(n, b)
		}
	}
	l.mu.Unlock()
	if rollActive {
		if _, err := l.rollLocked(cfg); err != nil {
			return 0, err
		}
		n++
	}
	return l.deleteOldestLocked(n)
}

// deleteOldestLocked removes the n oldest segments (keeping at least one)
// and moves the log start offset to the first remaining one.
// REQUIRES: l.writeMu held.
func (l *Log) deleteOldestLocked(n int) (int, error) {
	l.mu.Lock()
	n = min(n, len(l.mu.segments)-1)
	if n <= 0 {
		l.mu.Unlock()
		return 0, nil
	}
	doomed := append([]*segment(nil), l.mu.segments[:n]...)
	l.mu.segments = append([]*segment(nil), l.mu.segments[n:]...)
	newStart := max(l.mu.logStartOffset, l.mu.segments[0].baseOffset)
	startMoved := newStart != l.mu.logStartOffset
	l.mu.logStartOffset = newStart
	l.mu.highWatermark = max(l.mu.highWatermark, newStart)
	if startMoved {
		startMoved = l.epochs.truncateFromStart(newStart)
	}
	l.mu.Unlock()
	for _, s := range doomed {
		l.logger.Info("storage: deleting segment", "base_offset", s.baseOffset, "size", s.size)
		if err := s.remove(); err != nil {
			return 0, l.fail(err)
		}
	}
	// Snapshots below the first segment can no longer be replayed from.
	l.mu.Lock()
	firstBase := l.mu.segments[0].baseOffset
	l.mu.Unlock()
	if err := l.deleteSnapshotsLocked(func(off int64) bool { return off < firstBase }); err != nil {
		return 0, l.fail(err)
	}
	if startMoved {
		if err := l.epochs.persist(); err != nil {
			return 0, l.fail(err)
		}
	}
	return n, nil
}
