package broker

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
)

// cachestatWorks skips t on a kernel without cachestat(2) (before 6.5),
// where every range takes the scheduler-aware sendfile.
func cachestatWorks(t *testing.T, f *os.File) {
	t.Helper()
	var rng [2]uint64
	var cs [5]uint64
	if _, _, e := syscall.Syscall6(sysCachestat, f.Fd(), uintptr(unsafe.Pointer(&rng)), uintptr(unsafe.Pointer(&cs)), 0, 0, 0); e == syscall.ENOSYS || e == syscall.EPERM {
		t.Skipf("cachestat(2) not available: %v", e)
	}
}

// TestRangeCached: rangeCached (which picks the sendfile that bypasses the
// scheduler) says true only when every page of the range is in the page
// cache. A file extended by truncate has no pages in the cache until it is
// read or written (reading a hole caches nothing on tmpfs, so the test only
// writes); written pages (dirty) are cached.
func TestRangeCached(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "seg.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cachestatWorks(t, f)
	const size = 2 << 20
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	fd := int(f.Fd())
	if rangeCached(fd, 0, size) || rangeCached(fd, 4096, 100) {
		t.Fatal("a hole never read is reported cached")
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{7}, 8192), 0); err != nil {
		t.Fatal(err)
	}
	if !rangeCached(fd, 0, 8192) || !rangeCached(fd, 100, 5000) {
		t.Fatal("written (dirty) pages are not reported cached")
	}
	if rangeCached(fd, 0, 8193) || rangeCached(fd, 4096, 1<<20) {
		t.Fatal("a range running past the written pages is reported cached")
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{9}, size), 0); err != nil {
		t.Fatal(err)
	}
	if !rangeCached(fd, 0, size) || !rangeCached(fd, size-1, 1) {
		t.Fatal("a file written whole is not reported cached")
	}
	if rangeCached(fd, 0, 0) {
		t.Fatal("an empty range is reported cached")
	}
}

// TestRangeSenderCachedAndNot sends a range of several raw sendfile chunks
// from a file whose pages are not cached (the scheduler-aware sendfile),
// then again once it was written whole (the raw one), over loopback TCP to a reader
// that reads slowly enough for the socket buffer to fill, and checks the
// bytes that arrive.
func TestRangeSenderCachedAndNot(t *testing.T) {
	name := filepath.Join(t.TempDir(), "seg.log")
	osf, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	cachestatWorks(t, osf)
	osf.Close()
	const size = 3*rawSendChunk + 12345
	f, err := vfs.OS.OpenReadWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	// Data in the middle only: the rest stays holes, never cached, so the
	// first send must take the scheduler-aware path.
	mid := bytes.Repeat([]byte("samsa"), 20000)
	if _, err := f.WriteAt(mid, rawSendChunk); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, size)
	copy(want[rawSendChunk:], mid)
	fd := int(f.(vfs.OSFiler).OSFile().Fd())
	for round, cached := range []bool{false, true} {
		if got := rangeCached(fd, 100, size-100); got != cached {
			t.Fatalf("round %d: rangeCached = %v, want %v", round, got, cached)
		}
		nc, got := loopbackCollector(t, 64<<10)
		nc.SetWriteBuffer(64 << 10)
		nc.SetWriteDeadline(time.Now().Add(2 * time.Minute))
		o := outgoing{buf: []byte("head"), spans: []fileSpan{{at: 4, slice: storage.FileSlice{File: f, Offset: 100, Length: size - 100}}}}
		if err := writeOutgoing(nc, &o); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		nc.Close()
		b := <-got
		if exp := append([]byte("head"), want[100:]...); !bytes.Equal(b, exp) {
			t.Fatalf("round %d: received %d bytes, want %d; differ", round, len(b), len(exp))
		}
		// Write every page for the next round: all of them cached.
		for i := range want {
			want[i] = byte(i*7 + i>>12)
		}
		if _, err := f.WriteAt(want, 0); err != nil {
			t.Fatal(err)
		}
	}
}
