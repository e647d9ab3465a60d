package share

import (
	"reflect"
	"testing"

	sharestate "github.com/samsa-broker/samsa/coordinator/share"
)

// TestReleasedThenArchivedByUnseenDeliveries replays, on the state
// machine, how the share-group fault workload (compat-tests/faults, seed
// 505, record queueshare-3/8305) saw a record released with success at
// delivery count 1 and never delivered again in a drained group: two
// acquisitions whose answers no consumer polled (a fetch waiting when the
// release landed, its consumer cut off; after a leader change, a fetch of
// a consumer cut off next) took it to share.delivery.count.limit, and the
// second lock's expiry archived it. Each acquisition counts as a delivery,
// as in Kafka; the lock expiry between them is written, so the new leader
// restores the count and delivers it once more, never past the limit.
func TestReleasedThenArchivedByUnseenDeliveries(t *testing.T) {
	var s partitionState
	log := batches(0, 9, 1)
	// a polls 0-1 (count 1), accepts 0 and releases 1.
	if got, _ := s.acquire(log, acq("a", 2), testLimits); !reflect.DeepEqual(got, []AcquiredRange{{0, 1, 1}}) {
		t.Fatalf("first fetch acquired %v, want 0-1 at count 1", got)
	}
	ack := ackRequest{member: "a", batches: []AckBatch{{0, 1, []int8{AckAccept, AckRelease}}}, now: t0}
	if code, _, dirty := s.acknowledge(ack, testLimits); code != 0 || !dirty {
		t.Fatalf("accept 0, release 1: code %d dirty %v", code, dirty)
	}
	// a's fetch that was waiting takes the released record at count 2;
	// a is cut off before polling it.
	if got, _ := s.acquire(log, acq("a", 1), testLimits); !reflect.DeepEqual(got, []AcquiredRange{{1, 1, 2}}) {
		t.Fatalf("waiting fetch acquired %v, want 1 at count 2", got)
	}
	// b takes and accepts 2-3 meanwhile; 1 is locked by a.
	if got, _ := s.acquire(log, acq("b", 2), testLimits); !reflect.DeepEqual(got, []AcquiredRange{{2, 3, 1}}) {
		t.Fatalf("b acquired %v, want 2-3 at count 1", got)
	}
	if code, _, _ := s.acknowledge(ackRequest{member: "b", batches: []AckBatch{{2, 3, []int8{AckAccept}}}, now: t0}, testLimits); code != 0 {
		t.Fatalf("b's accept: code %d", code)
	}
	// a's lock expires: 1 is available at count 2, and that is written.
	if changed, _ := s.expireLocks(t0.Add(testLimits.lockDuration), testLimits); !changed {
		t.Fatal("a's lock expiry changed nothing")
	}
	start, bs := s.durable()
	if want := []sharestate.Batch{{FirstOffset: 1, LastOffset: 1, DeliveryState: sharestate.StateAvailable, DeliveryCount: 2}, {FirstOffset: 2, LastOffset: 3, DeliveryState: sharestate.StateAcknowledged, DeliveryCount: 1}}; start != 1 || !reflect.DeepEqual(bs, want) {
		t.Fatalf("state written after the expiry: start %d %+v, want start 1 %+v", start, bs, want)
	}
	// The leader changes; b's fetches on the new leader take 1 (count 3,
	// the limit: its last delivery goes alone, Kafka 4.4's delivery
	// throttling), then 4-9; b is cut off before polling them.
	r := restore(start, bs)
	if got, _ := r.acquire(log, acq("b", 0), testLimits); !reflect.DeepEqual(got, []AcquiredRange{{1, 1, 3}}) {
		t.Fatalf("new leader acquired %v, want 1 alone at count 3", got)
	}
	if got, _ := r.acquire(log, acq("b", 0), testLimits); !reflect.DeepEqual(got, []AcquiredRange{{4, 9, 1}}) {
		t.Fatalf("new leader's second fetch acquired %v, want 4-9 at count 1", got)
	}
	// That lock expires: 1 is archived at the limit and the start passes
	// it; 4-9 come back for the next consumer at count 2.
	if changed, _ := r.expireLocks(t0.Add(testLimits.lockDuration), testLimits); !changed || r.start != 4 {
		t.Fatalf("second expiry: changed %v start %d, want 1 archived and start 4", changed, r.start)
	}
	if got, _ := r.acquire(log, acq("c", 0), testLimits); !reflect.DeepEqual(got, []AcquiredRange{{4, 9, 2}}) {
		t.Fatalf("next consumer acquired %v, want 4-9 at count 2 (1 archived)", got)
	}
}
