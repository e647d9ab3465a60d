package storage

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/storage/vfs"
)

func TestManagerRestartKeepsOffsets(t *testing.T) {
	for _, kind := range []string{"mem", "os"} {
		t.Run(kind, func(t *testing.T) {
			var fsys vfs.FS = vfs.NewMem()
			dirs := []string{"/a", "/b"}
			if kind == "os" {
				fsys = vfs.OS
				root := t.TempDir()
				dirs = []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
			}
			clock := newClock()
			m, err := OpenManager(ManagerOptions{FS: fsys, Dirs: dirs, Now: clock.now})
			if err != nil {
				t.Fatal(err)
			}
			id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
			tps := []TopicPartition{{"orders", 0}, {"orders", 1}, {"my-topic.x", 2}}
			for _, tp := range tps {
				l, err := m.CreateLog(tp, id, smallConfig())
				if err != nil {
					t.Fatal(err)
				}
				again, _ := m.CreateLog(tp, id, smallConfig())
				if again != l {
					t.Fatal("CreateLog not idempotent")
				}
				for i := 0; i < 100; i++ {
					mustAppend(t, l, testBatch(2, 1000, 40))
				}
				l.SetHighWatermark(150)
				if _, err := l.DeleteRecordsBefore(120); err != nil {
					t.Fatal(err)
				}
			}
			// Partitions are spread over the dirs.
			perDir := map[string]int{}
			for _, tp := range tps {
				l, _ := m.Log(tp)
				perDir[filepath.Dir(l.Dir())]++
			}
			if len(perDir) != 2 {
				t.Fatalf("placement %v", perDir)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			m, err = OpenManager(ManagerOptions{FS: fsys, Dirs: dirs, Now: clock.now})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if len(m.Logs()) != 3 {
				t.Fatalf("%d logs after restart", len(m.Logs()))
			}
			for _, tp := range tps {
				l, ok := m.Log(tp)
				if !ok {
					t.Fatalf("%v missing", tp)
				}
				if l.LogEndOffset() != 200 || l.LogStartOffset() != 120 || l.HighWatermark() != 150 || l.RecoveryPoint() != 200 {
					t.Fatalf("%v: LEO %d start %d HW %d RP %d", tp, l.LogEndOffset(), l.LogStartOffset(), l.HighWatermark(), l.RecoveryPoint())
				}
				if m.TopicID(tp) != id {
					t.Fatalf("topic id %x", m.TopicID(tp))
				}
				readAll(t, l, 120)
			}
			// Delete one; a leftover -delete dir is removed on open.
			if err := m.DeleteLog(tps[0]); err != nil {
				t.Fatal(err)
			}
			if _, ok := m.Log(tps[0]); ok {
				t.Fatal("still listed")
			}
			for _, d := range dirs {
				names, _ := fsys.ReadDir(d)
				for _, n := range names {
					if strings.HasPrefix(n, "orders-0") {
						t.Fatalf("left %s", n)
					}
				}
			}
			fsys.MkdirAll(filepath.Join(dirs[0], "orders-1.abc-delete"))
			m.Close()
			m2, err := OpenManager(ManagerOptions{FS: fsys, Dirs: dirs, Now: clock.now})
			if err != nil {
				t.Fatal(err)
			}
			if fsys.Exists(filepath.Join(dirs[0], "orders-1.abc-delete")) {
				t.Fatal("-delete dir kept")
			}
			if len(m2.Logs()) != 2 {
				t.Fatalf("%d logs", len(m2.Logs()))
			}
			m = m2
		})
	}
}

func TestOffsetCheckpointFormat(t *testing.T) {
	in := map[TopicPartition]int64{{"b", 1}: 7, {"a", 0}: 42}
	b := encodeOffsetCheckpoint(in)
	if string(b) != "0\n2\na 0 42\nb 1 7\n" {
		t.Fatalf("%q", b)
	}
	out, err := parseOffsetCheckpoint(b)
	if err != nil || len(out) != 2 || out[TopicPartition{"a", 0}] != 42 {
		t.Fatalf("%v %v", out, err)
	}
	for _, bad := range []string{"", "1\n0\n", "0\n2\na 0 1\n", "0\n1\na x 1\n", "0\n1\na 0\n"} {
		if _, err := parseOffsetCheckpoint([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestPartitionMetadata(t *testing.T) {
	id := [16]byte{0xff, 1, 2, 3}
	b := encodePartitionMetadata(id)
	got, err := parsePartitionMetadata(b)
	if err != nil || got != id {
		t.Fatalf("%x %v", got, err)
	}
	if _, err := parsePartitionMetadata([]byte("version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")); err == nil {
		t.Fatal("accepted version 1")
	}
}

func TestParsePartitionDir(t *testing.T) {
	cases := map[string]TopicPartition{"a-0": {"a", 0}, "my-topic-12": {"my-topic", 12}, "__consumer_offsets-49": {"__consumer_offsets", 49}}
	for in, want := range cases {
		if got, ok := parsePartitionDir(in); !ok || got != want {
			t.Errorf("%s: %v %v", in, got, ok)
		}
	}
	for _, bad := range []string{"a", "a-", "-1", "a-01", "a-x"} {
		if _, ok := parsePartitionDir(bad); ok {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestManagerRun(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	m, err := OpenManager(ManagerOptions{FS: fsys, Dirs: []string{"/a"}, Now: clock.now,
		RetentionCheckInterval: time.Millisecond, FlushCheckInterval: time.Millisecond, CheckpointInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallConfig()
	cfg.FlushMs = 0
	l, _ := m.CreateLog(TopicPartition{"t", 0}, [16]byte{}, cfg)
	mustAppend(t, l, testBatch(1, 1, 1))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for l.RecoveryPoint() != 1 || !fsys.Exists("/a/recovery-point-offset-checkpoint") {
		if time.Now().After(deadline) {
			t.Fatal("background flush/checkpoint did not happen")
		}
		time.Sleep(time.Millisecond) // polling a condition, not waiting for it blindly
	}
	cancel()
	<-done
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestManagerCrash reopens a manager from a crash image: flushed data
// survives, and checkpoints written before the crash are honoured.
func TestManagerCrash(t *testing.T) {
	mem := vfs.NewMem()
	clock := newClock()
	m, err := OpenManager(ManagerOptions{FS: mem, Dirs: []string{"/a"}, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallConfig()
	cfg.FlushIntervalMessages = 1
	tp := TopicPartition{"t", 0}
	l, err := m.CreateLog(tp, [16]byte{9}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60; i++ {
		mustAppend(t, l, testBatch(1, 1000, 50))
	}
	l.SetHighWatermark(40)
	if _, err := l.DeleteRecordsBefore(30); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteCheckpoints(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		mustAppend(t, l, testBatch(1, 1000, 50))
	}
	l.SetHighWatermark(80)
	crashed := mem.CrashClone()
	m.Close()
	m2, err := OpenManager(ManagerOptions{FS: crashed, Dirs: []string{"/a"}, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l2, ok := m2.Log(tp)
	if !ok {
		t.Fatal("log missing after crash")
	}
	if l2.LogEndOffset() != 80 || l2.LogStartOffset() != 30 || l2.HighWatermark() != 40 {
		t.Fatalf("LEO %d start %d HW %d", l2.LogEndOffset(), l2.LogStartOffset(), l2.HighWatermark())
	}
	if m2.TopicID(tp) != [16]byte{9} {
		t.Fatal("topic id")
	}
	readAll(t, l2, 30)
}
