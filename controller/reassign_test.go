package controller

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func reassign(t *testing.T, c *Controller, topic string, partition int32, replicas []int32) ReassignmentResult {
	t.Helper()
	return c.AlterReassignments([]Reassignment{{TopicPartition: TopicPartition{topic, partition}, Replicas: replicas}})[0]
}

// TestReassignment: [1 2 3] -> [2 3 4] adds 4 and removes 1 (replicas
// [2 3 4 1] meanwhile, ISR and leader unchanged); the AlterPartition that
// brings 4 into the ISR completes it (replicas [2 3 4], ISR without 1,
// leader 2 as 1 left, a new leader epoch). The image with a reassignment
// in progress survives a snapshot.
func TestReassignment(t *testing.T) {
	c := newTestController(t, 4)
	r := c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2, 3}}}}, false)[0]
	if r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	if res := reassign(t, c, "t", 0, []int32{2, 3, 4}); res.ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
	p := c.Image().Topics["t"].Partitions[0]
	if !equalInt32s(p.Replicas, []int32{2, 3, 4, 1}) || !equalInt32s(p.AddingReplicas, []int32{4}) || !equalInt32s(p.RemovingReplicas, []int32{1}) ||
		!equalInt32s(p.ISR, []int32{1, 2, 3}) || p.Leader != 1 || p.LeaderEpoch != 0 || !p.Reassigning() {
		t.Fatalf("in progress: %+v", p)
	}
	rebuilt := EmptyImage("test-cluster", 1)
	for _, rec := range ImageRecords(c.Image()) {
		var err error
		if rebuilt, err = Apply(rebuilt, rec); err != nil {
			t.Fatal(err)
		}
	}
	if got := rebuilt.Topics["t"].Partitions[0]; !reflect.DeepEqual(got, p) {
		t.Fatalf("snapshot: %+v, want %+v", got, p)
	}
	// An ISR change that does not bring 4 in leaves it in progress.
	got, code, msg := c.AlterPartition(AlterPartition{TopicID: r.ID, Partition: 0, LeaderID: 1, LeaderEpoch: 0, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{1, 2}})
	if code != 0 || !got.Reassigning() {
		t.Fatalf("shrink: %d %s %+v", code, msg, got)
	}
	got, code, msg = c.AlterPartition(AlterPartition{TopicID: r.ID, Partition: 0, LeaderID: 1, LeaderEpoch: 0, PartitionEpoch: got.PartitionEpoch, NewISR: []int32{1, 2, 4}})
	if code != 0 {
		t.Fatalf("expand: %d %s", code, msg)
	}
	if !equalInt32s(got.Replicas, []int32{2, 3, 4}) || !equalInt32s(got.ISR, []int32{2, 4}) || got.Leader != 2 || got.LeaderEpoch != 1 || got.Reassigning() {
		t.Fatalf("completed: %+v", got)
	}
	if res := reassign(t, c, "t", 0, nil); res.ErrorCode != kerr.NoReassignmentInProgress.Code {
		t.Fatalf("cancel with none in progress: %+v", res)
	}
}

// TestReassignmentCancelReplaceAndRemove: a cancelled reassignment goes
// back to the original replicas; a new target replaces the one in
// progress (the adding replica no longer wanted leaves); a target that
// only removes or reorders completes at once; bad targets are
// INVALID_REPLICA_ASSIGNMENT or UNKNOWN_TOPIC_OR_PARTITION.
func TestReassignmentCancelReplaceAndRemove(t *testing.T) {
	c := newTestController(t, 5)
	r := c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2, 3}}}}, false)[0]
	if r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	part := func() Partition { return c.Image().Topics["t"].Partitions[0] }
	if res := reassign(t, c, "t", 0, []int32{1, 2, 4}); res.ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
	if res := reassign(t, c, "t", 0, nil); res.ErrorCode != 0 {
		t.Fatalf("cancel: %+v", res)
	}
	if p := part(); !equalInt32s(p.Replicas, []int32{1, 2, 3}) || p.Reassigning() || !equalInt32s(p.ISR, []int32{1, 2, 3}) {
		t.Fatalf("after cancel: %+v", p)
	}
	if res := reassign(t, c, "t", 0, []int32{1, 2, 4}); res.ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
	if res := reassign(t, c, "t", 0, []int32{1, 2, 5}); res.ErrorCode != 0 {
		t.Fatalf("replace: %+v", res)
	}
	if p := part(); !equalInt32s(p.Replicas, []int32{1, 2, 5, 3}) || !equalInt32s(p.AddingReplicas, []int32{5}) || !equalInt32s(p.RemovingReplicas, []int32{3}) {
		t.Fatalf("after replacing: %+v", p)
	}
	if res := reassign(t, c, "t", 0, []int32{2, 1}); res.ErrorCode != 0 {
		t.Fatalf("remove only: %+v", res)
	}
	if p := part(); !equalInt32s(p.Replicas, []int32{2, 1}) || p.Reassigning() || !equalInt32s(p.ISR, []int32{1, 2}) || p.Leader != 1 {
		t.Fatalf("after removing: %+v", p)
	}
	for _, tc := range []struct {
		topic    string
		replicas []int32
		code     int16
	}{
		{"t", []int32{}, kerr.InvalidReplicaAssignment.Code},
		{"t", []int32{1, 1}, kerr.InvalidReplicaAssignment.Code},
		{"t", []int32{1, 9}, kerr.InvalidReplicaAssignment.Code},
		{"nope", []int32{1}, kerr.UnknownTopicOrPartition.Code},
	} {
		if res := reassign(t, c, tc.topic, 0, tc.replicas); res.ErrorCode != tc.code {
			t.Errorf("%s %v: %+v, want %d", tc.topic, tc.replicas, res, tc.code)
		}
	}
}
