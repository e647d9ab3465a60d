package storage

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// gatedSyncFS counts fsyncs of .log files and holds the first one until
// gate is closed.
type gatedSyncFS struct {
	vfs.FS
	logSyncs atomic.Int32
	entered  chan struct{} // closed when the first .log fsync starts
	gate     chan struct{}
	once     sync.Once
}

type gatedSyncFile struct {
	vfs.File
	fs    *gatedSyncFS
	isLog bool
}

func (g *gatedSyncFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &gatedSyncFile{File: f, fs: g, isLog: strings.HasSuffix(name, logSuffix)}, nil
}

func (g *gatedSyncFS) Create(name string) (vfs.File, error) {
	f, err := g.FS.Create(name)
	return g.wrap(name, f, err)
}

func (g *gatedSyncFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := g.FS.OpenReadWrite(name)
	return g.wrap(name, f, err)
}

func (f *gatedSyncFile) Sync() error {
	if f.isLog {
		if f.fs.logSyncs.Add(1) == 1 {
			f.fs.once.Do(func() { close(f.fs.entered) })
			<-f.fs.gate
		}
	}
	return f.File.Sync()
}

// TestGroupCommit: with flush.messages=1, appends that arrive while an
// fsync runs share the next one (two fsyncs of the log for 1+16 appends,
// not 17), every append returns only once it is durable (a crash keeping
// only synced data loses none of them), and no offset or index is lost on
// reopening.
func TestGroupCommit(t *testing.T) {
	mem := vfs.NewMem()
	g := &gatedSyncFS{FS: mem, entered: make(chan struct{}), gate: make(chan struct{})}
	cfg := DefaultLogConfig()
	cfg.FlushIntervalMessages = 1
	l := openTestLog(t, g, "/d/t-0", cfg, newClock())
	defer l.Close()
	g.logSyncs.Store(0) // count from here

	const followers = 16
	errs := make(chan error, followers+1)
	go func() { _, err := l.Append(testBatch(1, 1000, 10)); errs <- err }()
	<-g.entered // the first append is in its fsync, without writeMu
	for range followers {
		go func() { _, err := l.Append(testBatch(1, 1000, 10)); errs <- err }()
	}
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		appended := l.Wait()
		if l.LogEndOffset() >= followers+1 {
			break
		}
		select {
		case <-appended:
		case <-deadline.C:
			t.Fatalf("appends blocked behind the running fsync: log end %d", l.LogEndOffset())
		}
	}
	close(g.gate)
	for range followers + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := g.logSyncs.Load(); n != 2 {
		t.Errorf("%d fsyncs of the log for %d concurrent appends, want 2", n, followers+1)
	}
	// Every acknowledged append survives a crash now.
	after := mem.CrashClone()
	l2 := openTestLog(t, after, "/d/t-0", cfg, newClock())
	defer l2.Close()
	if got := l2.LogEndOffset(); got != followers+1 {
		t.Fatalf("after a crash the log ends at %d, want %d", got, followers+1)
	}
	if hs := readAll(t, l2, 0); len(hs) != followers+1 {
		t.Fatalf("read %d batches after the crash, want %d", len(hs), followers+1)
	}
}
