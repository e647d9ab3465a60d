package coordinator

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerGroupHeartbeatHeldAtMostTheWriteTimeout: a coordinator cut
// off from its replicas is busy for a write timeout with each write it
// makes. A ConsumerGroupHeartbeat that arrives while two offset commits
// are queued before it is answered COORDINATOR_NOT_AVAILABLE one write
// timeout after it arrived, not after both commits and its own wait for
// them (9 to 14 s here, past a 6 s session timeout: the member, silent
// that long, was expired by the new coordinator and went on consuming;
// issue 14, the KIP-848 fault test's rewound-below-commit).
func TestConsumerGroupHeartbeatHeldAtMostTheWriteTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, logs := newStuckableCoordinator(t)
		ctx := t.Context()
		img := fakeImage{"orders": 2}
		cl := Client{ID: "cl", Host: "/127.0.0.1"}
		const group = "cg-held"
		log := logs[PartitionFor(group, testPartitions)]
		join := c.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq(group, "m1", "orders"))
		wantCode(t, "join", join.ErrorCode, nil)
		epoch := join.MemberEpoch
		hb := func() *kmsg.ConsumerGroupHeartbeatResponse {
			r := cgJoinReq(group, "m1", "orders")
			r.MemberEpoch = epoch
			return c.ConsumerGroupHeartbeat(ctx, cl, img, r)
		}
		wantCode(t, "heartbeat", hb().ErrorCode, nil)

		log.set(true, false)
		var wg sync.WaitGroup
		commitCodesGot := make([]int16, 2)
		for i := range 2 {
			wg.Go(func() {
				commitCodesGot[i] = commitCodes(c.OffsetCommit(ctx, commitReq(group, "m1", epoch, "orders", map[int32]int64{0: int64(10 + i)})))[0]
			})
			// The first commit holds the shard in its append; the
			// second waits for the shard.
			synctest.Wait()
		}
		time.Sleep(time.Second) // the fake clock: the heartbeat arrives 1 s into the first commit's wait
		var code int16
		el := answeredAfter(func() { code = hb().ErrorCode })
		wantCode(t, "heartbeat behind two uncommitted writes", code, kerr.CoordinatorNotAvailable)
		if el != 5*time.Second {
			t.Fatalf("heartbeat answered after %v, want the 5 s write timeout", el)
		}
		wg.Wait()
		for _, got := range commitCodesGot {
			wantCode(t, "commit while cut off", got, kerr.CoordinatorNotAvailable)
		}

		// The cut heals: the member is still there, answered at once.
		log.set(false, false)
		if el := answeredAfter(func() { code = hb().ErrorCode }); el != 0 {
			t.Fatalf("heartbeat after the heal waited %v", el)
		}
		wantCode(t, "heartbeat after the heal", code, nil)
	})
}
