package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// TestReadSliceMatchesRead: ReadSlice (header walk in chunks, index jumps
// over appended batches) returns exactly the bytes Read returns (one read,
// trimmed to whole batches) for random offsets, byte limits and max
// offsets, over batches of mixed sizes across several segments, both
// right after the appends and after a reopen (batches from disk are
// walked, not jumped over).
func TestReadSliceMatchesRead(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	cfg := DefaultLogConfig()
	cfg.SegmentBytes = 256 << 10
	cfg.IndexIntervalBytes = 1024
	rng := rand.New(rand.NewPCG(1, 2))
	l := openTestLog(t, fsys, "/scan", cfg, clock)
	for range 600 {
		mustAppend(t, l, testBatch(1+rng.IntN(4), 0, rng.IntN(700)))
	}
	check := func(l *Log) {
		t.Helper()
		leo := l.LogEndOffset()
		for range 400 {
			offset := rng.Int64N(leo)
			maxBytes := rng.IntN(64 << 10)
			maxOffset := offset + rng.Int64N(leo-offset+1)
			minOne := rng.IntN(2) == 0
			want, err := l.Read(offset, maxBytes, maxOffset, minOne)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := l.ReadSlice(offset, maxBytes, maxOffset, minOne)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, fs.Length)
			if fs.Length > 0 {
				if _, err := fs.File.ReadAt(got, fs.Offset); err != nil {
					t.Fatal(err)
				}
			}
			fs.Release()
			if !bytes.Equal(got, want) {
				t.Fatalf("ReadSlice(%d, %d, %d, %v): %d bytes, Read %d", offset, maxBytes, maxOffset, minOne, len(got), len(want))
			}
			if len(want) > 0 {
				if last, _ := lastOffsetInBatches(want); last != fs.LastOffset {
					t.Fatalf("ReadSlice(%d, %d, %d, %v): last offset %d, want %d", offset, maxBytes, maxOffset, minOne, fs.LastOffset, last)
				}
			}
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, fsys, "/scan", cfg, clock)
	defer l.Close()
	check(l)
}

// lastOffsetInBatches returns the last offset of the last batch in b.
func lastOffsetInBatches(b []byte) (int64, error) {
	last := int64(-1)
	for len(b) > 0 {
		h, err := parseBatchHeader(b)
		if err != nil {
			return -1, fmt.Errorf("batch header: %w", err)
		}
		last = h.LastOffset()
		b = b[h.TotalSize():]
	}
	return last, nil
}

// BenchmarkReadSlice: a 1 MiB ReadSlice over 1 KiB batches appended by
// this process (index jump, one chunk of header walk) and over the same
// batches reopened from disk (chunked header walk).
func BenchmarkReadSlice(b *testing.B) {
	for _, reopen := range []bool{false, true} {
		b.Run(fmt.Sprintf("reopened=%v", reopen), func(b *testing.B) {
			fsys := vfs.NewMem()
			clock := newClock()
			l := openTestLog(b, fsys, "/bench", DefaultLogConfig(), clock)
			batch := testBatch(1, 0, 1000)
			for range 4096 {
				mustAppend(b, l, batch)
			}
			if reopen {
				l.Close()
				l = openTestLog(b, fsys, "/bench", DefaultLogConfig(), clock)
			}
			defer l.Close()
			b.ReportAllocs()
			for b.Loop() {
				fs, err := l.ReadSlice(0, 1<<20, l.LogEndOffset(), true)
				if err != nil || fs.Length < 1<<19 {
					b.Fatal(err, fs.Length)
				}
				fs.Release()
			}
		})
	}
}
