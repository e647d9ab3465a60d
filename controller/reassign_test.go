package controller

import (
	"errors"
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

// TestLeaderEpochBumps follows Kafka 4.4's PartitionChangeBuilder: the
// leader epoch goes up when the leader changes and when a change removes
// a replica while the leader stays (reassignment completion, cancellation
// of an added replica, a removal, a replaced target dropping an added
// replica); adding replicas, reordering them, and ISR shrink or expand
// bump only the partition epoch. Every step bumps the partition epoch.
func TestLeaderEpochBumps(t *testing.T) {
	c := newTestController(t, 5)
	r := c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2, 3}}}}, false)[0]
	if r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	part := func() Partition { return c.Image().Topics["t"].Partitions[0] }
	alterISR := func(isr ...int32) {
		t.Helper()
		p := part()
		if _, code, msg := c.AlterPartition(AlterPartition{TopicID: r.ID, LeaderID: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: isr}); code != 0 {
			t.Fatalf("AlterPartition %v: %d %s", isr, code, msg)
		}
	}
	steps := []struct {
		name   string
		do     func()
		bumped bool
		leader int32
	}{
		{"ISR shrink", func() { alterISR(1, 2) }, false, 1},
		{"ISR expand", func() { alterISR(1, 2, 3) }, false, 1},
		{"reorder", func() { reassign(t, c, "t", 0, []int32{1, 3, 2}) }, false, 1},
		{"start adding 4", func() { reassign(t, c, "t", 0, []int32{1, 3, 2, 4}) }, false, 1},
		{"cancel: 4 leaves", func() { reassign(t, c, "t", 0, nil) }, true, 1},
		{"start replacing 2 by 4", func() { reassign(t, c, "t", 0, []int32{1, 3, 4}) }, false, 1},
		{"replace target: 4 leaves, 5 comes", func() { reassign(t, c, "t", 0, []int32{1, 3, 5}) }, true, 1},
		{"5 joins the ISR: complete, 2 leaves", func() { alterISR(1, 2, 3, 5) }, true, 1},
		{"remove 5", func() { reassign(t, c, "t", 0, []int32{1, 3}) }, true, 1},
		{"leader 1 fenced", func() {
			if err := c.FenceBroker(1, true); err != nil {
				t.Fatal(err)
			}
		}, true, 3},
	}
	for _, s := range steps {
		before := part()
		s.do()
		after := part()
		if after.PartitionEpoch <= before.PartitionEpoch {
			t.Errorf("%s: partition epoch %d -> %d, want a bump", s.name, before.PartitionEpoch, after.PartitionEpoch)
		}
		if got := after.LeaderEpoch > before.LeaderEpoch; got != s.bumped || after.Leader != s.leader {
			t.Errorf("%s: leader %d epoch %d -> leader %d epoch %d, want leader %d and bump %v (replicas %v -> %v)",
				s.name, before.Leader, before.LeaderEpoch, after.Leader, after.LeaderEpoch, s.leader, s.bumped, before.Replicas, after.Replicas)
		}
	}
	// The bump survives the log: a replay (and a snapshot) gives the same epochs.
	rebuilt := EmptyImage("test-cluster", 1)
	for _, rec := range ImageRecords(c.Image()) {
		var err error
		if rebuilt, err = Apply(rebuilt, rec); err != nil {
			t.Fatal(err)
		}
	}
	if got := rebuilt.Topics["t"].Partitions[0]; got.LeaderEpoch != part().LeaderEpoch {
		t.Fatalf("snapshot: leader epoch %d, want %d", got.LeaderEpoch, part().LeaderEpoch)
	}
}

// TestBumpLeaderEpochRecordVersion: a PartitionChangeRecord that bumps the
// leader epoch without a new leader is written as payload version 2 and
// reads back; version 2 of any other record type is refused.
func TestBumpLeaderEpochRecordVersion(t *testing.T) {
	rec := PartitionChangeRecord{TopicID: Uuid{1}, Partition: 0, Replicas: []int32{1, 2}, BumpLeaderEpoch: true}
	entry, err := EncodeEntry(4, []Record{rec, PartitionChangeRecord{TopicID: Uuid{1}, ISR: []int32{1}}})
	if err != nil {
		t.Fatal(err)
	}
	if v := entry[entryHeaderSize+8]; v != 2 {
		t.Fatalf("payload version %d, want 2", v)
	}
	_, recs, err := DecodeEntry(entry)
	if err != nil || !reflect.DeepEqual(recs[0], rec) {
		t.Fatalf("decode: %v %+v", err, recs)
	}
	if _, err := decodeRecord(2, RecordConfig, []byte(`{}`)); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("version 2 ConfigRecord: %v", err)
	}
}
