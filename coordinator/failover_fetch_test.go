package coordinator

import (
	"maps"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newLeaderCopy returns the log of a follower that was in the ISR when
// the leader of from lost its leadership: every batch of from (the old
// leader acknowledged nothing the ISR did not hold), with its high
// watermark still at hw, below its log end, as a new leader's is until
// its followers fetch from it. The high watermark stays there until
// set(false, false).
func newLeaderCopy(from *replicatedLog, hw int64) *replicatedLog {
	to := newReplicatedLog()
	from.memLog.mu.Lock()
	to.memLog.mu.batches = slices.Clone(from.memLog.mu.batches)
	to.memLog.mu.bases = slices.Clone(from.memLog.mu.bases)
	to.memLog.mu.next = from.memLog.mu.next
	from.memLog.mu.Unlock()
	to.hw.offset, to.hw.stuck = hw, true
	return to
}

// memberFetch is the OffsetFetch a KIP-848 member of franz-go sends for
// newly assigned partitions: v9, require_stable, its member id and epoch.
func memberFetch(group, member string, epoch int32, topic string, partitions ...int32) *kmsg.OffsetFetchRequest {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 9
	r.RequireStable = true
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group, g.MemberID, g.MemberEpoch = group, &member, epoch
	t := kmsg.NewOffsetFetchRequestGroupTopic()
	t.Topic, t.Partitions = topic, partitions
	g.Topics = []kmsg.OffsetFetchRequestGroupTopic{t}
	r.Groups = []kmsg.OffsetFetchRequestGroup{g}
	return r
}

// fetchedOffsets maps the partitions of a one-group, one-topic
// OffsetFetch answer to their offsets.
func fetchedOffsets(g kmsg.OffsetFetchResponseGroup) map[int32]int64 {
	out := map[int32]int64{}
	for _, t := range g.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.Offset
		}
	}
	return out
}

// TestOffsetFetchOnNewCoordinatorAfterFailover (docs/DURABILITY.md
// finding 16): a KIP-848 member of franz-go starts a newly assigned
// partition from its reset offset (the log start for "earliest") when
// OffsetFetch answers offset -1 without an error, and from the committed
// offset otherwise; an error makes it fetch again. So the coordinator
// that takes over after its predecessor was cut off must never answer
// -1 for a partition whose commit its predecessor acknowledged. Its log
// holds that commit (a follower in the ISR had it), but its high
// watermark lags its log end until its followers fetch: require_stable,
// which franz-go always sends, waits until the watermark passes what the
// shard loaded, then answers the commit; if it does not within the write
// timeout the answer is NOT_COORDINATOR with no offsets (as Kafka 4.4's
// handleOffsetFetchException: samsa answered COORDINATOR_NOT_AVAILABLE
// with every partition at -1 and no partition error); the member's epoch from before the
// failover is still valid; and the predecessor, once its shard is
// unloaded, answers NOT_COORDINATOR.
func TestOffsetFetchOnNewCoordinatorAfterFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const group = "f16-failover"
		p := PartitionFor(group, testPartitions)
		ctx := t.Context()
		img := fakeImage{"orders": 4}
		cl := Client{ID: "cl", Host: "/127.0.0.1"}

		oldC, oldLogs := newStuckableCoordinator(t)
		join := oldC.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq(group, "m1", "orders"))
		wantCode(t, "join", join.ErrorCode, nil)
		epoch := join.MemberEpoch
		for _, code := range commitCodes(oldC.OffsetCommit(ctx, commitReq(group, "m1", epoch, "orders", map[int32]int64{0: 10, 2: 1682}))) {
			wantCode(t, "commit on the old coordinator", code, nil)
		}
		// The old coordinator is cut off and its partition led elsewhere.
		oldLogs[p].set(true, true)

		newLog := newLeaderCopy(oldLogs[p], 0)
		newC := newTestCoordinator(t, nil, func(o *Options) {
			o.OpenLog = func(q int32) (Log, error) {
				if q == p {
					return newLog, nil
				}
				return newReplicatedLog(), nil
			}
		})

		// The watermark does not move: an error after the write
		// timeout, never an answer without the commits.
		var got kmsg.OffsetFetchResponseGroup
		el := answeredAfter(func() { got = newC.OffsetFetch(ctx, memberFetch(group, "m1", epoch, "orders", 0, 1, 2, 3)).Groups[0] })
		wantCode(t, "require_stable while the new leader's watermark lags", got.ErrorCode, kerr.NotCoordinator)
		if el != 5*time.Second || len(got.Topics) != 0 {
			t.Fatalf("answer after %v with topics %+v: want NOT_COORDINATOR and no offsets after the 5 s write timeout", el, got.Topics)
		}

		// The followers catch up while the fetch waits: it answers the
		// acknowledged commits.
		answered := make(chan kmsg.OffsetFetchResponseGroup, 1)
		go func() {
			answered <- newC.OffsetFetch(ctx, memberFetch(group, "m1", epoch, "orders", 0, 1, 2, 3)).Groups[0]
		}()
		synctest.Wait()
		select {
		case g := <-answered:
			t.Fatalf("answered before the watermark passed the loaded log: %+v", g)
		default:
		}
		newLog.set(false, false)
		got = <-answered
		wantCode(t, "require_stable once the watermark passed", got.ErrorCode, nil)
		offs := fetchedOffsets(got)
		if want := map[int32]int64{0: 10, 1: -1, 2: 1682, 3: -1}; !maps.Equal(offs, want) {
			t.Fatalf("offsets %v after the failover, want %v", offs, want)
		}

		// The member's epoch survived the failover; a wrong one is
		// refused, not answered with offsets.
		got = newC.OffsetFetch(ctx, memberFetch(group, "m1", epoch+1, "orders", 2)).Groups[0]
		wantCode(t, "a newer member epoch", got.ErrorCode, kerr.StaleMemberEpoch)
		got = newC.OffsetFetch(ctx, memberFetch(group, "m9", epoch, "orders", 2)).Groups[0]
		wantCode(t, "an unknown member", got.ErrorCode, kerr.UnknownMemberID)

		oldC.UnloadPartition(p)
		got = oldC.OffsetFetch(ctx, memberFetch(group, "m1", epoch, "orders", 2)).Groups[0]
		wantCode(t, "the old coordinator once unloaded", got.ErrorCode, kerr.NotCoordinator)
		if len(got.Topics) != 0 {
			t.Fatalf("NOT_COORDINATOR with offsets %+v", got.Topics)
		}
	})
}
