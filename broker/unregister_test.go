package broker

import (
	"testing"
	"time"
)

// TestUnregisteredNodeRegistersAgain: a running node whose registration
// is removed (UnregisterBroker) registers again with its next heartbeat,
// also when it is the active controller itself (the heartbeat then goes
// to its own Controller, which knows no such broker). Before, a single
// node unregistered by a client (the TCP fuzz test sent
// UnregisterBroker for its id) stayed out of its own broker list.
func TestUnregisteredNodeRegistersAgain(t *testing.T) {
	n := startTestNode(t, t.TempDir(), "broker.heartbeat.interval.ms=100")
	defer closeTestNode(t, n)
	if code, err := n.ctrl.UnregisterBroker(n.cfg.NodeID); err != nil || code != 0 {
		t.Fatalf("unregister: code %d, %v", code, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, ok := n.ctrl.Image().Brokers[n.cfg.NodeID]; ok && !b.Fenced {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the node did not register again within 60 s")
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for the condition
	}
}
