package controller

import (
	"testing"
)

// uncleanTopics allows unclean election for the topics named.
func uncleanTopics(names ...string) UncleanPolicy {
	return func(t *Topic) bool {
		for _, n := range names {
			if t.Name == n {
				return true
			}
		}
		return false
	}
}

// TestUncleanElectionOnFence: topic "u" allows unclean election, "c" does
// not (Kafka's default); both have replicas [1 2 3] and an ISR shrunk to
// [1]. Fencing broker 1 makes 2 the leader of "u" with ISR [2] (its log
// becomes the truth) and leaves "c" leaderless with ISR [1].
func TestUncleanElectionOnFence(t *testing.T) {
	c := newTestController(t, 3, func(o *Options) { o.UncleanLeaderElection = uncleanTopics("u") })
	for _, name := range []string{"u", "c"} {
		r := c.CreateTopics([]CreateTopic{{Name: name, NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2, 3}}}}, false)[0]
		if r.ErrorCode != 0 {
			t.Fatalf("%+v", r)
		}
		if _, code, msg := c.AlterPartition(AlterPartition{TopicID: r.ID, Partition: 0, LeaderID: 1, NewISR: []int32{1}}); code != 0 {
			t.Fatalf("shrink %s: %d %s", name, code, msg)
		}
	}
	if err := c.FenceBroker(1, true); err != nil {
		t.Fatal(err)
	}
	img := c.Image()
	if p := img.Topics["u"].Partitions[0]; p.Leader != 2 || p.LeaderEpoch != 1 || !equalInt32s(p.ISR, []int32{2}) {
		t.Fatalf("unclean topic after fencing its only ISR member: %+v", p)
	}
	if p := img.Topics["c"].Partitions[0]; p.Leader != -1 || !equalInt32s(p.ISR, []int32{1}) {
		t.Fatalf("clean topic after fencing its only ISR member: %+v", p)
	}
}

// TestUncleanElectionOnUnfence: replicas [1 2], every broker fenced, the
// ISR left as [1]. Unfencing broker 2 (out of sync) makes it leader of the
// topic that allows unclean election only; an ElectUnclean sweep after the
// other topic's setting changed elects it there too, and a second sweep
// finds nothing to do.
func TestUncleanElectionOnUnfence(t *testing.T) {
	allowed := map[string]bool{"u": true}
	c := newTestController(t, 2, func(o *Options) { o.UncleanLeaderElection = func(t *Topic) bool { return allowed[t.Name] } })
	for _, name := range []string{"u", "c"} {
		r := c.CreateTopics([]CreateTopic{{Name: name, NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2}}}}, false)[0]
		if r.ErrorCode != 0 {
			t.Fatalf("%+v", r)
		}
	}
	for _, id := range []int32{2, 1} {
		if err := c.FenceBroker(id, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.FenceBroker(2, false); err != nil {
		t.Fatal(err)
	}
	img := c.Image()
	if p := img.Topics["u"].Partitions[0]; p.Leader != 2 || !equalInt32s(p.ISR, []int32{2}) {
		t.Fatalf("unclean topic after unfencing an out-of-sync replica: %+v", p)
	}
	if p := img.Topics["c"].Partitions[0]; p.Leader != -1 || !equalInt32s(p.ISR, []int32{1}) {
		t.Fatalf("clean topic after unfencing an out-of-sync replica: %+v", p)
	}
	if n, err := c.ElectUnclean(); err != nil || n != 0 {
		t.Fatalf("sweep with nothing to do: %d, %v", n, err)
	}
	allowed["c"] = true
	if n, err := c.ElectUnclean(); err != nil || n != 1 {
		t.Fatalf("sweep after enabling: %d, %v", n, err)
	}
	if p := c.Image().Topics["c"].Partitions[0]; p.Leader != 2 || !equalInt32s(p.ISR, []int32{2}) {
		t.Fatalf("after the sweep: %+v", p)
	}
}

// TestBalanceLeaders: leadership that moved off the preferred replica
// (broker 1 fenced, then back) returns to it once it is in the ISR, not
// before; a balanced cluster is left alone.
func TestBalanceLeaders(t *testing.T) {
	c, id := newReplicatedTopic(t)
	if n, err := c.BalanceLeaders(); err != nil || n != 0 {
		t.Fatalf("balanced: %d, %v", n, err)
	}
	if err := c.FenceBroker(1, true); err != nil {
		t.Fatal(err)
	}
	if err := c.FenceBroker(1, false); err != nil {
		t.Fatal(err)
	}
	if p := c.Image().Topics["t"].Partitions[0]; p.Leader != 2 {
		t.Fatalf("after fence and unfence: %+v", p)
	}
	if n, err := c.BalanceLeaders(); err != nil || n != 0 {
		t.Fatalf("preferred replica out of the ISR: %d, %v", n, err)
	}
	p := c.Image().Topics["t"].Partitions[0]
	if _, code, _ := c.AlterPartition(AlterPartition{TopicID: id, Partition: 0, LeaderID: 2, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{2, 3, 1}}); code != 0 {
		t.Fatalf("expand: %d", code)
	}
	if n, err := c.BalanceLeaders(); err != nil || n != 1 {
		t.Fatalf("preferred replica back in the ISR: %d, %v", n, err)
	}
	if p := c.Image().Topics["t"].Partitions[0]; p.Leader != 1 || p.LeaderEpoch != 2 {
		t.Fatalf("after balancing: %+v", p)
	}
}
