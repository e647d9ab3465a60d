package storage

import (
	"log/slog"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// fillLog appends n single-record batches with flush.messages=1 and returns the FS.
func fillLog(t *testing.T, n int) (*vfs.MemFS, *fakeClock) {
	t.Helper()
	fsys := vfs.NewMem()
	clock := newClock()
	cfg := smallConfig()
	cfg.FlushIntervalMessages = 1
	l := openTestLog(t, fsys, "/d/t-0", cfg, clock)
	for i := 0; i < n; i++ {
		mustAppend(t, l, testBatch(1, 1000+int64(i), 40))
	}
	return fsys, clock
}

func activeLogFile(t *testing.T, fsys vfs.FS) (string, vfs.File, int64) {
	t.Helper()
	segs := segmentNames(t, fsys, "/d/t-0")
	name := "/d/t-0/" + segs[len(segs)-1]
	f, err := fsys.OpenReadWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	size, _ := f.Size()
	return name, f, size
}

func TestRecoverTornTail(t *testing.T) {
	fsys, clock := fillLog(t, 100)
	crashed := fsys.CrashClone()
	_, f, size := activeLogFile(t, crashed)
	if err := f.Truncate(size - 7); err != nil { // cut the last batch
		t.Fatal(err)
	}
	f.Close()
	l := openTestLog(t, crashed, "/d/t-0", smallConfig(), clock)
	defer l.Close()
	if got := l.LogEndOffset(); got != 99 {
		t.Fatalf("LEO after torn tail = %d, want 99", got)
	}
	if hs := readAll(t, l, 0); len(hs) != 99 {
		t.Fatalf("read %d batches", len(hs))
	}
	mustAppend(t, l, testBatch(1, 5000, 10))
	if got := l.LogEndOffset(); got != 100 {
		t.Fatalf("LEO after append = %d", got)
	}
	readAll(t, l, 0)
}

func TestRecoverCRCFlip(t *testing.T) {
	fsys, clock := fillLog(t, 100)
	crashed := fsys.CrashClone()
	_, f, size := activeLogFile(t, crashed)
	// Flip a byte inside the third-to-last batch's records.
	batchSize := int64(len(testBatch(1, 0, 40)))
	pos := size - 3*batchSize + batchHeaderSize + 2
	var b [1]byte
	f.ReadAt(b[:], pos)
	b[0] ^= 0xff
	f.WriteAt(b[:], pos)
	f.Close()
	l := openTestLog(t, crashed, "/d/t-0", smallConfig(), clock)
	defer l.Close()
	if got := l.LogEndOffset(); got != 97 {
		t.Fatalf("LEO after CRC flip = %d, want 97", got)
	}
	readAll(t, l, 0)
}

func TestRecoverLosesOnlyUnsynced(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	l := openTestLog(t, fsys, "/d/t-0", smallConfig(), clock)
	for i := 0; i < 50; i++ {
		mustAppend(t, l, testBatch(2, 1000, 30))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		mustAppend(t, l, testBatch(2, 1000, 30))
	}
	crashed := fsys.CrashClone()
	l2 := openTestLog(t, crashed, "/d/t-0", smallConfig(), clock)
	defer l2.Close()
	if got := l2.LogEndOffset(); got < 100 || got > 200 {
		t.Fatalf("LEO after crash = %d, want between 100 and 200", got)
	}
	readAll(t, l2, 0)
}

func TestRebuildMissingAndCorruptIndexes(t *testing.T) {
	fsys, clock := fillLog(t, 200)
	segs := segmentNames(t, fsys, "/d/t-0")
	first := "/d/t-0/" + segs[0]
	idx := first[:len(first)-len(logSuffix)] + indexSuffix
	tidx := first[:len(first)-len(logSuffix)] + timeIndexSuffix
	fsys.Remove(idx)
	f, _ := fsys.OpenReadWrite(tidx)
	f.Write([]byte{1, 2, 3}) // not a multiple of 12
	f.Close()
	// A leftover file and an orphan index are cleaned up.
	g, _ := fsys.Create("/d/t-0/00000000000000000005.log.deleted")
	g.Close()
	g, _ = fsys.Create("/d/t-0/00000000000000099999.index")
	g.Close()
	l, err := OpenLog(LogOptions{FS: fsys, Dir: "/d/t-0", Config: smallConfig(), Now: clock.now, RecoveryPoint: 200, LogStartOffset: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !fsys.Exists(idx) || l.mu.segments[0].offsetIndex.len() == 0 {
		t.Fatal("index not rebuilt")
	}
	if fsys.Exists("/d/t-0/00000000000000000005.log.deleted") || fsys.Exists("/d/t-0/00000000000000099999.index") {
		t.Fatal("leftovers not removed")
	}
	if l.LogEndOffset() != 200 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
	readAll(t, l, 0)
	if off, _, ok := l.OffsetForTimestamp(1050); !ok || off != 50 {
		t.Fatalf("OffsetForTimestamp after rebuild = %d %v", off, ok)
	}
}

func TestEmptyDirStartsAtLogStart(t *testing.T) {
	fsys := vfs.NewMem()
	l, err := OpenLog(LogOptions{FS: fsys, Dir: "/d/t-0", Config: DefaultLogConfig(), RecoveryPoint: -1, LogStartOffset: 42})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LogStartOffset() != 42 || l.LogEndOffset() != 42 {
		t.Fatalf("start %d end %d", l.LogStartOffset(), l.LogEndOffset())
	}
	info := mustAppend(t, l, testBatch(1, 1, 1))
	if info.FirstOffset != 42 {
		t.Fatalf("first offset %d", info.FirstOffset)
	}
	if !fsys.Exists("/d/t-0/00000000000000000042.log") {
		t.Fatal("segment name")
	}
}

// Regression: a torn tail after the recovery point is what every crash
// leaves, and was logged at ERROR, which made a clean restart after kill -9
// look like damage (TestKillDuringAcksAllProduction failed on it). Kafka's
// LogSegment.recover logs it as a warning; so do we, and the log is cut.
func TestRecoverTornTailIsAWarning(t *testing.T) {
	fsys, clock := fillLog(t, 20)
	crashed := fsys.CrashClone()
	_, f, size := activeLogFile(t, crashed)
	if err := f.Truncate(size - 7); err != nil {
		t.Fatal(err)
	}
	f.Close()
	errs := &errorLog{}
	l, err := OpenLog(LogOptions{FS: crashed, Dir: "/d/t-0", Config: smallConfig(), Now: clock.now,
		Logger: slog.New(errs), RecoveryPoint: -1, LogStartOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := l.LogEndOffset(); got != 19 {
		t.Fatalf("LEO after torn tail = %d, want 19", got)
	}
	if s := errs.String(); s != "" {
		t.Fatalf("ERROR lines for a torn tail:\n%s", s)
	}
}
