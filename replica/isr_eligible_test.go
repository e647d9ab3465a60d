package replica

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/samsa-broker/samsa/controller"
)

// TestFencedFollowerNotProposed: a fenced broker that keeps fetching and
// is caught up is not proposed for the ISR (the controller would refuse
// it with INELIGIBLE_REPLICA); the leader used to propose it again on
// every one of its fetches, thousands of refused AlterPartitions a second
// in the transaction fault test (docs/DURABILITY.md finding 13). Once the
// broker is unfenced it rejoins the ISR.
func TestFencedFollowerNotProposed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 1)
		synctest.Wait()
		var proposals atomic.Int32
		c.hookMu.Lock()
		c.isrHook = func(_ context.Context, req controller.AlterPartition) (controller.Partition, int16, error, bool) {
			if slices.Contains(req.NewISR, 3) {
				proposals.Add(1)
			}
			return controller.Partition{}, 0, nil, false
		}
		c.hookMu.Unlock()
		if err := c.ctrl.FenceBroker(3, true); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if isr := c.image().ISR; slices.Contains(isr, 3) {
			t.Fatalf("ISR %v still has the fenced broker 3", isr)
		}
		c.produce(1, 1, 3)
		time.Sleep(10 * time.Second) // node 3 keeps fetching and catches up
		synctest.Wait()
		if c.leo(3) != c.leo(1) {
			t.Fatalf("fenced node 3 did not catch up: LEO %d, leader %d", c.leo(3), c.leo(1))
		}
		if n := proposals.Load(); n != 0 {
			t.Fatalf("leader proposed fenced broker 3 for the ISR %d times", n)
		}
		if err := c.ctrl.FenceBroker(3, false); err != nil {
			t.Fatal(err)
		}
		c.settle()
		if isr := c.image().ISR; !slices.Contains(isr, 3) {
			t.Fatalf("ISR %v: unfenced broker 3 did not rejoin", isr)
		}
	})
}
