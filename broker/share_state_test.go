package broker

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/coordinator/sharecoord"
)

// TestSharePersisterFailover: three nodes. The Persister of one node
// creates __share_group_state on first use, initializes a share-partition
// and writes its state; every node's Persister (one calling its local
// coordinator, the others the leader over the wire) reads it back. Then
// the state partition's leader stops, and the Persisters of the other two
// nodes read the same state from the new leader, write through it, and
// are fenced there by the old leader epoch. (Until stop 27 some runs
// under load failed here with NOT_COORDINATOR for the whole deadline: the
// new leader's coordinator reconciler had followed the previous image;
// see TestCoordinatorReconcilerDeliveredImage.)
func TestSharePersisterFailover(t *testing.T) {
	c := startTestCluster(t, 3, "share.coordinator.state.topic.num.partitions=3")
	c.activeController(30 * time.Second)
	adm := newClusterAdmin(t, c.addr(0), c.addr(1), c.addr(2))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var res error
	if !poll(60*time.Second, func() bool {
		r, err := adm.CreateTopic(ctx, 1, 3, nil, "sq")
		res = err
		if err == nil {
			res = r.Err
		}
		return res == nil || strings.Contains(res.Error(), "TOPIC_ALREADY_EXISTS")
	}) {
		t.Fatalf("CreateTopic: %v", res)
	}
	var k share.Key
	if !poll(30*time.Second, func() bool {
		top := c.nodes[0].ctrl.Image().Topics["sq"]
		if top == nil {
			return false
		}
		k = share.Key{Group: "g", TopicID: top.ID, Partition: 0}
		return true
	}) {
		t.Fatal("topic sq never showed in the image")
	}
	persister := func(i int) share.Persister { return c.nodes[i].srv.opts.Deps.SharePersister }

	if err := persister(0).Initialize(ctx, k, 0, -1); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	if st, ok, err := persister(1).Read(ctx, k, 1); err != nil || !ok || st.StartOffset != -1 {
		t.Fatalf("Read after Initialize: %+v %v %v", st, ok, err)
	}
	want := share.State{StateEpoch: 0, LeaderEpoch: 1, StartOffset: 5, Batches: []share.Batch{
		{FirstOffset: 5, LastOffset: 9, DeliveryState: share.StateAcknowledged, DeliveryCount: 1},
		{FirstOffset: 10, LastOffset: 10, DeliveryState: share.StateAvailable, DeliveryCount: 3},
	}}
	if err := persister(2).Write(ctx, k, want); err != nil {
		t.Fatalf("Write: %v", err)
	}
	for i := range c.nodes {
		if st, ok, err := persister(i).Read(ctx, k, 1); err != nil || !ok || !reflect.DeepEqual(st, want) {
			t.Fatalf("node %d: Read = %+v %v %v, want %+v", i+1, st, ok, err, want)
		}
	}

	tp := c.nodes[0].ctrl.Image().Topics[share.StateTopic]
	if tp == nil || len(tp.Partitions) != 3 {
		t.Fatalf("%s: %+v", share.StateTopic, tp)
	}
	leader := int(tp.Partitions[sharecoord.PartitionFor(k, 3)].Leader) - 1
	t.Logf("stopping node %d, the leader of %s-%d", leader+1, share.StateTopic, sharecoord.PartitionFor(k, 3))
	c.stop(leader)
	a, b := (leader+1)%3, (leader+2)%3

	want.LeaderEpoch = 2
	if st, ok, err := persister(a).Read(ctx, k, 2); err != nil || !ok || !reflect.DeepEqual(st, want) {
		t.Fatalf("Read after the leader stopped = %+v %v %v, want %+v", st, ok, err, want)
	}
	want.StartOffset, want.Batches = 11, nil
	if err := persister(b).Write(ctx, k, want); err != nil {
		t.Fatalf("Write after the leader stopped: %v", err)
	}
	stale := want
	stale.LeaderEpoch = 1
	if err := persister(a).Write(ctx, k, stale); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("Write with the old leader epoch: %v, want FENCED_LEADER_EPOCH", err)
	}
	if st, ok, err := persister(a).ReadSummary(ctx, k); err != nil || !ok || st.StartOffset != 11 || st.LeaderEpoch != 2 {
		t.Fatalf("ReadSummary = %+v %v %v", st, ok, err)
	}
	if newLeader := c.nodes[a].ctrl.Image().Topics[share.StateTopic].Partitions[sharecoord.PartitionFor(k, 3)].Leader; int(newLeader)-1 == leader {
		t.Fatalf("the stopped node %d still leads the state partition", leader+1)
	}
	if err := persister(b).Delete(ctx, k); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, ok, err := persister(a).Read(ctx, k, 2); err != nil || ok {
		t.Fatalf("Read after Delete: ok %v err %v", ok, err)
	}
}
