package replica

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestCoordinatorLogWaitCommittedInEpoch: a coordinator's write appended
// by a leader that is then cut off and replaced. The new leader writes
// past it, the old leader comes back as a follower, truncates the write
// and copies the new leader's records: its high watermark passes the
// write's end, so WaitCommitted, which looks at the high watermark alone,
// calls the lost write committed; WaitCommittedInEpoch answers
// NOT_LEADER_OR_FOLLOWER. Before that, in
// the write's own epoch, it waits (REQUEST_TIMED_OUT) and then commits
// once the followers have the write.
func TestCoordinatorLogWaitCommittedInEpoch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 1)
		synctest.Wait()
		cl := c.part(1).CoordinatorLog(5 * time.Second)
		end, epoch, err := cl.AppendUncommittedInEpoch(coordinatorBatch(t))
		if err != nil {
			t.Fatalf("append: %v", err)
		}
		if _, want := c.part(1).Leader(); epoch != want {
			t.Fatalf("append in epoch %d, want the leader epoch %d", epoch, want)
		}
		if err := cl.WaitCommittedInEpoch(context.Background(), epoch, end); err != nil {
			t.Fatalf("replicated write: %v", err)
		}

		c.net.setDown(1, true)
		end, epoch, err = cl.AppendUncommittedInEpoch(coordinatorBatch(t)) // only on node 1
		if err != nil {
			t.Fatalf("append while cut off: %v", err)
		}
		if err := cl.WaitCommittedInEpoch(context.Background(), epoch, end); !errors.Is(err, kerr.RequestTimedOut) {
			t.Fatalf("uncommitted: %v, want REQUEST_TIMED_OUT", err)
		}
		if err := c.ctrl.FenceBroker(1, true); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		newLeader := c.image().Leader
		if newLeader == 1 || newLeader < 0 {
			t.Fatalf("leader after fencing 1: %d", newLeader)
		}
		if _, _, code := c.produce(newLeader, -1, 3); code != 0 {
			t.Fatalf("produce to the new leader: %d", code)
		}
		if err := c.ctrl.FenceBroker(1, false); err != nil {
			t.Fatal(err)
		}
		c.net.setDown(1, false)
		c.settle()
		if hw := cl.HighWatermark(); hw < end {
			t.Fatalf("old leader's high watermark %d, want past the lost write's end %d", hw, end)
		}
		if err := cl.WaitCommittedInEpoch(context.Background(), epoch, end); !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatalf("after the write was truncated: %v, want NOT_LEADER_OR_FOLLOWER", err)
		}
	})
}
