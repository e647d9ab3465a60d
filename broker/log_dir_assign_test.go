package broker

import (
	"context"
	"testing"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// TestDirAssignmentsDeliveredImage: the controller publishes an image
// (Controller.Image) only after OnChange returned, and LogSyncer.Apply
// (OnChange) wakes runDirAssignments when a replica's log lives elsewhere
// than the new image says. The report it then makes must be judged
// against that image, not the published previous one: the previous image
// placed the replica where its log is, so the report was dropped as
// agreed and never sent, and the image kept the wrong directory (the
// coordinator reconciler's bug of stop 27, TestCoordinatorReconcilerDeliveredImage).
func TestDirAssignmentsDeliveredImage(t *testing.T) {
	s, dirs := newMultiDirSyncer(t, 2)
	logs, failures := s.Logs, s.dirs
	a := failures.assign
	d0, d1 := failures.ids[dirs[0]], failures.ids[dirs[1]]

	// image is an image at offset with topic "t" (one partition, replica
	// on node 1) placed in dir.
	id := controller.Uuid{1}
	image := func(offset int64, dir controller.Uuid) *controller.Image {
		img := controller.EmptyImage("c", 1)
		img.Offset = offset
		tp := &controller.Topic{Name: "t", ID: id, Partitions: []controller.Partition{
			{Partition: 0, Leader: 1, LeaderEpoch: 0, Replicas: []int32{1}, ISR: []int32{1}, Directories: []controller.Uuid{dir}}}}
		img.Topics["t"], img.TopicsByID[id] = tp, tp
		return img
	}
	var sent [][]replicaKey
	send := func(_ context.Context, dir controller.Uuid, keys []replicaKey) error {
		if dir != d0 {
			t.Errorf("reported directory %v, want %v (%s)", dir, d0, dirs[0])
		}
		sent = append(sent, keys)
		return nil
	}

	// The log is created in dirs[0], where the image puts it: nothing to
	// report.
	prev := image(10, d0)
	s.Apply(nil, prev)
	if path, ok := logs.LogDirOf(storage.TopicPartition{Topic: "t", Partition: 0}); !ok || path != dirs[0] {
		t.Fatalf("log of t-0 in %q (%v), want %q", path, ok, dirs[0])
	}
	if a.report(context.Background(), prev, 1, send); len(sent) != 0 {
		t.Fatalf("reported %v, though the image agrees", sent)
	}

	// OnChange(prev, next): next places the replica in dirs[1]; the
	// wake-up's pass runs before the controller publishes next.
	next := image(11, d1)
	s.Apply(prev, next)
	select {
	case <-a.wake:
	default:
		t.Fatal("Apply of an image disagreeing with the log's directory queued no report")
	}
	if a.report(context.Background(), prev, 1, send); len(sent) != 1 || len(sent[0]) != 1 || sent[0][0] != (replicaKey{id, 0}) {
		t.Fatalf("reported %v while the published image is the previous one, want t-0 in %s", sent, dirs[0])
	}
	if left := a.take(); len(left) != 0 {
		t.Fatalf("still pending after the report: %v", left)
	}
}

// TestOfflineReplicasDeliveredImage: a log directory that fails while
// OnChange runs holds a log LogSyncer.Apply just created for an image the
// controller has not published yet; the AssignReplicasToDirs that takes
// the directory's replicas offline must name it, not leave it out because
// the published (previous) image lacks its topic.
func TestOfflineReplicasDeliveredImage(t *testing.T) {
	f := &logDirFailures{assign: newDirAssignments()}
	prev := controller.EmptyImage("c", 1)
	prev.Offset = 10
	next := controller.EmptyImage("c", 1)
	next.Offset = 11
	id := controller.Uuid{7}
	tp := &controller.Topic{Name: "t", ID: id, Partitions: []controller.Partition{{Partition: 0, Leader: 1, Replicas: []int32{1}}}}
	next.Topics["t"], next.TopicsByID[id] = tp, tp
	f.assign.delivered.Store(next) // LogSyncer.Apply(prev, next) is running
	got := f.offlineReplicas(prev, []storage.TopicPartition{{Topic: "t", Partition: 0}})
	if len(got) != 1 || got[0].TopicID != id || len(got[0].Partitions) != 1 || got[0].Partitions[0] != 0 {
		t.Fatalf("offline replicas %+v, want t-0 (topic id %v)", got, id)
	}
	// Once published, a newer image than the delivered one is used.
	newer := controller.EmptyImage("c", 1)
	newer.Offset = 12
	if got := f.offlineReplicas(newer, []storage.TopicPartition{{Topic: "t", Partition: 0}}); len(got) != 0 {
		t.Fatalf("offline replicas %+v by an image without t, want none", got)
	}
}
