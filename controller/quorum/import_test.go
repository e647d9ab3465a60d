package quorum

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/samsa-broker/samsa/controller"
)

func openOne(t testing.TB, dir string) (*Quorum, *raft.InmemTransport) {
	t.Helper()
	_, trans := raft.NewInmemTransport("one")
	q, err := Open(Options{NodeID: 1, ClusterID: "c", Dir: dir, Voters: []Voter{{1, "one"}}, Transport: trans, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return q, trans
}

func openOneB(b *testing.B) (*Quorum, *raft.InmemTransport) { return openOne(b, b.TempDir()) }

// TestImportFileLog: a single-node metadata.log becomes the first entry of
// the quorum, once; a crash between commit and rename only renames on the
// next start.
func TestImportFileLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metadata.log")
	log, err := controller.OpenFileLog(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := []controller.Record{
		controller.RegisterBrokerRecord{BrokerID: 1, Host: "h", Port: 9092},
		controller.TopicRecord{Name: "t", ID: controller.Uuid{1}},
		controller.PartitionRecord{TopicID: controller.Uuid{1}, Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
	}
	if _, err := log.Append(recs); err != nil {
		t.Fatal(err)
	}
	log.Close()
	backup, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raftDir := filepath.Join(dir, "raft")
	q, trans := openOne(t, raftDir)
	if err := ImportFileLog(ctx, q, path); err != nil {
		t.Fatal(err)
	}
	if img := q.Machine().Image(); img.Offset != 2 || img.Topics["t"] == nil {
		t.Fatalf("after import: offset %d topics %v", img.Offset, img.Topics)
	}
	q.Close()
	trans.Close()

	// The crash case: the file is back (commit done, rename lost).
	if err := os.WriteFile(path, backup, 0o644); err != nil {
		t.Fatal(err)
	}
	q, trans = openOne(t, raftDir)
	defer trans.Close()
	defer q.Close()
	if err := ImportFileLog(ctx, q, path); err != nil {
		t.Fatal(err)
	}
	if img := q.Machine().Image(); img.Offset != 2 {
		t.Fatalf("imported twice: offset %d", img.Offset)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("metadata.log not renamed: %v", err)
	}
}
