package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// newMultiDirSyncer is a LogSyncer for node 1 (newTestSyncer) over n log directories
// with a meta.properties each, tracking their failures; the first holds the metadata.
func newMultiDirSyncer(t *testing.T, n int) (*LogSyncer, []string) {
	t.Helper()
	var dirs []string
	for range n {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "meta.properties"), []byte("version=1\ncluster.id=abc\nnode.id=1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	s := newTestSyncer(t, dirs...)
	failures, err := newLogDirFailures(dirs, dirs[0], func(string, error) {})
	if err != nil {
		t.Fatal(err)
	}
	s.dirs = failures
	return s, dirs
}

// TestAlterReplicaLogDir checks the answers of AlterReplicaLogDirs per
// partition (the codes and their order checked against Kafka 4.4 on a
// broker with two log directories, and ReplicaManager.alterReplicaLogDirs
// read with javap), that a hosted replica moves and its new directory is
// queued for the controller, and that a directory asked for a replica not
// hosted yet is where its log is created later.
func TestAlterReplicaLogDir(t *testing.T) {
	s, dirs := newMultiDirSyncer(t, 3)
	logs, failures := s.Logs, s.dirs
	img := controller.EmptyImage("c", 1)
	img.Offset = 10
	id := controller.Uuid{1}
	topic := &controller.Topic{Name: "t", ID: id, Partitions: []controller.Partition{
		{Partition: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}, Directories: []controller.Uuid{failures.ids[dirs[0]]}},
		{Partition: 1, Leader: 2, Replicas: []int32{2}, ISR: []int32{2}},
	}}
	img.Topics["t"], img.TopicsByID[id] = topic, topic
	moves := newLogDirMoves(1, dirs, logs, failures, func() *controller.Image { return img }, s.Logger)
	defer moves.close()
	s.moves = moves
	s.Apply(nil, img)
	t0 := storage.TopicPartition{Topic: "t", Partition: 0}
	l, ok := logs.Log(t0)
	if !ok {
		t.Fatal("no log for t-0")
	}
	for range 20 {
		if _, err := l.Append(testRecordBatch(5)); err != nil {
			t.Fatal(err)
		}
	}

	for _, c := range []struct {
		name string
		tp   storage.TopicPartition
		dir  string
		want int16
	}{
		{"unknown dir", t0, "/nonexistent", kerr.LogDirNotFound.Code},
		{"relative dir", t0, filepath.Base(dirs[1]), kerr.LogDirNotFound.Code},
		{"topic too long", storage.TopicPartition{Topic: strings.Repeat("x", 250)}, dirs[1], kerr.InvalidTopicException.Code},
		{"unknown topic", storage.TopicPartition{Topic: "nosuch"}, dirs[1], kerr.UnknownTopicOrPartition.Code},
		{"unknown partition", storage.TopicPartition{Topic: "t", Partition: 7}, dirs[1], kerr.UnknownTopicOrPartition.Code},
		{"replica on another broker", storage.TopicPartition{Topic: "t", Partition: 1}, dirs[2], kerr.ReplicaNotAvailable.Code},
		{"same dir", t0, dirs[0], 0},
	} {
		if got := moves.AlterReplicaLogDir(c.tp, c.dir); got != c.want {
			t.Errorf("%s: code %d, want %d", c.name, got, c.want)
		}
	}
	if d, _ := logs.LogDirOf(t0); d != dirs[0] {
		t.Fatalf("t-0 in %s before the move", d)
	}
	logs.SetCordonedDirs([]string{dirs[2]})
	if got := moves.AlterReplicaLogDir(t0, dirs[2]); got != kerr.InvalidReplicaAssignment.Code {
		t.Errorf("cordoned dir: code %d", got)
	}
	logs.SetCordonedDirs(nil)

	// The move.
	if got := moves.AlterReplicaLogDir(t0, dirs[1]); got != 0 {
		t.Fatalf("move: code %d", got)
	}
	moves.wg.Wait()
	if d, _ := logs.LogDirOf(t0); d != dirs[1] {
		t.Fatalf("t-0 in %s after the move, want %s", d, dirs[1])
	}
	if l.LogEndOffset() != 100 {
		t.Fatalf("log end %d after the move", l.LogEndOffset())
	}
	pending := failures.assign.take()
	if keys := pending[failures.ids[dirs[1]]]; len(keys) != 1 || keys[0] != (replicaKey{id, 0}) {
		t.Fatalf("queued reports %v, want t-0 in %s", pending, dirs[1])
	}

	// t-1 comes to this node later, the controller leaving its directory
	// to it: it goes where AlterReplicaLogDirs asked.
	next := *img
	next.Offset = 11
	t2 := *topic
	t2.Partitions = []controller.Partition{topic.Partitions[0],
		{Partition: 1, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}, Directories: []controller.Uuid{controller.DirUnassigned}}}
	next.Topics = map[string]*controller.Topic{"t": &t2}
	next.TopicsByID = map[controller.Uuid]*controller.Topic{id: &t2}
	s.Apply(img, &next)
	if d, _ := logs.LogDirOf(storage.TopicPartition{Topic: "t", Partition: 1}); d != dirs[2] {
		t.Fatalf("t-1 created in %s, want %s (asked by AlterReplicaLogDirs)", d, dirs[2])
	}

	// An offline directory.
	logs.TakeDirOffline(dirs[2])
	if got := moves.AlterReplicaLogDir(t0, dirs[2]); got != kerr.KafkaStorageError.Code {
		t.Errorf("offline dir: code %d", got)
	}
	// Any offline directory stops moves (Kafka creates no future log).
	if got := moves.AlterReplicaLogDir(t0, dirs[0]); got != kerr.KafkaStorageError.Code {
		t.Errorf("move with an offline dir: code %d", got)
	}
}

// testRecordBatch is one batch of n 100-byte records.
func testRecordBatch(n int) []byte {
	recs := make([]wire.Record, n)
	for i := range recs {
		recs[i].Value = make([]byte, 100)
	}
	batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: 1, Records: recs})
	if err != nil {
		panic(err)
	}
	return batch
}

// TestAlterReplicaLogDirsNode: an in-process node with two log
// directories moves a partition asked by kadm's AlterReplicaLogDirs, and
// the controller's image then gives the replica the new directory's id
// (AssignReplicasToDirs); the records stay readable.
func TestAlterReplicaLogDirsNode(t *testing.T) {
	root := t.TempDir()
	d1, d2 := filepath.Join(root, "d1"), filepath.Join(root, "d2")
	n := startTestNode(t, d1+","+d2)
	defer closeTestNode(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addrs()[0].String()), kgo.DefaultProduceTopic("mv"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "mv"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		cl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	tp := storage.TopicPartition{Topic: "mv"}
	from, ok := n.logs.LogDirOf(tp)
	if !ok {
		t.Fatal("no log for mv-0")
	}
	to := d1
	if from == d1 {
		to = d2
	}
	rs, err := adm.AlterBrokerReplicaLogDirs(ctx, n.cfg.NodeID, kadm.AlterReplicaLogDirsReq{to: kadm.TopicsSet{"mv": {0: {}}}})
	if err != nil {
		t.Fatal(err)
	}
	rs.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		if r.Err != nil {
			t.Fatalf("AlterReplicaLogDirs: %v", r.Err)
		}
	})
	want := n.dirFailures.ids[to]
	var state string
	if !poll(30*time.Second, func() bool {
		dir, _ := n.logs.LogDirOf(tp)
		top := n.ctrl.Image().Topics["mv"]
		got := top.Partitions[0].DirectoryOf(n.cfg.NodeID)
		state = fmt.Sprintf("log in %s, image directory %v (want %v)", dir, got, want)
		return dir == to && got == want
	}) {
		t.Fatalf("after the move: %s", state)
	}
	l, _ := n.logs.Log(tp)
	if l.LogEndOffset() != 500 {
		t.Fatalf("log end %d after the move", l.LogEndOffset())
	}
}
