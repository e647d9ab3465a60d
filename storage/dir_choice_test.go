package storage

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestCreationDirSkipsCordoned: new logs go to the uncordoned directory
// with the fewest partitions; to a cordoned one only when every online
// directory is cordoned; CreateLogIn puts a log where it is told.
func TestCreationDirSkipsCordoned(t *testing.T) {
	root := t.TempDir()
	a, b, c := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")
	m, err := OpenManager(ManagerOptions{Dirs: []string{a, b, c}, Now: time.Now, CordonedDirs: []string{b}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := LogConfig{SegmentBytes: 1 << 20}
	// b is cordoned: partitions alternate between a and c.
	want := []string{a, c, a, c}
	for i, w := range want {
		tp := TopicPartition{Topic: "t", Partition: int32(i)}
		if _, err := m.CreateLog(tp, [16]byte{1}, cfg); err != nil {
			t.Fatal(err)
		}
		if got, _ := m.LogDirOf(tp); got != w {
			t.Fatalf("partition %d in %s, want %s", i, got, w)
		}
	}
	// CreateLogIn ignores the cordon (the controller assigned it).
	tp := TopicPartition{Topic: "u", Partition: 0}
	if _, err := m.CreateLogIn(tp, [16]byte{2}, cfg, b); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.LogDirOf(tp); got != b {
		t.Fatalf("CreateLogIn put the log in %s, want %s", got, b)
	}
	if _, err := m.CreateLogIn(TopicPartition{Topic: "u", Partition: 1}, [16]byte{2}, cfg, filepath.Join(root, "x")); !errors.Is(err, ErrUnknownLogDir) {
		t.Fatalf("CreateLogIn of an unknown dir: %v", err)
	}
	// Cordoning changes at runtime: with a and c cordoned, b (the
	// emptiest uncordoned) gets the next log; then back to b alone.
	m.SetCordonedDirs([]string{a, c})
	tp = TopicPartition{Topic: "u", Partition: 2}
	if _, err := m.CreateLog(tp, [16]byte{2}, cfg); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.LogDirOf(tp); got != b {
		t.Fatalf("with a and c cordoned the log went to %s", got)
	}
	m.SetCordonedDirs([]string{b})
	// With a and c offline only the cordoned b is left.
	m.TakeDirOffline(a)
	m.TakeDirOffline(c)
	tp = TopicPartition{Topic: "v", Partition: 0}
	if _, err := m.CreateLog(tp, [16]byte{3}, cfg); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.LogDirOf(tp); got != b {
		t.Fatalf("with only the cordoned dir online the log went to %s", got)
	}
	if _, err := m.CreateLogIn(TopicPartition{Topic: "v", Partition: 1}, [16]byte{3}, cfg, a); !errors.Is(err, ErrLogOffline) {
		t.Fatalf("CreateLogIn of an offline dir: %v", err)
	}
}
