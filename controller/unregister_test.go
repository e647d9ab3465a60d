package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestUnregisterBroker(t *testing.T) {
	c, _ := newReplicatedTopic(t)
	if code, err := c.UnregisterBroker(7); err != nil || code != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unknown broker: code %d err %v, want BROKER_ID_NOT_REGISTERED", code, err)
	}
	// An active leader is fenced first: its leadership moves and it
	// leaves the ISR, then its registration goes.
	if code, err := c.UnregisterBroker(1); err != nil || code != 0 {
		t.Fatalf("unregister 1: code %d err %v", code, err)
	}
	img := c.Image()
	if _, ok := img.Brokers[1]; ok {
		t.Fatal("broker 1 still registered")
	}
	p := img.Topics["t"].Partitions[0]
	if p.Leader != 2 || !equalInt32s(p.ISR, []int32{2, 3}) || !equalInt32s(p.Replicas, []int32{1, 2, 3}) {
		t.Fatalf("after unregistering the leader: %+v", p)
	}
	// A fenced broker is unregistered without further partition changes.
	if err := c.FenceBroker(3, true); err != nil {
		t.Fatal(err)
	}
	off := c.Image().Offset
	if code, err := c.UnregisterBroker(3); err != nil || code != 0 {
		t.Fatalf("unregister fenced 3: code %d err %v", code, err)
	}
	if got := c.Image().Offset - off; got != 1 {
		t.Fatalf("unregistering a fenced broker wrote %d entries' worth of offsets, want 1", got)
	}
	if code, _ := c.UnregisterBroker(3); code != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("second unregister: code %d, want BROKER_ID_NOT_REGISTERED", code)
	}
	// It can register again, as a new broker.
	if err := c.RegisterBroker(Broker{ID: 3, Host: "localhost", Port: 9093}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Image().Brokers[3]; !ok {
		t.Fatal("broker 3 did not register again")
	}
	// The record survives a snapshot round trip of the image it leaves.
	rec := UnregisterBrokerRecord{BrokerID: 2, Epoch: 5}
	b, err := encodeRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRecord(recordVersion, RecordUnregisterBroker, b)
	if err != nil || got != rec {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if _, err := Apply(c.Image(), UnregisterBrokerRecord{BrokerID: 42}); err == nil {
		t.Fatal("unregistering an unknown broker applied")
	}
}
