package storage

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// readCountFS counts ReadAt calls on .log files.
type readCountFS struct {
	vfs.FS
	reads atomic.Int32
}

type readCountFile struct {
	vfs.File
	fs    *readCountFS
	isLog bool
}

func (r *readCountFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &readCountFile{File: f, fs: r, isLog: strings.HasSuffix(name, logSuffix)}, nil
}

func (r *readCountFS) Create(name string) (vfs.File, error) {
	f, err := r.FS.Create(name)
	return r.wrap(name, f, err)
}

func (r *readCountFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := r.FS.OpenReadWrite(name)
	return r.wrap(name, f, err)
}

func (f *readCountFile) ReadAt(p []byte, off int64) (int, error) {
	if f.isLog {
		f.fs.reads.Add(1)
	}
	return f.File.ReadAt(p, off)
}

// TestReadSliceSmallReadsOnce: issue 15, a fetch of a few small batches
// at the log end (what a consumer sends per record at low rates) read the
// segment file three times: locate's header chunk, ReadSlice's own chunk
// of the same bytes, and the broker's copy of the range. Now one scanner
// serves locate and ReadSlice, and a range its chunk covers comes back
// with its bytes (FileSlice.Cached): one read of the file in all, and
// those bytes equal the file's. A range extended by a long poll
// (FileSlice.Extend) drops them, and a range larger than the chunk has
// none.
func TestReadSliceSmallReadsOnce(t *testing.T) {
	fsys := &readCountFS{FS: vfs.NewMem()}
	l := openTestLog(t, fsys, "/cached", DefaultLogConfig(), newClock())
	defer l.Close()
	for range 100 {
		mustAppend(t, l, testBatch(1, 0, 100))
	}
	leo := l.LogEndOffset()
	for _, offset := range []int64{0, 37, leo - 3, leo - 1} {
		fsys.reads.Store(0)
		fs, err := l.ReadSlice(offset, 16<<10, leo, true)
		if err != nil {
			t.Fatal(err)
		}
		if n := fsys.reads.Load(); n > 2 {
			t.Errorf("ReadSlice(%d) read the log %d times", offset, n)
		}
		want := make([]byte, fs.Length)
		if _, err := fs.File.ReadAt(want, fs.Offset); err != nil {
			t.Fatal(err)
		}
		got := fs.Cached()
		if offset >= leo-3 && got == nil {
			t.Errorf("ReadSlice(%d) of %d bytes at the log end has no cached bytes", offset, fs.Length)
		}
		if got != nil && !bytes.Equal(got, want) {
			t.Fatalf("ReadSlice(%d): cached bytes differ from the file's", offset)
		}
		fs.Release()
	}
	// At the log end, with the index entry within a chunk: one read.
	fsys.reads.Store(0)
	fs, err := l.ReadSlice(leo-1, 16<<10, leo, true)
	if err != nil {
		t.Fatal(err)
	}
	if n := fsys.reads.Load(); n != 1 || fs.Cached() == nil {
		t.Errorf("ReadSlice of the last batch read the log %d times (cached %v), want once", n, fs.Cached() != nil)
	}
	mustAppend(t, l, testBatch(1, 0, 100))
	next, err := l.ReadSlice(leo, 16<<10, leo+1, true)
	if err != nil {
		t.Fatal(err)
	}
	if !fs.Extend(&next) {
		t.Fatal("the next batch did not extend the range")
	}
	if fs.Cached() != nil {
		t.Error("an extended range kept the cached bytes of its first part")
	}
	fs.Release()

	big, err := l.ReadSlice(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Release()
	if big.Length <= scanChunk || big.Cached() != nil {
		t.Errorf("a range of %d bytes has cached bytes: %v", big.Length, big.Cached() != nil)
	}
}

// BenchmarkReadSliceSmall: what a consumer at the log end reads per fetch
// of a few 100-byte batches: the reads of the log per op (reads/op, one
// since the range comes with its bytes) and allocations.
func BenchmarkReadSliceSmall(b *testing.B) {
	fsys := &readCountFS{FS: vfs.NewMem()}
	l := openTestLog(b, fsys, "/bench", DefaultLogConfig(), newClock())
	defer l.Close()
	for range 1000 {
		mustAppend(b, l, testBatch(1, 0, 100))
	}
	leo := l.LogEndOffset()
	fsys.reads.Store(0)
	b.ReportAllocs()
	for b.Loop() {
		fs, err := l.ReadSlice(leo-3, 1<<20, leo, true)
		if err != nil || fs.Cached() == nil {
			b.Fatal(err, fs.Length)
		}
		fs.Release()
	}
	b.ReportMetric(float64(fsys.reads.Load())/float64(b.N), "reads/op")
}
