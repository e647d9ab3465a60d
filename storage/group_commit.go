package storage

import (
	"fmt"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// syncTo returns once every offset below end is on disk: the group commit
// behind flush.messages (log.flush.interval.messages=1 means fsync before
// acknowledging each append).
//
// Appends release writeMu before they wait here, so while one fsync runs
// the next appends land in the page cache and queue on syncMu; the first
// of them to get it fsyncs everything appended so far, and the others find
// their offsets below the recovery point and return without an fsync of
// their own. N concurrent producers cost about two fsyncs, not N.
//
// Only the data file of the active segment is synced: its offset and time
// indexes are rebuilt from the log when a log opens (the last segment is
// always recovered), so they are synced when the segment rolls (rollLocked)
// or the log is flushed or closed. A new file (dirDirty) is made durable
// the old way, under writeMu, with the directory. A failed fsync takes the
// log offline (fail) and is never retried.
func (l *Log) syncTo(end int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	covered, err := l.mu.recoveryPoint >= end, l.checkWritableLocked()
	l.mu.Unlock()
	if err != nil || covered {
		return err
	}
	l.writeMu.Lock()
	if l.dirDirty {
		err := l.flushLocked()
		l.writeMu.Unlock()
		return err
	}
	// Pin the dirty segments and take their files under writeMu (which
	// guards dirty and the transaction index's file); sync without it.
	l.mu.Lock()
	leo := l.mu.logEndOffset
	var pinned []*segment
	var files []vfs.File
	for i, s := range l.mu.segments {
		if !s.dirty || !s.acquire() {
			continue // a deleted segment needs no sync
		}
		pinned = append(pinned, s)
		files = append(files, s.log)
		if i < len(l.mu.segments)-1 {
			files = append(files, s.offsetIndex.file, s.timeIndex.file)
		}
		if s.txnIndex != nil && s.txnIndex.file != nil {
			files = append(files, s.txnIndex.file)
		}
	}
	l.mu.Unlock()
	l.writeMu.Unlock()
	defer func() {
		for _, s := range pinned {
			s.release()
		}
	}()
	for _, f := range files {
		if err := f.Sync(); err != nil {
			return l.fail(fmt.Errorf("storage: sync segment: %w", err))
		}
	}
	l.mu.Lock()
	l.mu.recoveryPoint = max(l.mu.recoveryPoint, leo)
	l.mu.lastFlush = l.now()
	l.mu.Unlock()
	return nil
}
