package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire"
)

func FuzzParseOffsetIndex(f *testing.F) {
	f.Add([]byte{})
	f.Add(append(encodeOffsetEntry(offsetEntry{1, 0}), encodeOffsetEntry(offsetEntry{5, 300})...))
	f.Add([]byte{0, 0, 0, 1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := parseOffsetIndex(b)
		if err != nil {
			return
		}
		ix := &offsetIndex{entries: entries, baseOffset: 100}
		for i := 1; i < len(entries); i++ {
			if entries[i].RelativeOffset <= entries[i-1].RelativeOffset || entries[i].Position < entries[i-1].Position {
				t.Fatalf("unsorted entries accepted: %v", entries)
			}
		}
		for _, off := range []int64{-1, 0, 100, 101, 1 << 40} {
			if p := ix.lookup(off); p < 0 {
				t.Fatalf("negative position %d", p)
			}
		}
	})
}

func FuzzParseTimeIndex(f *testing.F) {
	f.Add([]byte{})
	f.Add(append(encodeTimeEntry(timeEntry{10, 0}), encodeTimeEntry(timeEntry{20, 4})...))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := parseTimeIndex(b)
		if err != nil {
			return
		}
		ix := &timeIndex{entries: entries, baseOffset: 7}
		for _, ts := range []int64{-1, 0, 15, 1 << 62} {
			if off := ix.lookup(ts); off < 7 {
				t.Fatalf("lookup(%d) = %d below base", ts, off)
			}
		}
	})
}

func FuzzCheckpoints(f *testing.F) {
	f.Add([]byte("0\n1\ntopic 0 5\n"))
	f.Add([]byte("0\n2\n0 0\n3 10\n"))
	f.Add([]byte("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := parseOffsetCheckpoint(b); err == nil {
			if again, err := parseOffsetCheckpoint(encodeOffsetCheckpoint(m)); err != nil || len(again) != len(m) {
				t.Fatalf("offset checkpoint round trip: %v", err)
			}
		}
		if e, err := parseLeaderEpochCheckpoint(b); err == nil {
			if again, err := parseLeaderEpochCheckpoint(encodeLeaderEpochCheckpoint(e)); err != nil || len(again) != len(e) {
				t.Fatalf("epoch checkpoint round trip: %v", err)
			}
		}
		_, _ = parsePartitionMetadata(b)
	})
}

// FuzzRecoverSegment writes random bytes as a segment (and optionally as its
// index) and opens the log: it must never panic, and what it keeps must read
// back as intact batches.
func FuzzRecoverSegment(f *testing.F) {
	valid := append(testBatch(2, 1000, 10), testBatch(3, 2000, 20)...)
	f.Add(valid, []byte{}, int64(-1))
	f.Add(valid[:len(valid)-3], []byte{}, int64(5))
	f.Add(append(valid, 1, 2, 3), encodeOffsetEntry(offsetEntry{4, 32}), int64(0))
	f.Add([]byte("garbage"), []byte("x"), int64(100))
	f.Fuzz(func(t *testing.T, logBytes, indexBytes []byte, recoveryPoint int64) {
		fsys := vfs.NewMem()
		fsys.MkdirAll("/d/t-0")
		for name, data := range map[string][]byte{
			"/d/t-0/00000000000000000000.log":   logBytes,
			"/d/t-0/00000000000000000000.index": indexBytes,
			"/d/t-0/00000000000000000009.log":   logBytes,
		} {
			w, _ := fsys.Create(name)
			w.Write(data)
			w.Close()
		}
		l, err := OpenLog(LogOptions{FS: fsys, Dir: "/d/t-0", Config: smallConfig(), Now: newClock().now, RecoveryPoint: recoveryPoint, LogStartOffset: -1})
		if err != nil {
			return
		}
		defer l.Close()
		// Only the scanned segments are guaranteed clean; read from the active one.
		l.mu.Lock()
		active := l.mu.segments[len(l.mu.segments)-1].baseOffset
		l.mu.Unlock()
		next := max(active, l.LogStartOffset())
		for next < l.LogEndOffset() {
			b, err := l.Read(next, 1<<20, l.LogEndOffset(), true)
			if errors.Is(err, ErrCorrupt) {
				break // a damaged range kept on disk: never served
			}
			if err != nil {
				t.Fatalf("read %d: %v", next, err)
			}
			if len(b) == 0 {
				break
			}
			h, err := parseBatchHeader(b)
			if err != nil || batchCRC(b[:h.TotalSize()]) != h.CRC {
				t.Fatalf("recovered log returned a bad batch: %v", err)
			}
			next = h.LastOffset() + 1
		}
		l.OffsetForTimestamp(1500)
		l.MaxTimestamp()
		if _, err := l.Append(testBatch(1, 1, 1)); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
	})
}

// FuzzDecodeSnapshot decodes random bytes as a transaction and producer
// state snapshot (any version): it must never panic, what decodes must
// re-encode to the same bytes, and a decoded state must keep its
// invariants (offsets below the snapshot's, windows within
// ProducerBatchWindow, every open transaction's producer known).
func FuzzDecodeSnapshot(f *testing.F) {
	st, ps := newTxnState(), producerStates{}
	for _, h := range []batchHeader{
		{BaseOffset: 1, ProducerID: 5, Attributes: 0x10, BaseSequence: 0, MaxTimestamp: 10},
		{BaseOffset: 2, ProducerID: 6, ProducerEpoch: 1, BaseSequence: 7, LastOffsetDelta: 2, MaxTimestamp: 11},
		{BaseOffset: 5, ProducerID: 6, ProducerEpoch: 1, BaseSequence: 10, MaxTimestamp: 12},
	} {
		st.apply(h, txnMarker{})
		ps.apply(h, txnMarker{})
	}
	ps.apply(batchHeader{BaseOffset: 6, ProducerID: 7, ProducerEpoch: 2, Attributes: 0x30, MaxTimestamp: 13}, txnMarker{valid: true, coordinatorEpoch: 3})
	f.Add(encodeSnapshot(7, st, ps))
	f.Add(encodeSnapshot(0, newTxnState(), producerStates{}))
	f.Add(encodeSnapshotV0(3, []OngoingTxn{{ProducerID: 5, FirstOffset: 1}}))
	check := func(t *testing.T, b []byte) {
		off := int64(binary.BigEndian.Uint64(b[10:]))
		gotTxns, gotProducers, err := decodeSnapshot(b, off)
		if err != nil {
			return
		}
		for id, e := range gotProducers {
			pe := e.entry(id, gotTxns)
			if len(pe.Batches()) > ProducerBatchWindow {
				t.Fatalf("producer %d: window of %d", id, len(pe.Batches()))
			}
			for _, pb := range pe.Batches() {
				if pb.LastOffset >= off || pb.FirstOffset > pb.LastOffset {
					t.Fatalf("producer %d: batch %+v in a snapshot at %d", id, pb, off)
				}
			}
		}
		for id := range gotTxns.ongoing {
			if gotProducers[id] == nil {
				t.Fatalf("open transaction of unknown producer %d", id)
			}
		}
		if again := encodeSnapshot(off, gotTxns, gotProducers); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", again, b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 18 {
			_, _, _ = decodeSnapshot(b, 0)
			return
		}
		check(t, b)
		// The same bytes with a correct CRC, so that the fuzzer gets past
		// the checksum into the entries.
		fixed := bytes.Clone(b)
		binary.BigEndian.PutUint32(fixed[6:], crc32.Checksum(fixed[10:], castagnoli))
		check(t, fixed)
	})
}

// FuzzCleanerFilterBatch feeds arbitrary batches to the cleaner's record
// filter, with a key map built from the batch itself (so every key but
// its last record is superseded): it must never panic, and what it writes
// must be a valid batch with the input's base offset and last offset
// delta, the kept records only, and at most one record per key.
func FuzzCleanerFilterBatch(f *testing.F) {
	for _, codec := range []wire.Compression{wire.CompressionNone, wire.CompressionGzip, wire.CompressionZstd} {
		b, err := wire.EncodeBatch(wire.BatchSpec{BaseOffset: 100, ProducerID: -1, BaseSequence: -1, Compression: codec, Records: []wire.Record{
			{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("a"), Value: []byte("2")},
			{Key: []byte("b")}, {Value: []byte("keyless")}, {Key: []byte("c"), Value: []byte("3")},
		}})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Fuzz(func(t *testing.T, b []byte, keepEmpty bool) {
		h, err := parseBatchHeader(b)
		if err != nil || h.TotalSize() < batchHeaderSize || h.TotalSize() > len(b) {
			return
		}
		// Batches in a log passed their CRC check; the fuzzer's rarely do.
		b = append([]byte(nil), b[:h.TotalSize()]...)
		wire.RecomputeCRC(b)
		if h, err = parseBatchHeader(b); err != nil {
			return
		}
		m := newOffsetMap()
		scratch, err := addToMap(m, b, h, newAbortedSet(nil), nil)
		if err != nil {
			return
		}
		out, kept, _, err := filterBatch(b, h, filterInput{offsets: m, aborted: newAbortedSet(nil), removeTombstones: keepEmpty, keepEmpty: keepEmpty}, scratch)
		if err != nil {
			return
		}
		if out == nil {
			if keepEmpty || h.IsControl() {
				t.Fatalf("batch dropped with keepEmpty=%v control=%v", keepEmpty, h.IsControl())
			}
			return
		}
		oh, err := parseBatchHeader(out)
		if err != nil || oh.TotalSize() != len(out) || batchCRC(out) != oh.CRC {
			t.Fatalf("filtered batch invalid: %v, size %d of %d", err, oh.TotalSize(), len(out))
		}
		if oh.BaseOffset != h.BaseOffset || oh.LastOffsetDelta != h.LastOffsetDelta || int(oh.NumRecords) != kept || kept > int(h.NumRecords) {
			t.Fatalf("header %+v from %+v, kept %d", oh, h, kept)
		}
		if h.IsControl() || kept == int(h.NumRecords) {
			return
		}
		if _, in, err := wire.DecodeRecords(b[:h.TotalSize()]); err != nil || len(in) != int(h.NumRecords) {
			return // only well-formed inputs promise a well-formed output
		}
		_, recs, err := wire.DecodeRecords(out)
		if err != nil || len(recs) != kept {
			t.Fatalf("filtered records: %v, %d of %d", err, len(recs), kept)
		}
		seen := map[string]bool{}
		for _, r := range recs {
			if r.Key == nil {
				continue
			}
			if seen[string(r.Key)] {
				t.Fatalf("key %q kept twice", r.Key)
			}
			seen[string(r.Key)] = true
		}
	})
}
