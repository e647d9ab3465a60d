package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// TestAutoLeaderRebalance: with auto.leader.rebalance.enable (Kafka's
// default) and leader.imbalance.check.interval.seconds=1, a node that
// stopped (its leaderships moved away) and started again gets back the
// leadership of the partitions it is the preferred replica of once it is
// in their ISR again; the other partitions keep their leaders.
func TestAutoLeaderRebalance(t *testing.T) {
	c := startTestCluster(t, 3, "leader.imbalance.check.interval.seconds=1", "replica.lag.time.max.ms=2000")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader := c.activeController(10 * time.Second)
	adm := newClusterAdmin(t, c.addr(leader))
	if resp, err := adm.CreateTopic(ctx, 3, 3, nil, "balanced"); err != nil || resp.Err != nil {
		t.Fatalf("CreateTopic: %v / %v", err, resp.Err)
	}
	victim := (leader + 1) % 3
	id := int32(victim + 1)
	preferredLed := func(i int) bool {
		tp := c.nodes[i].ctrl.Image().Topics["balanced"]
		if tp == nil || len(tp.Partitions) != 3 {
			return false
		}
		for _, p := range tp.Partitions {
			if p.Leader != p.Replicas[0] || len(p.ISR) != 3 {
				return false
			}
		}
		return true
	}
	if !poll(20*time.Second, func() bool { return preferredLed(leader) }) {
		t.Fatalf("partitions not led by their preferred replicas: %+v", c.nodes[leader].ctrl.Image().Topics["balanced"].Partitions)
	}
	c.stop(victim)
	if !poll(20*time.Second, func() bool {
		for _, p := range c.nodes[leader].ctrl.Image().Topics["balanced"].Partitions {
			if p.Leader == id {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("node %d still leads after its shutdown", id)
	}
	var err error
	if c.nodes[victim], err = c.startNode(victim); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if !poll(60*time.Second, func() bool { return preferredLed(leader) }) {
		t.Fatalf("leaders not balanced back: %+v", c.nodes[leader].ctrl.Image().Topics["balanced"].Partitions)
	}
	t.Logf("node %d leads its preferred partitions again %v after its restart", id, time.Since(start).Round(time.Millisecond))
}

// TestNamesOtherBroker: an AlterConfigs or IncrementalAlterConfigs naming
// another node's BROKER resource is answered by the receiving node, not
// forwarded (kafka-reassign-partitions --verify clears the throttles of
// every broker through each broker: node 3's request reached the active
// controller, node 1, which refused it as "Unexpected node id").
func TestNamesOtherBroker(t *testing.T) {
	frame := func(req kmsg.Request) []byte {
		client := "t"
		return wire.AppendRequest(nil, wire.RequestHeader{APIVersion: req.GetVersion(), CorrelationID: 1, ClientID: &client}, req)[4:]
	}
	inc := func(typ kmsg.ConfigResourceType, name string) []byte {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = typ, name
		req.Resources = append(req.Resources, r)
		return frame(req)
	}
	alter := kmsg.NewPtrAlterConfigsRequest()
	ar := kmsg.NewAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeBroker, "2"
	alter.Resources = append(alter.Resources, ar)
	for _, tc := range []struct {
		name  string
		frame []byte
		want  bool
	}{
		{"other broker", inc(kmsg.ConfigResourceTypeBroker, "3"), true},
		{"this broker", inc(kmsg.ConfigResourceTypeBroker, "1"), false},
		{"cluster default", inc(kmsg.ConfigResourceTypeBroker, ""), false},
		{"broker logger", inc(kmsg.ConfigResourceTypeBrokerLogger, "1"), true},
		{"topic", inc(kmsg.ConfigResourceTypeTopic, "3"), false},
		{"AlterConfigs other broker", frame(alter), true},
		{"garbage", []byte{0, 1}, false},
	} {
		if got := namesOtherBroker(tc.frame, 1); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
