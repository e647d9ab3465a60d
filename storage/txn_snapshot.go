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

// snapshotSuffix names state snapshots, "%020d.snapshot" by the offset
// they were taken at (Kafka's producer snapshot file name).
const snapshotSuffix = ".snapshot"

// Snapshot format, version 1 (all integers big-endian):
//
//	 0 magic          "SMTX"
//	 4 version        uint16 = 1
//	 6 crc            uint32  CRC-32C (Castagnoli) of bytes 10..end
//	10 offset         int64   the snapshot's offset, equal to the file name's
//	18 txn count      uint32
//	22 txn entries    18 bytes each, by first offset (strictly ascending):
//	                    producer id int64, producer epoch int16, first offset int64
//	   producer count uint32
//	   producers      by producer id (strictly ascending), each:
//	                    producer id        int64
//	                    producer epoch     int16
//	                    coordinator epoch  int32  (-1: no marker yet)
//	                    last timestamp     int64  (-1: none)
//	                    batch count        uint8  (0..5)
//	                    batch count × (first seq int32, last seq int32,
//	                                   first offset int64, last offset int64),
//	                    oldest first, offsets ascending
//
// A snapshot at offset S holds the transactions open and the producer
// state after every batch below S: every offset in it is below S, and
// every open transaction's producer has a producer entry. The magic keeps
// a Kafka producer snapshot (version int16 1 first) from being read as
// ours.
//
// Version 0 was the same header and transaction entries with nothing
// after them (no producer state).
//
// Migration: a reader rejects versions it does not know, and a rejected
// snapshot only costs a longer replay, so a new version may simply be
// written by new code. Version 1 readers skip version 0 files (deleting
// them): they lack the producer state, so recovery replays from an older
// version 1 snapshot or the first segment, once, after the upgrade. A new
// version should read version 1 when it holds all it needs.
const (
	snapshotMagic      = "SMTX"
	snapshotVersion    = 1
	snapshotHeaderSize = 22
	snapshotTxnSize    = 18
	// snapshotProducerSize is a producer entry without its batches.
	snapshotProducerSize = 23
	snapshotBatchSize    = 24
)

// ErrSnapshotCorrupt marks a transaction snapshot that fails its checks.
var ErrSnapshotCorrupt = errors.New("storage: corrupt transaction snapshot")

// errSnapshotV0 marks a version 0 snapshot: readable, but without the
// producer state.
var errSnapshotV0 = errors.New("storage: version 0 snapshot has no producer state")

func encodeSnapshot(offset int64, st *txnState, ps producerStates) []byte {
	txns := st.sorted()
	ids := ps.sortedIDs()
	be := binary.BigEndian
	size := snapshotHeaderSize + len(txns)*snapshotTxnSize + 4
	for _, id := range ids {
		size += snapshotProducerSize + int(ps[id].numBatches)*snapshotBatchSize
	}
	b := make([]byte, 0, size)
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
	b = be.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		e := ps[id]
		b = be.AppendUint64(b, uint64(id))
		b = be.AppendUint16(b, uint16(e.epoch))
		b = be.AppendUint32(b, uint32(e.coordinatorEpoch))
		b = be.AppendUint64(b, uint64(e.lastTimestamp))
		b = append(b, e.numBatches)
		for _, pb := range e.batches[:e.numBatches] {
			b = be.AppendUint32(b, uint32(pb.FirstSeq))
			b = be.AppendUint32(b, uint32(pb.LastSeq))
			b = be.AppendUint64(b, uint64(pb.FirstOffset))
			b = be.AppendUint64(b, uint64(pb.LastOffset))
		}
	}
	be.PutUint32(b[6:], crc32.Checksum(b[10:], castagnoli))
	return b
}

// decodeSnapshot parses a snapshot that must have been taken at offset.
// A version 0 snapshot is an error wrapping errSnapshotV0 (after its
// header and CRC checked out).
func decodeSnapshot(b []byte, offset int64) (*txnState, producerStates, error) {
	be := binary.BigEndian
	corrupt := func(format string, args ...any) (*txnState, producerStates, error) {
		return nil, nil, fmt.Errorf("%w: %s", ErrSnapshotCorrupt, fmt.Sprintf(format, args...))
	}
	if len(b) < snapshotHeaderSize || string(b[:4]) != snapshotMagic {
		return corrupt("bad header")
	}
	v := be.Uint16(b[4:])
	if v != snapshotVersion && v != 0 {
		return corrupt("unknown version %d", v)
	}
	if crc := crc32.Checksum(b[10:], castagnoli); crc != be.Uint32(b[6:]) {
		return corrupt("CRC %08x, computed %08x", be.Uint32(b[6:]), crc)
	}
	if got := int64(be.Uint64(b[10:])); got != offset {
		return corrupt("offset %d in a file named %d", got, offset)
	}
	if v == 0 {
		return nil, nil, errSnapshotV0
	}
	p := int64(snapshotHeaderSize)
	n := int64(be.Uint32(b[18:]))
	if int64(len(b))-p < n*snapshotTxnSize+4 {
		return corrupt("%d transactions in %d bytes", n, len(b))
	}
	st := newTxnState()
	for prev := int64(-1); n > 0; n, p = n-1, p+snapshotTxnSize {
		t := OngoingTxn{
			ProducerID:    int64(be.Uint64(b[p:])),
			ProducerEpoch: int16(be.Uint16(b[p+8:])),
			FirstOffset:   int64(be.Uint64(b[p+10:])),
		}
		_, dup := st.ongoing[t.ProducerID]
		if dup || t.ProducerID < 0 || t.FirstOffset <= prev || t.FirstOffset >= offset {
			return corrupt("transaction %+v", t)
		}
		prev = t.FirstOffset
		st.ongoing[t.ProducerID] = t
		if st.firstUnstable < 0 {
			st.firstUnstable = t.FirstOffset
		}
	}
	n = int64(be.Uint32(b[p:]))
	p += 4
	if int64(len(b))-p < n*snapshotProducerSize {
		return corrupt("%d producers in %d bytes", n, len(b))
	}
	ps := make(producerStates, n)
	for prev := int64(-1); n > 0; n-- {
		if int64(len(b))-p < snapshotProducerSize {
			return corrupt("producer entry past the end")
		}
		id := int64(be.Uint64(b[p:]))
		e := &producerEntry{
			epoch:            int16(be.Uint16(b[p+8:])),
			coordinatorEpoch: int32(be.Uint32(b[p+10:])),
			lastTimestamp:    int64(be.Uint64(b[p+14:])),
			numBatches:       b[p+22],
		}
		p += snapshotProducerSize
		if id <= prev || e.numBatches > ProducerBatchWindow || int64(len(b))-p < int64(e.numBatches)*snapshotBatchSize {
			return corrupt("producer %d", id)
		}
		prev = id
		lastEnd := int64(-1)
		for i := range e.batches[:e.numBatches] {
			pb := ProducerBatch{
				FirstSeq:    int32(be.Uint32(b[p:])),
				LastSeq:     int32(be.Uint32(b[p+4:])),
				FirstOffset: int64(be.Uint64(b[p+8:])),
				LastOffset:  int64(be.Uint64(b[p+16:])),
			}
			p += snapshotBatchSize
			if pb.FirstOffset <= lastEnd || pb.LastOffset < pb.FirstOffset || pb.LastOffset >= offset {
				return corrupt("producer %d batch %+v", id, pb)
			}
			lastEnd = pb.LastOffset
			e.batches[i] = pb
		}
		ps[id] = e
	}
	if p != int64(len(b)) {
		return corrupt("%d trailing bytes", int64(len(b))-p)
	}
	for id := range st.ongoing {
		if ps[id] == nil {
			return corrupt("open transaction of producer %d without a producer entry", id)
		}
	}
	return st, ps, nil
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
	names, err := l.fs.ReadDir(l.Dir())
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

// writeSnapshotLocked durably writes the current transaction and producer
// state as the snapshot at offset, the log end offset. Every batch below
// offset and the transaction indexes covering them must already be
// durable: that is what lets recovery trust a snapshot at any offset up to
// the log end.
// REQUIRES: l.writeMu held.
func (l *Log) writeSnapshotLocked(offset int64) error {
	name := segmentFileName(l.Dir(), offset, snapshotSuffix)
	if err := writeFileAtomic(l.fs, name, encodeSnapshot(offset, l.txns, l.producers)); err != nil {
		return err
	}
	l.producersRemoved = false
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
		if err := l.fs.Remove(segmentFileName(l.Dir(), off, snapshotSuffix)); err != nil && l.fs.Exists(segmentFileName(l.Dir(), off, snapshotSuffix)) {
			kept = append(kept, off)
			if firstErr == nil {
				firstErr = fmt.Errorf("storage: remove snapshot: %w", err)
			}
		}
	}
	l.snapshots = kept
	if removed && firstErr == nil {
		if err := l.fs.SyncDir(l.Dir()); err != nil {
			firstErr = fmt.Errorf("storage: sync log dir: %w", err)
		}
	}
	return firstErr
}

// snapshotAtCloseLocked writes a snapshot at the log end offset (after a
// flush) unless one exists and no producer was removed since, and drops the older snapshots inside the
// active segment except the one at its base: restarts then replay nothing,
// and repeated restarts leave at most two snapshots per segment.
// REQUIRES: l.writeMu held.
func (l *Log) snapshotAtCloseLocked() error {
	l.mu.Lock()
	leo := l.mu.logEndOffset
	activeBase := l.mu.segments[len(l.mu.segments)-1].baseOffset
	l.mu.Unlock()
	if _, found := slices.BinarySearch(l.snapshots, leo); !found || l.producersRemoved {
		if err := l.writeSnapshotLocked(leo); err != nil {
			return err
		}
	}
	return l.deleteSnapshotsLocked(func(off int64) bool { return off > activeBase && off < leo })
}

// readSnapshot reads and decodes the snapshot at offset.
func (l *Log) readSnapshot(offset int64) (*txnState, producerStates, error) {
	b, err := readFile(l.fs, segmentFileName(l.Dir(), offset, snapshotSuffix))
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return nil, nil, fmt.Errorf("%w: %w", ErrSnapshotCorrupt, err)
		}
		return nil, nil, fmt.Errorf("storage: read snapshot: %w", err)
	}
	return decodeSnapshot(b, offset)
}

// rebuildStateLocked recomputes the transaction and producer state of
// segs, whose log ends at leo: it loads the newest usable snapshot at or
// below leo (and below any segment whose transaction index is suspect),
// replays the batch headers from there to leo, and rewrites the
// transaction indexes of the replayed range where they differ from the
// replay (so entries are never duplicated, and missing or stale ones are
// repaired). Without a usable snapshot it replays from the first segment.
// Snapshots above leo or below the first segment are deleted, and so are
// unreadable and version 0 ones. Changed indexes are synced.
// REQUIRES: l.writeMu held (or the Log not yet shared).
func (l *Log) rebuildStateLocked(segs []*segment, leo int64) (*txnState, producerStates, error) {
	first := segs[0].baseOffset
	if err := l.deleteSnapshotsLocked(func(off int64) bool { return off > leo || off < first }); err != nil {
		return nil, nil, err
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
				return nil, nil, err
			}
			if err := s.txnIndex.sync(); err != nil {
				return nil, nil, err
			}
		}
	}
	st, ps, start := (*txnState)(nil), producerStates(nil), first
	for i := len(l.snapshots) - 1; i >= 0 && st == nil; i-- {
		off := l.snapshots[i]
		if off > limit {
			continue
		}
		loadedTxns, loadedProducers, err := l.readSnapshot(off)
		switch {
		case err == nil:
			st, ps, start = loadedTxns, loadedProducers, off
			continue
		case errors.Is(err, errSnapshotV0):
			l.logger.Info("storage: deleting version 0 transaction snapshot (no producer state)", "offset", off)
		case errors.Is(err, ErrSnapshotCorrupt):
			l.logger.Warn("storage: deleting unreadable transaction snapshot", "offset", off, "err", err)
		default:
			return nil, nil, err
		}
		if err := l.deleteSnapshotsLocked(func(o int64) bool { return o == off }); err != nil {
			return nil, nil, err
		}
	}
	if st == nil {
		st, ps = newTxnState(), producerStates{}
		if leo > first {
			l.logger.Info("storage: no usable transaction snapshot; rebuilding transaction and producer state from the log start", "from", first, "to", leo)
		}
	}
	for _, s := range segs {
		if s.nextOffset <= start && !s.txnIndexSuspect {
			continue
		}
		replayed, err := replaySegment(s, start, st, ps, l)
		if err != nil {
			return nil, nil, err
		}
		if err := s.reconcileTxnIndex(start, replayed, l); err != nil {
			return nil, nil, err
		}
	}
	return st, ps, nil
}

// replaySegment applies the batches of s from offset start on to st and
// ps and returns the transactions they abort.
// REQUIRES: Log.writeMu held.
func replaySegment(s *segment, start int64, st *txnState, ps producerStates, l *Log) ([]AbortedTxn, error) {
	pos := int64(0)
	if start > s.baseOffset {
		pos = s.offsetIndex.lookup(start)
	}
	var aborted []AbortedTxn
	var buf []byte
	err := s.scanIntact(pos, s.size, false, func(h batchHeader, bpos int64, _ []byte) error {
		if h.LastOffset() < start || h.ProducerID < 0 {
			return nil
		}
		var m txnMarker
		if h.IsControl() {
			if cap(buf) < h.TotalSize() {
				buf = make([]byte, h.TotalSize())
			}
			b := buf[:h.TotalSize()]
			if _, err := s.log.ReadAt(b, bpos); err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("storage: read control batch: %w", err)
			}
			var err error
			if m, err = parseMarker(b); err != nil {
				l.logger.Warn("storage: ignoring unreadable control batch", "offset", h.BaseOffset, "err", err)
				return nil
			}
		}
		if st.affects(h) {
			if a, ok := st.apply(h, m); ok {
				aborted = append(aborted, a)
			}
		}
		ps.apply(h, m)
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
