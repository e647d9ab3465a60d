package storage

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// failNext makes the next file operation fail.
func (e *errorFS) failNext() {
	e.mu.Lock()
	e.failAt = e.ops + 1
	e.mu.Unlock()
}

// dirFailures records the OnAllLogDirsFailed calls.
type dirFailures struct {
	mu    sync.Mutex
	calls [][]string
	errs  []error
}

func (d *dirFailures) record(dirs []string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, dirs)
	d.errs = append(d.errs, err)
}

func (d *dirFailures) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.calls)
}

func openFailureManager(t *testing.T, dirs []string, got *dirFailures) (*Manager, *errorFS) {
	t.Helper()
	efs := &errorFS{inner: vfs.NewMem()}
	m, err := OpenManager(ManagerOptions{FS: efs, Dirs: dirs, Now: newClock().now, OnAllLogDirsFailed: got.record})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, efs
}

// TestAllLogDirsFailedCallback: with one log directory, the first write
// that takes a log offline calls OnAllLogDirsFailed once with the
// directory and the write's error; later failures do not call it again.
func TestAllLogDirsFailedCallback(t *testing.T) {
	var got dirFailures
	m, efs := openFailureManager(t, []string{"/a"}, &got)
	cfg := smallConfig()
	cfg.FlushIntervalMessages = 1
	l0, err := m.CreateLog(TopicPartition{"t", 0}, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	l1, err := m.CreateLog(TopicPartition{"t", 1}, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l0, testBatch(1, 1, 10))
	if got.count() != 0 {
		t.Fatalf("callback fired before any failure: %v", got.calls)
	}
	efs.failNext()
	if _, err := l0.Append(testBatch(1, 1, 10)); !errors.Is(err, errInjected) {
		t.Fatalf("append = %v, want the injected fault", err)
	}
	if got.count() != 1 {
		t.Fatalf("callback fired %d times, want 1", got.count())
	}
	if !slices.Equal(got.calls[0], []string{"/a"}) || !errors.Is(got.errs[0], errInjected) {
		t.Fatalf("callback(%v, %v), want ([/a], the injected fault)", got.calls[0], got.errs[0])
	}
	// A second log failing, and a failed checkpoint write, do not fire it again.
	efs.failNext()
	if _, err := l1.Append(testBatch(1, 1, 10)); err == nil {
		t.Fatal("append succeeded through an injected fault")
	}
	efs.failNext()
	if err := m.WriteCheckpoints(); err == nil {
		t.Fatal("checkpoints written through an injected fault")
	}
	if got.count() != 1 {
		t.Fatalf("callback fired %d times, want 1", got.count())
	}
	if d := m.FailedLogDirs(); !slices.Equal(d, []string{"/a"}) {
		t.Fatalf("FailedLogDirs = %v", d)
	}
}

// TestAllLogDirsFailedJBOD: with two log directories the callback waits
// until both have failed.
func TestAllLogDirsFailedJBOD(t *testing.T) {
	var got dirFailures
	m, efs := openFailureManager(t, []string{"/a", "/b"}, &got)
	cfg := smallConfig()
	cfg.FlushIntervalMessages = 1
	la, err := m.CreateLog(TopicPartition{"t", 0}, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := m.CreateLog(TopicPartition{"t", 1}, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	efs.failNext()
	if _, err := la.Append(testBatch(1, 1, 10)); err == nil {
		t.Fatal("append succeeded through an injected fault")
	}
	if got.count() != 0 {
		t.Fatalf("callback fired with one of two dirs failed: %v", got.calls)
	}
	if d := m.FailedLogDirs(); !slices.Equal(d, []string{"/a"}) {
		t.Fatalf("FailedLogDirs = %v, want [/a]", d)
	}
	mustAppend(t, lb, testBatch(1, 1, 10)) // the other dir still serves
	efs.failNext()
	if _, err := lb.Append(testBatch(1, 1, 10)); err == nil {
		t.Fatal("append succeeded through an injected fault")
	}
	if got.count() != 1 || !slices.Equal(got.calls[0], []string{"/a", "/b"}) {
		t.Fatalf("callback calls = %v, want one with [/a /b]", got.calls)
	}
	if msg := AllLogDirsFailedMessage(got.calls[0]); msg != "Shutdown broker because all log dirs in /a, /b have failed" {
		t.Fatalf("message %q", msg)
	}
}

// TestTakeDirOffline: with two log directories the first failure of one
// reports it (OnLogDirFailed, once); TakeDirOffline then closes its logs
// and marks them offline, while the other directory keeps serving and
// takes every new partition, and checkpoints skip the failed one.
func TestTakeDirOffline(t *testing.T) {
	var mu sync.Mutex
	var failedDirs []string
	efs := &errorFS{inner: vfs.NewMem()}
	m, err := OpenManager(ManagerOptions{FS: efs, Dirs: []string{"/a", "/b"}, Now: newClock().now,
		OnLogDirFailed: func(dir string, err error) {
			mu.Lock()
			defer mu.Unlock()
			failedDirs = append(failedDirs, dir)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	cfg := smallConfig()
	cfg.FlushIntervalMessages = 1
	var logs []*Log
	for p := range int32(4) {
		l, err := m.CreateLog(TopicPartition{"t", p}, [16]byte{1}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	dirOf := func(p int32) string {
		d, ok := m.LogDirOf(TopicPartition{"t", p})
		if !ok {
			t.Fatalf("t-%d has no log", p)
		}
		return d
	}
	bad := dirOf(0)
	var inBad, inGood []int32
	for p := range int32(4) {
		if dirOf(p) == bad {
			inBad = append(inBad, p)
		} else {
			inGood = append(inGood, p)
		}
	}
	if len(inBad) != 2 || len(inGood) != 2 {
		t.Fatalf("partitions spread %v / %v, want two per dir", inBad, inGood)
	}
	efs.failNext()
	if _, err := logs[0].Append(testBatch(1, 1, 10)); err == nil {
		t.Fatal("append succeeded through an injected fault")
	}
	mu.Lock()
	if !slices.Equal(failedDirs, []string{bad}) {
		t.Fatalf("OnLogDirFailed calls %v, want [%s]", failedDirs, bad)
	}
	mu.Unlock()
	got := m.TakeDirOffline(bad)
	want := []TopicPartition{{"t", inBad[0]}, {"t", inBad[1]}}
	if !slices.Equal(got, want) {
		t.Fatalf("TakeDirOffline = %v, want %v", got, want)
	}
	for _, p := range inBad {
		if _, ok := m.Log(TopicPartition{"t", p}); ok {
			t.Fatalf("t-%d still served after its dir went offline", p)
		}
		if _, err := logs[p].Append(testBatch(1, 1, 10)); err == nil {
			t.Fatalf("append to t-%d in the offline dir succeeded", p)
		}
		if _, err := m.CreateLog(TopicPartition{"t", p}, [16]byte{1}, cfg); !errors.Is(err, ErrLogOffline) {
			t.Fatalf("CreateLog(t-%d) = %v, want ErrLogOffline", p, err)
		}
	}
	for _, p := range inGood {
		mustAppend(t, logs[p], testBatch(1, 1, 10))
	}
	for p := int32(4); p < 7; p++ {
		if _, err := m.CreateLog(TopicPartition{"t", p}, [16]byte{1}, cfg); err != nil {
			t.Fatal(err)
		}
		if d := dirOf(p); d == bad {
			t.Fatalf("new partition t-%d created in the failed dir %s", p, d)
		}
	}
	if err := m.WriteCheckpoints(); err != nil {
		t.Fatalf("checkpoints with one dir offline: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failedDirs) != 1 {
		t.Fatalf("OnLogDirFailed called %d times, want 1", len(failedDirs))
	}
}

// TestCreateLogAllDirsOffline: with every directory failed CreateLog
// refuses new partitions.
func TestCreateLogAllDirsOffline(t *testing.T) {
	var got dirFailures
	m, _ := openFailureManager(t, []string{"/a", "/b"}, &got)
	m.TakeDirOffline("/a")
	m.TakeDirOffline("/b")
	if got.count() != 1 {
		t.Fatalf("OnAllLogDirsFailed called %d times, want 1", got.count())
	}
	if _, err := m.CreateLog(TopicPartition{"t", 0}, [16]byte{1}, smallConfig()); !errors.Is(err, ErrLogOffline) {
		t.Fatalf("CreateLog = %v, want ErrLogOffline", err)
	}
}
