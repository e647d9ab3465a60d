package storage

import (
	"math/rand/v2"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// TestReadSliceLargeBatchesJumps: issue 15, a consumer's fetch of large
// batches (the load tool's 1 MiB batches, 10 MiB per partition) walked
// every batch header of the range, one read of a header chunk each,
// because the last indexed batch that starts within the limit runs past
// it and the jump gave up. It now takes the index entry before that one:
// at most four reads of the log per fetch (locate's two, the jump's two),
// whatever the number of batches, and the range is exactly the whole
// batches that fit, from every start offset and for limits on and off
// batch boundaries.
func TestReadSliceLargeBatchesJumps(t *testing.T) {
	fsys := &readCountFS{FS: vfs.NewMem()}
	l := openTestLog(t, fsys, "/jump", DefaultLogConfig(), newClock())
	defer l.Close()
	rng := rand.New(rand.NewPCG(15, 15))
	type batch struct{ pos, size, first, last int64 }
	var batches []batch
	pos := int64(0)
	for range 60 {
		// 20-60 KiB batches of 1-3 records: every one is indexed
		// (index.interval.bytes is 4 KiB).
		n := 1 + rng.IntN(3)
		b := testBatch(n, 0, (20<<10+rng.IntN(40<<10))/n)
		info := mustAppend(t, l, b)
		batches = append(batches, batch{pos: pos, size: int64(len(b)), first: info.FirstOffset, last: info.LastOffset})
		pos += int64(len(b))
	}
	leo := l.LogEndOffset()
	for _, from := range []int{0, 1, 7, 30, 52, 59} {
		for _, limit := range []int64{1, 100 << 10, 300 << 10, 333333, batches[from].size, pos} {
			// The expected range: whole batches from the one holding
			// the offset while they fit (the first one always).
			offset := batches[from].first
			end, last := batches[from].pos+batches[from].size, batches[from].last
			for _, b := range batches[from+1:] {
				if b.pos+b.size-batches[from].pos > limit {
					break
				}
				end, last = b.pos+b.size, b.last
			}
			fsys.reads.Store(0)
			fs, err := l.ReadSlice(offset, int(limit), leo, true)
			if err != nil {
				t.Fatal(err)
			}
			reads := fsys.reads.Load()
			if fs.Offset != batches[from].pos || fs.Offset+fs.Length != end || fs.LastOffset != last {
				t.Fatalf("ReadSlice(%d, limit %d): [%d, %d) last %d, want [%d, %d) last %d",
					offset, limit, fs.Offset, fs.Offset+fs.Length, fs.LastOffset, batches[from].pos, end, last)
			}
			if reads > 4 {
				t.Errorf("ReadSlice(%d, limit %d) of %d bytes read the log %d times, want at most 4", offset, limit, fs.Length, reads)
			}
			fs.Release()
		}
	}
}

// BenchmarkReadSliceLargeBatches: a consumer's fetch of 10 MiB from a
// partition of 1 MiB batches (the load tool's): reads of the log per
// fetch (reads/op) and allocations.
func BenchmarkReadSliceLargeBatches(b *testing.B) {
	fsys := &readCountFS{FS: vfs.NewMem()}
	l := openTestLog(b, fsys, "/bench", DefaultLogConfig(), newClock())
	defer l.Close()
	for range 40 {
		mustAppend(b, l, testBatch(1000, 0, 1000))
	}
	leo := l.LogEndOffset()
	fsys.reads.Store(0)
	b.ReportAllocs()
	for b.Loop() {
		fs, err := l.ReadSlice(5000, 10<<20, leo, true)
		if err != nil || fs.Length < 9<<20 {
			b.Fatal(err, fs.Length)
		}
		fs.Release()
	}
	b.ReportMetric(float64(fsys.reads.Load())/float64(b.N), "reads/op")
}
