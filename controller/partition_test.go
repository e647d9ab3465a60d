package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// newReplicatedTopic returns a controller with brokers 1..3 and topic "t"
// with one partition on replicas 1,2,3 (leader 1).
func newReplicatedTopic(t *testing.T) (*Controller, Uuid) {
	t.Helper()
	c := newTestController(t, 3)
	r := c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2, 3}}}}, false)[0]
	if r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	return c, r.ID
}

func TestAlterPartition(t *testing.T) {
	tests := []struct {
		name string
		req  func(id Uuid) AlterPartition
		code int16
		isr  []int32
	}{
		{"shrink", func(id Uuid) AlterPartition { return AlterPartition{id, 0, 1, 0, 0, []int32{1, 3}} }, 0, []int32{1, 3}},
		{"unchanged", func(id Uuid) AlterPartition { return AlterPartition{id, 0, 1, 0, 0, []int32{1, 2, 3}} }, 0, []int32{1, 2, 3}},
		{"unknown topic", func(Uuid) AlterPartition { return AlterPartition{Uuid{5}, 0, 1, 0, 0, []int32{1}} }, kerr.UnknownTopicID.Code, nil},
		{"unknown partition", func(id Uuid) AlterPartition { return AlterPartition{id, 4, 1, 0, 0, []int32{1}} }, kerr.UnknownTopicOrPartition.Code, nil},
		{"not leader", func(id Uuid) AlterPartition { return AlterPartition{id, 0, 2, 0, 0, []int32{2}} }, kerr.NotLeaderForPartition.Code, []int32{1, 2, 3}},
		{"old leader epoch", func(id Uuid) AlterPartition { return AlterPartition{id, 0, 1, -1, 0, []int32{1}} }, kerr.FencedLeaderEpoch.Code, []int32{1, 2, 3}},
		{"new leader epoch", func(id Uuid) AlterPartition { return AlterPartition{id, 0, 1, 1, 0, []int32{1}} }, kerr.UnknownLeaderEpoch.Code, []int32{1, 2, 3}},
		{"partition epoch", func(id Uuid) AlterPartition { return AlterPartition{id, 0, 1, 0, 3, []int32{1}} }, kerr.InvalidUpdateVersion.Code, []int32{1, 2, 3}},
		{"leader missing", func(id Uuid) AlterPartition { return AlterPartition{id, 0, 1, 0, 0, []int32{2, 3}} }, kerr.InvalidRequest.Code, []int32{1, 2, 3}},
		{"not a replica", func(id Uuid) AlterPartition { return AlterPartition{id, 0, 1, 0, 0, []int32{1, 4}} }, kerr.InvalidRequest.Code, []int32{1, 2, 3}},
		{"duplicate", func(id Uuid) AlterPartition { return AlterPartition{id, 0, 1, 0, 0, []int32{1, 1}} }, kerr.InvalidRequest.Code, []int32{1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, id := newReplicatedTopic(t)
			p, code, msg := c.AlterPartition(tt.req(id))
			if code != tt.code {
				t.Fatalf("code %d %q, want %d", code, msg, tt.code)
			}
			if tt.isr != nil && !equalInt32s(p.ISR, tt.isr) {
				t.Fatalf("isr %v, want %v", p.ISR, tt.isr)
			}
		})
	}
}

func TestAlterPartitionExpandAndEpochs(t *testing.T) {
	c, id := newReplicatedTopic(t)
	p, code, _ := c.AlterPartition(AlterPartition{id, 0, 1, 0, 0, []int32{1}})
	if code != 0 || p.PartitionEpoch != 1 || p.LeaderEpoch != 0 {
		t.Fatalf("%d %+v", code, p)
	}
	// The old partition epoch is now stale.
	if _, code, _ := c.AlterPartition(AlterPartition{id, 0, 1, 0, 0, []int32{1, 2}}); code != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("code %d", code)
	}
	// A fenced broker cannot join the ISR.
	if err := c.FenceBroker(3, true); err != nil {
		t.Fatal(err)
	}
	p = c.Image().Topics["t"].Partitions[0]
	if _, code, _ := c.AlterPartition(AlterPartition{id, 0, 1, p.LeaderEpoch, p.PartitionEpoch, []int32{1, 3}}); code != kerr.IneligibleReplica.Code {
		t.Fatalf("code %d", code)
	}
	p, code, _ = c.AlterPartition(AlterPartition{id, 0, 1, p.LeaderEpoch, p.PartitionEpoch, []int32{1, 2}})
	if code != 0 || !equalInt32s(p.ISR, []int32{1, 2}) {
		t.Fatalf("%d %+v", code, p)
	}
}

func TestFenceBrokerMovesLeadership(t *testing.T) {
	c, _ := newReplicatedTopic(t)
	if err := c.FenceBroker(1, true); err != nil {
		t.Fatal(err)
	}
	p := c.Image().Topics["t"].Partitions[0]
	if p.Leader != 2 || p.LeaderEpoch != 1 || !equalInt32s(p.ISR, []int32{2, 3}) {
		t.Fatalf("after fencing leader: %+v", p)
	}
	if err := c.FenceBroker(3, true); err != nil {
		t.Fatal(err)
	}
	p = c.Image().Topics["t"].Partitions[0]
	if p.Leader != 2 || p.LeaderEpoch != 1 || !equalInt32s(p.ISR, []int32{2}) {
		t.Fatalf("after fencing follower: %+v", p)
	}
	// The last ISR member stays in the ISR; the partition goes leaderless.
	if err := c.FenceBroker(2, true); err != nil {
		t.Fatal(err)
	}
	p = c.Image().Topics["t"].Partitions[0]
	if p.Leader != -1 || p.LeaderEpoch != 2 || !equalInt32s(p.ISR, []int32{2}) {
		t.Fatalf("after fencing last: %+v", p)
	}
	// Unfencing a replica outside the ISR does not make it leader...
	if err := c.FenceBroker(1, false); err != nil {
		t.Fatal(err)
	}
	if p = c.Image().Topics["t"].Partitions[0]; p.Leader != -1 {
		t.Fatalf("out-of-sync replica became leader: %+v", p)
	}
	// ...unfencing the last ISR member does.
	if err := c.FenceBroker(2, false); err != nil {
		t.Fatal(err)
	}
	if p = c.Image().Topics["t"].Partitions[0]; p.Leader != 2 || p.LeaderEpoch != 3 {
		t.Fatalf("after unfencing: %+v", p)
	}
	// Fencing twice changes nothing.
	off := c.Image().Offset
	if err := c.FenceBroker(2, false); err != nil || c.Image().Offset != off {
		t.Fatalf("no-op fence appended: %v", err)
	}
}

func TestElectLeaders(t *testing.T) {
	c, id := newReplicatedTopic(t)
	tp := []TopicPartition{{"t", 0}}
	if r := c.ElectLeaders(ElectPreferred, tp)[0]; r.ErrorCode != kerr.ElectionNotNeeded.Code {
		t.Fatalf("%+v", r)
	}
	if r := c.ElectLeaders(ElectPreferred, []TopicPartition{{"nope", 0}, {"t", 7}}); r[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || r[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("%+v", r)
	}
	c.FenceBroker(1, true) // leader moves to 2, 1 leaves the ISR
	if r := c.ElectLeaders(ElectPreferred, tp)[0]; r.ErrorCode != kerr.PreferredLeaderNotAvailable.Code {
		t.Fatalf("%+v", r)
	}
	c.FenceBroker(1, false)
	p := c.Image().Topics["t"].Partitions[0]
	if _, code, _ := c.AlterPartition(AlterPartition{id, 0, 2, p.LeaderEpoch, p.PartitionEpoch, []int32{2, 3, 1}}); code != 0 {
		t.Fatalf("code %d", code)
	}
	if r := c.ElectLeaders(ElectPreferred, tp)[0]; r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	if p := c.Image().Topics["t"].Partitions[0]; p.Leader != 1 {
		t.Fatalf("%+v", p)
	}

	// Unclean: everyone in the ISR is fenced, an out-of-sync replica takes over.
	c2, id2 := newReplicatedTopic(t)
	p = c2.Image().Topics["t"].Partitions[0]
	c2.AlterPartition(AlterPartition{id2, 0, 1, p.LeaderEpoch, p.PartitionEpoch, []int32{1}})
	c2.FenceBroker(1, true)
	if r := c2.ElectLeaders(ElectPreferred, tp)[0]; r.ErrorCode != kerr.PreferredLeaderNotAvailable.Code {
		t.Fatalf("%+v", r)
	}
	if r := c2.ElectLeaders(ElectUnclean, tp)[0]; r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	p = c2.Image().Topics["t"].Partitions[0]
	if p.Leader != 2 || !equalInt32s(p.ISR, []int32{2}) {
		t.Fatalf("%+v", p)
	}
	if r := c2.ElectLeaders(ElectUnclean, tp)[0]; r.ErrorCode != kerr.ElectionNotNeeded.Code {
		t.Fatalf("%+v", r)
	}
	if r := c2.ElectLeaders(9, tp)[0]; r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("%+v", r)
	}
}
