package storage

import (
	"errors"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

func TestProducerIDAllocatorNeverRepeats(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	a, err := OpenProducerIDAllocator(fs, "/d", 3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	next := func(a *ProducerIDAllocator) int64 {
		t.Helper()
		id, err := a.Next()
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("id %d handed out twice", id)
		}
		seen[id] = true
		return id
	}
	for i := 0; i < 4; i++ { // crosses into a second block
		next(a)
	}
	// A crash keeps only synced data: the second block's end must be there.
	a2, err := OpenProducerIDAllocator(fs.CrashClone(), "/d", 3)
	if err != nil {
		t.Fatal(err)
	}
	if id := next(a2); id != 6 {
		t.Fatalf("first id after restart %d, want 6 (start of the next block)", id)
	}
}

func TestProducerIDAllocatorCorruptFile(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(fs, "/d/"+ProducerIDBlockFile, []byte("9\n100\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenProducerIDAllocator(fs, "/d", 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err %v, want ErrCorrupt", err)
	}
}

// TestProducerIDAllocatorFaults fails each file operation in turn: the
// failure is reported, the allocator stays failed (no fsync retry), and
// after a crash no id handed out before is handed out again.
func TestProducerIDAllocatorFaults(t *testing.T) {
	for failAt := 1; ; failAt++ {
		mem := vfs.NewMem()
		if err := mem.MkdirAll("/d"); err != nil {
			t.Fatal(err)
		}
		efs := &errorFS{inner: mem, failAt: failAt}
		a, err := OpenProducerIDAllocator(efs, "/d", 2)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		var failed error
		for i := 0; i < 5; i++ {
			id, err := a.Next()
			if err != nil {
				failed = err
				break
			}
			got = append(got, id)
		}
		if !efs.fired {
			if failed != nil {
				t.Fatalf("failAt %d: error without a fault: %v", failAt, failed)
			}
			return
		}
		if !errors.Is(failed, ErrProducerIDsFailed) || !errors.Is(failed, errInjected) {
			t.Fatalf("failAt %d: err %v", failAt, failed)
		}
		if _, err := a.Next(); !errors.Is(err, ErrProducerIDsFailed) {
			t.Fatalf("failAt %d: allocator recovered without restart: %v", failAt, err)
		}
		a2, err := OpenProducerIDAllocator(mem.CrashClone(), "/d", 2)
		if err != nil {
			t.Fatalf("failAt %d: reopen: %v", failAt, err)
		}
		id, err := a2.Next()
		if err != nil {
			t.Fatal(err)
		}
		for _, old := range got {
			if id <= old {
				t.Fatalf("failAt %d: id %d after restart, already handed out %v", failAt, id, got)
			}
		}
	}
}
