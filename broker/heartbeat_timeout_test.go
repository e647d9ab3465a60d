package broker

import (
	"testing"
	"time"

	"github.com/samsa-broker/samsa/config"
)

// TestHeartbeatTimeout: a heartbeat waits for the active controller's
// answer twice the heartbeat interval, at most controller.socket.timeout.ms
// (Kafka 4.4 waits one interval; see heartbeatTimeout).
func TestHeartbeatTimeout(t *testing.T) {
	for _, c := range []struct {
		interval int32
		want     time.Duration
	}{
		{500, time.Second},
		{2000, 4 * time.Second}, // Kafka's default interval
		{60000, 30 * time.Second},
	} {
		cfg := &config.Config{BrokerSessionTimeoutMs: 9000, BrokerHeartbeatIntervalMs: c.interval}
		if got := heartbeatTimeout(cfg); got != c.want {
			t.Errorf("interval %d ms: %v, want %v", c.interval, got, c.want)
		}
	}
}

// TestHeartbeatNotBehindForwarding: a broker's heartbeats do not wait for
// its other requests to the active controller. They used to share one
// connection, whose requests are serialized, with forwarded admin
// requests and AlterPartition; under load one of those waiting seconds
// for a commit held the heartbeats past their timeout, and the
// controller fenced a live broker ("heartbeat to the active controller
// failed ... i/o timeout" in the system tests, whose session is 4 s).
// Here the shared channel is held for three sessions (as a forwarded
// request stuck that long would hold it): the broker must stay unfenced
// throughout.
func TestHeartbeatNotBehindForwarding(t *testing.T) {
	c := startTestCluster(t, 3)
	ac := c.activeController(30 * time.Second)
	f := (ac + 1) % 3
	id := c.nodes[f].cfg.NodeID
	fenced := func() bool {
		for _, n := range c.nodes {
			if n.quorum.Leading() {
				b, ok := n.ctrl.Image().Brokers[id]
				return !ok || b.Fenced
			}
		}
		return false
	}
	if !poll(30*time.Second, func() bool { return !fenced() }) {
		t.Fatalf("broker %d never unfenced", id)
	}
	session := time.Duration(c.nodes[f].cfg.BrokerSessionTimeoutMs) * time.Millisecond
	ch := c.nodes[f].channel
	ch.mu.Lock()
	held := true
	release := func() {
		if held {
			held = false
			ch.mu.Unlock()
		}
	}
	defer release()
	if poll(3*session, fenced) {
		t.Fatalf("broker %d was fenced while its forwarding channel was busy", id)
	}
	release()
}
