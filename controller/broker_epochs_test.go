package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestBrokerEpochs: a registration of a new incarnation gets the log
// offset of its record as epoch and starts fenced; a heartbeat with
// another epoch is STALE_BROKER_EPOCH, one whose metadata offset is below
// the registration leaves it fenced (not caught up), then it is unfenced.
// A retry of the same incarnation changes nothing. A restart (new
// incarnation) of a broker that leads a partition fences it first (the
// leadership moves), gets a higher epoch, and the old epoch is stale for
// heartbeats and ISR changes.
func TestBrokerEpochs(t *testing.T) {
	c := newTestController(t, 2)
	reg := func(id int32, inc string) Broker {
		t.Helper()
		if err := c.RegisterBroker(Broker{ID: id, Host: "h", Port: 9000 + id, Incarnation: inc}); err != nil {
			t.Fatal(err)
		}
		return c.Image().Brokers[id]
	}
	b := reg(3, "inc-a")
	if !b.Fenced || b.Epoch != c.Image().Offset || b.Epoch <= 0 {
		t.Fatalf("new registration: %+v (image offset %d)", b, c.Image().Offset)
	}
	if res, _ := c.BrokerHeartbeat(3, b.Epoch-1, b.Epoch); res.Code != kerr.StaleBrokerEpoch.Code || !res.Fenced {
		t.Fatalf("stale epoch: %+v", res)
	}
	if res, _ := c.BrokerHeartbeat(3, b.Epoch, b.Epoch-1); res.Code != 0 || res.CaughtUp || !res.Fenced {
		t.Fatalf("behind its registration: %+v", res)
	}
	if res, _ := c.BrokerHeartbeat(3, b.Epoch, b.Epoch); res.Code != 0 || !res.CaughtUp || res.Fenced {
		t.Fatalf("caught up: %+v", res)
	}
	off := c.Image().Offset
	if again := reg(3, "inc-a"); again.Epoch != b.Epoch || c.Image().Offset != off {
		t.Fatalf("retry of the same incarnation: %+v, offset %d -> %d", again, off, c.Image().Offset)
	}
	r := c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {3, 1}}}}, false)[0]
	if r.ErrorCode != 0 || c.Image().Topics["t"].Partitions[0].Leader != 3 {
		t.Fatalf("%+v %+v", r, c.Image().Topics["t"].Partitions[0])
	}
	restarted := reg(3, "inc-b")
	if !restarted.Fenced || restarted.Epoch <= b.Epoch || restarted.Epoch != c.Image().Offset {
		t.Fatalf("restart: %+v (before %+v)", restarted, b)
	}
	if p := c.Image().Topics["t"].Partitions[0]; p.Leader != 1 || !equalInt32s(p.ISR, []int32{1}) {
		t.Fatalf("the old incarnation still leads: %+v", p)
	}
	if res, _ := c.BrokerHeartbeat(3, b.Epoch, restarted.Epoch); res.Code != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("old incarnation's heartbeat: %+v", res)
	}
	img := c.Image()
	for _, tc := range []struct {
		id    int32
		epoch int64
		want  int16
	}{
		{3, b.Epoch, kerr.StaleBrokerEpoch.Code},
		{3, restarted.Epoch, 0},
		{3, -1, 0},
		{9, -1, kerr.BrokerIDNotRegistered.Code},
	} {
		if got := img.CheckBrokerEpoch(tc.id, tc.epoch); got != tc.want {
			t.Errorf("CheckBrokerEpoch(%d, %d) = %d, want %d", tc.id, tc.epoch, got, tc.want)
		}
	}
}
