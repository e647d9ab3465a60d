package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestForwardWaitsForController: a request a node forwards to the active
// controller while none is known (the quorum lost its majority, then
// regains it) waits for the new active controller, as Kafka's forwarding
// channel does, instead of answering NOT_CONTROLLER at once.
// The request goes to node 1 directly (franz-go's admin path would
// itself retry NOT_CONTROLLER).
func TestForwardWaitsForController(t *testing.T) {
	c := startTestCluster(t, 3)
	c.activeController(30 * time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr(0)), kgo.RequestTimeoutOverhead(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).BrokerMetadata(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.stop(1)
	c.stop(2)
	if !poll(30*time.Second, func() bool { return !c.nodes[0].quorum.Leading() && c.nodes[0].quorum.LeaderID() < 0 }) {
		t.Fatal("node 1 still knows an active controller with two of three voters stopped")
	}
	type result struct {
		res *kmsg.AlterUserSCRAMCredentialsResponse
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations = "waiting", 1, 4096 // SCRAM-SHA-256
		up.Salt, up.SaltedPassword = []byte("0123456789abcdef"), make([]byte, 32)
		up.SaltedPassword[0] = 1
		req.Upsertions = append(req.Upsertions, up)
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		done <- result{resp, err}
	}()
	for _, i := range []int{1, 2} {
		n, err := c.startNode(i)
		if err != nil {
			t.Fatalf("restarting node %d: %v", i+1, err)
		}
		c.nodes[i] = n
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("AlterUserSCRAMs: %v", r.err)
		}
		for _, u := range r.res.Results {
			if err := kerr.ErrorForCode(u.ErrorCode); err != nil {
				t.Fatalf("user %s: %v (NOT_CONTROLLER: node 1 answered instead of waiting for the controller)", u.User, err)
			}
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("no answer")
	}
}
