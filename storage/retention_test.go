package storage

import (
	"errors"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/storage/vfs"
)

func TestRetentionByTime(t *testing.T) {
	clock := newClock()
	cfg := smallConfig()
	cfg.RetentionMs = 60_000
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, "/d/t-0", cfg, clock)
	defer l.Close()
	base := clock.now().UnixMilli()
	for i := 0; i < 100; i++ {
		mustAppend(t, l, testBatch(1, base+int64(i)*1000, 40)) // one record per second
	}
	l.SetHighWatermark(l.LogEndOffset())
	nsegs := len(l.mu.segments)
	clock.advance(129 * time.Second) // cutoff: the record at 69s
	n, err := l.EnforceRetention(clock.now())
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || n >= nsegs {
		t.Fatalf("deleted %d of %d segments", n, nsegs)
	}
	// Every remaining segment but the active one has a record newer than the cutoff.
	cutoff := clock.now().UnixMilli() - cfg.RetentionMs
	if first := l.mu.segments[0]; first.maxTimestamp < cutoff {
		t.Fatalf("expired segment kept: max ts %d < %d", first.maxTimestamp, cutoff)
	}
	start := l.LogStartOffset()
	if start != l.mu.segments[0].baseOffset || start == 0 {
		t.Fatalf("log start %d, first segment %d", start, l.mu.segments[0].baseOffset)
	}
	if _, err := l.Read(start-1, 100, 100, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	readAll(t, l, start)
	// Much later everything expires: the active segment is rolled and deleted.
	clock.advance(time.Hour)
	if _, err := l.EnforceRetention(clock.now()); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 100 || l.LogEndOffset() != 100 || l.Size() != 0 {
		t.Fatalf("start %d end %d size %d", l.LogStartOffset(), l.LogEndOffset(), l.Size())
	}
	if got := segmentNames(t, fsys, "/d/t-0"); len(got) != 1 || got[0] != "00000000000000000100.log" {
		t.Fatalf("segments %v", got)
	}
	info := mustAppend(t, l, testBatch(1, clock.now().UnixMilli(), 1))
	if info.FirstOffset != 100 {
		t.Fatalf("append after full retention at %d", info.FirstOffset)
	}
}

func TestRetentionRespectsHighWatermark(t *testing.T) {
	clock := newClock()
	cfg := smallConfig()
	cfg.RetentionMs = 1
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", cfg, clock)
	defer l.Close()
	for i := 0; i < 100; i++ {
		mustAppend(t, l, testBatch(1, 1000, 40))
	}
	n, err := l.EnforceRetention(clock.now())
	if err != nil || n != 0 {
		t.Fatalf("deleted %d (%v) with HW 0", n, err)
	}
}

func TestRetentionByBytes(t *testing.T) {
	clock := newClock()
	cfg := smallConfig()
	cfg.RetentionMs = -1
	cfg.RetentionBytes = 10_000
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", cfg, clock)
	defer l.Close()
	for i := 0; i < 300; i++ {
		mustAppend(t, l, testBatch(1, 1000, 40))
	}
	l.SetHighWatermark(l.LogEndOffset())
	before := l.Size()
	n, err := l.EnforceRetention(clock.now())
	if err != nil || n == 0 {
		t.Fatalf("deleted %d: %v", n, err)
	}
	// Like Kafka: delete whole segments while what remains stays >= retention.bytes.
	if l.Size() < cfg.RetentionBytes || l.Size()-l.mu.segments[0].size >= cfg.RetentionBytes {
		t.Fatalf("size %d -> %d with retention.bytes %d, first segment %d", before, l.Size(), cfg.RetentionBytes, l.mu.segments[0].size)
	}
	readAll(t, l, l.LogStartOffset())
}

func TestDeleteRecordsBefore(t *testing.T) {
	clock := newClock()
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, "/d/t-0", smallConfig(), clock)
	defer l.Close()
	for i := 0; i < 200; i++ {
		mustAppend(t, l, testBatch(1, 1000, 40))
	}
	if _, err := l.DeleteRecordsBefore(10); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("above HW: %v", err)
	}
	l.SetHighWatermark(150)
	nsegs := len(l.mu.segments)
	start, err := l.DeleteRecordsBefore(120)
	if err != nil || start != 120 {
		t.Fatalf("DeleteRecordsBefore = %d %v", start, err)
	}
	if len(l.mu.segments) >= nsegs {
		t.Fatal("no segment deleted")
	}
	if l.mu.segments[0].baseOffset > 120 || l.mu.segments[0].nextOffset <= 120 {
		t.Fatalf("first segment %d..%d should contain 120", l.mu.segments[0].baseOffset, l.mu.segments[0].nextOffset)
	}
	if _, err := l.Read(119, 1000, 200, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read 119: %v", err)
	}
	b, err := l.Read(120, 1000, 200, true)
	if err != nil || len(b) == 0 {
		t.Fatalf("read 120: %v", err)
	}
	if h, _ := parseBatchHeader(b); h.BaseOffset != 120 {
		t.Fatalf("read 120 gave %d", h.BaseOffset)
	}
	if start, _ := l.DeleteRecordsBefore(50); start != 120 {
		t.Fatalf("moving back: %d", start)
	}
	if start, _ := l.DeleteRecordsBefore(-1); start != 150 {
		t.Fatalf("-1 means HW: %d", start)
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	clock := newClock()
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", smallConfig(), clock)
	defer l.Close()
	// Batches of 4 records, timestamps 10*i + {0, 3, 1, 5} (not monotonic inside a batch).
	deltas := []int64{0, 3, 1, 5}
	for i := 0; i < 100; i++ {
		mustAppend(t, l, testBatchTs(int64(10*i), 30, func(j int) int64 { return deltas[j] }, 4))
	}
	cases := []struct {
		ts      int64
		off     int64
		rts     int64
		found   bool
		comment string
	}{
		{0, 0, 0, true, "first"},
		{-5, 0, 0, true, "before all"},
		{2, 1, 3, true, "second record"},
		{4, 3, 5, true, "last of batch"},
		{6, 4, 10, true, "next batch"},
		{503, 201, 503, true, "middle"},
		{995, 399, 995, true, "very last"},
		{996, -1, -1, false, "after all"},
	}
	for _, c := range cases {
		off, rts, found := l.OffsetForTimestamp(c.ts)
		if off != c.off || rts != c.rts || found != c.found {
			t.Errorf("%s: OffsetForTimestamp(%d) = %d %d %v, want %d %d %v", c.comment, c.ts, off, rts, found, c.off, c.rts, c.found)
		}
	}
	if ts, off := l.MaxTimestamp(); ts != 995 || off != 399 {
		t.Fatalf("MaxTimestamp = %d %d", ts, off)
	}
	// Below the log start offset, records are skipped.
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.DeleteRecordsBefore(202); err != nil {
		t.Fatal(err)
	}
	if off, rts, _ := l.OffsetForTimestamp(0); off != 202 || rts != 501 {
		t.Fatalf("after delete: %d %d", off, rts)
	}
}

func TestMaxTimestampEmpty(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", smallConfig(), newClock())
	defer l.Close()
	if ts, off := l.MaxTimestamp(); ts != -1 || off != -1 {
		t.Fatalf("%d %d", ts, off)
	}
}
