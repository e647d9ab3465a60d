package storage

import (
	"sync/atomic"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// syncCountFS counts File.Sync calls on the files it opens for writing.
type syncCountFS struct {
	vfs.FS
	syncs *atomic.Int64
}

type syncCountFile struct {
	vfs.File
	syncs *atomic.Int64
}

func (f syncCountFile) Sync() error {
	f.syncs.Add(1)
	return f.File.Sync()
}

func (s syncCountFS) Create(name string) (vfs.File, error) {
	f, err := s.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return syncCountFile{f, s.syncs}, nil
}

func (s syncCountFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := s.FS.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	return syncCountFile{f, s.syncs}, nil
}

// TestDeleteLogDoesNotFlush: deleting a log (DeleteTopics, a replica moved
// away) must not fsync its unflushed data first, as Kafka's asynchronous
// delete renames a log without flushing it; DeleteLog used to close it
// with Close, which flushed every dirty page of a log about to be removed
// (seen as writeback under DeleteTopics in a produce profile). Close of a
// log that stays still flushes.
func TestDeleteLogDoesNotFlush(t *testing.T) {
	var syncs atomic.Int64
	fs := syncCountFS{FS: vfs.NewMem(), syncs: &syncs}
	clock := newClock()
	m, err := OpenManager(ManagerOptions{FS: fs, Dirs: []string{"/d"}, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	gone := TopicPartition{Topic: "gone", Partition: 0}
	kept := TopicPartition{Topic: "kept", Partition: 0}
	lg, err := m.CreateLog(gone, strayTestIDA, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	lk, err := m.CreateLog(kept, strayTestIDB, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		mustAppend(t, lg, testBatch(2, 100, 40))
		mustAppend(t, lk, testBatch(2, 100, 40))
	}
	before := syncs.Load()
	if err := m.DeleteLog(gone); err != nil {
		t.Fatal(err)
	}
	if n := syncs.Load() - before; n != 0 {
		t.Fatalf("DeleteLog fsynced %d files of the deleted log", n)
	}
	if fs.Exists("/d/" + gone.String()) {
		t.Fatal("deleted log's directory still there")
	}
	before = syncs.Load()
	if err := lk.Close(); err != nil {
		t.Fatal(err)
	}
	if syncs.Load() == before {
		t.Fatal("Close of a kept log flushed nothing")
	}
}
