package replica

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// TestFollowerLeavesHungLeader is the regression test of a stall the
// transaction fault test found (docs/DURABILITY.md finding 13): a node
// cut off by blackhole routes was fenced and its partitions got new
// leaders, but their followers did not fetch from them for up to the
// inter-broker request timeout. Each follower's fetcher for the old
// leader had a fetch in flight that nothing answered, and the reconcile
// loop stopped that fetcher and waited for it to end before it handed any
// partition to the new leader's fetcher; the new leaders dropped the
// followers from the ISR after replica.lag.time.max.ms, and with
// min.insync.replicas=2 the internal topics then refused writes. The move
// must not wait for the old leader's fetch.
func TestFollowerLeavesHungLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 2)
		synctest.Wait()
		c.net.setHung(1, true)
		time.Sleep(2 * time.Second) // every fetch to node 1 is now in flight, unanswered
		synctest.Wait()
		if err := c.ctrl.FenceBroker(1, true); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		ip := c.image()
		if ip.Leader != 2 && ip.Leader != 3 {
			t.Fatalf("leader after fencing 1: %d", ip.Leader)
		}
		leader, follower := ip.Leader, 5-ip.Leader
		epoch, want, code := c.produce(leader, -1, 3)
		if code != 0 {
			t.Fatalf("produce to the new leader: %d", code)
		}
		// Well under both the hung fetch (30 s) and the ISR lag time
		// (10 s): the follower fetches from the new leader at once.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if code := c.part(leader).WaitForHighWatermark(ctx, epoch, want); code != 0 {
			t.Fatalf("acks=-1 on the new leader %d: code %d; follower %d LEO %d", leader, code, follower, c.leo(follower))
		}
		time.Sleep(12 * time.Second) // past replica.lag.time.max.ms
		synctest.Wait()
		if isr := c.image().ISR; !slices.Contains(isr, follower) {
			t.Fatalf("ISR %v lost follower %d", isr, follower)
		}
	})
}
