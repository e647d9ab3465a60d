package storage

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/storage/vfs"
)

func openMoveManager(t *testing.T, fsys vfs.FS, dirs ...string) *Manager {
	t.Helper()
	m, err := OpenManager(ManagerOptions{FS: fsys, Dirs: dirs, Now: newClock().now})
	if err != nil {
		t.Fatalf("OpenManager: %v", err)
	}
	return m
}

// checkRecords reads l from its log start and checks that it holds
// exactly the batches of want records each, offsets 0..n-1, intact.
func checkRecords(t *testing.T, l *Log, n int64) {
	t.Helper()
	hs := readAll(t, l, 0)
	var got int64
	for _, h := range hs {
		if h.BaseOffset != got {
			t.Fatalf("batch at %d, want %d", h.BaseOffset, got)
		}
		got = h.LastOffset() + 1
	}
	if got != n || l.LogEndOffset() != n {
		t.Fatalf("read up to %d, log end %d, want %d", got, l.LogEndOffset(), n)
	}
}

// TestMoveLogWhileAppending moves a log between log directories while a
// writer appends and a reader reads: no record is lost or duplicated,
// the log lives in the target afterwards (and after a reopen), and the
// source holds nothing of it.
func TestMoveLogWhileAppending(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	m := openMoveManager(t, vfs.OS, a, b)
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, err := m.CreateLogIn(tp, [16]byte{7}, smallConfig(), a)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		mustAppend(t, l, testBatch(3, 1000, 100))
	}
	if err := l.AssignEpochStartOffset(4, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var appended atomic.Int64
	var wg sync.WaitGroup
	wg.Add(2)
	var appendErr, readErr error
	go func() {
		defer wg.Done()
		for i := 0; i < 100000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := l.Append(testBatch(2, 2000, 50)); err != nil {
				appendErr = err
				return
			}
			appended.Add(2)
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 100000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := l.Read(l.LogStartOffset(), 4096, l.LogEndOffset(), true); err != nil {
				readErr = err
				return
			}
		}
	}()
	err = m.MoveLog(context.Background(), tp, b)
	// Appends continue on the moved log.
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
wait:
	for after := appended.Load(); appended.Load() < after+20; {
		select {
		case <-l.Wait():
		case <-timeout.C:
			break wait
		}
	}
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("MoveLog: %v", err)
	}
	if appendErr != nil || readErr != nil {
		t.Fatalf("append error %v, read error %v during the move", appendErr, readErr)
	}
	if dir, _ := m.LogDirOf(tp); dir != b {
		t.Fatalf("log in %s after the move, want %s", dir, b)
	}
	if got := filepath.Dir(l.Dir()); got != b {
		t.Fatalf("Log.Dir %s after the move", l.Dir())
	}
	n := 600 + appended.Load()
	checkRecords(t, l, n)
	if e, off := l.EndOffsetForEpoch(4); e != 4 || off != n {
		t.Fatalf("epoch 4 ends at %d (epoch %d), want %d", off, e, n)
	}
	names, _ := vfs.OS.ReadDir(a)
	for _, name := range names {
		if strings.HasPrefix(name, "t-0") {
			t.Fatalf("source directory still holds %s", name)
		}
	}
	if len(m.FutureLogs()) != 0 {
		t.Fatalf("future logs after the move: %v", m.FutureLogs())
	}
	mustAppend(t, l, testBatch(1, 3000, 10))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = openMoveManager(t, vfs.OS, a, b)
	defer m.Close()
	if dir, _ := m.LogDirOf(tp); dir != b {
		t.Fatalf("log in %s after reopening, want %s", dir, b)
	}
	l, _ = m.Log(tp)
	checkRecords(t, l, n+1)
	if e, off := l.EndOffsetForEpoch(4); e != 4 || off != n+1 {
		t.Fatalf("after reopening epoch 4 ends at %d (epoch %d)", off, e)
	}
	if id := m.TopicID(tp); id != [16]byte{7} {
		t.Fatalf("topic id %x after the move", id)
	}
	// Moving to where it is is a no-op; an unknown directory is refused.
	if err := m.MoveLog(context.Background(), tp, b); err != nil {
		t.Fatal(err)
	}
	if err := m.MoveLog(context.Background(), tp, filepath.Join(root, "c")); !errors.Is(err, ErrUnknownLogDir) {
		t.Fatalf("move to an unknown dir: %v", err)
	}
	if err := m.MoveLog(context.Background(), TopicPartition{Topic: "none"}, a); !errors.Is(err, ErrNoLog) {
		t.Fatalf("move of a missing log: %v", err)
	}
}

// TestMoveLogCrash crashes (CrashClone) at each step of a move and
// reopens: before the commit the log is found in the source directory
// (and the move is returned by InterruptedMoves, to start again), after
// it in the target, with every flushed record either way, and no
// leftover "-future" or "-moving" directory.
func TestMoveLogCrash(t *testing.T) {
	steps := []string{"copied", "moved-aside", "committed", "swapped"}
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			fsys := vfs.NewMem()
			m := openMoveManager(t, fsys, "/a", "/b")
			tp := TopicPartition{Topic: "t", Partition: 3}
			l, err := m.CreateLogIn(tp, [16]byte{9}, smallConfig(), "/a")
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 100; i++ {
				mustAppend(t, l, testBatch(2, 1000, 80))
			}
			l.SetHighWatermark(l.LogEndOffset())
			if _, err := l.DeleteRecordsBefore(5); err != nil {
				t.Fatal(err)
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := m.WriteCheckpoints(); err != nil {
				t.Fatal(err)
			}
			var crashed *vfs.MemFS
			m.testMoveStep = func(s string) {
				if s == step {
					crashed = fsys.CrashClone()
				}
			}
			if err := m.MoveLog(context.Background(), tp, "/b"); err != nil {
				t.Fatal(err)
			}
			m.Close()
			if crashed == nil {
				t.Fatalf("step %s not reached", step)
			}
			m2 := openMoveManager(t, crashed, "/a", "/b")
			defer m2.Close()
			want := "/a"
			if step == "committed" || step == "swapped" {
				want = "/b"
			}
			if dir, _ := m2.LogDirOf(tp); dir != want {
				t.Fatalf("log in %q after a crash at %s, want %s", dir, step, want)
			}
			l2, _ := m2.Log(tp)
			if l2.LogStartOffset() != 5 {
				t.Fatalf("log start %d after a crash at %s, want 5", l2.LogStartOffset(), step)
			}
			hs := readAll(t, l2, 5)
			if len(hs) == 0 || hs[len(hs)-1].LastOffset() != 199 || l2.LogEndOffset() != 200 {
				t.Fatalf("log end %d after a crash at %s", l2.LogEndOffset(), step)
			}
			for _, d := range []string{"/a", "/b"} {
				names, _ := crashed.ReadDir(d)
				for _, n := range names {
					if strings.HasSuffix(n, futureDirSuffix) || strings.HasSuffix(n, movingDirSuffix) {
						t.Fatalf("%s left in %s", n, d)
					}
				}
			}
			if len(m2.MissingAtStart()) != 0 {
				t.Fatalf("missing at start: %v", m2.MissingAtStart())
			}
			// Before the commit the move is to start again.
			wantResume := map[TopicPartition]string{}
			if want == "/a" {
				wantResume[tp] = "/b"
			}
			if got := m2.InterruptedMoves(); len(got) != len(wantResume) || got[tp] != wantResume[tp] {
				t.Fatalf("interrupted moves %v after a crash at %s, want %v", got, step, wantResume)
			}
		})
	}
}

// TestMoveLogAborted: a cancelled move ends with ErrMoveAborted and leaves no future directory.
func TestMoveLogAborted(t *testing.T) {
	fsys := vfs.NewMem()
	m := openMoveManager(t, fsys, "/a", "/b")
	defer m.Close()
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, err := m.CreateLogIn(tp, [16]byte{1}, smallConfig(), "/a")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		mustAppend(t, l, testBatch(2, 1000, 80))
	}
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	go func() { done <- m.MoveLog(ctx, tp, "/b") }()
	if err := <-done; !errors.Is(err, ErrMoveAborted) {
		t.Fatalf("cancelled move: %v", err)
	}
	if dir, _ := m.LogDirOf(tp); dir != "/a" {
		t.Fatalf("cancelled move left the log in %s", dir)
	}
	names, _ := fsys.ReadDir("/b")
	if len(names) > 0 && strings.Contains(strings.Join(names, ","), futureDirSuffix) {
		t.Fatalf("future dir left: %v", names)
	}
	checkRecords(t, l, 100)
}

// TestMoveLogTruncatedDuring: a truncation (a follower's, after a leader
// change) between the copy's rounds rewrites bytes already copied: the
// move starts its copy again, and the moved log holds exactly the log's
// data, before and after a reopen.
func TestMoveLogTruncatedDuring(t *testing.T) {
	fsys := vfs.NewMem()
	m := openMoveManager(t, fsys, "/a", "/b")
	tp := TopicPartition{Topic: "t", Partition: 0}
	l, err := m.CreateLogIn(tp, [16]byte{5}, smallConfig(), "/a")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60; i++ {
		mustAppend(t, l, testBatch(2, 1000, 80))
	}
	truncated := false
	m.testMoveStep = func(s string) {
		if s != "round" || truncated {
			return
		}
		truncated = true
		if err := l.TruncateTo(31); err != nil {
			t.Error(err)
		}
		for i := 0; i < 30; i++ {
			mustAppend(t, l, testBatch(3, 5000, 40))
		}
	}
	if err := m.MoveLog(context.Background(), tp, "/b"); err != nil {
		t.Fatal(err)
	}
	if !truncated {
		t.Fatal("no round")
	}
	want := readBytes(t, l)
	leo := l.LogEndOffset()
	if leo != 30+90 {
		t.Fatalf("log end %d", leo)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = openMoveManager(t, fsys, "/a", "/b")
	defer m.Close()
	l2, ok := m.Log(tp)
	if d, _ := m.LogDirOf(tp); !ok || d != "/b" {
		t.Fatalf("log in %q after reopening", d)
	}
	got := readBytes(t, l2)
	if l2.LogEndOffset() != leo || string(got) != string(want) {
		t.Fatalf("moved log differs: log end %d (want %d), %d bytes (want %d)", l2.LogEndOffset(), leo, len(got), len(want))
	}
}

// readBytes returns every batch of l from its log start, concatenated.
func readBytes(t *testing.T, l *Log) []byte {
	t.Helper()
	var out []byte
	for _, h := range readAll(t, l, l.LogStartOffset()) {
		b, err := l.Read(h.BaseOffset, h.TotalSize(), h.LastOffset()+1, true)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b[:h.TotalSize()]...)
	}
	return out
}

// TestMoveLogFaults fails the Nth file operation of a move, for every N
// until a move runs without a fault, then reopens the directories: the
// log is found in exactly one of them with every record it had (flushed
// before the move), and no "-future" or "-moving" directory is left.
func TestMoveLogFaults(t *testing.T) {
	tp := TopicPartition{Topic: "t", Partition: 0}
	for n := 1; n < 2000; n++ {
		mem := vfs.NewMem()
		efs := &errorFS{inner: mem, failAt: 1 << 30}
		m := openMoveManager(t, efs, "/a", "/b")
		l, err := m.CreateLogIn(tp, [16]byte{3}, smallConfig(), "/a")
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 40; i++ {
			mustAppend(t, l, testBatch(2, 1000, 80))
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := m.WriteCheckpoints(); err != nil {
			t.Fatal(err)
		}
		efs.mu.Lock()
		efs.failAt = efs.ops + n
		efs.mu.Unlock()
		moveErr := m.MoveLog(context.Background(), tp, "/b")
		efs.mu.Lock()
		fired := efs.fired
		efs.failAt = 1 << 30
		efs.mu.Unlock()
		_ = m.Close()
		m2 := openMoveManager(t, mem, "/a", "/b")
		dir, ok := m2.LogDirOf(tp)
		if !ok {
			t.Fatalf("fault at op %d (move: %v): no log after reopening", n, moveErr)
		}
		l2, _ := m2.Log(tp)
		checkRecords(t, l2, 80)
		for _, d := range []string{"/a", "/b"} {
			names, _ := mem.ReadDir(d)
			for _, name := range names {
				if strings.HasSuffix(name, futureDirSuffix) || strings.HasSuffix(name, movingDirSuffix) || (name == "t-0" && d != dir) {
					t.Fatalf("fault at op %d: %s left in %s (log in %s)", n, name, d, dir)
				}
			}
		}
		m2.Close()
		if !fired {
			if moveErr != nil || dir != "/b" {
				t.Fatalf("move without a fault: %v, log in %s", moveErr, dir)
			}
			t.Logf("a move takes %d file operations; each one failed in turn", n-1)
			return
		}
	}
	t.Fatal("the move never completed without a fault")
}
