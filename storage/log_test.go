package storage

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire"
)

func bothFS(t *testing.T, fn func(t *testing.T, fsys vfs.FS, dir string)) {
	t.Run("mem", func(t *testing.T) { fn(t, vfs.NewMem(), "/data/t-0") })
	t.Run("os", func(t *testing.T) { fn(t, vfs.OS, filepath.Join(t.TempDir(), "t-0")) })
}

func TestAppendReadAcrossRolls(t *testing.T) {
	bothFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		clock := newClock()
		l := openTestLog(t, fsys, dir, smallConfig(), clock)
		defer l.Close()
		var want int64
		for i := 0; i < 200; i++ {
			n := 1 + i%5
			info := mustAppend(t, l, testBatch(n, clock.now().UnixMilli()+int64(i), 20+i%50))
			if info.FirstOffset != want || info.LastOffset != want+int64(n)-1 {
				t.Fatalf("append %d: got %+v, want first %d", i, info, want)
			}
			want += int64(n)
		}
		if got := l.LogEndOffset(); got != want {
			t.Fatalf("LEO = %d, want %d", got, want)
		}
		if segs := segmentNames(t, fsys, dir); len(segs) < 5 {
			t.Fatalf("expected several segments, got %v", segs)
		}
		hs := readAll(t, l, 0)
		if len(hs) != 200 {
			t.Fatalf("read %d batches, want 200", len(hs))
		}
		// Every offset reads from the batch containing it.
		for off := int64(0); off < want; off++ {
			b, err := l.Read(off, 1, want, true)
			if err != nil {
				t.Fatal(err)
			}
			h, err := parseBatchHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			if h.BaseOffset > off || h.LastOffset() < off || h.TotalSize() != len(b) {
				t.Fatalf("Read(%d) gave batch %d-%d (%d bytes of %d)", off, h.BaseOffset, h.LastOffset(), h.TotalSize(), len(b))
			}
		}
	})
}

func TestReadLimits(t *testing.T) {
	clock := newClock()
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", DefaultLogConfig(), clock)
	defer l.Close()
	b := testBatch(3, 1000, 100)
	size := len(b)
	for i := 0; i < 10; i++ {
		mustAppend(t, l, testBatch(3, 1000, 100))
	}
	cases := []struct {
		name      string
		offset    int64
		maxBytes  int
		maxOffset int64
		minOne    bool
		wantBytes int
		wantErr   error
	}{
		{"all", 0, 1 << 20, 30, false, 10 * size, nil},
		{"maxBytes", 0, 2*size + 1, 30, false, 2 * size, nil},
		{"tooSmall", 0, 10, 30, false, 0, nil},
		{"minOne", 4, 10, 30, true, size, nil},
		{"hw", 0, 1 << 20, 7, false, 3 * size, nil},
		{"hwMidBatch", 7, 1 << 20, 8, true, size, nil},
		{"atHW", 9, 1 << 20, 9, true, 0, nil},
		{"atLEO", 30, 1 << 20, 30, true, 0, nil},
		{"pastLEO", 31, 1 << 20, 31, true, 0, ErrOffsetOutOfRange},
		{"negative", -1, 1 << 20, 30, true, 0, ErrOffsetOutOfRange},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := l.Read(c.offset, c.maxBytes, c.maxOffset, c.minOne)
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
			if len(got) != c.wantBytes {
				t.Fatalf("got %d bytes, want %d", len(got), c.wantBytes)
			}
		})
	}
}

func TestIndexLookup(t *testing.T) {
	clock := newClock()
	cfg := DefaultLogConfig()
	cfg.IndexIntervalBytes = 100
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, "/d/t-0", cfg, clock)
	positions := map[int64]int64{} // batch base -> position
	var pos int64
	for i := 0; i < 100; i++ {
		b := testBatch(2, 1000+int64(i), 30)
		info := mustAppend(t, l, b)
		positions[info.FirstOffset] = pos
		pos += int64(len(b))
	}
	seg := l.mu.segments[0]
	if seg.offsetIndex.len() < 10 {
		t.Fatalf("only %d index entries", seg.offsetIndex.len())
	}
	for off := int64(0); off < 200; off++ {
		p := seg.offsetIndex.lookup(off)
		if p > positions[off&^1] {
			t.Fatalf("lookup(%d) = %d beyond batch position %d", off, p, positions[off&^1])
		}
		_, h, found, err := seg.findBatch(off, seg.size)
		if err != nil || !found || h.BaseOffset != off&^1 {
			t.Fatalf("findBatch(%d) = %+v %v %v", off, h, found, err)
		}
	}
	// Entries are written to the file too and survive a reopen.
	entries := append([]offsetEntry(nil), seg.offsetIndex.entries...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := OpenLog(LogOptions{FS: fsys, Dir: "/d/t-0", Config: cfg, Now: clock.now, RecoveryPoint: 200, LogStartOffset: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	got := l2.mu.segments[0].offsetIndex.entries
	if len(got) != len(entries) {
		t.Fatalf("reopened index has %d entries, want %d", len(got), len(entries))
	}
	for i := range got {
		if got[i] != entries[i] {
			t.Fatalf("entry %d: %+v != %+v", i, got[i], entries[i])
		}
	}
}

func TestIndexFullRolls(t *testing.T) {
	clock := newClock()
	cfg := DefaultLogConfig()
	cfg.IndexIntervalBytes = 0
	cfg.SegmentIndexBytes = 8 * 4
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", cfg, clock)
	defer l.Close()
	for i := 0; i < 20; i++ {
		mustAppend(t, l, testBatch(1, 1000, 10))
	}
	if n := len(l.mu.segments); n < 4 {
		t.Fatalf("%d segments, want index-full rolls", n)
	}
	readAll(t, l, 0)
}

func TestSegmentMsRoll(t *testing.T) {
	clock := newClock()
	cfg := DefaultLogConfig()
	cfg.SegmentMs = 1000
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", cfg, clock)
	defer l.Close()
	mustAppend(t, l, testBatch(1, 5000, 10))
	mustAppend(t, l, testBatch(1, 5500, 10))
	if n := len(l.mu.segments); n != 1 {
		t.Fatalf("%d segments", n)
	}
	mustAppend(t, l, testBatch(1, 6001, 10)) // 1001ms after the first batch
	if n := len(l.mu.segments); n != 2 {
		t.Fatalf("%d segments, want a time roll", n)
	}
}

func TestLogAppendTime(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", DefaultLogConfig(), newClock())
	defer l.Close()
	if _, err := l.AppendWithLogAppendTime(testBatch(3, 10, 5), 99999); err != nil {
		t.Fatal(err)
	}
	b, err := l.Read(0, 1<<20, 3, true)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := parseBatchHeader(b)
	if h.MaxTimestamp != 99999 || h.Attributes&timestampTypeBit == 0 || batchCRC(b) != h.CRC {
		t.Fatalf("bad log-append-time batch %+v", h)
	}
	if ts, off := l.MaxTimestamp(); ts != 99999 || off != 0 {
		t.Fatalf("MaxTimestamp = %d %d", ts, off)
	}
}

func TestAppendRejectsGarbage(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", DefaultLogConfig(), newClock())
	defer l.Close()
	for _, b := range [][]byte{nil, {1, 2, 3}, testBatch(2, 1, 1)[:70]} {
		if _, err := l.Append(b); !errors.Is(err, ErrInvalidBatch) {
			t.Fatalf("Append(%d bytes) err = %v", len(b), err)
		}
	}
	if l.LogEndOffset() != 0 {
		t.Fatal("LEO moved")
	}
}

func TestWait(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", DefaultLogConfig(), newClock())
	defer l.Close()
	ch := l.Wait()
	if ch != l.Wait() {
		t.Fatal("waiters should share a channel")
	}
	select {
	case <-ch:
		t.Fatal("closed early")
	default:
	}
	mustAppend(t, l, testBatch(1, 1, 1))
	<-ch
	ch = l.Wait()
	l.SetHighWatermark(1)
	<-ch
	if l.HighWatermark() != 1 {
		t.Fatal("hw")
	}
	l.SetHighWatermark(100)
	if l.HighWatermark() != 1 {
		t.Fatalf("hw not clamped: %d", l.HighWatermark())
	}
}

func TestOffsetForTimestampCompressed(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", smallConfig(), newClock())
	defer l.Close()
	mustAppend(t, l, testBatch(2, 100, 10))
	var recs []wire.Record
	for i, d := range []int64{0, 7, 3, 9} {
		recs = append(recs, wire.Record{TimestampDelta: d, OffsetDelta: int32(i), Value: []byte("v")})
	}
	b, err := wire.EncodeBatch(wire.BatchSpec{BaseTimestamp: 200, Compression: wire.CompressionZstd, Records: recs, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, b)
	if off, ts, ok := l.OffsetForTimestamp(205); !ok || off != 3 || ts != 207 {
		t.Fatalf("OffsetForTimestamp(205) = %d %d %v", off, ts, ok)
	}
	if ts, off := l.MaxTimestamp(); ts != 209 || off != 5 {
		t.Fatalf("MaxTimestamp = %d %d", ts, off)
	}
}

// TestReadMatchesNaive compares Read and ReadSlice with a walk over every
// batch, for many offsets, byte limits and high watermarks.
func TestReadMatchesNaive(t *testing.T) {
	clock := newClock()
	cfg := smallConfig()
	cfg.IndexIntervalBytes = 150
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", cfg, clock)
	defer l.Close()
	for i := 0; i < 120; i++ {
		mustAppend(t, l, testBatch(1+i%4, 1000, 10+(i*7)%90))
	}
	all := readAll(t, l, 0)
	leo := l.LogEndOffset()
	naive := func(offset int64, maxBytes int, maxOffset int64, minOne bool) int {
		if offset >= maxOffset || offset >= leo {
			return 0
		}
		total, n := 0, 0
		var segBase int64 = -1
		for _, h := range all {
			if h.LastOffset() < offset {
				continue
			}
			// Read stays inside one segment.
			seg := l.segmentBaseFor(h.BaseOffset)
			if segBase >= 0 && seg != segBase {
				break
			}
			segBase = seg
			if h.BaseOffset >= maxOffset || (total+h.TotalSize() > maxBytes && !(n == 0 && minOne)) {
				break
			}
			total += h.TotalSize()
			n++
		}
		return total
	}
	for offset := int64(0); offset < leo; offset += 3 {
		for _, maxBytes := range []int{0, 50, 200, 1000, 5000} {
			for _, maxOffset := range []int64{offset, offset + 1, offset + 7, offset + 40, leo} {
				for _, minOne := range []bool{false, true} {
					want := naive(offset, maxBytes, maxOffset, minOne)
					b, err := l.Read(offset, maxBytes, maxOffset, minOne)
					if err != nil || len(b) != want {
						t.Fatalf("Read(%d, %d, %d, %v) = %d bytes, %v; want %d", offset, maxBytes, maxOffset, minOne, len(b), err, want)
					}
					fs, err := l.ReadSlice(offset, maxBytes, maxOffset, minOne)
					if err != nil || fs.Length != int64(want) {
						t.Fatalf("ReadSlice(%d, %d, %d, %v) = %d bytes, %v; want %d", offset, maxBytes, maxOffset, minOne, fs.Length, err, want)
					}
					if want > 0 {
						got := make([]byte, fs.Length)
						fs.File.ReadAt(got, fs.Offset)
						if string(got) != string(b) {
							t.Fatal("ReadSlice bytes differ from Read")
						}
						var last int64 = -1
						for pos := 0; pos < len(b); {
							h, _ := parseBatchHeader(b[pos:])
							last, pos = h.LastOffset(), pos+h.TotalSize()
						}
						if fs.LastOffset != last {
							t.Fatalf("ReadSlice(%d, ...) LastOffset = %d, want %d", offset, fs.LastOffset, last)
						}
					}
					fs.Release()
				}
			}
		}
	}
}

func (l *Log) segmentBaseFor(offset int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var base int64
	for _, s := range l.mu.segments {
		if s.baseOffset <= offset {
			base = s.baseOffset
		}
	}
	return base
}
