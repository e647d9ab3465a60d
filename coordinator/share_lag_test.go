package coordinator

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestShareGroupOffsetsLag checks DescribeShareGroupOffsets v1's Lag
// against Kafka 4.4's measured answers: HWM - start offset -
// delivery-complete count, -1 without a start offset, the ListOffsets
// error when the high watermark cannot be read.
func TestShareGroupOffsetsLag(t *testing.T) {
	l := newLogs()
	img := fakeImage{"orders": 3}
	p := newFakePersister()
	c := newTestCoordinator(t, l, func(o *Options) { o.Persister = p })
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}
	orders := topicIDOf("orders")
	key := func(part int32) SharePartitionKey {
		return SharePartitionKey{Group: "sg", TopicID: orders, Partition: part}
	}
	wantCode(t, "join", c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", 0, "orders")).ErrorCode, nil)

	var asked [][]int32
	latest := func(_ context.Context, id [16]byte, _ string, ps []int32) map[int32]LatestOffset {
		if id != orders {
			t.Errorf("latest offsets of topic %x, want orders", id)
		}
		asked = append(asked, ps)
		return map[int32]LatestOffset{0: {Offset: 12}, 1: {Offset: -1, ErrorCode: kerr.NotLeaderForPartition.Code}}
	}
	// Partition 0: 0-8 archived, 9-11 acquired (written as available),
	// HWM 12 -> Lag 3 (FACTS.md). Partition 1 has state but its leader
	// cannot be asked. Partition 2 has no start offset yet.
	p.mu.Lock()
	p.mu.states[key(0)] = ShareStateSummary{StateEpoch: 1, LeaderEpoch: 2, StartOffset: 0, DeliveryCompleteCount: 9}
	p.mu.states[key(1)] = ShareStateSummary{StateEpoch: 1, LeaderEpoch: 2, StartOffset: 5, DeliveryCompleteCount: 0}
	p.mu.states[key(2)] = ShareStateSummary{StateEpoch: 1, StartOffset: -1, DeliveryCompleteCount: -1}
	p.mu.Unlock()
	dr := c.DescribeShareGroupOffsetsLag(ctx, img, describeShareOffsetsReq("sg", "orders", 0, 1, 2), latest)
	ps := dr.Groups[0].Topics[0].Partitions
	if len(ps) != 3 {
		t.Fatalf("describe: %+v", dr.Groups[0])
	}
	if ps[0].ErrorCode != 0 || ps[0].StartOffset != 0 || ps[0].LeaderEpoch != 2 || ps[0].Lag != 3 {
		t.Errorf("partition 0: %+v, want start 0, epoch 2, lag 3", ps[0])
	}
	if ps[1].ErrorCode != kerr.NotLeaderForPartition.Code || ps[1].Lag != -1 || ps[1].StartOffset != 0 {
		t.Errorf("partition 1: %+v, want NOT_LEADER_OR_FOLLOWER, start 0, lag -1", ps[1])
	}
	if ps[2].ErrorCode != 0 || ps[2].StartOffset != -1 || ps[2].Lag != -1 {
		t.Errorf("partition 2: %+v, want start -1, lag -1", ps[2])
	}
	if len(asked) != 1 || len(asked[0]) != 2 || asked[0][0] != 0 || asked[0][1] != 1 {
		t.Errorf("latest offsets asked %v, want one call for [0 1]", asked)
	}

	// Without a LatestOffsets (v0 callers), Lag stays -1.
	dr = c.DescribeShareGroupOffsets(ctx, img, describeShareOffsetsReq("sg", "orders", 0))
	if op := dr.Groups[0].Topics[0].Partitions[0]; op.Lag != -1 || op.StartOffset != 0 {
		t.Errorf("without latest offsets: %+v", op)
	}

	// After AlterShareGroupOffsets to 4 (state reset, nothing complete),
	// HWM 12 -> Lag 8 (FACTS.md).
	wantCode(t, "leave", c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", -1)).ErrorCode, nil)
	a := c.AlterShareGroupOffsets(ctx, img, alterShareReq("sg", "orders", map[int32]int64{0: 4}))
	wantCode(t, "alter", a.ErrorCode, nil)
	p.mu.Lock()
	st := p.mu.states[key(0)]
	st.DeliveryCompleteCount = 0 // as the share coordinator's Initialize records
	p.mu.states[key(0)] = st
	p.mu.Unlock()
	dr = c.DescribeShareGroupOffsetsLag(ctx, img, describeShareOffsetsReq("sg", "orders", 0), latest)
	if op := dr.Groups[0].Topics[0].Partitions[0]; op.ErrorCode != 0 || op.StartOffset != 4 || op.Lag != 8 {
		t.Errorf("after alter to 4: %+v, want start 4, lag 8", op)
	}
}

func TestShareLag(t *testing.T) {
	for _, c := range []struct {
		hwm, start int64
		complete   int32
		want       int64
	}{
		{12, 0, 9, 3},
		{12, 4, 0, 8},
		{18, 18, 0, 0},
		{10, 0, 10, 0},
		{5, 9, 0, -4}, // start beyond the log end: Kafka does not clamp
	} {
		if got := shareLag(c.hwm, c.start, c.complete); got != c.want {
			t.Errorf("shareLag(%d, %d, %d) = %d, want %d", c.hwm, c.start, c.complete, got, c.want)
		}
	}
}

// imageTopics resolves topic ids from a fakeImage that a test changes
// (a deleted topic is removed from it).
type imageTopics struct{ img *fakeImage }

func (r imageTopics) TopicName(id [16]byte) (string, bool) {
	for name := range *r.img {
		if topicIDOf(name) == id {
			return name, true
		}
	}
	return "", false
}

func (r imageTopics) TopicID(name string) ([16]byte, bool) {
	_, ok := (*r.img)[name]
	return topicIDOf(name), ok
}

// TestShareDescribeAllSkipsDeletedTopic: DescribeShareGroupOffsets with
// Topics null on an empty share group no longer lists a topic deleted
// since (Kafka's group coordinator forgets it when the topic is deleted;
// samsa's empty group keeps it in its initialized set until the next
// heartbeat).
func TestShareDescribeAllSkipsDeletedTopic(t *testing.T) {
	img := fakeImage{"orders": 1, "gone": 1}
	p := newFakePersister()
	c := newTestCoordinator(t, newLogs(), func(o *Options) { o.Persister = p; o.Topics = imageTopics{&img} })
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}
	wantCode(t, "join", c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", 0, "orders", "gone")).ErrorCode, nil)
	wantCode(t, "leave", c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", -1)).ErrorCode, nil)
	topics := func() []string {
		var out []string
		for _, t := range c.DescribeShareGroupOffsets(ctx, img, describeShareOffsetsReq("sg", "")).Groups[0].Topics {
			out = append(out, t.Topic)
		}
		return out
	}
	if got := topics(); len(got) != 2 {
		t.Fatalf("describe all before the deletion: %v, want both topics", got)
	}
	delete(img, "gone")
	if got := topics(); len(got) != 1 || got[0] != "orders" {
		t.Fatalf("describe all after deleting gone: %v, want [orders]", got)
	}
}
