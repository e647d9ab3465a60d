package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire"
)

// txnBatch builds a transactional batch of n records for producer pid.
func txnBatch(t testing.TB, pid int64, n int) []byte {
	t.Helper()
	return producerBatch(t, pid, n, true)
}

func producerBatch(t testing.TB, pid int64, n int, transactional bool) []byte {
	t.Helper()
	recs := make([]wire.Record, n)
	for i := range recs {
		recs[i] = wire.Record{Value: bytes.Repeat([]byte{'v'}, 100)}
	}
	b, err := wire.EncodeBatch(wire.BatchSpec{
		BaseTimestamp: 1_700_000_000_000, ProducerID: pid, ProducerEpoch: 3, BaseSequence: 0,
		Transactional: transactional, PartitionLeaderEpoch: -1, Records: recs,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustControl(t testing.TB, l *Log, pid int64, commit bool) AppendInfo {
	t.Helper()
	info, err := l.AppendControl(ControlMarker{ProducerID: pid, ProducerEpoch: 3, Commit: commit, CoordinatorEpoch: 1, LeaderEpoch: -1, Timestamp: 1_700_000_000_500})
	if err != nil {
		t.Fatalf("AppendControl: %v", err)
	}
	return info
}

// appendHW appends and moves the high watermark to the LEO, as the single
// node broker does.
func appendHW(t testing.TB, l *Log, b []byte) AppendInfo {
	t.Helper()
	info := mustAppend(t, l, b)
	l.SetHighWatermark(l.LogEndOffset())
	return info
}

func controlHW(t testing.TB, l *Log, pid int64, commit bool) AppendInfo {
	t.Helper()
	info := mustControl(t, l, pid, commit)
	l.SetHighWatermark(l.LogEndOffset())
	return info
}

func checkLSO(t testing.TB, l *Log, want int64) {
	t.Helper()
	if got := l.LastStableOffset(); got != want {
		t.Fatalf("LSO = %d, want %d (HW %d, ongoing %+v)", got, want, l.HighWatermark(), l.OngoingTransactions())
	}
}

func TestTxnLSOInterleavedProducers(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", smallConfig(), newClock())
	defer l.Close()
	appendHW(t, l, testBatch(2, 1000, 10)) // 0-1 plain
	checkLSO(t, l, 2)
	a := appendHW(t, l, txnBatch(t, 7, 3)) // 2-4 producer 7
	checkLSO(t, l, a.FirstOffset)
	appendHW(t, l, testBatch(1, 1000, 10)) // 5 plain
	b := appendHW(t, l, txnBatch(t, 8, 2)) // 6-7 producer 8
	appendHW(t, l, txnBatch(t, 7, 1))      // 8 producer 7 again: same transaction
	checkLSO(t, l, 2)
	if got := l.OngoingTransactions(); !slices.Equal(got, []OngoingTxn{{7, 3, 2}, {8, 3, 6}}) {
		t.Fatalf("ongoing %+v", got)
	}
	// The HW bounds the LSO even with a transaction open.
	mustAppend(t, l, testBatch(1, 1000, 10)) // 9, HW stays
	checkLSO(t, l, 2)
	controlHW(t, l, 7, true) // 10: commit 7; 8 still open from 6
	checkLSO(t, l, b.FirstOffset)
	mustAppend(t, l, testBatch(1, 1000, 10)) // 11, not yet under the HW
	abort := mustControl(t, l, 8, false)     // 12: abort 8
	checkLSO(t, l, 11)                       // the HW
	l.SetHighWatermark(l.LogEndOffset())
	checkLSO(t, l, 13)
	if got := l.OngoingTransactions(); len(got) != 0 {
		t.Fatalf("ongoing %+v", got)
	}
	want := []AbortedTxn{{ProducerID: 8, FirstOffset: 6, LastOffset: abort.FirstOffset, LastStableOffset: 13}}
	if got := l.AbortedTransactions(0, 13); !slices.Equal(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
}

func TestTxnCommitAndAbortIndexEntries(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", smallConfig(), newClock())
	defer l.Close()
	appendHW(t, l, txnBatch(t, 1, 2))  // 0-1 p1
	appendHW(t, l, txnBatch(t, 2, 2))  // 2-3 p2
	controlHW(t, l, 1, false)          // 4 abort p1: p2 open from 2
	controlHW(t, l, 2, true)           // 5 commit p2: no entry
	controlHW(t, l, 3, false)          // 6 abort of a producer with nothing open: no entry
	appendHW(t, l, txnBatch(t, 1, 1))  // 7 p1 again
	appendHW(t, l, testBatch(1, 0, 5)) // 8
	controlHW(t, l, 1, false)          // 9 abort p1: nothing open
	want := []AbortedTxn{
		{ProducerID: 1, FirstOffset: 0, LastOffset: 4, LastStableOffset: 2},
		{ProducerID: 1, FirstOffset: 7, LastOffset: 9, LastStableOffset: 10},
	}
	for _, tc := range []struct {
		from, upTo int64
		want       []AbortedTxn
	}{
		{0, 10, want},
		{0, 1, want[:1]},
		{4, 5, want[:1]},
		{5, 7, nil}, // between the two: first ended at 4, second starts at 7
		{5, 8, want[1:]},
		{9, 10, want[1:]},
		{10, 11, nil},
		{3, 3, nil},
	} {
		if got := l.AbortedTransactions(tc.from, tc.upTo); !slices.Equal(got, tc.want) {
			t.Errorf("AbortedTransactions(%d, %d) = %+v, want %+v", tc.from, tc.upTo, got, tc.want)
		}
	}
	checkLSO(t, l, 10)
}

func TestTxnIndexKafkaByteLayout(t *testing.T) {
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, "/d/t-0", smallConfig(), newClock())
	name := "/d/t-0/00000000000000000000.txnindex"
	appendHW(t, l, txnBatch(t, 0x0102030405, 2))
	controlHW(t, l, 0x0102030405, true)
	if fsys.Exists(name) {
		t.Fatal(".txnindex created before the first abort")
	}
	appendHW(t, l, txnBatch(t, 0x0102030405, 1)) // 3
	controlHW(t, l, 0x0102030405, false)         // 4
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 64)
	n, _ := f.ReadAt(got, 0)
	f.Close()
	var want []byte
	want = binary.BigEndian.AppendUint16(want, 0) // version
	want = binary.BigEndian.AppendUint64(want, 0x0102030405)
	want = binary.BigEndian.AppendUint64(want, 3) // first offset
	want = binary.BigEndian.AppendUint64(want, 4) // last offset (marker)
	want = binary.BigEndian.AppendUint64(want, 5) // last stable offset
	if !bytes.Equal(got[:n], want) {
		t.Fatalf(".txnindex\n got %x\nwant %x", got[:n], want)
	}
	entries, err := parseTxnIndex(want)
	if err != nil || len(entries) != 1 || entries[0] != (AbortedTxn{0x0102030405, 3, 4, 5}) {
		t.Fatalf("parse: %+v %v", entries, err)
	}
	if enc := encodeTxnEntry(nil, entries[0]); !bytes.Equal(enc, want) {
		t.Fatalf("encode %x", enc)
	}
	for _, bad := range [][]byte{want[:33], append(bytes.Clone(want), want...), func() []byte {
		b := bytes.Clone(want)
		b[1] = 1 // version 1
		return b
	}()} {
		if _, err := parseTxnIndex(bad); err == nil {
			t.Errorf("parseTxnIndex(%x) accepted", bad)
		}
	}
}

// logLines collects log messages.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (c *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (c *logLines) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	c.lines = append(c.lines, r.Message)
	c.mu.Unlock()
	return nil
}
func (c *logLines) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *logLines) WithGroup(string) slog.Handler      { return c }
func (c *logLines) has(sub string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

func openLogged(t testing.TB, fsys vfs.FS, cfg LogConfig, rp int64) (*Log, *logLines) {
	t.Helper()
	lines := &logLines{}
	l, err := OpenLog(LogOptions{FS: fsys, Dir: "/d/t-0", Config: cfg, Now: newClock().now, Logger: slog.New(lines), RecoveryPoint: rp, LogStartOffset: -1})
	if err != nil {
		t.Fatalf("OpenLog: %v", err)
	}
	return l, lines
}

type txnView struct {
	lso     int64
	ongoing []OngoingTxn
	aborted []AbortedTxn
}

func viewOf(l *Log) txnView {
	l.SetHighWatermark(l.LogEndOffset())
	return txnView{l.LastStableOffset(), l.OngoingTransactions(), l.AbortedTransactions(0, l.LogEndOffset()+1)}
}

func (v txnView) equal(o txnView) bool {
	return v.lso == o.lso && slices.Equal(v.ongoing, o.ongoing) && slices.Equal(v.aborted, o.aborted)
}

// writeTxnWorkload spreads transactions over several segments and leaves
// producers 1 and 4 open.
func writeTxnWorkload(t testing.TB, l *Log) {
	t.Helper()
	for round := int64(0); round < 8; round++ {
		p := 10 + round
		appendHW(t, l, txnBatch(t, p, 3))
		appendHW(t, l, testBatch(2, 0, 50))
		appendHW(t, l, txnBatch(t, 1000, 1))
		controlHW(t, l, p, round%2 == 0)
		controlHW(t, l, 1000, round%3 == 0)
	}
	appendHW(t, l, txnBatch(t, 1, 2))
	appendHW(t, l, txnBatch(t, 2, 2))
	controlHW(t, l, 2, false)
	appendHW(t, l, txnBatch(t, 4, 2))
}

func snapshotFiles(t testing.TB, fsys vfs.FS) []string {
	t.Helper()
	names, err := fsys.ReadDir("/d/t-0")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, snapshotSuffix) {
			out = append(out, n)
		}
	}
	return out
}

func TestTxnRestartAfterCleanClose(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig()
	l, _ := openLogged(t, fsys, cfg, -1)
	writeTxnWorkload(t, l)
	if n := len(l.mu.segments); n < 3 {
		t.Fatalf("workload spans %d segments, want several", n)
	}
	before := viewOf(l)
	if len(before.ongoing) != 2 || len(before.aborted) == 0 {
		t.Fatalf("workload: %+v", before)
	}
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(snapshotFiles(t, fsys), strings.TrimPrefix(segmentFileName("", leo, snapshotSuffix), "/")) {
		t.Fatalf("no snapshot at the LEO %d: %v", leo, snapshotFiles(t, fsys))
	}
	for i := 0; i < 2; i++ { // twice: the second open must not add entries
		l2, lines := openLogged(t, fsys, cfg, leo)
		if lines.has("no usable transaction snapshot") {
			t.Fatal("clean restart replayed from the log start")
		}
		if after := viewOf(l2); !after.equal(before) {
			t.Fatalf("after restart %+v\nwant %+v", after, before)
		}
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Restarts leave at most two snapshots per segment.
	if n, segs := len(snapshotFiles(t, fsys)), len(segmentNames(t, fsys, "/d/t-0")); n > 2*segs {
		t.Fatalf("%d snapshots for %d segments", n, segs)
	}
}

func TestTxnRestartWithoutSnapshots(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig()
	l, _ := openLogged(t, fsys, cfg, -1)
	writeTxnWorkload(t, l)
	before := viewOf(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, n := range snapshotFiles(t, fsys) {
		if err := fsys.Remove("/d/t-0/" + n); err != nil {
			t.Fatal(err)
		}
	}
	l2, lines := openLogged(t, fsys, cfg, -1)
	defer l2.Close()
	if !lines.has("no usable transaction snapshot") {
		t.Fatal("expected a log line about the full replay")
	}
	if after := viewOf(l2); !after.equal(before) {
		t.Fatalf("after restart %+v\nwant %+v", after, before)
	}
}

func TestTxnCrashMidTransaction(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig()
	cfg.FlushIntervalMessages = 1
	l, _ := openLogged(t, fsys, cfg, -1)
	writeTxnWorkload(t, l)
	before := viewOf(l)
	crashed := fsys.CrashClone() // kill -9: only synced data survives, no close snapshot
	l.Close()
	l2, lines := openLogged(t, crashed, cfg, 0)
	if lines.has("no usable transaction snapshot") {
		t.Fatal("crash restart replayed from the log start although roll snapshots exist")
	}
	if after := viewOf(l2); !after.equal(before) {
		t.Fatalf("after crash %+v\nwant %+v", after, before)
	}
	// The open transactions end normally after the restart.
	abort := controlHW(t, l2, 1, false)
	controlHW(t, l2, 4, true)
	got := l2.AbortedTransactions(abort.FirstOffset, abort.FirstOffset+1)
	if len(got) != 1 || got[0].ProducerID != 1 || got[0].LastOffset != abort.FirstOffset || got[0].LastStableOffset != before.ongoing[1].FirstOffset {
		t.Fatalf("abort after restart: %+v (ongoing before %+v)", got, before.ongoing)
	}
	checkLSO(t, l2, l2.LogEndOffset())
	l2.Close()
}

func TestTxnCrashLosesUnsyncedIndexEntries(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig()
	l, _ := openLogged(t, fsys, cfg, -1)
	writeTxnWorkload(t, l)
	before := viewOf(l)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	crashed := fsys.CrashClone()
	l.Close()
	// Lose the active segment's transaction index, as if its name had
	// not reached the disk.
	names, _ := crashed.ReadDir("/d/t-0")
	var idx []string
	for _, n := range names {
		if strings.HasSuffix(n, txnIndexSuffix) {
			idx = append(idx, n)
		}
	}
	if len(idx) == 0 {
		t.Fatal("workload wrote no .txnindex")
	}
	if err := crashed.Remove("/d/t-0/" + idx[len(idx)-1]); err != nil {
		t.Fatal(err)
	}
	l2, _ := openLogged(t, crashed, cfg, 0)
	if after := viewOf(l2); !after.equal(before) {
		t.Fatalf("after crash %+v\nwant %+v", after, before)
	}
	l2.Close()
}

func TestTxnCorruptSnapshotAndIndex(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig()
	l, _ := openLogged(t, fsys, cfg, -1)
	writeTxnWorkload(t, l)
	before := viewOf(l)
	l.Close()
	snaps := snapshotFiles(t, fsys)
	newest := "/d/t-0/" + snaps[len(snaps)-1]
	f, err := fsys.OpenReadWrite(newest)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xee}, 12) // inside the CRC-covered offset field
	f.Close()
	l2, lines := openLogged(t, fsys, cfg, -1)
	if !lines.has("deleting unreadable transaction snapshot") {
		t.Fatal("no log line for the corrupt snapshot")
	}
	if fsys.Exists(newest) && slices.Equal(snapshotFiles(t, fsys), snaps) {
		t.Fatal("corrupt snapshot kept")
	}
	if after := viewOf(l2); !after.equal(before) {
		t.Fatalf("after corrupt snapshot %+v\nwant %+v", after, before)
	}
	l2.Close()

	// Every snapshot corrupt, and a transaction index with garbage.
	for _, n := range snapshotFiles(t, fsys) {
		f, _ := fsys.OpenReadWrite("/d/t-0/" + n)
		f.Truncate(3)
		f.Close()
	}
	names, _ := fsys.ReadDir("/d/t-0")
	for _, n := range names {
		if strings.HasSuffix(n, txnIndexSuffix) {
			f, _ := fsys.OpenReadWrite("/d/t-0/" + n)
			f.WriteAt([]byte{1, 2, 3}, 0)
			f.Close()
			break
		}
	}
	l3, lines := openLogged(t, fsys, cfg, -1)
	if !lines.has("no usable transaction snapshot") || !lines.has("rebuilding unreadable transaction index") {
		t.Fatalf("log lines %v", lines.lines)
	}
	if after := viewOf(l3); !after.equal(before) {
		t.Fatalf("after corrupt index %+v\nwant %+v", after, before)
	}
	l3.Close()
}

func FuzzParseTxnIndex(f *testing.F) {
	f.Add(encodeTxnEntry(nil, AbortedTxn{1, 2, 3, 4}))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := parseTxnIndex(b)
		if err != nil {
			return
		}
		var again []byte
		for _, e := range entries {
			again = encodeTxnEntry(again, e)
		}
		if !bytes.Equal(again, b) {
			t.Fatal("re-encoding differs")
		}
	})
}

func TestTxnTruncation(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig()
	l, _ := openLogged(t, fsys, cfg, -1)
	defer l.Close()
	writeTxnWorkload(t, l)
	l.Roll()
	p5 := appendHW(t, l, txnBatch(t, 5, 2))
	appendHW(t, l, testBatch(3, 0, 20))
	abort := controlHW(t, l, 5, false)
	tail := appendHW(t, l, testBatch(1, 0, 20))
	if err := l.Close(); err != nil { // snapshot at the LEO
		t.Fatal(err)
	}
	l, _ = openLogged(t, fsys, cfg, -1)
	l.SetHighWatermark(l.LogEndOffset())
	leo := l.LogEndOffset()
	if leo != tail.LastOffset+1 {
		t.Fatal(leo)
	}
	// Cut the abort marker: producer 5's transaction is open again.
	if err := l.TruncateTo(abort.FirstOffset); err != nil {
		t.Fatal(err)
	}
	for _, n := range snapshotFiles(t, fsys) {
		if off, _ := parseSnapshotOffset(n); off > abort.FirstOffset {
			t.Fatalf("snapshot %s survived truncation to %d", n, abort.FirstOffset)
		}
	}
	if got := l.AbortedTransactions(p5.FirstOffset, leo); len(got) != 0 {
		t.Fatalf("aborted after truncation: %+v", got)
	}
	ongoing := l.OngoingTransactions()
	if len(ongoing) != 3 || ongoing[2] != (OngoingTxn{5, 3, p5.FirstOffset}) {
		t.Fatalf("ongoing %+v", ongoing)
	}
	checkLSO(t, l, ongoing[0].FirstOffset)
	// Cut producer 5's first batch: the transaction is gone.
	if err := l.TruncateTo(p5.FirstOffset); err != nil {
		t.Fatal(err)
	}
	if got := l.OngoingTransactions(); len(got) != 2 {
		t.Fatalf("ongoing %+v", got)
	}
	// Cut into the workload: the state must match a log rebuilt from scratch.
	cut := l.LogEndOffset() / 2
	if err := l.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	got := viewOf(l)
	l.Close()
	for _, n := range snapshotFiles(t, fsys) {
		fsys.Remove("/d/t-0/" + n)
	}
	l, _ = openLogged(t, fsys, cfg, -1)
	if want := viewOf(l); !got.equal(want) {
		t.Fatalf("after truncation %+v\nrebuilt %+v", got, want)
	}
	for _, e := range got.aborted {
		if e.LastOffset >= l.LogEndOffset() {
			t.Fatalf("entry %+v beyond LEO %d", e, l.LogEndOffset())
		}
	}
	if err := l.TruncateFullyAndStartAt(500); err != nil {
		t.Fatal(err)
	}
	if n := snapshotFiles(t, fsys); len(n) != 0 || len(l.OngoingTransactions()) != 0 || l.AbortedTransactions(0, 1000) != nil {
		t.Fatalf("after full truncation: snapshots %v ongoing %v", n, l.OngoingTransactions())
	}
}

func TestTxnRetentionRemovesIndexesAndSnapshots(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig()
	l, _ := openLogged(t, fsys, cfg, -1)
	defer l.Close()
	writeTxnWorkload(t, l)
	controlHW(t, l, 1, true)
	controlHW(t, l, 4, false)
	l.Roll()
	all := l.AbortedTransactions(0, l.LogEndOffset())
	start, err := l.DeleteRecordsBefore(-1)
	if err != nil {
		t.Fatal(err)
	}
	first := l.mu.segments[0].baseOffset
	names, _ := fsys.ReadDir("/d/t-0")
	for _, n := range names {
		if off, ok := parseSnapshotOffset(n); ok && off < first {
			t.Errorf("snapshot %s below the first segment %d", n, first)
		}
		if strings.HasSuffix(n, txnIndexSuffix) {
			t.Errorf("transaction index %s kept", n)
		}
	}
	if got := l.AbortedTransactions(start, start+1); len(got) != 0 {
		t.Fatalf("aborted after deletion: %+v (before %+v)", got, all)
	}
	checkLSO(t, l, l.LogEndOffset())
}

// TestTxnConcurrentReaders runs the fetch-path readers against appends.
func TestTxnConcurrentReaders(t *testing.T) {
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
				lso := l.LastStableOffset()
				if lso > l.LogEndOffset() {
					t.Errorf("LSO %d past LEO", lso)
					return
				}
				for _, e := range l.AbortedTransactions(0, lso) {
					if e.LastOffset >= l.LogEndOffset() {
						t.Errorf("entry %+v past LEO", e)
						return
					}
				}
				l.OngoingTransactions()
			}
		}()
	}
	for i := int64(0); i < 200; i++ {
		appendHW(t, l, txnBatch(t, i%5, 2))
		if i%3 == 2 {
			controlHW(t, l, (i+1)%5, i%2 == 0)
		}
	}
	close(done)
	wg.Wait()
}

func TestTxnAppendRejectsMalformedMarker(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", smallConfig(), newClock())
	defer l.Close()
	b, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: 1, BaseSequence: -1, Transactional: true, Control: true,
		Records: []wire.Record{{Key: []byte{0, 0, 0, 0}, Value: []byte{0}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(b); err == nil {
		t.Fatal("control batch with a short marker accepted")
	}
	if l.LogEndOffset() != 0 {
		t.Fatal("rejected batch appended")
	}
	// An unknown control type is stored and ignored.
	b, _ = wire.EncodeBatch(wire.BatchSpec{ProducerID: 1, BaseSequence: -1, Transactional: true, Control: true,
		Records: []wire.Record{{Key: []byte{0, 0, 0, 9}, Value: nil}}})
	appendHW(t, l, txnBatch(t, 1, 1))
	appendHW(t, l, b)
	checkLSO(t, l, 0)
}

// txnModelBatch is what the model remembers of a batch.
type txnModelBatch struct {
	base, last int64
	pid        int64 // -1 for a plain batch
	control    bool
	commit     bool
}

// txnModel recomputes the transaction state from the batch list, the
// simplest possible way.
type txnModel struct {
	batches []txnModelBatch
	start   int64
	leo     int64
}

func (m *txnModel) state() (ongoing []OngoingTxn, aborted []AbortedTxn) {
	open := map[int64]int64{}
	for _, b := range m.batches {
		if b.pid < 0 {
			continue
		}
		if !b.control {
			if _, ok := open[b.pid]; !ok {
				open[b.pid] = b.base
			}
			continue
		}
		first, ok := open[b.pid]
		if !ok {
			continue
		}
		delete(open, b.pid)
		if b.commit {
			continue
		}
		lso := b.last + 1
		for _, f := range open {
			lso = min(lso, f)
		}
		aborted = append(aborted, AbortedTxn{b.pid, first, b.last, lso})
	}
	for pid, f := range open {
		ongoing = append(ongoing, OngoingTxn{pid, 3, f})
	}
	slices.SortFunc(ongoing, func(a, b OngoingTxn) int { return int(a.FirstOffset - b.FirstOffset) })
	return ongoing, aborted
}

// TestTxnRandomOperations checks random appends, markers, rolls,
// truncations, DeleteRecords, clean restarts and crashes against txnModel.
func TestTxnRandomOperations(t *testing.T) {
	seeds := uint64(10)
	if testing.Short() {
		seeds = 3
	}
	if n := os.Getenv("SAMSA_TXN_SEEDS"); n != "" {
		seeds, _ = strconv.ParseUint(n, 10, 64)
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run("", func(t *testing.T) { runTxnRandomOps(t, seed, 300) })
	}
}

func runTxnRandomOps(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 17))
	fsys := vfs.NewMem()
	cfg := smallConfig()
	cfg.SegmentBytes = int64(600 + rng.IntN(2000))
	cfg.RetentionMs = -1
	m := &txnModel{}
	open := func(fs vfs.FS) *Log {
		l, err := OpenLog(LogOptions{FS: fs, Dir: "/d/t-0", Config: cfg, Now: newClock().now, RecoveryPoint: -1, LogStartOffset: m.start})
		if err != nil {
			t.Fatalf("seed %d: open: %v", seed, err)
		}
		l.SetHighWatermark(l.LogEndOffset())
		return l
	}
	l := open(fsys)
	defer func() { l.Close() }()
	var trace []string
	for step := 0; step < steps; step++ {
		var op string
		switch r := rng.IntN(100); {
		case r < 35:
			pid := int64(rng.IntN(4))
			info := mustAppend(t, l, txnBatch(t, pid, 1+rng.IntN(3)))
			m.batches = append(m.batches, txnModelBatch{info.FirstOffset, info.LastOffset, pid, false, false})
			op = fmt.Sprintf("txn p%d@%d", pid, info.FirstOffset)
		case r < 50:
			info := mustAppend(t, l, testBatch(1+rng.IntN(3), 0, 40))
			m.batches = append(m.batches, txnModelBatch{info.FirstOffset, info.LastOffset, -1, false, false})
			op = "plain"
		case r < 75:
			pid, commit := int64(rng.IntN(4)), rng.IntN(2) == 0
			info := mustControl(t, l, pid, commit)
			m.batches = append(m.batches, txnModelBatch{info.FirstOffset, info.LastOffset, pid, true, commit})
			op = fmt.Sprintf("marker p%d commit=%v@%d", pid, commit, info.FirstOffset)
		case r < 80:
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			op = "roll"
		case r < 85:
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = open(fsys)
			op = "reopen"
		case r < 90:
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			crashed := fsys.CrashClone()
			l.Close()
			fsys = crashed
			l = open(fsys)
			op = "crash"
		case r < 95:
			x := m.start + rng.Int64N(m.leo-m.start+1)
			if err := l.TruncateTo(x); err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(m.batches, func(b txnModelBatch) bool { return b.last >= x })
			switch {
			case i >= 0 && m.batches[i].base < m.start:
				// Nothing readable would remain: the log restarts empty at x.
				m.batches, m.start, m.leo = nil, x, x
			case i >= 0:
				m.leo = m.batches[i].base
				m.batches = m.batches[:i]
			}
			op = fmt.Sprintf("truncate %d", x)
		default:
			x := m.start + rng.Int64N(m.leo-m.start+1)
			if _, err := l.DeleteRecordsBefore(x); err != nil {
				t.Fatal(err)
			}
			m.start = max(m.start, x)
			op = fmt.Sprintf("delete-records %d", x)
		}
		if len(m.batches) > 0 {
			m.leo = m.batches[len(m.batches)-1].last + 1
		}
		m.leo = max(m.leo, m.start)
		trace = append(trace, op)
		l.SetHighWatermark(l.LogEndOffset())
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d step %d: %s\nlast ops %v", seed, step, fmt.Sprintf(format, args...), trace[max(0, len(trace)-12):])
		}
		if l.LogEndOffset() != m.leo || l.LogStartOffset() != m.start {
			fail("LEO/start %d/%d, model %d/%d", l.LogEndOffset(), l.LogStartOffset(), m.leo, m.start)
		}
		ongoing, aborted := m.state()
		if got := l.OngoingTransactions(); !slices.Equal(got, ongoing) {
			fail("ongoing %+v, model %+v", got, ongoing)
		}
		wantLSO := m.leo
		if len(ongoing) > 0 {
			wantLSO = max(min(wantLSO, ongoing[0].FirstOffset), m.start)
		}
		if got := l.LastStableOffset(); got != wantLSO {
			fail("LSO %d, model %d", got, wantLSO)
		}
		for q := 0; q < 3; q++ {
			from := m.start + rng.Int64N(m.leo-m.start+1)
			upTo := from + rng.Int64N(m.leo-from+2)
			var want []AbortedTxn
			for _, a := range aborted {
				if a.LastOffset >= from && a.FirstOffset < upTo && from < upTo {
					want = append(want, a)
				}
			}
			if got := l.AbortedTransactions(from, upTo); !slices.Equal(got, want) {
				fail("AbortedTransactions(%d, %d) = %+v, model %+v", from, upTo, got, want)
			}
		}
	}
}

// modelFromLog reads every batch of l and builds the txnModel they imply.
func modelFromLog(t testing.TB, l *Log) *txnModel {
	t.Helper()
	m := &txnModel{start: l.LogStartOffset(), leo: l.LogEndOffset()}
	// Read from the first segment, below the log start too: its batches
	// still count for the transaction state.
	l.mu.Lock()
	first := l.mu.segments[0].baseOffset
	l.mu.Unlock()
	for next := first; next < m.leo; {
		b, err := l.Read(max(next, m.start), 1<<20, m.leo, true)
		if next < m.start {
			t.Fatal("modelFromLog: data below the log start")
		}
		if err != nil || len(b) == 0 {
			t.Fatalf("Read(%d): %v", next, err)
		}
		_, err = wire.SplitBatches(b, func(batch []byte, h wire.BatchHeader) error {
			mb := txnModelBatch{base: h.BaseOffset, last: h.LastOffset(), pid: -1}
			if h.ProducerID >= 0 && (h.IsTransactional() || h.IsControl()) {
				mb.pid = h.ProducerID
			}
			if h.IsControl() {
				commit, _, ok, err := wire.ParseControlBatch(batch)
				if err != nil || !ok {
					t.Fatalf("marker at %d: %v %v", h.BaseOffset, ok, err)
				}
				mb.control, mb.commit = true, commit
			}
			m.batches = append(m.batches, mb)
			next = h.LastOffset() + 1
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func checkAgainstModel(t testing.TB, l *Log, m *txnModel, what string) {
	t.Helper()
	l.SetHighWatermark(l.LogEndOffset())
	ongoing, aborted := m.state()
	if got := l.OngoingTransactions(); !slices.Equal(got, ongoing) {
		t.Fatalf("%s: ongoing %+v, model %+v", what, got, ongoing)
	}
	if got := l.AbortedTransactions(m.start, m.leo+1); !slices.Equal(got, aborted) {
		t.Fatalf("%s: aborted %+v, model %+v", what, got, aborted)
	}
}

// TestTxnFaultInjection fails the Nth file operation of a transactional
// workload for every N; after a crash the reopened log's transaction state
// must be the one its surviving batches imply.
func TestTxnFaultInjection(t *testing.T) {
	for n := 1; ; n++ {
		mem := vfs.NewMem()
		efs := &errorFS{inner: mem, failAt: n}
		cfg := smallConfig()
		cfg.FlushIntervalMessages = 1
		l, err := OpenLog(LogOptions{FS: efs, Dir: "/d/t-0", Config: cfg, Now: newClock().now, RecoveryPoint: -1, LogStartOffset: -1})
		if err == nil {
			for i := int64(0); i < 40 && err == nil; i++ {
				pid := i % 3
				switch i % 4 {
				case 0, 1:
					_, err = l.Append(txnBatch(t, pid, 2))
				case 2:
					_, err = l.Append(testBatch(2, 0, 80))
				case 3:
					_, err = l.AppendControl(ControlMarker{ProducerID: pid, ProducerEpoch: 3, Commit: i%8 == 3})
				}
				if i == 30 && err == nil {
					err = l.TruncateTo(l.LogEndOffset() - 3)
				}
			}
			l.Close()
		}
		if err != nil && !errors.Is(err, errInjected) {
			t.Fatalf("n=%d: unexpected error %v", n, err)
		}
		crashed := mem.CrashClone()
		for round := 0; round < 2; round++ {
			l2, err2 := OpenLog(LogOptions{FS: crashed, Dir: "/d/t-0", Config: cfg, Now: newClock().now, RecoveryPoint: -1, LogStartOffset: -1})
			if err2 != nil {
				t.Fatalf("n=%d: reopen after fault %v: %v", n, err, err2)
			}
			checkAgainstModel(t, l2, modelFromLog(t, l2), fmt.Sprintf("n=%d round %d (fault %v)", n, round, err))
			checkFullReplay(t, l2, fmt.Sprintf("n=%d round %d (fault %v)", n, round, err))
			l2.Close()
		}
		if !efs.fired {
			t.Logf("completed after %d fault points", n-1)
			break
		}
	}
}

// BenchmarkTxnFetchReaders measures the per-fetch calls of a read_committed
// fetch on a log with many segments and aborted transactions.
func BenchmarkTxnFetchReaders(b *testing.B) {
	l := openTestLog(b, vfs.NewMem(), "/d/t-0", smallConfig(), newClock())
	defer l.Close()
	for i := 0; i < 300; i++ {
		appendHW(b, l, txnBatch(b, int64(i%4), 2))
		if i%3 == 0 {
			controlHW(b, l, int64(i%4), i%2 == 0)
		}
	}
	leo := l.LogEndOffset()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lso := l.LastStableOffset()
		_ = l.AbortedTransactions(leo-20, lso)
	}
}

// BenchmarkTxnAppend measures a transactional append (no fsync).
func BenchmarkTxnAppend(b *testing.B) {
	l := openTestLog(b, vfs.NewMem(), "/d/t-0", DefaultLogConfig(), newClock())
	defer l.Close()
	batch := txnBatch(b, 1, 5)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
		if i%100 == 99 {
			mustControl(b, l, 1, i%200 == 99)
		}
	}
}
