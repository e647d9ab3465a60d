package replica

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator"
)

var _ coordinator.CommitWaiter = CoordinatorLog{}

// TestCoordinatorLogWaitCommitted: the group coordinator's commit barrier.
// A record in the leader's log that the ISR does not have keeps
// WaitCommitted waiting until the append timeout (REQUEST_TIMED_OUT, which
// the coordinator answers as COORDINATOR_NOT_AVAILABLE); once the
// followers are back it returns at once; on a follower it answers
// NOT_LEADER_OR_FOLLOWER (NOT_COORDINATOR), below its high watermark too.
func TestCoordinatorLogWaitCommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 3)
		synctest.Wait()
		cl := c.part(1).CoordinatorLog(5 * time.Second)
		if err := cl.WaitCommitted(context.Background(), 0); err != nil {
			t.Fatalf("nothing written: %v", err)
		}
		c.net.setDown(2, true)
		c.net.setDown(3, true)
		_, want, code := c.produce(1, 1, 2)
		if code != 0 {
			t.Fatal(code)
		}
		start := time.Now()
		err := cl.WaitCommitted(context.Background(), want)
		if !errors.Is(err, ErrNotCommitted) || !errors.Is(err, kerr.RequestTimedOut) {
			t.Fatalf("uncommitted: %v, want REQUEST_TIMED_OUT", err)
		}
		if el := time.Since(start); el != 5*time.Second {
			t.Fatalf("waited %v, want the 5 s append timeout", el)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := cl.WaitCommitted(ctx, want); !errors.Is(err, kerr.RequestTimedOut) {
			t.Fatalf("ended context: %v, want REQUEST_TIMED_OUT", err)
		}
		c.net.setDown(2, false)
		c.net.setDown(3, false)
		c.settle()
		if err := cl.WaitCommitted(context.Background(), want); err != nil {
			t.Fatalf("after the followers caught up: %v", err)
		}
		follower := c.part(2).CoordinatorLog(5 * time.Second)
		if err := follower.WaitCommitted(context.Background(), want+1); !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatalf("on a follower: %v, want NOT_LEADER_OR_FOLLOWER", err)
		}
		// Below its high watermark too: a follower's high watermark may
		// have passed writes it truncated when it stopped leading.
		if err := follower.WaitCommitted(context.Background(), want); !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatalf("on a follower, below its high watermark: %v, want NOT_LEADER_OR_FOLLOWER", err)
		}
	})
}
