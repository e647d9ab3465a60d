package storage

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/storage/vfs"
)

func TestManagerCleanLogs(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	m, err := OpenManager(ManagerOptions{FS: fsys, Dirs: []string{"/a"}, Now: clock.now, CleanerEnable: true})
	if err != nil {
		t.Fatal(err)
	}
	compacted, err := m.CreateLog(TopicPartition{"c", 0}, [16]byte{1}, compactConfig())
	if err != nil {
		t.Fatal(err)
	}
	plain, err := m.CreateLog(TopicPartition{"p", 0}, [16]byte{2}, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	written := writeKeyed(t, compacted, rng, 200, 10)
	writeKeyed(t, plain, rng, 200, 10)
	plainSize := plain.Size()
	if n := m.CleanLogs(context.Background()); n != 1 {
		t.Fatalf("cleaned %d logs, want 1", n)
	}
	if plain.Size() != plainSize {
		t.Fatal("a delete-policy log was cleaned")
	}
	cp := compacted.CleanerCheckpoint()
	if cp == 0 {
		t.Fatal("no cleaner checkpoint")
	}
	b, err := readFile(fsys, "/a/"+cleanerOffsetCheckpointFile)
	if err != nil || !strings.Contains(string(b), "c 0 ") || !strings.HasPrefix(string(b), "0\n") {
		t.Fatalf("cleaner-offset-checkpoint %q: %v", b, err)
	}
	// Nothing is due right after a clean.
	if n := m.CleanLogs(context.Background()); n != 0 {
		t.Fatalf("cleaned %d logs again", n)
	}
	want, _ := readRecords(t, compacted)
	if !slices.Equal(want, expectCompacted(written, cp)) {
		t.Fatal("compacted contents differ from the oracle")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, err = OpenManager(ManagerOptions{FS: fsys, Dirs: []string{"/a"}, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, _ := m.Log(TopicPartition{"c", 0})
	if l.CleanerCheckpoint() != cp {
		t.Fatalf("checkpoint after restart %d, want %d", l.CleanerCheckpoint(), cp)
	}
	got, _ := readRecords(t, l)
	if !slices.Equal(got, want) {
		t.Fatal("contents changed across restart")
	}
}

// TestManagerRunCleanerStops checks that Run with the cleaner enabled
// cleans in the background and returns when its context ends.
func TestManagerRunCleanerStops(t *testing.T) {
	fsys := vfs.NewMem()
	m, err := OpenManager(ManagerOptions{FS: fsys, Dirs: []string{"/a"}, CleanerEnable: true, CleanerBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.CreateLog(TopicPartition{"c", 0}, [16]byte{1}, compactConfig())
	if err != nil {
		t.Fatal(err)
	}
	writeKeyed(t, l, rand.New(rand.NewPCG(2, 2)), 200, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for l.CleanerCheckpoint() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the background cleaner did not clean")
		}
		select {
		case <-l.Wait():
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
}
