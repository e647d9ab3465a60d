package storage

import (
	"errors"
	"sync"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

var errInjected = errors.New("injected fault")

// errorFS fails the Nth operation (counting every FS and File call) and,
// for writes, lands half of the bytes first, like a torn write.
type errorFS struct {
	inner  vfs.FS
	mu     sync.Mutex
	ops    int
	failAt int
	fired  bool
}

func (e *errorFS) step() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ops++
	if e.ops == e.failAt {
		e.fired = true
		return errInjected
	}
	return nil
}

type errorFile struct {
	e *errorFS
	f vfs.File
}

func (e *errorFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &errorFile{e: e, f: f}, nil
}

func (e *errorFS) Create(name string) (vfs.File, error) {
	if err := e.step(); err != nil {
		return nil, err
	}
	return e.wrap(e.inner.Create(name))
}

func (e *errorFS) OpenReadWrite(name string) (vfs.File, error) {
	if err := e.step(); err != nil {
		return nil, err
	}
	return e.wrap(e.inner.OpenReadWrite(name))
}

func (e *errorFS) Open(name string) (vfs.File, error) {
	if err := e.step(); err != nil {
		return nil, err
	}
	return e.wrap(e.inner.Open(name))
}

func (e *errorFS) Remove(name string) error {
	if err := e.step(); err != nil {
		return err
	}
	return e.inner.Remove(name)
}

func (e *errorFS) RemoveAll(name string) error {
	if err := e.step(); err != nil {
		return err
	}
	return e.inner.RemoveAll(name)
}

func (e *errorFS) Rename(o, n string) error {
	if err := e.step(); err != nil {
		return err
	}
	return e.inner.Rename(o, n)
}

func (e *errorFS) MkdirAll(dir string) error {
	if err := e.step(); err != nil {
		return err
	}
	return e.inner.MkdirAll(dir)
}

func (e *errorFS) ReadDir(dir string) ([]string, error) {
	if err := e.step(); err != nil {
		return nil, err
	}
	return e.inner.ReadDir(dir)
}

func (e *errorFS) Exists(name string) bool { return e.inner.Exists(name) }

func (e *errorFS) SyncDir(dir string) error {
	if err := e.step(); err != nil {
		return err
	}
	return e.inner.SyncDir(dir)
}

func (f *errorFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.e.step(); err != nil {
		return 0, err
	}
	return f.f.ReadAt(p, off)
}

func (f *errorFile) Write(p []byte) (int, error) {
	if err := f.e.step(); err != nil {
		n, _ := f.f.Write(p[:len(p)/2])
		return n, err
	}
	return f.f.Write(p)
}

func (f *errorFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.e.step(); err != nil {
		n, _ := f.f.WriteAt(p[:len(p)/2], off)
		return n, err
	}
	return f.f.WriteAt(p, off)
}

func (f *errorFile) Sync() error {
	if err := f.e.step(); err != nil {
		return err
	}
	return f.f.Sync()
}

func (f *errorFile) Truncate(size int64) error {
	if err := f.e.step(); err != nil {
		return err
	}
	return f.f.Truncate(size)
}

func (f *errorFile) Size() (int64, error) {
	if err := f.e.step(); err != nil {
		return 0, err
	}
	return f.f.Size()
}

func (f *errorFile) Close() error { return f.f.Close() }

// batchRecords is the record count of the i-th batch in the fault test.
func batchRecords(i int) int { return 1 + i%3 }

// TestFaultInjection fails the Nth file operation for every N until a run
// completes without a fault. Whatever fails, a crash afterwards must leave a
// log that opens, holds every acknowledged batch intact and in order, and
// nothing that was never appended.
func TestFaultInjection(t *testing.T) {
	for n := 1; ; n++ {
		mem := vfs.NewMem()
		efs := &errorFS{inner: mem, failAt: n}
		clock := newClock()
		cfg := smallConfig()
		cfg.FlushIntervalMessages = 1
		cfg.RetentionMs = 10_000
		acked := 0
		ackedOffsets := int64(0)
		l, err := OpenLog(LogOptions{FS: efs, Dir: "/d/t-0", Config: cfg, Now: clock.now, RecoveryPoint: -1, LogStartOffset: -1})
		if err == nil {
			for i := 0; i < 80; i++ {
				_, err = l.Append(testBatch(batchRecords(i), clock.now().UnixMilli(), 60))
				if err != nil {
					break
				}
				acked++
				ackedOffsets += int64(batchRecords(i))
				if i == 40 {
					l.SetHighWatermark(ackedOffsets)
					if _, err = l.DeleteRecordsBefore(5); err != nil {
						break
					}
					// Truncation cuts the last batch: it is no longer acked,
					// whether or not the truncation completes.
					acked--
					ackedOffsets -= int64(batchRecords(i))
					if err = l.TruncateTo(ackedOffsets + 1); err != nil {
						break
					}
				}
			}
			l.Close()
		}
		if err != nil && !errors.Is(err, errInjected) {
			t.Fatalf("n=%d: unexpected error %v", n, err)
		}
		crashed := mem.CrashClone()
		l2, err2 := OpenLog(LogOptions{FS: crashed, Dir: "/d/t-0", Config: cfg, Now: clock.now, RecoveryPoint: -1, LogStartOffset: -1})
		if err2 != nil {
			t.Fatalf("n=%d: reopen after fault %v: %v", n, err, err2)
		}
		if l2.LogEndOffset() < ackedOffsets {
			t.Fatalf("n=%d (fault %v): LEO %d < acknowledged %d", n, err, l2.LogEndOffset(), ackedOffsets)
		}
		hs := readAll(t, l2, l2.LogStartOffset())
		if !matchesAppended(hs, false) && !matchesAppended(hs, true) {
			t.Fatalf("n=%d (fault %v): log holds batches that were never appended: %s", n, err, fmtOffsets(hs))
		}
		l2.Close()
		if !efs.fired {
			t.Logf("completed after %d fault points", n-1)
			break
		}
	}
}

// matchesAppended reports whether hs are consecutive batches of the fault
// test's sequence, with batch 40 removed by the truncation if truncated.
func matchesAppended(hs []batchHeader, truncated bool) bool {
	var seq []int
	for i := 0; i < 80; i++ {
		if truncated && i == 40 {
			continue
		}
		seq = append(seq, batchRecords(i))
	}
	var off int64
	j := 0
	for _, h := range hs {
		for j < len(seq) && off < h.BaseOffset {
			off += int64(seq[j])
			j++
		}
		if j >= len(seq) || off != h.BaseOffset || int(h.NumRecords) != seq[j] {
			return false
		}
	}
	return true
}
