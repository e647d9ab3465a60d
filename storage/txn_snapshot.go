package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// snapshotSuffix names transaction state snapshots, "%020d.snapshot" by
// the offset they were taken at (Kafka's producer snapshot file name).
const snapshotSuffix = ".snapshot"

// Transaction snapshot format (all integers big-endian):
//
//	 0 magic          "SMTX"
//	 4 version        uint16 = 0
//	 6 crc            uint32  CRC-32C (Castagnoli) of bytes 10..end
//	10 offset         int64   the snapshot's offset, equal to the file name's
//	18 count          uint32
//	22 count entries  producer id int64, producer epoch int16, first offset int64
//
// A snapshot at offset S holds the transactions open after every batch
// below S, sorted by first offset. The magic keeps a Kafka producer
// snapshot (version int16 1 first) from being read as ours.
//
// Migration: a reader rejects versions it does not know, and a rejected
// snapshot only costs a longer replay, so a new version may simply be
// written by new code; it should still read version 0 to keep restarts
// after an upgrade cheap.
const (
	snapshotMagic      = "SMTX"
	snapshotVersion    = 0
	snapshotHeaderSize = 22
	snapshotEntrySize  = 18
)

// ErrSnapshotCorrupt marks a transaction snapshot that fails its checks.
var ErrSnapshotCorrupt = errors.New("storage: corrupt transaction snapshot")

func encodeTxnSnapshot(offset int64, st *txnState) []byte {
	txns := st.sorted()
	be := binary.BigEndian
	b := make([]byte, 0, snapshotHeaderSize+len(txns)*snapshotEntrySize)
	b = append(b, snapshotMagic...)
	b = be.AppendUint16(b, snapshotVersion)
	b = be.AppendUint32(b, 0) // CRC, set below
	b = be.AppendUint64(b, uint64(offset))
	b = be.AppendUint32(b, uint32(len(txns)))
	for _, t := range txns {
		b = be.AppendUint64(b, uint64(t.ProducerID))
		b = be.AppendUint16(b, uint16(t.ProducerEpoch))
		b = be.AppendUint64(b, uint64(t.FirstOffset))
	}
	be.PutUint32(b[6:], crc32.Checksum(b[10:], castagnoli))
	return b
}

// decodeTxnSnapshot parses a snapshot that must have been taken at offset.
func decodeTxnSnapshot(b []byte, offset int64) (*txnState, error) {
	be := binary.BigEndian
	if len(b) < snapshotHeaderSize || string(b[:4]) != snapshotMagic {
		return nil, fmt.Errorf("%w: bad header", ErrSnapshotCorrupt)
	}
	if v := be.Uint16(b[4:]); v != snapshotVersion {
		return nil, fmt.Errorf("%w: unknown version %d", ErrSnapshotCorrupt, v)
	}
	if crc := crc32.Checksum(b[10:], castagnoli); crc != be.Uint32(b[6:]) {
		return nil, fmt.Errorf("%w: CRC %08x, computed %08x", ErrSnapshotCorrupt, be.Uint32(b[6:]), crc)
	}
	if got := int64(be.Uint64(b[10:])); got != offset {
		return nil, fmt.Errorf("%w: offset %d in a file named %d", ErrSnapshotCorrupt, got, offset)
	}
	n := int64(be.Uint32(b[18:]))
	if int64(len(b)) != snapshotHeaderSize+n*snapshotEntrySize {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrSnapshotCorrupt, n, len(b))
	}
	st := newTxnState()
	for p := snapshotHeaderSize; p < len(b); p += snapshotEntrySize {
		t := OngoingTxn{
			ProducerID:    int64(be.Uint64(b[p:])),
			ProducerEpoch: int16(be.Uint16(b[p+8:])),
			FirstOffset:   int64(be.Uint64(b[p+10:])),
		}
		if _, dup := st.ongoing[t.ProducerID]; dup || t.ProducerID < 0 || t.FirstOffset < 0 || t.FirstOffset >= offset {
			return nil, fmt.Errorf("%w: entry %+v", ErrSnapshotCorrupt, t)
		}
		st.ongoing[t.ProducerID] = t
		if st.firstUnstable < 0 || t.FirstOffset < st.firstUnstable {
			st.firstUnstable = t.FirstOffset
		}
	}
	return st, nil
}

// parseSnapshotOffset returns the offset of a "%020d.snapshot" name.
func parseSnapshotOffset(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, snapshotSuffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	return off, err == nil && off >= 0
}

// listSnapshots returns the offsets of the snapshot files, ascending.
func (l *Log) listSnapshots() ([]int64, error) {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("storage: list log dir: %w", err)
	}
	var offs []int64
	for _, n := range names {
		if off, ok := parseSnapshotOffset(n); ok {
			offs = append(offs, off)
		}
	}
	slices.Sort(offs)
	return offs, nil
}

// writeSnapshotLocked durably writes the current transaction state as the
// snapshot at offset, the log end offset. Every batch below offset and the
// transaction indexes covering them must already be durable: that is what
// lets recovery trust a snapshot at any offset up to the log end.
// REQUIRES: l.writeMu held.
func (l *Log) writeSnapshotLocked(offset int64) error {
	name := segmentFileName(l.dir, offset, snapshotSuffix)
	if err := writeFileAtomic(l.fs, name, encodeTxnSnapshot(offset, l.txns)); err != nil {
		return err
	}
	if i, found := slices.BinarySearch(l.snapshots, offset); !found {
		l.snapshots = slices.Insert(l.snapshots, i, offset)
	}
	return nil
}

// deleteSnapshotsLocked removes the snapshots for which doomed is true,
// durably: a snapshot above a truncation point that came back after a
// crash could be taken for the state of different, later data.
// REQUIRES: l.writeMu held.
func (l *Log) deleteSnapshotsLocked(doomed func(off int64) bool) error {
	kept := l.snapshots[:0:0]
	var firstErr error
	removed := false
	for _, off := range l.snapshots {
		if !doomed(off) {
			kept = append(kept, off)
			continue
		}
		removed = true
		if err := l.fs.Remove(segmentFileName(l.dir, off, snapshotSuffix)); err != nil && l.fs.Exists(segmentFileName(l.dir, off, snapshotSuffix)) {
			kept = append(kept, off)
			if firstErr == nil {
				firstErr = fmt.Errorf("storage: remove snapshot: %w", err)
			}
		}
	}
	l.snapshots = kept
	if removed && firstErr == nil {
		if err := l.fs.SyncDir(l.dir); err != nil {
			firstErr = fmt.Errorf("storage: sync log dir: %w", err)
		}
	}
	return firstErr
}

// snapshotAtCloseLocked writes a snapshot at the log end offset (after a
// flush) unless one exists, and drops the older snapshots inside the
// active segment except the one at its base: restarts then replay nothing,
// and repeated restarts leave at most two snapshots per segment.
// REQUIRES: l.writeMu held.
func (l *Log) snapshotAtCloseLocked() error {
	l.mu.Lock()
	leo := l.mu.logEndOffset
	activeBase := l.mu.segments[len(l.mu.segments)-1].baseOffset
	l.mu.Unlock()
	if _, found := slices.BinarySearch(l.snapshots, leo); !found {
		if err := l.writeSnapshotLocked(leo); err != nil {
			return err
		}
	}
	return l.deleteSnapshotsLocked(func(off int64) bool { return off > activeBase && off < leo })
}

// readSnapshot reads and decodes the snapshot at offset.
func (l *Log) readSnapshot(offset int64) (*txnState, error) {
	b, err := readFile(l.fs, segmentFileName(l.dir, offset, snapshotSuffix))
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return nil, fmt.Errorf("%w: %w", ErrSnapshotCorrupt, err)
		}
		return nil, fmt.Errorf("storage: read snapshot: %w", err)
	}
	return decodeTxnSnapshot(b, offset)
}

// rebuildTxnStateLocked recomputes the transaction state of segs, whose
// log ends at leo: it loads the newest readable snapshot at or below leo
// (and below any segment whose transaction index is suspect), replays the
// batch headers from there to leo, and rewrites the transaction indexes of
// the replayed range where they differ from the replay (so entries are
// never duplicated, and missing or stale ones are repaired). Without a
// usable snapshot it replays from the first segment. Snapshots above leo
// or below the first segment are deleted. Changed indexes are synced.
// REQUIRES: l.writeMu held (or the Log not yet shared).
func (l *Log) rebuildTxnStateLocked(segs []*segment, leo int64) (*txnState, error) {
	first := segs[0].baseOffset
	if err := l.deleteSnapshotsLocked(func(off int64) bool { return off > leo || off < first }); err != nil {
		return nil, err
	}
	limit := leo
	for _, s := range segs {
		if s.txnIndexSuspect {
			l.logger.Warn("storage: rebuilding unreadable transaction index", "segment", s.baseOffset)
			limit = min(limit, s.baseOffset)
		}
	}
	for _, s := range segs {
		// Entries past the end of their segment (data lost in a crash).
		if e := s.txnIndex.snapshot(); len(e) > 0 && e[len(e)-1].LastOffset >= s.nextOffset {
			if err := s.txnIndex.truncateTo(s.nextOffset); err != nil {
				return nil, err
			}
			if err := s.txnIndex.sync(); err != nil {
				return nil, err
			}
		}
	}
	st, start := (*txnState)(nil), first
	for i := len(l.snapshots) - 1; i >= 0 && st == nil; i-- {
		off := l.snapshots[i]
		if off > limit {
			continue
		}
		loaded, err := l.readSnapshot(off)
		if err == nil {
			st, start = loaded, off
			break
		}
		if !errors.Is(err, ErrSnapshotCorrupt) {
			return nil, err
		}
		l.logger.Warn("storage: deleting unreadable transaction snapshot", "offset", off, "err", err)
		if err := l.deleteSnapshotsLocked(func(o int64) bool { return o == off }); err != nil {
			return nil, err
		}
	}
	if st == nil {
		st = newTxnState()
		if leo > first {
			l.logger.Info("storage: no usable transaction snapshot; rebuilding transaction state from the log start", "from", first, "to", leo)
		}
	}
	for _, s := range segs {
		if s.nextOffset <= start && !s.txnIndexSuspect {
			continue
		}
		replayed, err := replaySegmentTxns(s, start, st, l)
		if err != nil {
			return nil, err
		}
		if err := s.reconcileTxnIndex(start, replayed, l); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// replaySegmentTxns applies the batches of s from offset start on to st
// and returns the transactions they abort.
// REQUIRES: Log.writeMu held.
func replaySegmentTxns(s *segment, start int64, st *txnState, l *Log) ([]AbortedTxn, error) {
	pos := int64(0)
	if start > s.baseOffset {
		pos = s.offsetIndex.lookup(start)
	}
	var aborted []AbortedTxn
	_, err := scanBatches(s.log, pos, s.size, false, func(h batchHeader, bpos int64, _ []byte) error {
		if h.LastOffset() < start || !st.affects(h) {
			return nil
		}
		var m txnMarker
		if h.IsControl() {
			b := make([]byte, h.TotalSize())
			if _, err := s.log.ReadAt(b, bpos); err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("storage: read control batch: %w", err)
			}
			var err error
			if m, err = parseMarker(b); err != nil {
				l.logger.Warn("storage: ignoring unreadable control batch", "offset", h.BaseOffset, "err", err)
				return nil
			}
		}
		if a, ok := st.apply(h, m); ok {
			aborted = append(aborted, a)
		}
		return nil
	})
	return aborted, err
}

// reconcileTxnIndex makes the entries of s with a marker at or after start
// equal replayed, rewriting the file only if they differ (or the file was
// suspect), and drops entries past the segment's end.
// REQUIRES: Log.writeMu held.
func (s *segment) reconcileTxnIndex(start int64, replayed []AbortedTxn, l *Log) error {
	entries := s.txnIndex.snapshot()
	i := sort.Search(len(entries), func(i int) bool { return entries[i].LastOffset >= start })
	if !s.txnIndexSuspect && slices.Equal(entries[i:], replayed) {
		return nil
	}
	want := append(slices.Clone(entries[:i]), replayed...)
	if s.txnIndexSuspect {
		want = replayed
	}
	created, err := s.txnIndex.reset(want)
	if err != nil {
		return err
	}
	if s.txnIndex.file != nil {
		if err := s.txnIndex.sync(); err != nil {
			return err
		}
	}
	if created {
		if err := l.fs.SyncDir(filepath.Dir(s.txnIndex.name)); err != nil {
			return fmt.Errorf("storage: sync log dir: %w", err)
		}
	}
	s.txnIndexSuspect = false
	return nil
}
