package replica

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/controller"
)

// TestRefusedExpandKeepsMaximalISR is the regression test of finding 7 of
// docs/DURABILITY.md. A leader proposed adding a caught-up replica to the
// ISR; the controller committed it together with the completion of a
// reassignment that made the added replica the leader, and answered with
// the new leader epoch (to a second proposal: NOT_LEADER_OR_FOLLOWER).
// The leader dropped its proposal and advanced the high watermark over
// the old ISR, acknowledging records the new leader never had: the fault
// test bed lost five acknowledged records moving a partition onto a new
// broker. An answer that says the partition moved on must keep the
// proposed (maximal) ISR until the metadata settles it.
func TestRefusedExpandKeepsMaximalISR(t *testing.T) {
	answers := []struct {
		name   string
		answer func(req controller.AlterPartition) (controller.Partition, int16)
	}{
		{"committed with a new leader", func(req controller.AlterPartition) (controller.Partition, int16) {
			return controller.Partition{Leader: 3, LeaderEpoch: req.LeaderEpoch + 1, PartitionEpoch: req.PartitionEpoch + 1, ISR: []int32{2, 3}}, 0
		}},
		{"not the leader", func(controller.AlterPartition) (controller.Partition, int16) {
			return controller.Partition{}, kerr.NotLeaderForPartition.Code
		}},
	}
	for _, a := range answers {
		t.Run(a.name, func(t *testing.T) { refusedExpand(t, a.answer) })
	}
}

func refusedExpand(t *testing.T, answer func(controller.AlterPartition) (controller.Partition, int16)) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 1)
		synctest.Wait()
		c.net.setDown(3, true)
		c.produce(1, 1, 3)
		time.Sleep(16 * time.Second) // replica.lag.time.max.ms passes (fake clock)
		synctest.Wait()
		if isr := c.image().ISR; !slices.Equal(isr, []int32{1, 2}) {
			t.Fatalf("image ISR %v, want [1 2]", isr)
		}
		held, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		c.hookMu.Lock()
		c.isrHook = func(ctx context.Context, req controller.AlterPartition) (controller.Partition, int16, error, bool) {
			if len(req.NewISR) != 3 {
				return controller.Partition{}, 0, nil, false
			}
			once.Do(func() { close(held) })
			<-release
			got, code := answer(req)
			return got, code, nil, true
		}
		c.hookMu.Unlock()
		c.net.setDown(3, false)
		<-held // node 3 caught up; the leader proposed [1 2 3]
		c.net.setDown(3, true)
		synctest.Wait()
		caughtUp := c.leo(3)
		_, want, _ := c.produce(1, -1, 3)
		synctest.Wait()
		if hw := c.hw(1); hw > caughtUp {
			t.Fatalf("HW %d passed the log end %d of a replica proposed for the ISR", hw, caughtUp)
		}
		close(release)
		synctest.Wait()
		if hw := c.hw(1); hw > caughtUp || hw >= want {
			t.Fatalf("after the answer to the proposal: HW %d, replica 3 has %d (records up to %d not on it)", hw, caughtUp, want)
		}
		if st := c.part(1).State(); !slices.Equal(st.PendingISR, []int32{1, 2, 3}) {
			t.Fatalf("pending ISR %v after the answer, want [1 2 3]", st.PendingISR)
		}
	})
}
