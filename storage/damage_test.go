package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// errorLog collects the ERROR lines of a logger, with their attributes.
type errorLog struct {
	mu    sync.Mutex
	lines []string
}

func (c *errorLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (c *errorLog) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	c.mu.Lock()
	c.lines = append(c.lines, line)
	c.mu.Unlock()
	return nil
}
func (c *errorLog) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *errorLog) WithGroup(string) slog.Handler      { return c }
func (c *errorLog) count(sub string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, l := range c.lines {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}
func (c *errorLog) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// damagedLog writes n single-record batches over several segments (rolls
// sync each closed segment, flush.messages is unlimited) and closes the
// log cleanly. It returns the FS and the size of one batch.
func damagedLog(t *testing.T, n int) (*vfs.MemFS, int64) {
	t.Helper()
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, "/d/t-0", smallConfig(), newClock())
	for i := 0; i < n; i++ {
		mustAppend(t, l, testBatch(1, 1000+int64(i), 40))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return fsys, int64(len(testBatch(1, 0, 40)))
}

func patchFile(t *testing.T, fsys vfs.FS, name string, pos int64, b []byte) {
	t.Helper()
	f, err := fsys.OpenReadWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

// readable reads every offset of the log one batch at a time, stepping
// over offsets that fail with ErrCorrupt, and returns how many records it
// read and which offsets failed. Any other error fails the test.
func readable(t *testing.T, l *Log) (records int, corrupt []int64) {
	t.Helper()
	for next := l.LogStartOffset(); next < l.LogEndOffset(); {
		b, err := l.Read(next, 1<<20, l.LogEndOffset(), true)
		if errors.Is(err, ErrCorrupt) {
			corrupt = append(corrupt, next)
			next++
			continue
		}
		if err != nil {
			t.Fatalf("Read(%d): %v", next, err)
		}
		if len(b) == 0 {
			t.Fatalf("Read(%d) returned nothing before LEO %d", next, l.LogEndOffset())
		}
		for len(b) > 0 {
			h, err := parseBatchHeader(b)
			if err != nil || batchCRC(b[:h.TotalSize()]) != h.CRC {
				t.Fatalf("Read(%d) returned a bad batch: %v", next, err)
			}
			records += int(h.LastOffset() - max(h.BaseOffset, next) + 1)
			next = h.LastOffset() + 1
			b = b[h.TotalSize():]
		}
	}
	return records, corrupt
}

// TestRecoverKeepsSegmentsAfterDamage is the regression test for issue 11
// item 11: one damaged batch in segment 0 made recovery truncate segment 0
// there and delete every later segment (2,450 of 3,000 intact records
// lost). A closed segment is synced before the next one exists, so damage
// in it is never a torn write: it is kept, logged as an error and stepped
// over, and the intact batches around it (in the same segment too) stay.
func TestRecoverKeepsSegmentsAfterDamage(t *testing.T) {
	for _, tc := range []struct {
		name          string
		recoveryPoint int64 // as checkpointed: -1 (lost checkpoint) scans everything
		damage        func(t *testing.T, fsys vfs.FS, seg string, batch int64)
		lost          int // records no longer readable
	}{
		{"flipped header byte, lost checkpoint", -1, func(t *testing.T, fsys vfs.FS, seg string, batch int64) {
			patchFile(t, fsys, seg, 10*batch+9, []byte{0x7f}) // batch length of the 11th batch
		}, 1},
		{"flipped record bytes, lost checkpoint", -1, func(t *testing.T, fsys vfs.FS, seg string, batch int64) {
			patchFile(t, fsys, seg, 10*batch+batchHeaderSize+3, []byte{0xde, 0xad}) // CRC mismatch
		}, 1},
		{"torn last batch of segment 0", -1, func(t *testing.T, fsys vfs.FS, seg string, batch int64) {
			f, _ := fsys.OpenReadWrite(seg)
			size, _ := f.Size()
			f.Truncate(size - 7)
			f.Close()
		}, 1},
		{"flipped header byte, index mismatch below the recovery point", 200, func(t *testing.T, fsys vfs.FS, seg string, batch int64) {
			patchFile(t, fsys, seg, 10*batch+9, []byte{0x7f})
			fsys.Remove(strings.TrimSuffix(seg, ".log") + ".index") // forces the scan
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys, batch := damagedLog(t, 200)
			segs := segmentNames(t, fsys, "/d/t-0")
			if len(segs) < 3 {
				t.Fatalf("need 3 segments, have %v", segs)
			}
			tc.damage(t, fsys, "/d/t-0/"+segs[0], batch)
			errs := &errorLog{}
			l, err := OpenLog(LogOptions{FS: fsys, Dir: "/d/t-0", Config: smallConfig(), Now: newClock().now,
				Logger: slog.New(errs), RecoveryPoint: tc.recoveryPoint, LogStartOffset: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if got := segmentNames(t, fsys, "/d/t-0"); len(got) != len(segs) {
				t.Fatalf("segments %v after recovery, want %v", got, segs)
			}
			if l.LogEndOffset() != 200 {
				t.Fatalf("LEO %d, want 200", l.LogEndOffset())
			}
			records, corrupt := readable(t, l)
			if records != 200-tc.lost || len(corrupt) != tc.lost {
				t.Fatalf("read %d records, corrupt offsets %v; want %d records", records, corrupt, 200-tc.lost)
			}
			if errs.count("damaged data") != 1 || errs.count("partition=t-0") == 0 || errs.count("offsets_from=") == 0 {
				t.Fatalf("want one error line naming the partition and offsets, got:\n%s", errs)
			}
			// Producer state replay and appends step over the damage.
			mustAppend(t, l, testBatch(1, 5000, 10))
			if l.LogEndOffset() != 201 {
				t.Fatalf("LEO after append %d", l.LogEndOffset())
			}
		})
	}
}

// TestReadServesIntactBatchesBeforeDamage is the regression test for issue
// 11 item 12: a damaged batch header in a closed segment below the
// recovery point (not scanned at start, as in Kafka) made every read of
// that segment fail, even of the intact batches before it (a consumer read
// 0 of 3,000 records while 0-299 were intact). Reads now return the
// batches before the damage, a read starting at it fails with ErrCorrupt
// (the fetch answers CORRUPT_MESSAGE), and it is logged once.
func TestReadServesIntactBatchesBeforeDamage(t *testing.T) {
	fsys, batch := damagedLog(t, 200)
	segs := segmentNames(t, fsys, "/d/t-0")
	patchFile(t, fsys, "/d/t-0/"+segs[0], 3*batch+9, []byte{0x7f}) // length of batch 3
	errs := &errorLog{}
	l, err := OpenLog(LogOptions{FS: fsys, Dir: "/d/t-0", Config: smallConfig(), Now: newClock().now,
		Logger: slog.New(errs), RecoveryPoint: 200, LogStartOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b, err := l.Read(0, 1<<20, 200, true)
	if err != nil {
		t.Fatalf("Read(0): %v", err)
	}
	if hs := mustHeaders(t, b); len(hs) != 3 {
		t.Fatalf("Read(0) returned %s, want offsets 0-2", fmtOffsets(hs))
	}
	fs, err := l.ReadSlice(1, 1<<20, 200, true)
	if err != nil {
		t.Fatalf("ReadSlice(1): %v", err)
	}
	if fs.Length != 2*batch {
		t.Fatalf("ReadSlice(1) length %d, want %d", fs.Length, 2*batch)
	}
	fs.Release()
	for i := 0; i < 3; i++ {
		if _, err := l.Read(3, 1<<20, 200, true); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Read(3): %v, want ErrCorrupt", err)
		}
	}
	if n := errs.count("damaged data"); n != 1 {
		t.Fatalf("damage logged %d times, want once:\n%s", n, errs)
	}
	// The next segments are intact.
	if b, err := l.Read(l.mu.segments[1].baseOffset, 1<<20, 200, true); err != nil || len(b) == 0 {
		t.Fatalf("Read of segment 1: %d bytes, %v", len(b), err)
	}
}

func mustHeaders(t *testing.T, b []byte) []batchHeader {
	t.Helper()
	var hs []batchHeader
	for len(b) > 0 {
		h, err := parseBatchHeader(b)
		if err != nil || batchCRC(b[:h.TotalSize()]) != h.CRC {
			t.Fatalf("bad batch: %v", err)
		}
		hs = append(hs, h)
		b = b[h.TotalSize():]
	}
	return hs
}

// TestRollMovesRecoveryPoint is the regression test for issue 11 item 11:
// with the default flush settings the recovery point never moved, so every
// restart after a crash scanned (and could cut) every segment. A roll
// syncs the closed segment and now moves the recovery point to the new
// segment's base, as Kafka does, and only the segments from there on are
// scanned after a crash.
func TestRollMovesRecoveryPoint(t *testing.T) {
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, "/d/t-0", smallConfig(), newClock())
	defer l.Close()
	for i := 0; i < 200; i++ {
		mustAppend(t, l, testBatch(1, 1000+int64(i), 40))
	}
	l.mu.Lock()
	active := l.mu.segments[len(l.mu.segments)-1].baseOffset
	l.mu.Unlock()
	if active == 0 || l.RecoveryPoint() != active {
		t.Fatalf("recovery point %d, want the active segment's base %d", l.RecoveryPoint(), active)
	}
	// A crash now: everything below the recovery point is there.
	crashed := fsys.CrashClone()
	l2, err := OpenLog(LogOptions{FS: crashed, Dir: "/d/t-0", Config: smallConfig(), Now: newClock().now, RecoveryPoint: l.RecoveryPoint(), LogStartOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogEndOffset() < active {
		t.Fatalf("LEO %d after crash, below recovery point %d", l2.LogEndOffset(), active)
	}
	readAll(t, l2, 0)
}

// TestRecoverIssueReproduction replays the issue's figures: 3,000 records
// in several segments, one torn batch in segment 0, a restart. Before the
// fix 2,450 records of intact segments were deleted; now only the torn
// batch is unreadable.
func TestRecoverIssueReproduction(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig()
	cfg.SegmentBytes = 16 << 10
	l := openTestLog(t, fsys, "/d/t-0", cfg, newClock())
	for i := 0; i < 300; i++ {
		mustAppend(t, l, testBatch(10, 1000+int64(i), 40))
	}
	l.Close()
	segs := segmentNames(t, fsys, "/d/t-0")
	f, _ := fsys.OpenReadWrite("/d/t-0/" + segs[0])
	size, _ := f.Size()
	f.Truncate(size - 7)
	f.Close()
	for _, rp := range []int64{-1, 3000} {
		t.Run(fmt.Sprint("recovery point ", rp), func(t *testing.T) {
			l, err := OpenLog(LogOptions{FS: fsys.Clone(), Dir: "/d/t-0", Config: cfg, Now: newClock().now, RecoveryPoint: rp, LogStartOffset: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			records, corrupt := readable(t, l)
			t.Logf("%d segments; %d of 3000 records readable; corrupt offsets %v", len(segs), records, corrupt)
			if records != 2990 {
				t.Fatalf("%d of 3000 records readable, want 2990", records)
			}
		})
	}
}
