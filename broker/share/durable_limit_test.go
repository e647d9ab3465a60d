package share

import (
	"reflect"
	"testing"
)

// TestDurableAcquiredAtLimit: a record acquired for the last time (its
// delivery count at share.delivery.count.limit) when the state is written
// and the leader changes is delivered once more at the limit by the new
// leader, never past it, and archived when that lock expires. Found by the
// share-group fault workload (compat-tests/faults, seeds 201 and 501 of
// TestShareGroupUnderFaults): the state written an acquired record as
// available at its new count, and a new leader delivered it at count 4 of
// 3.
func TestDurableAcquiredAtLimit(t *testing.T) {
	var s partitionState
	for i, m := range []string{"a", "b"} {
		got, _ := s.acquire(batches(0, 1, 2), acq(m, 0), testLimits)
		if want := []AcquiredRange{{0, 1, int16(i + 1)}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("delivery %d: acquired %v, want %v", i+1, got, want)
		}
		if !s.releaseMember(m, testLimits) {
			t.Fatalf("release of %s changed nothing", m)
		}
	}
	// The last delivery of each record goes alone (Kafka 4.4's delivery
	// throttling): c takes 0, then 1, at count 3.
	for _, want := range [][]AcquiredRange{{{0, 0, 3}}, {{1, 1, 3}}} {
		if got, _ := s.acquire(batches(0, 1, 2), acq("c", 0), testLimits); !reflect.DeepEqual(got, want) {
			t.Fatalf("last delivery: acquired %v, want %v", got, want)
		}
	}
	// c holds 0-1 at count 3 (the limit); 1 is accepted, so the state
	// is written with 0 still acquired.
	if code, _, _ := s.acknowledge(ackRequest{member: "c", batches: []AckBatch{{1, 1, []int8{AckAccept}}}, now: t0}, testLimits); code != 0 {
		t.Fatalf("accept of 1: code %d", code)
	}
	start, bs := s.durable()
	r := restore(start, bs)
	got, _ := r.acquire(batches(0, 1, 2), acq("d", 0), testLimits)
	if want := []AcquiredRange{{0, 0, 3}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("new leader acquired %v, want offset 0 at count 3 (state written %d %+v)", got, start, bs)
	}
	if changed, _ := r.expireLocks(t0.Add(testLimits.lockDuration), testLimits); !changed || r.start != 2 {
		t.Fatalf("lock expiry at the limit: changed %v, start %d, want the record archived and start 2", changed, r.start)
	}
	if got, _ := r.acquire(batches(0, 1, 2), acq("e", 0), testLimits); len(got) != 0 {
		t.Fatalf("archived record acquired again: %v", got)
	}
}
