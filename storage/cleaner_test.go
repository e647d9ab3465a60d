package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire"
)

// kv is one record of a keyed test batch; a nil value is a tombstone and
// a nil key is a keyless record.
type kv struct{ key, value []byte }

func rec(key, value string) kv {
	r := kv{key: []byte(key), value: []byte(value)}
	if value == "<nil>" {
		r.value = nil
	}
	if key == "<nil>" {
		r.key = nil
	}
	return r
}

// keyedSpec describes a keyed test batch.
type keyedSpec struct {
	pid           int64
	epoch         int16
	seq           int32
	transactional bool
	codec         wire.Compression
	ts            int64
}

func keyedBatch(t testing.TB, s keyedSpec, recs ...kv) []byte {
	t.Helper()
	rs := make([]wire.Record, len(recs))
	for i, r := range recs {
		rs[i] = wire.Record{Key: r.key, Value: r.value, TimestampDelta: int64(i)}
	}
	pid := s.pid
	if pid == 0 {
		pid = -1
	}
	ts := s.ts
	if ts == 0 {
		ts = 1_700_000_000_000
	}
	seq := s.seq
	if pid < 0 {
		seq = -1
	}
	b, err := wire.EncodeBatch(wire.BatchSpec{
		BaseTimestamp: ts, ProducerID: pid, ProducerEpoch: s.epoch, BaseSequence: seq,
		Transactional: s.transactional, Compression: s.codec, PartitionLeaderEpoch: -1, Records: rs,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// logRecord is a record read back from a log.
type logRecord struct {
	offset     int64
	key, value string // "<nil>" for null
}

func (r logRecord) String() string { return fmt.Sprintf("%d:%s=%s", r.offset, r.key, r.value) }

func nullable(b []byte) string {
	if b == nil {
		return "<nil>"
	}
	return string(b)
}

// readRecords reads every record from the log start to the LEO, checking
// CRCs and increasing offsets (gaps are allowed: compaction makes them).
// It also returns the batch headers.
func readRecords(t testing.TB, l *Log) ([]logRecord, []batchHeader) {
	t.Helper()
	var out []logRecord
	var hs []batchHeader
	next := l.LogStartOffset()
	for next < l.LogEndOffset() {
		b, err := l.Read(next, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("Read(%d): %v", next, err)
		}
		if len(b) == 0 {
			t.Fatalf("Read(%d) returned nothing before LEO %d", next, l.LogEndOffset())
		}
		for len(b) > 0 {
			h, err := parseBatchHeader(b)
			if err != nil {
				t.Fatalf("Read(%d): %v", next, err)
			}
			if batchCRC(b[:h.TotalSize()]) != h.CRC {
				t.Fatalf("batch at offset %d: bad CRC", h.BaseOffset)
			}
			if h.LastOffset() < next || (len(hs) > 0 && h.BaseOffset <= hs[len(hs)-1].LastOffset()) {
				t.Fatalf("batch %d..%d out of order at %d", h.BaseOffset, h.LastOffset(), next)
			}
			hs = append(hs, h)
			if !h.IsControl() {
				_, rs, err := wire.DecodeRecords(b[:h.TotalSize()])
				if err != nil {
					t.Fatalf("batch %d: %v", h.BaseOffset, err)
				}
				for _, r := range rs {
					off := h.BaseOffset + int64(r.OffsetDelta)
					if off > h.LastOffset() {
						t.Fatalf("record %d past batch end %d", off, h.LastOffset())
					}
					out = append(out, logRecord{offset: off, key: nullable(r.Key), value: nullable(r.Value)})
				}
			}
			next = h.LastOffset() + 1
			b = b[h.TotalSize():]
		}
	}
	return out, hs
}

func compactConfig() LogConfig {
	c := smallConfig()
	c.Compact, c.Delete = true, false
	c.SegmentBytes = 2048
	c.IndexIntervalBytes = 128
	return c
}

func mustClean(t testing.TB, l *Log, clock *fakeClock) CleanStats {
	t.Helper()
	st, ok, err := l.Clean(context.Background(), clock.now(), CleanOptions{Force: true})
	if err != nil || !ok {
		t.Fatalf("Clean: ok=%v err=%v", ok, err)
	}
	return st
}

func TestCleanerFilterBatch(t *testing.T) {
	m := newOffsetMap()
	m.put([]byte("a"), 12)
	m.put([]byte("b"), 11)
	m.put([]byte("t"), 20)
	aborted := newAbortedSet([]AbortedTxn{{ProducerID: 7, FirstOffset: 30, LastOffset: 40}})
	tests := []struct {
		name      string
		base      int64
		spec      keyedSpec
		recs      []kv
		in        filterInput
		want      []string // kept records "key=value"
		unchanged bool
		dropped   bool
	}{
		{name: "superseded keys dropped", base: 10, recs: []kv{rec("a", "1"), rec("b", "2"), rec("a", "3")},
			want: []string{"b=2", "a=3"}},
		{name: "all latest stays as is", base: 11, recs: []kv{rec("b", "2"), rec("a", "3")}, want: []string{"b=2", "a=3"}, unchanged: true},
		{name: "keys not in map stay", base: 0, recs: []kv{rec("x", "1"), rec("y", "2")}, want: []string{"x=1", "y=2"}, unchanged: true},
		{name: "keyless stays", base: 0, recs: []kv{rec("<nil>", "1"), rec("a", "old")}, want: []string{"<nil>=1"}},
		{name: "tombstone kept before horizon", base: 20, recs: []kv{rec("t", "<nil>")}, want: []string{"t=<nil>"}, unchanged: true},
		{name: "tombstone removed after horizon", base: 20, recs: []kv{rec("t", "<nil>")}, in: filterInput{removeTombstones: true}, dropped: true},
		{name: "old tombstone superseded", base: 15, recs: []kv{rec("t", "<nil>")}, dropped: true},
		{name: "empty kept when asked", base: 0, recs: []kv{rec("a", "old")}, in: filterInput{keepEmpty: true}, want: nil},
		{name: "aborted txn removed", base: 31, spec: keyedSpec{pid: 7, transactional: true}, recs: []kv{rec("z", "1")}, dropped: true},
		{name: "aborted txn first batch kept empty", base: 31, spec: keyedSpec{pid: 7, transactional: true}, recs: []kv{rec("z", "1")},
			in: filterInput{keepEmpty: true}, want: nil},
		{name: "committed txn of same producer compacted normally", base: 41, spec: keyedSpec{pid: 7, transactional: true},
			recs: []kv{rec("z", "1")}, want: []string{"z=1"}, unchanged: true},
		{name: "gzip batch keeps its codec", base: 10, spec: keyedSpec{codec: wire.CompressionGzip},
			recs: []kv{rec("a", "1"), rec("q", "2"), rec("r", "3")}, want: []string{"q=2", "r=3"}},
		{name: "zstd batch", base: 10, spec: keyedSpec{codec: wire.CompressionZstd},
			recs: []kv{rec("a", "1"), rec("a", "2"), rec("a", "3")}, want: []string{"a=3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := keyedBatch(t, tc.spec, tc.recs...)
			setBaseOffset(b, tc.base)
			wire.RecomputeCRC(b)
			h, err := parseBatchHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			in := tc.in
			in.offsets, in.aborted = m, aborted
			out, kept, _, err := filterBatch(b, h, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.dropped {
				if out != nil {
					t.Fatalf("kept %d records, want the batch dropped", kept)
				}
				return
			}
			if out == nil {
				t.Fatal("batch dropped")
			}
			if tc.unchanged != (&out[0] == &b[0]) {
				t.Fatalf("unchanged = %v, want %v", &out[0] == &b[0], tc.unchanged)
			}
			oh, err := parseBatchHeader(out)
			if err != nil {
				t.Fatal(err)
			}
			if batchCRC(out) != oh.CRC || oh.TotalSize() != len(out) {
				t.Fatal("bad CRC or length")
			}
			if oh.BaseOffset != h.BaseOffset || oh.LastOffsetDelta != h.LastOffsetDelta || oh.ProducerID != h.ProducerID ||
				oh.BaseSequence != h.BaseSequence || oh.MaxTimestamp != h.MaxTimestamp || oh.IsTransactional() != h.IsTransactional() {
				t.Fatalf("header changed: %+v -> %+v", h, oh)
			}
			if len(tc.want) > 0 && oh.Compression() != h.Compression() {
				t.Fatalf("codec %v, want %v", oh.Compression(), h.Compression())
			}
			_, rs, err := wire.DecodeRecords(out)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rs {
				got = append(got, nullable(r.Key)+"="+nullable(r.Value))
			}
			if !slices.Equal(got, tc.want) || kept != len(tc.want) {
				t.Fatalf("kept %v (%d), want %v", got, kept, tc.want)
			}
		})
	}
}

func TestCleanerControlBatchUntouched(t *testing.T) {
	b, err := wire.EncodeControlBatch(7, 1, false, 3, -1, 1000)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := parseBatchHeader(b)
	out, _, _, err := filterBatch(b, h, filterInput{offsets: newOffsetMap(), aborted: newAbortedSet([]AbortedTxn{{ProducerID: 7, FirstOffset: 0, LastOffset: 0}})}, nil)
	if err != nil || &out[0] != &b[0] {
		t.Fatalf("control batch changed: %v", err)
	}
}

// oracleLatest returns, for the records written, the expected records of a
// fully compacted prefix: every record at or after end, and before it only
// the latest record of each key (and all keyless records).
func expectCompacted(written []logRecord, end int64) []logRecord {
	last := map[string]int64{}
	for _, r := range written {
		if r.offset < end && r.key != "<nil>" {
			last[r.key] = r.offset
		}
	}
	var out []logRecord
	for _, r := range written {
		if r.offset >= end || r.key == "<nil>" || last[r.key] == r.offset {
			out = append(out, r)
		}
	}
	return out
}

// writeKeyed appends batches of keyed records (key k<n>, value v<offset>),
// some gzip, and returns what it wrote.
func writeKeyed(t testing.TB, l *Log, rng *rand.Rand, batches, keys int) []logRecord {
	t.Helper()
	var written []logRecord
	for i := 0; i < batches; i++ {
		n := 1 + rng.IntN(4)
		base := l.LogEndOffset()
		var recs []kv
		for j := 0; j < n; j++ {
			k := fmt.Sprintf("k%d", rng.IntN(keys))
			v := fmt.Sprintf("v%d", base+int64(j))
			recs = append(recs, rec(k, v))
			written = append(written, logRecord{offset: base + int64(j), key: k, value: v})
		}
		spec := keyedSpec{ts: 1_700_000_000_000 + int64(i)}
		if i%3 == 0 {
			spec.codec = wire.CompressionGzip
		}
		appendHW(t, l, keyedBatch(t, spec, recs...))
	}
	return written
}

func TestCleanFullLog(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	cfg := compactConfig()
	l := openTestLog(t, fsys, "/d/t-0", cfg, clock)
	rng := rand.New(rand.NewPCG(1, 2))
	written := writeKeyed(t, l, rng, 400, 40)
	segsBefore := len(segmentNames(t, fsys, "/d/t-0"))
	sizeBefore := l.Size()
	active := l.mu.segments[len(l.mu.segments)-1].baseOffset
	leo := l.LogEndOffset()

	st := mustClean(t, l, clock)
	if st.EndOffset != active || st.FirstOffset != 0 {
		t.Fatalf("cleaned [%d, %d), want [0, %d)", st.FirstOffset, st.EndOffset, active)
	}
	if l.LogEndOffset() != leo {
		t.Fatalf("LEO moved: %d -> %d", leo, l.LogEndOffset())
	}
	if l.CleanerCheckpoint() != active {
		t.Fatalf("checkpoint %d, want %d", l.CleanerCheckpoint(), active)
	}
	got, _ := readRecords(t, l)
	want := expectCompacted(written, active)
	if !slices.Equal(got, want) {
		t.Fatalf("after clean:\n got %v\nwant %v", got, want)
	}
	t.Logf("segments %d -> %d, bytes %d -> %d, stats %+v", segsBefore, len(segmentNames(t, fsys, "/d/t-0")), sizeBefore, l.Size(), st)
	if l.Size() >= sizeBefore {
		t.Fatalf("size %d not below %d", l.Size(), sizeBefore)
	}
	checkReadsFromEveryOffset(t, l, want)
	checkTimeLookups(t, l, want)

	// A second clean finds nothing dirty; more writes make it dirty again.
	if _, ok, err := l.Clean(context.Background(), clock.now(), CleanOptions{Force: true}); ok || err != nil {
		t.Fatalf("second clean: ok=%v err=%v", ok, err)
	}
	written = append(written, writeKeyed(t, l, rng, 200, 40)...)
	l.Roll()
	st = mustClean(t, l, clock)
	got, _ = readRecords(t, l)
	want = expectCompacted(written, st.EndOffset)
	if !slices.Equal(got, want) {
		t.Fatalf("after second clean:\n got %v\nwant %v", got, want)
	}

	// Reopen: indexes as written, then rebuilt from scratch.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, rp := range []int64{leo, -1} {
		l2, err := OpenLog(LogOptions{FS: fsys, Dir: "/d/t-0", Config: cfg, Now: clock.now, RecoveryPoint: rp, LogStartOffset: -1})
		if err != nil {
			t.Fatal(err)
		}
		l2.SetHighWatermark(l2.LogEndOffset())
		got, _ = readRecords(t, l2)
		if !slices.Equal(got, want) {
			t.Fatalf("after reopen (rp %d):\n got %v\nwant %v", rp, got, want)
		}
		checkReadsFromEveryOffset(t, l2, want)
		checkTimeLookups(t, l2, want)
		l2.Close()
	}
}

// checkReadsFromEveryOffset reads from every offset of the log and checks
// that the first record returned is the first expected one at or after it.
func checkReadsFromEveryOffset(t testing.TB, l *Log, want []logRecord) {
	t.Helper()
	for off := l.LogStartOffset(); off < l.LogEndOffset(); off++ {
		b, err := l.Read(off, 1, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		i := sort0(want, off)
		var first *logRecord
		for len(b) > 0 && first == nil {
			h, _ := parseBatchHeader(b)
			if h.LastOffset() < off {
				t.Fatalf("Read(%d) returned batch ending at %d", off, h.LastOffset())
			}
			if !h.IsControl() {
				_, rs, err := wire.DecodeRecords(b[:h.TotalSize()])
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rs {
					if o := h.BaseOffset + int64(r.OffsetDelta); o >= off {
						first = &logRecord{offset: o, key: nullable(r.Key), value: nullable(r.Value)}
						break
					}
				}
			}
			b = b[h.TotalSize():]
		}
		if i < len(want) && first != nil && *first != want[i] {
			t.Fatalf("Read(%d): first record %v, want %v", off, *first, want[i])
		}
	}
}

func sort0(want []logRecord, off int64) int {
	i := 0
	for i < len(want) && want[i].offset < off {
		i++
	}
	return i
}

// checkTimeLookups checks OffsetForTimestamp against the records: the
// answer is the first remaining record with a timestamp >= ts (test
// timestamps grow with offsets).
func checkTimeLookups(t testing.TB, l *Log, want []logRecord) {
	t.Helper()
	for _, ts := range []int64{0, 1_700_000_000_000, 1_700_000_000_100, 1_700_000_000_250, 1_700_000_000_399} {
		off, _, found := l.OffsetForTimestamp(ts)
		if !found {
			continue
		}
		if sort0(want, off) >= len(want) || want[sort0(want, off)].offset != off {
			t.Fatalf("OffsetForTimestamp(%d) = %d, not a remaining record", ts, off)
		}
	}
	if off, _, found := l.OffsetForTimestamp(0); !found || off != want[0].offset {
		t.Fatalf("OffsetForTimestamp(0) = %d %v, want %d", off, found, want[0].offset)
	}
}

func TestCleanTombstones(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 1000
	l := openTestLog(t, fsys, "/d/t-0", cfg, clock)
	defer l.Close()
	ts := clock.now().UnixMilli()
	appendHW(t, l, keyedBatch(t, keyedSpec{ts: ts}, rec("a", "1"), rec("b", "1")))
	appendHW(t, l, keyedBatch(t, keyedSpec{ts: ts}, rec("a", "<nil>")))
	l.Roll()
	appendHW(t, l, keyedBatch(t, keyedSpec{ts: ts}, rec("c", "1")))
	mustClean(t, l, clock)
	got, _ := readRecords(t, l)
	if fmt.Sprint(got) != "[1:b=1 2:a=<nil> 3:c=1]" {
		t.Fatalf("first clean kept %v", got)
	}
	// The tombstone's segment is now clean; once it is older than
	// delete.retention.ms, the next clean drops the tombstone.
	l.Roll()
	appendHW(t, l, keyedBatch(t, keyedSpec{ts: ts}, rec("d", "1")))
	l.Roll()
	mustClean(t, l, clock)
	got, _ = readRecords(t, l)
	if !strings.Contains(fmt.Sprint(got), "a=<nil>") {
		t.Fatalf("tombstone removed before delete.retention.ms: %v", got)
	}
	clock.advance(2000 * 1e6)
	appendHW(t, l, keyedBatch(t, keyedSpec{ts: ts}, rec("e", "1")))
	l.Roll()
	mustClean(t, l, clock)
	got, _ = readRecords(t, l)
	if strings.Contains(fmt.Sprint(got), "a=<nil>") {
		t.Fatalf("tombstone kept after delete.retention.ms: %v", got)
	}
	if fmt.Sprint(got) != "[1:b=1 3:c=1 4:d=1 5:e=1]" {
		t.Fatalf("got %v", got)
	}
}

func TestCleanStopsAtLastStableOffset(t *testing.T) {
	clock := newClock()
	cfg := compactConfig()
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", cfg, clock)
	defer l.Close()
	appendHW(t, l, keyedBatch(t, keyedSpec{}, rec("a", "1")))
	l.Roll()
	// An open transaction in the second segment.
	appendHW(t, l, keyedBatch(t, keyedSpec{pid: 5, transactional: true}, rec("a", "2")))
	l.Roll()
	appendHW(t, l, keyedBatch(t, keyedSpec{}, rec("a", "3")))
	l.Roll()
	appendHW(t, l, keyedBatch(t, keyedSpec{}, rec("a", "4")))
	checkLSO(t, l, 1)
	// Only the first segment is below the LSO, and nothing in it is
	// superseded within it.
	st := mustClean(t, l, clock)
	if st.EndOffset != 1 {
		t.Fatalf("cleaned up to %d, want 1 (the LSO)", st.EndOffset)
	}
	got, _ := readRecords(t, l)
	if fmt.Sprint(got) != "[0:a=1 1:a=2 2:a=3 3:a=4]" {
		t.Fatalf("got %v", got)
	}
	// The high watermark bounds it too.
	controlHW(t, l, 5, true)
	l.SetHighWatermark(2)
	st = mustClean(t, l, clock)
	if st.EndOffset != 2 {
		t.Fatalf("cleaned up to %d, want 2 (the high watermark)", st.EndOffset)
	}
	l.SetHighWatermark(l.LogEndOffset())
	l.Roll()
	mustClean(t, l, clock)
	got, _ = readRecords(t, l)
	if fmt.Sprint(got) != "[3:a=4]" {
		t.Fatalf("got %v", got)
	}
}

// txnCompactWorkload writes committed and aborted transactions and
// idempotent batches over overwritten keys, across segments.
func txnCompactWorkload(t testing.TB, l *Log) {
	for i := 0; i < 30; i++ {
		pid := int64(100 + i%3)
		k := fmt.Sprintf("k%d", i%4)
		appendHW(t, l, keyedBatch(t, keyedSpec{pid: pid, epoch: 3, seq: int32(i), transactional: true}, rec(k, fmt.Sprint("t", i)), rec(k, fmt.Sprint("u", i))))
		appendHW(t, l, keyedBatch(t, keyedSpec{pid: 200, epoch: 1, seq: int32(i * 2)}, rec(k, fmt.Sprint("i", i)), rec("<nil>", "keyless")))
		controlHW(t, l, pid, i%2 == 0)
		if i%4 == 3 {
			l.Roll()
		}
	}
	l.Roll()
	appendHW(t, l, keyedBatch(t, keyedSpec{}, rec("z", "1")))
}

// TestCleanTransactionsAndProducerState checks that aborted data goes,
// markers stay, and that the producer and transaction state rebuilt from
// the cleaned log (without any snapshot) equals the state of the
// original.
func TestCleanTransactionsAndProducerState(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	cfg := compactConfig()
	l := openTestLog(t, fsys, "/d/t-0", cfg, clock)
	txnCompactWorkload(t, l)
	wantProducers := fmt.Sprint(l.Producers())
	wantTxns := fmt.Sprint(l.OngoingTransactions())
	wantAborted := fmt.Sprint(l.AbortedTransactions(0, l.LogEndOffset()))
	before, hsBefore := readRecords(t, l)
	mustClean(t, l, clock)
	after, hs := readRecords(t, l)
	markers := 0
	for _, h := range hs {
		if h.IsControl() {
			markers++
		}
	}
	if markers != 30 {
		t.Fatalf("%d markers after clean, want 30", markers)
	}
	for _, r := range after {
		if strings.HasPrefix(r.value, "t") || strings.HasPrefix(r.value, "u") {
			var i int
			fmt.Sscan(r.value[1:], &i)
			if i%2 == 1 {
				t.Fatalf("aborted record %v survived", r)
			}
		}
	}
	keyless := 0
	for _, r := range after {
		if r.key == "<nil>" {
			keyless++
		}
	}
	if keyless != 30 {
		t.Fatalf("%d keyless records, want 30", keyless)
	}
	if len(after) >= len(before) || len(hs) > len(hsBefore) {
		t.Fatalf("nothing cleaned: %d -> %d records", len(before), len(after))
	}
	if got := fmt.Sprint(l.AbortedTransactions(0, l.LogEndOffset())); got != wantAborted {
		t.Fatalf("aborted transactions %s, want %s", got, wantAborted)
	}
	l.Close()
	// Replay everything from the cleaned log.
	for _, s := range snapshotFiles(t, fsys) {
		if err := fsys.Remove("/d/t-0/" + s); err != nil {
			t.Fatal(err)
		}
	}
	for _, rp := range []int64{-1} {
		l2, err := OpenLog(LogOptions{FS: fsys, Dir: "/d/t-0", Config: cfg, Now: clock.now, RecoveryPoint: rp, LogStartOffset: -1})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(l2.Producers()); got != wantProducers {
			t.Fatalf("producers after replay of the cleaned log:\n got %s\nwant %s", got, wantProducers)
		}
		if got := fmt.Sprint(l2.OngoingTransactions()); got != wantTxns {
			t.Fatalf("open transactions %s, want %s", got, wantTxns)
		}
		if got := fmt.Sprint(l2.AbortedTransactions(0, l2.LogEndOffset())); got != wantAborted {
			t.Fatalf("aborted transactions %s, want %s", got, wantAborted)
		}
		l2.Close()
	}
}

func TestCleanReadersKeepPinnedSegments(t *testing.T) {
	clock := newClock()
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", compactConfig(), clock)
	defer l.Close()
	written := writeKeyed(t, l, rand.New(rand.NewPCG(3, 4)), 100, 5)
	s, err := l.ReadSlice(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	mustClean(t, l, clock)
	buf := make([]byte, s.Length)
	if _, err := s.File.ReadAt(buf, s.Offset); err != nil {
		t.Fatalf("pinned read after clean: %v", err)
	}
	h, _ := parseBatchHeader(buf)
	_, rs, err := wire.DecodeRecords(buf)
	if err != nil || h.BaseOffset != 0 || string(rs[0].Value) != written[0].value {
		t.Fatalf("pinned segment changed: %v %+v", err, h)
	}
}

func TestCleanAbortsWhenLogChanges(t *testing.T) {
	clock := newClock()
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, "/d/t-0", compactConfig(), clock)
	defer l.Close()
	writeKeyed(t, l, rand.New(rand.NewPCG(5, 6)), 100, 5)
	l.mu.Lock()
	plan, ok := l.planCleanLocked(clock.now(), true)
	l.mu.Unlock()
	if !ok {
		t.Fatal("nothing to clean")
	}
	plan.release()
	if err := l.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	out := &cleanedSegment{seg: newSegmentShell(fsys, "/d/t-0", 0, l.Config(), clock.now())}
	if err := l.swapCleaned([]*cleanedSegment{out}, plan.segs, plan.end); !errors.Is(err, ErrCleanAborted) {
		t.Fatalf("swap after truncation: %v, want ErrCleanAborted", err)
	}
}

// TestCleanCrashAtEveryStep fails the Nth file operation of a clean, for
// every N, then simulates a power loss. The reopened log must hold either
// the records before the clean or those after it, with producer state
// unchanged.
func TestCleanCrashAtEveryStep(t *testing.T) {
	for _, segBytes := range []int64{2048, 1 << 20} {
		t.Run(fmt.Sprint(segBytes), func(t *testing.T) { testCleanCrashAtEveryStep(t, segBytes) })
	}
}

// isCompactionOf reports whether got is a valid compaction of before that
// keeps at least what after (the fully cleaned log) keeps: a subset of
// before, a superset of after, with the same latest value per key.
func isCompactionOf(got, before, after []logRecord) bool {
	in := func(r logRecord, set []logRecord) bool {
		i := sort0(set, r.offset)
		return i < len(set) && set[i] == r
	}
	for _, r := range got {
		if !in(r, before) {
			return false
		}
	}
	for _, r := range after {
		if !in(r, got) {
			return false
		}
	}
	latest := func(rs []logRecord) string {
		m := map[string]string{}
		for _, r := range rs {
			m[r.key] = r.value
		}
		return fmt.Sprint(m)
	}
	return latest(got) == latest(before)
}

func testCleanCrashAtEveryStep(t *testing.T, segBytes int64) {
	clock := newClock()
	cfg := compactConfig()
	base := vfs.NewMem()
	l := openTestLog(t, base, "/d/t-0", cfg, clock)
	writeKeyed(t, l, rand.New(rand.NewPCG(7, 8)), 150, 10)
	txnCompactWorkload(t, l)
	before, _ := readRecords(t, l)
	wantProducers := fmt.Sprint(l.Producers())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.SegmentBytes = segBytes
	ref := base.Clone()
	lr := openTestLog(t, ref, "/d/t-0", cfg, clock)
	lr.SetHighWatermark(lr.LogEndOffset())
	mustClean(t, lr, clock)
	after, _ := readRecords(t, lr)
	lr.Close()

	for n := 1; ; n++ {
		mem := base.Clone()
		efs := &errorFS{inner: mem, failAt: 1 << 30}
		l, err := OpenLog(LogOptions{FS: efs, Dir: "/d/t-0", Config: cfg, Now: clock.now, RecoveryPoint: -1, LogStartOffset: -1})
		if err != nil {
			t.Fatal(err)
		}
		l.SetHighWatermark(l.LogEndOffset())
		efs.mu.Lock()
		efs.failAt = efs.ops + n
		efs.mu.Unlock()
		_, _, cerr := l.Clean(context.Background(), clock.now(), CleanOptions{Force: true})
		if cerr != nil && !errors.Is(cerr, errInjected) {
			t.Fatalf("n=%d: %v", n, cerr)
		}
		crashed := mem.CrashClone()
		l2, err := OpenLog(LogOptions{FS: crashed, Dir: "/d/t-0", Config: cfg, Now: clock.now, RecoveryPoint: -1, LogStartOffset: -1})
		if err != nil {
			t.Fatalf("n=%d (fault %v): reopen: %v", n, cerr, err)
		}
		l2.SetHighWatermark(l2.LogEndOffset())
		got, _ := readRecords(t, l2)
		if !isCompactionOf(got, before, after) {
			t.Fatalf("n=%d (fault %v): log is not a compaction of the original:\n got %v", n, cerr, got)
		}
		if p := fmt.Sprint(l2.Producers()); p != wantProducers {
			t.Fatalf("n=%d: producers %s, want %s", n, p, wantProducers)
		}
		for _, name := range func() []string { ns, _ := crashed.ReadDir("/d/t-0"); return ns }() {
			if strings.HasSuffix(name, cleanedSuffix) || strings.HasSuffix(name, swapSuffix) || strings.HasSuffix(name, deletedSuffix) {
				t.Fatalf("n=%d: leftover %s", n, name)
			}
		}
		l2.Close()
		l.Close()
		if !efs.fired {
			t.Logf("completed after %d fault points", n-1)
			break
		}
	}
}

// TestCleanSwapRecovery checks the open-time handling of each state the
// rename protocol can leave behind, built by hand.
func TestCleanSwapRecovery(t *testing.T) {
	clock := newClock()
	cfg := compactConfig()
	base := vfs.NewMem()
	l := openTestLog(t, base, "/d/t-0", cfg, clock)
	writeKeyed(t, l, rand.New(rand.NewPCG(9, 10)), 150, 10)
	before, _ := readRecords(t, l)
	l.Close()
	ref := base.Clone()
	cfg.SegmentBytes = 1 << 20 // one group
	lr := openTestLog(t, ref, "/d/t-0", cfg, clock)
	lr.SetHighWatermark(lr.LogEndOffset())
	st := mustClean(t, lr, clock)
	after, _ := readRecords(t, lr)
	lr.Close()
	if st.SegmentsIn < 2 || st.SegmentsOut != 1 {
		t.Fatalf("want one group of several segments, got %+v", st)
	}
	// The cleaned files, under the names of the protocol's steps.
	newFiles := map[string][]byte{}
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		b, err := readFile(ref, segmentFileName("/d/t-0", 0, suffix))
		if err != nil {
			t.Fatal(err)
		}
		newFiles[suffix] = b
	}
	oldBases := []int64{}
	for _, n := range segmentNames(t, base, "/d/t-0") {
		b, _ := parseSegmentBase(n)
		if b < st.EndOffset {
			oldBases = append(oldBases, b)
		}
	}
	write := func(fsys *vfs.MemFS, name string, b []byte) {
		f, err := fsys.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(b)
		f.Sync()
		f.Close()
	}
	rename := func(fsys *vfs.MemFS, from, to string) {
		if err := fsys.Rename(from, to); err != nil {
			t.Fatal(err)
		}
	}
	name := func(b int64, suffix string) string { return segmentFileName("/d/t-0", b, suffix) }
	states := []struct {
		name  string
		setup func(fsys *vfs.MemFS)
		want  []logRecord
	}{
		{"cleaned written", func(fsys *vfs.MemFS) {
			for s, b := range newFiles {
				write(fsys, name(0, s)+cleanedSuffix, b)
			}
		}, before},
		{"indexes swapped, log still cleaned", func(fsys *vfs.MemFS) {
			for s, b := range newFiles {
				if s == logSuffix {
					write(fsys, name(0, s)+cleanedSuffix, b)
				} else {
					write(fsys, name(0, s)+swapSuffix, b)
				}
			}
		}, before},
		{"all swapped", func(fsys *vfs.MemFS) {
			for s, b := range newFiles {
				write(fsys, name(0, s)+swapSuffix, b)
			}
		}, after},
		{"half the old segments deleted", func(fsys *vfs.MemFS) {
			for s, b := range newFiles {
				write(fsys, name(0, s)+swapSuffix, b)
			}
			for _, ob := range oldBases[len(oldBases)/2:] {
				rename(fsys, name(ob, logSuffix), name(ob, logSuffix)+deletedSuffix)
			}
		}, after},
		{"old segments deleted, log renamed", func(fsys *vfs.MemFS) {
			for s, b := range newFiles {
				write(fsys, name(0, s)+swapSuffix, b)
			}
			for _, ob := range oldBases {
				for _, s := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
					rename(fsys, name(ob, s), name(ob, s)+deletedSuffix)
				}
			}
			rename(fsys, name(0, logSuffix)+swapSuffix, name(0, logSuffix))
		}, after},
	}
	for _, tc := range states {
		t.Run(tc.name, func(t *testing.T) {
			fsys := base.Clone()
			tc.setup(fsys)
			l, err := OpenLog(LogOptions{FS: fsys, Dir: "/d/t-0", Config: cfg, Now: clock.now, RecoveryPoint: -1, LogStartOffset: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			l.SetHighWatermark(l.LogEndOffset())
			got, _ := readRecords(t, l)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// TestCleanRandomOperations runs random appends (keyed, tombstones,
// transactions), rolls, cleans, reopens and retention against an oracle
// of the latest value per key.
func TestCleanRandomOperations(t *testing.T) {
	for seed := uint64(0); seed < 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runCleanRandomOps(t, seed) })
	}
}

func runCleanRandomOps(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	clock := newClock()
	cfg := compactConfig()
	cfg.SegmentBytes = 1024 + int64(rng.IntN(3000))
	cfg.DeleteRetentionMs = 1000
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, "/d/t-0", cfg, clock)
	defer func() { l.Close() }()
	latest := map[string]string{} // committed latest value per key ("<nil>" for tombstone)
	latestOff := map[string]int64{}
	var pending []kv // records of the open transaction
	var pendingOff []int64
	txnOpen := false
	for step := 0; step < 400; step++ {
		switch op := rng.IntN(20); {
		case op < 10:
			var recs []kv
			for j := 0; j < 1+rng.IntN(3); j++ {
				k := fmt.Sprintf("k%d", rng.IntN(12))
				v := fmt.Sprintf("s%d.%d", step, j)
				if rng.IntN(8) == 0 {
					v = "<nil>"
				}
				recs = append(recs, rec(k, v))
				latest[k] = v
				latestOff[k] = l.LogEndOffset() + int64(j)
			}
			appendHW(t, l, keyedBatch(t, keyedSpec{codec: wire.Compression(rng.IntN(2))}, recs...))
		case op < 13:
			k := fmt.Sprintf("k%d", rng.IntN(12))
			r := rec(k, fmt.Sprintf("x%d", step))
			pending = append(pending, r)
			pendingOff = append(pendingOff, l.LogEndOffset())
			txnOpen = true
			appendHW(t, l, keyedBatch(t, keyedSpec{pid: 9, epoch: 3, transactional: true}, r))
		case op < 15 && txnOpen:
			commit := rng.IntN(2) == 0
			controlHW(t, l, 9, commit)
			if commit {
				for i, r := range pending {
					k := string(r.key)
					if prev, ok := latestOff[k]; !ok || pendingOff[i] > prev {
						latest[k], latestOff[k] = nullable(r.value), pendingOff[i]
					}
				}
			}
			pending, pendingOff, txnOpen = nil, nil, false
		case op < 16:
			l.Roll()
		case op < 17:
			clock.advance(600 * 1e6)
		case op < 19:
			if _, _, err := l.Clean(context.Background(), clock.now(), CleanOptions{Force: rng.IntN(2) == 0}); err != nil {
				t.Fatalf("step %d: clean: %v", step, err)
			}
		default:
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			cp := l.CleanerCheckpoint()
			var err error
			l, err = OpenLog(LogOptions{FS: fsys, Dir: "/d/t-0", Config: cfg, Now: clock.now, RecoveryPoint: -1, LogStartOffset: -1, CleanerCheckpoint: cp})
			if err != nil {
				t.Fatalf("step %d: reopen: %v", step, err)
			}
			l.SetHighWatermark(l.LogEndOffset())
		}
		checkLatest(t, l, latest, pending, step)
	}
}

// checkLatest checks that reading the log with read_committed semantics
// gives, per key, the oracle's latest value.
func checkLatest(t *testing.T, l *Log, latest map[string]string, pending []kv, step int) {
	t.Helper()
	recs, _ := readRecords(t, l)
	aborted := newAbortedSet(l.AbortedTransactions(l.LogStartOffset(), l.LogEndOffset()))
	open := map[int64]int64{}
	for _, o := range l.OngoingTransactions() {
		open[o.ProducerID] = o.FirstOffset
	}
	got := map[string]string{}
	// Records are read with their batch's producer: re-read headers.
	_, hs := readRecords(t, l)
	hi := 0
	for _, r := range recs {
		for hs[hi].LastOffset() < r.offset {
			hi++
		}
		h := hs[hi]
		if first, ok := open[h.ProducerID]; (ok && h.IsTransactional() && r.offset >= first) || aborted.isAborted(h) {
			continue
		}
		got[r.key] = r.value
	}
	for k, v := range latest {
		if got[k] != v && !(v == "<nil>" && got[k] == "") {
			t.Fatalf("step %d: key %s = %q, want %q", step, k, got[k], v)
		}
	}
	_ = pending
}

func BenchmarkClean(b *testing.B) {
	clock := newClock()
	cfg := compactConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.IndexIntervalBytes = 4096
	base := vfs.NewMem()
	l := openTestLog(b, base, "/d/t-0", cfg, clock)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 4000; i++ {
		var recs []kv
		for j := 0; j < 10; j++ {
			recs = append(recs, rec(fmt.Sprintf("key-%d", rng.IntN(5000)), strings.Repeat("v", 200)))
		}
		appendHW(b, l, keyedBatch(b, keyedSpec{}, recs...))
	}
	l.Roll()
	size := l.Size()
	l.Close()
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		fsys := base.Clone()
		l := openTestLog(b, fsys, "/d/t-0", cfg, clock)
		l.SetHighWatermark(l.LogEndOffset())
		b.StartTimer()
		if _, ok, err := l.Clean(context.Background(), clock.now(), CleanOptions{Force: true}); err != nil || !ok {
			b.Fatal(ok, err)
		}
		b.StopTimer()
		l.Close()
		b.StartTimer()
	}
}

// TestCleanConcurrentAppendsAndReads cleans while a writer appends and
// rolls and a reader reads from the start (run with -race).
func TestCleanConcurrentAppendsAndReads(t *testing.T) {
	clock := newClock()
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", compactConfig(), clock)
	defer l.Close()
	rng := rand.New(rand.NewPCG(11, 12))
	writeKeyed(t, l, rng, 200, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 20; i++ {
			if _, _, err := l.Clean(context.Background(), clock.now(), CleanOptions{Force: true}); err != nil && !errors.Is(err, ErrCleanAborted) {
				t.Errorf("clean: %v", err)
			}
		}
	}()
	for i := 0; i < 100; i++ {
		appendHW(t, l, keyedBatch(t, keyedSpec{}, rec(fmt.Sprint("k", i%10), fmt.Sprint("w", i))))
		if i%10 == 0 {
			l.Roll()
		}
		readRecords(t, l)
	}
	<-done
	got, _ := readRecords(t, l)
	last := map[string]string{}
	for _, r := range got {
		last[r.key] = r.value
	}
	for i := 90; i < 100; i++ {
		if last[fmt.Sprint("k", i%10)] != fmt.Sprint("w", i) {
			t.Fatalf("key k%d = %s, want w%d", i%10, last[fmt.Sprint("k", i%10)], i)
		}
	}
}

// TestCleanKeepsFewEmptyBatches checks that a clean leaves an empty batch
// only where Kafka's cleaner would (an idempotent producer's last data
// batch), and that a segment group that loses every record becomes an
// empty segment, which reads, reopens and retention handle. Clients such as kafka-go cannot read past
// an empty batch (segmentio/kafka-go#874), so every extra one is a hazard.
func TestCleanKeepsFewEmptyBatches(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	cfg := compactConfig()
	cfg.SegmentBytes = 1 << 20 // one group
	l := openTestLog(t, fsys, "/d/t-0", cfg, clock)
	// Producer 7 writes a, b, c in three batches; a keyless producer
	// overwrites them all later, in its own segment.
	for i, k := range []string{"a", "b", "c"} {
		if _, err := l.Append(keyedBatch(t, keyedSpec{pid: 7, seq: int32(i)}, rec(k, "old"))); err != nil {
			t.Fatal(err)
		}
	}
	l.Roll()
	if _, err := l.Append(keyedBatch(t, keyedSpec{}, rec("a", "new"), rec("b", "new"), rec("c", "new"))); err != nil {
		t.Fatal(err)
	}
	l.Roll()
	l.SetHighWatermark(l.LogEndOffset())
	mustClean(t, l, clock)
	got, hs := readRecords(t, l)
	var empty []int64
	for _, h := range hs {
		if h.NumRecords == 0 {
			empty = append(empty, h.BaseOffset)
		}
	}
	// Offsets 0 and 1 go; 2 is producer 7's last batch and stays empty.
	if !slices.Equal(empty, []int64{2}) || len(got) != 3 || got[0].offset != 3 {
		t.Fatalf("empty batches at %v, records %v; want one empty batch at 2 and records from 3", empty, got)
	}
	if e, ok := l.Producer(7); !ok || e.LastSequence() != 2 {
		t.Fatalf("producer 7 after the clean: %+v %v", e, ok)
	}

	// A segment group that loses every record becomes an empty segment,
	// as in Kafka, not a segment of empty batches.
	// Segments of 256 bytes: the three-batch segment and the next one are
	// cleaned as separate groups.
	cfg.SegmentBytes = 256
	l2 := openTestLog(t, fsys, "/d/t-1", cfg, clock)
	for range 3 {
		if _, err := l2.Append(keyedBatch(t, keyedSpec{}, rec("k", "v"))); err != nil {
			t.Fatal(err)
		}
	}
	l2.Roll()
	if _, err := l2.Append(keyedBatch(t, keyedSpec{}, rec("k", "last"))); err != nil {
		t.Fatal(err)
	}
	l2.Roll()
	l2.SetHighWatermark(l2.LogEndOffset())
	mustClean(t, l2, clock)
	got, hs = readRecords(t, l2)
	if len(hs) != 1 || len(got) != 1 || got[0] != (logRecord{3, "k", "last"}) {
		t.Fatalf("batches %v records %v; want only the record at 3", hs, got)
	}
	if l2.mu.segments[0].size != 0 || l2.mu.segments[0].baseOffset != 0 {
		t.Fatalf("first segment: base %d size %d, want an empty segment at 0", l2.mu.segments[0].baseOffset, l2.mu.segments[0].size)
	}
	// The empty segment survives a reopen, reads start past it, and it
	// does not hold back time retention of a compact,delete log.
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.Delete = true
	cfg.RetentionMs = 1
	l3, err := OpenLog(LogOptions{FS: fsys, Dir: "/d/t-1", Config: cfg, Now: clock.now, RecoveryPoint: -1, LogStartOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l3.Close()
	l3.SetHighWatermark(l3.LogEndOffset())
	if got, _ = readRecords(t, l3); len(got) != 1 || got[0].offset != 3 {
		t.Fatalf("after reopen: %v", got)
	}
	if n, err := l3.EnforceRetention(clock.now().Add(time.Hour)); err != nil || n != 2 || l3.LogStartOffset() != 4 {
		t.Fatalf("retention: deleted %d, err %v, log start %d; want both closed segments gone, start 4", n, err, l3.LogStartOffset())
	}
}
