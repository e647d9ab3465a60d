package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire"
)

// seqBatch builds a batch of n records of producer pid at epoch and base
// sequence seq, with max timestamp ts.
func seqBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, ts int64, transactional bool) []byte {
	t.Helper()
	recs := make([]wire.Record, n)
	for i := range recs {
		recs[i] = wire.Record{Value: bytes.Repeat([]byte{'p'}, 90)}
	}
	b, err := wire.EncodeBatch(wire.BatchSpec{
		BaseTimestamp: ts, MaxTimestamp: ts, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq,
		Transactional: transactional, PartitionLeaderEpoch: -1, Records: recs,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// oracleBatch is what producerOracle needs of a batch.
type oracleBatch struct {
	h                batchHeader
	marker           bool // a commit or abort marker (control batches only)
	coordinatorEpoch int32
}

// producerOracle computes the producer state that a sequence of batches
// implies, written out plainly and apart from producerStates.apply, as a
// check on it (and on snapshots, replay and truncation).
func producerOracle(bs []oracleBatch) []ProducerEntry {
	type state struct {
		e      ProducerEntry
		window []ProducerBatch
	}
	m := map[int64]*state{}
	for _, b := range bs {
		h := b.h
		if h.ProducerID < 0 || (h.IsControl() && !b.marker) {
			continue
		}
		s := m[h.ProducerID]
		if s == nil {
			s = &state{e: ProducerEntry{ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, CoordinatorEpoch: -1, LastTimestamp: -1, CurrentTxnFirstOffset: -1}}
			m[h.ProducerID] = s
		}
		if h.ProducerEpoch != s.e.ProducerEpoch {
			s.e.ProducerEpoch, s.window = h.ProducerEpoch, nil
		}
		if h.IsControl() {
			s.e.CurrentTxnFirstOffset = -1
			s.e.CoordinatorEpoch = b.coordinatorEpoch
			if h.MaxTimestamp > 0 {
				s.e.LastTimestamp = h.MaxTimestamp
			}
			continue
		}
		if h.IsTransactional() && s.e.CurrentTxnFirstOffset < 0 {
			s.e.CurrentTxnFirstOffset = h.BaseOffset
		}
		s.e.LastTimestamp = h.MaxTimestamp
		last := int32((int64(h.BaseSequence) + int64(h.LastOffsetDelta)) % (1 << 31))
		s.window = append(s.window, ProducerBatch{h.BaseSequence, last, h.BaseOffset, h.LastOffset()})
		if len(s.window) > 5 {
			s.window = s.window[1:]
		}
	}
	var out []ProducerEntry
	for _, s := range m {
		s.e.numBatches = copy(s.e.batches[:], s.window)
		out = append(out, s.e)
	}
	slices.SortFunc(out, func(a, b ProducerEntry) int { return int(a.ProducerID - b.ProducerID) })
	return out
}

func entryString(e ProducerEntry) string {
	return fmt.Sprintf("{pid %d epoch %d coord %d ts %d txn %d batches %v}", e.ProducerID, e.ProducerEpoch, e.CoordinatorEpoch, e.LastTimestamp, e.CurrentTxnFirstOffset, e.Batches())
}

func entriesEqual(a, b []ProducerEntry) bool {
	return slices.EqualFunc(a, b, func(x, y ProducerEntry) bool {
		return x.ProducerID == y.ProducerID && x.ProducerEpoch == y.ProducerEpoch && x.CoordinatorEpoch == y.CoordinatorEpoch &&
			x.LastTimestamp == y.LastTimestamp && x.CurrentTxnFirstOffset == y.CurrentTxnFirstOffset && slices.Equal(x.Batches(), y.Batches())
	})
}

func entriesString(es []ProducerEntry) string {
	var sb strings.Builder
	for _, e := range es {
		sb.WriteString(entryString(e))
		sb.WriteString("\n")
	}
	return sb.String()
}

func checkProducers(t testing.TB, what string, got, want []ProducerEntry) {
	t.Helper()
	if !entriesEqual(got, want) {
		t.Fatalf("%s: producers\n%s\nwant\n%s", what, entriesString(got), entriesString(want))
	}
}

// batchesOnDisk returns every batch of every segment of l, below the log
// start offset too, as oracle input.
func batchesOnDisk(t testing.TB, l *Log) []oracleBatch {
	t.Helper()
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	segs := slices.Clone(l.mu.segments)
	l.mu.Unlock()
	var out []oracleBatch
	for _, s := range segs {
		_, err := scanBatches(s.log, 0, s.size, true, func(h batchHeader, _ int64, batch []byte) error {
			ob := oracleBatch{h: h}
			if h.IsControl() {
				_, ce, ok, err := wire.ParseControlBatch(batch)
				if err != nil {
					return err
				}
				ob.marker, ob.coordinatorEpoch = ok, ce
			}
			out = append(out, ob)
			return nil
		})
		if err != nil {
			t.Fatalf("scan segment %d: %v", s.baseOffset, err)
		}
	}
	return out
}

// checkFullReplay checks l's producer state against the oracle over all
// the batches l holds (right when no segment was deleted).
func checkFullReplay(t testing.TB, l *Log, what string) {
	t.Helper()
	checkProducers(t, what, l.Producers(), producerOracle(batchesOnDisk(t, l)))
}

// producerWorkload appends, over several segments: idempotent producers
// 100-102 (102 bumps its epoch halfway), transactional producer 200
// (commits and aborts with growing coordinator epochs, one left open),
// plain batches, and a marker for a producer without state.
func producerWorkload(t testing.TB, l *Log) {
	t.Helper()
	seq := map[int64]int32{}
	ts := int64(1_700_000_000_000)
	for i := 0; i < 48; i++ {
		ts += 10
		pid := int64(100 + i%3)
		epoch := int16(0)
		if pid == 102 && i >= 24 {
			epoch = 1
			if i < 27 {
				seq[pid] = 0
			}
		}
		n := 1 + i%4
		appendHW(t, l, seqBatch(t, pid, epoch, seq[pid], n, ts, false))
		seq[pid] += int32(n)
		switch i % 6 {
		case 1:
			appendHW(t, l, testBatch(2, ts, 40))
		case 2, 4:
			appendHW(t, l, seqBatch(t, 200, 5, seq[200], 2, ts, true))
			seq[200] += 2
		case 5:
			if _, err := l.AppendControl(ControlMarker{ProducerID: 200, ProducerEpoch: 5, Commit: i%12 == 5, CoordinatorEpoch: int32(i), LeaderEpoch: -1, Timestamp: ts + 1}); err != nil {
				t.Fatal(err)
			}
			l.SetHighWatermark(l.LogEndOffset())
		}
	}
	appendHW(t, l, seqBatch(t, 200, 5, seq[200], 1, ts, true)) // left open
	if _, err := l.AppendControl(ControlMarker{ProducerID: 300, ProducerEpoch: 2, Commit: false, CoordinatorEpoch: 9, LeaderEpoch: -1, Timestamp: ts + 2}); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
}

func TestProducerStateRules(t *testing.T) {
	ps := producerStates{}
	h := func(epoch int16, seq int32, n int32, base int64) batchHeader {
		return batchHeader{ProducerID: 7, ProducerEpoch: epoch, BaseSequence: seq, LastOffsetDelta: n - 1, BaseOffset: base, MaxTimestamp: 50 + base}
	}
	for i := int64(0); i < 8; i++ {
		ps.apply(h(0, int32(i), 1, i), txnMarker{})
	}
	e := ps[7].entry(7, newTxnState())
	if b := e.Batches(); len(b) != ProducerBatchWindow || b[0].FirstSeq != 3 || b[4].FirstSeq != 7 || b[4].FirstOffset != 7 || e.LastTimestamp != 57 || e.LastSequence() != 7 {
		t.Fatalf("window %s", entryString(e))
	}
	// A new epoch restarts the window.
	ps.apply(h(1, 0, 2, 8), txnMarker{})
	if e := ps[7].entry(7, newTxnState()); e.ProducerEpoch != 1 || len(e.Batches()) != 1 || e.Batches()[0] != (ProducerBatch{0, 1, 8, 9}) {
		t.Fatalf("after epoch bump %s", entryString(e))
	}
	// A marker with a bumped epoch empties the window and records its
	// coordinator epoch; a control batch that is no marker changes nothing.
	marker := batchHeader{ProducerID: 7, ProducerEpoch: 2, Attributes: 0x30, BaseSequence: -1, BaseOffset: 10, MaxTimestamp: 99}
	ps.apply(marker, txnMarker{valid: true, coordinatorEpoch: 4})
	e = ps[7].entry(7, newTxnState())
	if e.ProducerEpoch != 2 || len(e.Batches()) != 0 || e.CoordinatorEpoch != 4 || e.LastTimestamp != 99 || e.LastSequence() != -1 {
		t.Fatalf("after marker %s", entryString(e))
	}
	unknown := marker
	unknown.ProducerEpoch, unknown.MaxTimestamp = 9, 1000
	ps.apply(unknown, txnMarker{})
	if e2 := ps[7].entry(7, newTxnState()); e2 != e {
		t.Fatalf("unknown control type changed the state: %s", entryString(e2))
	}
	// A marker of an unknown producer creates it; no producer id, nothing.
	ps.apply(batchHeader{ProducerID: 8, ProducerEpoch: 1, Attributes: 0x30, BaseOffset: 11}, txnMarker{valid: true, coordinatorEpoch: 2})
	ps.apply(batchHeader{ProducerID: -1, BaseOffset: 12}, txnMarker{})
	if e := ps[8].entry(8, newTxnState()); len(ps) != 2 || e.ProducerEpoch != 1 || e.CoordinatorEpoch != 2 || e.LastTimestamp != -1 {
		t.Fatalf("states %v, producer 8 %s", ps, entryString(e))
	}
}

func TestBatchLastSequenceWraps(t *testing.T) {
	for _, tc := range []struct {
		first, delta, want int32
	}{
		{0, 0, 0},
		{5, 4, 9},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 1, 3, 1},
	} {
		if got := BatchLastSequence(wire.BatchHeader{BaseSequence: tc.first, LastOffsetDelta: tc.delta}); got != tc.want {
			t.Errorf("BatchLastSequence(%d+%d) = %d, want %d", tc.first, tc.delta, got, tc.want)
		}
	}
}

func TestProducerStateTracksAppends(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", smallConfig(), newClock())
	defer l.Close()
	producerWorkload(t, l)
	checkFullReplay(t, l, "live")
	e, ok := l.Producer(200)
	if !ok || e.CurrentTxnFirstOffset < 0 || e.ProducerEpoch != 5 || e.CoordinatorEpoch != 47 {
		t.Fatalf("producer 200: %v %s", ok, entryString(e))
	}
	if e, ok := l.Producer(300); !ok || e.ProducerEpoch != 2 || e.CoordinatorEpoch != 9 || len(e.Batches()) != 0 {
		t.Fatalf("producer 300 (marker only): %v %s", ok, entryString(e))
	}
	if _, ok := l.Producer(-1); ok {
		t.Fatal("plain batches made a producer")
	}
	if _, ok := l.Producer(4242); ok {
		t.Fatal("unknown producer reported")
	}
}

// rewriteProducerID changes the producer id of the batch at pos of a
// segment file and fixes its CRC, as if the file held another batch: a
// replay of that segment would see the new producer.
func rewriteProducerID(t testing.TB, fsys vfs.FS, name string, pos int64, pid int64) {
	t.Helper()
	f, err := fsys.OpenReadWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hb := make([]byte, batchHeaderSize)
	if _, err := f.ReadAt(hb, pos); err != nil {
		t.Fatal(err)
	}
	h, err := parseBatchHeader(hb)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, h.TotalSize())
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint64(b[43:], uint64(pid))
	wire.RecomputeCRC(b)
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

// TestProducerStateRestartFromSnapshot: after a clean close, the state
// comes back from the snapshot written at close, without reading the
// earlier segments. To tell, the first batch of the first segment is
// rewritten to belong to producer 999: a replay would report it.
func TestProducerStateRestartFromSnapshot(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig()
	l, _ := openLogged(t, fsys, cfg, -1)
	producerWorkload(t, l)
	if n := len(l.mu.segments); n < 4 {
		t.Fatalf("workload spans %d segments, want several", n)
	}
	before := l.Producers()
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rewriteProducerID(t, fsys, segmentFileName("/d/t-0", 0, logSuffix), 0, 999)
	for i := 0; i < 2; i++ {
		l2, lines := openLogged(t, fsys, cfg, leo)
		if lines.has("no usable transaction snapshot") {
			t.Fatal("clean restart replayed from the log start")
		}
		checkProducers(t, fmt.Sprintf("restart %d", i), l2.Producers(), before)
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Without snapshots the replay does see the rewritten batch: the test
	// above would have noticed a replay.
	for _, n := range snapshotFiles(t, fsys) {
		if err := fsys.Remove("/d/t-0/" + n); err != nil {
			t.Fatal(err)
		}
	}
	l3, lines := openLogged(t, fsys, cfg, leo)
	defer l3.Close()
	if !lines.has("no usable transaction snapshot") {
		t.Fatal("expected a full replay")
	}
	if _, ok := l3.Producer(999); !ok {
		t.Fatal("full replay did not see the rewritten batch")
	}
	checkFullReplay(t, l3, "full replay")
}

// TestProducerStateAfterCrash: a crash keeps only synced data; the state
// after reopening is what a replay of the recovered log gives, whether
// the crash lost nothing or an unsynced tail.
func TestProducerStateAfterCrash(t *testing.T) {
	for _, flushEach := range []bool{true, false} {
		t.Run(fmt.Sprintf("flush.messages=1:%v", flushEach), func(t *testing.T) {
			fsys := vfs.NewMem()
			cfg := smallConfig()
			if flushEach {
				cfg.FlushIntervalMessages = 1
			}
			l, _ := openLogged(t, fsys, cfg, -1)
			producerWorkload(t, l)
			before := l.Producers()
			if !flushEach {
				// Lose what follows the last flush: part of the state.
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
				appendHW(t, l, seqBatch(t, 100, 0, 1000, 2, 1, false))
				appendHW(t, l, seqBatch(t, 500, 0, 0, 2, 1, true))
			}
			crashed := fsys.CrashClone()
			l.Close()
			l2, lines := openLogged(t, crashed, cfg, 0)
			defer l2.Close()
			if lines.has("no usable transaction snapshot") {
				t.Fatal("crash restart replayed from the log start although roll snapshots exist")
			}
			checkFullReplay(t, l2, "after crash")
			checkProducers(t, "after crash", l2.Producers(), before)
		})
	}
}

func TestProducerStateTruncation(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig()
	l, _ := openLogged(t, fsys, cfg, -1)
	producerWorkload(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, _ = openLogged(t, fsys, cfg, -1)
	defer func() { l.Close() }()
	hs := readAll(t, l, 0)
	// Cut the last batch, then into the middle of a segment, then at a
	// segment base (a snapshot offset), then where producer 102's epoch
	// changed.
	cuts := []int64{hs[len(hs)-1].BaseOffset, hs[len(hs)*3/4].BaseOffset + 1, l.mu.segments[2].baseOffset}
	for _, h := range hs {
		if h.ProducerID == 102 && h.ProducerEpoch == 1 {
			cuts = append(cuts, h.BaseOffset)
			break
		}
	}
	for _, cut := range cuts {
		if err := l.TruncateTo(cut); err != nil {
			t.Fatal(err)
		}
		checkFullReplay(t, l, fmt.Sprintf("truncated to %d", cut))
		// New appends after a truncation go on from the reloaded state.
		appendHW(t, l, seqBatch(t, 100, 0, 0, 1, 5, false))
		checkFullReplay(t, l, fmt.Sprintf("append after truncation to %d", cut))
		if err := l.TruncateTo(l.LogEndOffset() - 1); err != nil {
			t.Fatal(err)
		}
	}
	got := l.Producers()
	l.Close()
	l, _ = openLogged(t, fsys, cfg, -1)
	checkProducers(t, "reopened after truncations", l.Producers(), got)
	if err := l.TruncateFullyAndStartAt(1000); err != nil {
		t.Fatal(err)
	}
	if ps := l.Producers(); len(ps) != 0 {
		t.Fatalf("producers after a full truncation: %s", entriesString(ps))
	}
}

// TestProducerStateSurvivesDeleteRecordsAndRetention: moving the log
// start offset keeps the producer state (Kafka since KIP-360: producers
// go by expiry only), and a restart, clean or not, gives the same state
// from the snapshots that remain.
func TestProducerStateSurvivesDeleteRecordsAndRetention(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig()
	cfg.FlushIntervalMessages = 1
	l, _ := openLogged(t, fsys, cfg, -1)
	producerWorkload(t, l)
	before := l.Producers()
	hs := readAll(t, l, 0)
	start, err := l.DeleteRecordsBefore(hs[len(hs)/2].BaseOffset + 1)
	if err != nil {
		t.Fatal(err)
	}
	if l.mu.segments[0].baseOffset == 0 {
		t.Fatal("DeleteRecords deleted no segment")
	}
	checkProducers(t, "after DeleteRecords", l.Producers(), before)
	cfg.RetentionBytes = 2 * cfg.SegmentBytes
	l.SetConfig(cfg)
	if n, err := l.EnforceRetention(newClock().now()); err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments: %v", n, err)
	}
	checkProducers(t, "after retention", l.Producers(), before)
	for _, n := range snapshotFiles(t, fsys) {
		if off, _ := parseSnapshotOffset(n); off < l.mu.segments[0].baseOffset {
			t.Fatalf("snapshot %s below the first segment %d", n, l.mu.segments[0].baseOffset)
		}
	}
	crashed := fsys.CrashClone()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for name, fs := range map[string]vfs.FS{"clean": fsys, "crash": crashed} {
		l2, err := OpenLog(LogOptions{FS: fs, Dir: "/d/t-0", Config: cfg, Now: newClock().now, RecoveryPoint: -1, LogStartOffset: start})
		if err != nil {
			t.Fatal(err)
		}
		checkProducers(t, name+" restart", l2.Producers(), before)
		l2.Close()
	}
}

// encodeSnapshotV0 writes a version 0 snapshot (open transactions only).
func encodeSnapshotV0(offset int64, txns []OngoingTxn) []byte {
	be := binary.BigEndian
	b := append([]byte(snapshotMagic), 0, 0, 0, 0, 0, 0)
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

func writeTestFile(t testing.TB, fsys vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestProducerStateIgnoresV0Snapshots: a version 0 snapshot (written
// before producer state was kept) is deleted and never loaded; the state
// comes from an older version 1 snapshot or the first segment. Each v0
// file here claims a transaction of producer 4242 open at offset 0, which
// would show if it were used.
func TestProducerStateIgnoresV0Snapshots(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig()
	l, _ := openLogged(t, fsys, cfg, -1)
	producerWorkload(t, l)
	before, txnsBefore := l.Producers(), viewOf(l)
	l.Close()
	snaps := snapshotFiles(t, fsys)
	if len(snaps) < 3 {
		t.Fatalf("snapshots %v", snaps)
	}
	bogus := []OngoingTxn{{ProducerID: 4242, ProducerEpoch: 0, FirstOffset: 0}}
	toV0 := func(name string) {
		off, _ := parseSnapshotOffset(name)
		writeTestFile(t, fsys, "/d/t-0/"+name, encodeSnapshotV0(off, bogus))
	}
	// The newest two are version 0: recovery uses the third newest.
	toV0(snaps[len(snaps)-1])
	toV0(snaps[len(snaps)-2])
	l2, lines := openLogged(t, fsys, cfg, -1)
	if !lines.has("deleting version 0 transaction snapshot") || lines.has("no usable transaction snapshot") {
		t.Fatalf("log lines %v", lines.lines)
	}
	if got := snapshotFiles(t, fsys); slices.Contains(got, snaps[len(snaps)-2]) {
		t.Fatalf("version 0 snapshot kept: %v", got)
	}
	checkProducers(t, "older v1 snapshot", l2.Producers(), before)
	if v := viewOf(l2); !v.equal(txnsBefore) {
		t.Fatalf("transactions %+v, want %+v", v, txnsBefore)
	}
	l2.Close()
	// Only version 0 snapshots: a replay from the first segment.
	for _, n := range snapshotFiles(t, fsys) {
		toV0(n)
	}
	l3, lines := openLogged(t, fsys, cfg, -1)
	defer l3.Close()
	if !lines.has("no usable transaction snapshot") {
		t.Fatalf("log lines %v", lines.lines)
	}
	checkProducers(t, "v0 only", l3.Producers(), before)
	if v := viewOf(l3); !v.equal(txnsBefore) {
		t.Fatalf("transactions %+v, want %+v", v, txnsBefore)
	}
}

func TestSnapshotCodec(t *testing.T) {
	st, ps := newTxnState(), producerStates{}
	for _, h := range []batchHeader{
		{BaseOffset: 4, ProducerID: 6, ProducerEpoch: 1, Attributes: 0x10, BaseSequence: 0, LastOffsetDelta: 1, MaxTimestamp: 77},
		{BaseOffset: 9, ProducerID: 5, ProducerEpoch: 2, Attributes: 0x10, BaseSequence: 0, MaxTimestamp: 78},
		{BaseOffset: 10, ProducerID: 1 << 40, ProducerEpoch: 0, BaseSequence: math.MaxInt32, LastOffsetDelta: 1, MaxTimestamp: -1},
	} {
		st.apply(h, txnMarker{})
		ps.apply(h, txnMarker{})
	}
	for i := int64(0); i < 7; i++ {
		ps.apply(batchHeader{BaseOffset: 11 + i, ProducerID: 3, BaseSequence: int32(i)}, txnMarker{})
	}
	ps.apply(batchHeader{BaseOffset: 18, ProducerID: 2, ProducerEpoch: 4, Attributes: 0x30, MaxTimestamp: 5}, txnMarker{valid: true, coordinatorEpoch: 12})
	b := encodeSnapshot(19, st, ps)
	gotTxns, gotProducers, err := decodeSnapshot(b, 19)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gotTxns.sorted(), st.sorted()) || gotTxns.firstUnstable != 4 {
		t.Fatalf("decoded transactions %+v", gotTxns.sorted())
	}
	if len(gotProducers) != len(ps) {
		t.Fatalf("decoded %d producers, want %d", len(gotProducers), len(ps))
	}
	for id, e := range ps {
		if *gotProducers[id] != *e {
			t.Fatalf("producer %d: decoded %+v, want %+v", id, *gotProducers[id], *e)
		}
	}
	if _, _, err := decodeSnapshot(b, 20); !errors.Is(err, ErrSnapshotCorrupt) {
		t.Fatalf("offset mismatch: %v", err)
	}
	for i := range b {
		bad := bytes.Clone(b)
		bad[i] ^= 0x40
		if _, _, err := decodeSnapshot(bad, 19); err == nil {
			t.Fatalf("flipped byte %d accepted", i)
		}
	}
	for n := 0; n < len(b); n++ {
		if _, _, err := decodeSnapshot(b[:n], 19); err == nil {
			t.Fatalf("truncation to %d accepted", n)
		}
	}
	if _, _, err := decodeSnapshot(encodeSnapshotV0(19, st.sorted()), 19); !errors.Is(err, errSnapshotV0) {
		t.Fatalf("version 0: %v", err)
	}
	if _, _, err := decodeSnapshot(encodeSnapshotV0(19, nil)[:21], 19); !errors.Is(err, ErrSnapshotCorrupt) {
		t.Fatalf("short version 0: %v", err)
	}
	// Checks behind the CRC: an open transaction needs a producer entry.
	lone := newTxnState()
	lone.apply(batchHeader{BaseOffset: 1, ProducerID: 8, Attributes: 0x10}, txnMarker{})
	if _, _, err := decodeSnapshot(encodeSnapshot(3, lone, producerStates{}), 3); !errors.Is(err, ErrSnapshotCorrupt) {
		t.Fatalf("transaction without producer: %v", err)
	}
	// ... and every offset is below the snapshot's.
	if _, _, err := decodeSnapshot(encodeSnapshot(12, st, ps), 12); !errors.Is(err, ErrSnapshotCorrupt) {
		t.Fatalf("batch past the snapshot offset: %v", err)
	}
}

// TestExpireProducers: expiry forgets producers whose last batch is
// producer.id.expiration.ms old, keeps recent ones and those with an open
// transaction, and the next Close snapshots the result even when the log
// end did not move.
func TestExpireProducers(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig()
	l, _ := openLogged(t, fsys, cfg, -1)
	appendHW(t, l, seqBatch(t, 1, 0, 0, 1, 10, false))
	appendHW(t, l, seqBatch(t, 2, 0, 0, 1, 10, true))
	appendHW(t, l, seqBatch(t, 3, 0, 0, 1, 450, false))
	if err := l.Roll(); err != nil { // snapshot at the log end
		t.Fatal(err)
	}
	// At 500 with a 100 ms expiration: 1 is 490 ms old, 3 only 50.
	if n := l.ExpireProducers(500, 100); n != 1 {
		t.Fatalf("expired %d, want 1 (producer 2 has an open transaction, 3 is recent)", n)
	}
	if _, ok := l.Producer(1); ok {
		t.Fatal("producer 1 kept")
	}
	for _, id := range []int64{2, 3} {
		if _, ok := l.Producer(id); !ok {
			t.Fatalf("producer %d removed", id)
		}
	}
	if n := l.ExpireProducers(550, 100); n != 1 {
		t.Fatalf("expired %d at 550, want producer 3", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, _ = openLogged(t, fsys, cfg, -1)
	defer l.Close()
	if ps := l.Producers(); len(ps) != 1 || ps[0].ProducerID != 2 {
		t.Fatalf("after restart: %s", entriesString(ps))
	}
}

// TestProducerStateConcurrentReaders runs the produce path's readers
// against appends, markers, rolls and removals (for the race detector).
func TestProducerStateConcurrentReaders(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", smallConfig(), newClock())
	defer l.Close()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				for _, e := range l.Producers() {
					if len(e.Batches()) > ProducerBatchWindow {
						t.Errorf("window of %d", len(e.Batches()))
						return
					}
				}
				if e, ok := l.Producer(1); ok && e.LastSequence() < 0 {
					t.Errorf("producer 1 without batches: %s", entryString(e))
					return
				}
			}
		}()
	}
	for i := 0; i < 300; i++ {
		pid := int64(i % 4)
		appendHW(t, l, seqBatch(t, pid, 0, int32(i), 1, 10, pid == 3))
		if i%7 == 6 {
			mustControl(t, l, 3, true)
		}
		if i%50 == 49 {
			l.ExpireProducers(100, 10)
		}
	}
	close(done)
	wg.Wait()
}

// TestProducerStateRandomOperations checks random idempotent and
// transactional appends, markers, rolls, truncations, DeleteRecords,
// retention, clean restarts and crashes against producerOracle over every
// batch appended and kept.
func TestProducerStateRandomOperations(t *testing.T) {
	seeds := uint64(12)
	if testing.Short() {
		seeds = 4
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runProducerRandomOps(t, seed, 300) })
	}
}

func runProducerRandomOps(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 4099))
	fsys := vfs.NewMem()
	cfg := smallConfig()
	cfg.SegmentBytes = int64(600 + rng.IntN(2500))
	cfg.RetentionMs = -1
	var batches []oracleBatch // every batch appended and not truncated, below the log start too
	start := int64(0)
	var lines *logLines
	open := func(fs vfs.FS) *Log {
		lines = &logLines{}
		l, err := OpenLog(LogOptions{FS: fs, Dir: "/d/t-0", Config: cfg, Now: newClock().now, Logger: slog.New(lines), RecoveryPoint: -1, LogStartOffset: start})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		l.SetHighWatermark(l.LogEndOffset())
		return l
	}
	l := open(fsys)
	defer func() { l.Close() }()
	epochs := map[int64]int16{}
	seqs := map[int64]int32{}
	cut := func(leo int64) {
		i := slices.IndexFunc(batches, func(b oracleBatch) bool { return b.h.LastOffset() >= leo })
		if i >= 0 {
			batches = batches[:i]
		}
	}
	var trace []string
	for step := 0; step < steps; step++ {
		var op string
		switch r := rng.IntN(100); {
		case r < 45:
			pid := int64(rng.IntN(5))
			if rng.IntN(15) == 0 {
				epochs[pid]++
				seqs[pid] = 0
			}
			n := 1 + rng.IntN(3)
			ts := int64(1000 + step)
			b := seqBatch(t, pid, epochs[pid], seqs[pid], n, ts, pid >= 3)
			seqs[pid] = int32((int64(seqs[pid]) + int64(n)) % (1 << 31))
			info := mustAppend(t, l, b)
			h, _ := parseBatchHeader(b)
			batches = append(batches, oracleBatch{h: h})
			op = fmt.Sprintf("p%d e%d@%d", pid, epochs[pid], info.FirstOffset)
		case r < 52:
			b := testBatch(1+rng.IntN(3), 0, 40)
			mustAppend(t, l, b)
			h, _ := parseBatchHeader(b)
			batches = append(batches, oracleBatch{h: h})
			op = "plain"
		case r < 64:
			pid := int64(3 + rng.IntN(3))
			if rng.IntN(4) == 0 {
				epochs[pid]++ // an abort by the coordinator bumps the epoch
				seqs[pid] = 0
			}
			ce := int32(rng.IntN(5))
			m := ControlMarker{ProducerID: pid, ProducerEpoch: epochs[pid], Commit: rng.IntN(2) == 0, CoordinatorEpoch: ce, LeaderEpoch: -1, Timestamp: int64(2000 + step)}
			info, err := l.AppendControl(m)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := l.Read(info.FirstOffset, 1<<20, info.FirstOffset+1, true)
			h, _ := parseBatchHeader(b)
			batches = append(batches, oracleBatch{h: h, marker: true, coordinatorEpoch: ce})
			op = fmt.Sprintf("marker p%d@%d", pid, info.FirstOffset)
		case r < 70:
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			op = "roll"
		case r < 75:
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = open(fsys)
			op = "reopen"
		case r < 82:
			flushed := rng.IntN(2) == 0
			if flushed {
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			crashed := fsys.CrashClone()
			l.Close()
			fsys = crashed
			l = open(fsys)
			if lines.has("restarting log") {
				batches = nil // the crash lost data up to the log start: restarted empty there
			}
			cut(l.LogEndOffset())
			op = fmt.Sprintf("crash flushed=%v", flushed)
		case r < 92:
			leo := l.LogEndOffset()
			x := start + rng.Int64N(leo-start+1)
			if i := slices.IndexFunc(batches, func(b oracleBatch) bool { return b.h.LastOffset() >= x }); i >= 0 && batches[i].h.BaseOffset < start {
				// Nothing readable would remain: restarted empty at x.
				batches, start = nil, x
			}
			if err := l.TruncateTo(x); err != nil {
				t.Fatal(err)
			}
			cut(l.LogEndOffset())
			op = fmt.Sprintf("truncate %d", x)
		case r < 97:
			x := start + rng.Int64N(l.LogEndOffset()-start+1)
			if _, err := l.DeleteRecordsBefore(x); err != nil {
				t.Fatal(err)
			}
			start = max(start, x)
			op = fmt.Sprintf("delete-records %d", x)
		default:
			c := cfg
			c.RetentionBytes = int64(rng.IntN(3)) * cfg.SegmentBytes
			l.SetConfig(c)
			if _, err := l.EnforceRetention(newClock().now()); err != nil {
				t.Fatal(err)
			}
			l.SetConfig(cfg)
			start = l.LogStartOffset()
			op = "retention"
		}
		l.SetHighWatermark(l.LogEndOffset())
		trace = append(trace, op)
		if !entriesEqual(l.Producers(), producerOracle(batches)) {
			t.Fatalf("seed %d step %d: producers\n%s\nwant\n%s\nlast ops %v", seed, step,
				entriesString(l.Producers()), entriesString(producerOracle(batches)), trace[max(0, len(trace)-12):])
		}
	}
}

// TestManagerExpireProducers: the Manager expires idle producers in every
// log with producer.id.expiration.ms, measured from each producer's last
// batch timestamp.
func TestManagerExpireProducers(t *testing.T) {
	clock := newClock()
	m, err := OpenManager(ManagerOptions{FS: vfs.NewMem(), Dirs: []string{"/a"}, Now: clock.now, ProducerExpiration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	nowMs := clock.now().UnixMilli()
	var logs []*Log
	for i := range 2 {
		l, err := m.CreateLog(TopicPartition{"t", int32(i)}, [16]byte{byte(i + 1)}, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		appendHW(t, l, seqBatch(t, 1, 0, 0, 1, nowMs-2*time.Hour.Milliseconds(), false)) // idle
		appendHW(t, l, seqBatch(t, 2, 0, 0, 1, nowMs-time.Minute.Milliseconds(), false))
		logs = append(logs, l)
	}
	m.ExpireProducers()
	for i, l := range logs {
		if _, ok := l.Producer(1); ok {
			t.Errorf("log %d: idle producer 1 kept", i)
		}
		if _, ok := l.Producer(2); !ok {
			t.Errorf("log %d: recent producer 2 expired", i)
		}
	}
}
