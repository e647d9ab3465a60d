package storage

import (
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// TestPadSlice: a range that stopped at its limit before a batch that did
// not fit is filled to the limit with the start of that batch, as Kafka's
// segment read ends a consumer fetch; never past maxOffset, never when
// the next batch would fit whole or is not there, and the last offset
// stays that of the last whole batch.
func TestPadSlice(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), "/pad", DefaultLogConfig(), newClock())
	defer l.Close()
	var sizes []int64
	for range 4 {
		b := testBatch(2, 0, 1000)
		mustAppend(t, l, b)
		sizes = append(sizes, int64(len(b)))
	}
	leo := l.LogEndOffset()
	read := func(limit int) FileSlice {
		t.Helper()
		fs, err := l.ReadSlice(0, limit, leo, true)
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}

	// Limit inside the second batch: padded to the limit.
	limit := sizes[0] + sizes[1]/2
	fs := read(int(limit))
	if fs.Length != sizes[0] {
		t.Fatalf("read %d bytes, want the first batch (%d)", fs.Length, sizes[0])
	}
	if add := l.PadSlice(&fs, limit, leo); add != limit-sizes[0] || fs.Length != limit || fs.LastOffset != 1 || fs.Cached() != nil {
		t.Fatalf("padded by %d to %d (last %d), want by %d to %d (last 1), no cached bytes", add, fs.Length, fs.LastOffset, limit-sizes[0], limit)
	}
	fs.Release()

	// The next batch starts at maxOffset (the high watermark): unchanged.
	fs = read(int(limit))
	if add := l.PadSlice(&fs, limit, 2); add != 0 || fs.Length != sizes[0] {
		t.Fatalf("padded past maxOffset: by %d to %d", add, fs.Length)
	}
	fs.Release()

	// A smaller limit than the range, the whole log read, or a limit the
	// next batch fits in: unchanged.
	fs = read(int(sizes[0] + sizes[1] + sizes[2] + sizes[3]))
	if add := l.PadSlice(&fs, fs.Length+100, leo); add != 0 {
		t.Fatalf("padded at the log end by %d", add)
	}
	fs.Release()
	fs = read(int(limit))
	if add := l.PadSlice(&fs, sizes[0]+sizes[1], leo); add != 0 || fs.Length != sizes[0] {
		t.Fatalf("padded although the next batch fits whole: by %d", add)
	}
	if add := l.PadSlice(&fs, sizes[0]/2, leo); add != 0 {
		t.Fatalf("padded below the range's length: by %d", add)
	}
	fs.Release()
}
