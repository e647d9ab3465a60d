package replica

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/wire"
)

// Both coordinators find these by type assertions: a changed signature
// would silently drop the pipelining or the epoch check.
var (
	_ coordinator.PipelinedLog      = CoordinatorLog{}
	_ coordinator.EpochPipelinedLog = CoordinatorLog{}
)

// coordinatorBatch is a one-record batch as a coordinator writes it.
func coordinatorBatch(t *testing.T) []byte {
	t.Helper()
	b, err := wire.EncodeBatch(wire.BatchSpec{BaseTimestamp: 1, BaseSequence: -1, Records: []wire.Record{{Key: []byte("k"), Value: []byte("v")}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCoordinatorLogAppendUncommitted: the group coordinator's pipelined
// append. With the followers cut off, two appends return at once, one
// after the other, with their end offsets past the high watermark (the
// old Append waited the whole timeout for each); WaitCommitted for them
// times out; once the followers are back both are committed. On a
// follower the append is refused NOT_LEADER_OR_FOLLOWER.
func TestCoordinatorLogAppendUncommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 3)
		synctest.Wait()
		cl := c.part(1).CoordinatorLog(5 * time.Second)
		c.net.setDown(2, true)
		c.net.setDown(3, true)
		hw := cl.HighWatermark()
		start := time.Now()
		end1, err := cl.AppendUncommitted(coordinatorBatch(t))
		if err != nil {
			t.Fatalf("first append: %v", err)
		}
		end2, err := cl.AppendUncommitted(coordinatorBatch(t))
		if err != nil {
			t.Fatalf("second append: %v", err)
		}
		if el := time.Since(start); el != 0 {
			t.Fatalf("appends took %v, want no wait", el)
		}
		if end1 != hw+1 || end2 != hw+2 || cl.LogEndOffset() != end2 {
			t.Fatalf("ends %d, %d (log end %d) after high watermark %d", end1, end2, cl.LogEndOffset(), hw)
		}
		if got := cl.HighWatermark(); got != hw {
			t.Fatalf("high watermark %d with the followers cut off, want %d", got, hw)
		}
		if err := cl.WaitCommitted(context.Background(), end2); !errors.Is(err, kerr.RequestTimedOut) {
			t.Fatalf("uncommitted: %v, want REQUEST_TIMED_OUT", err)
		}
		c.net.setDown(2, false)
		c.net.setDown(3, false)
		c.settle()
		if err := cl.WaitCommitted(context.Background(), end2); err != nil {
			t.Fatalf("after the followers caught up: %v", err)
		}
		if got := cl.HighWatermark(); got < end2 {
			t.Fatalf("high watermark %d after the followers caught up, want %d", got, end2)
		}
		follower := c.part(2).CoordinatorLog(5 * time.Second)
		if _, err := follower.AppendUncommitted(coordinatorBatch(t)); !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatalf("on a follower: %v, want NOT_LEADER_OR_FOLLOWER", err)
		}
	})
}
