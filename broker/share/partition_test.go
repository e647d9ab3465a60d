package share

import (
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	sharestate "github.com/samsa-broker/samsa/coordinator/share"
)

var testLimits = limits{lockDuration: 30 * time.Second, deliveryLimit: 3, maxInFlight: 100}

var t0 = time.Unix(1_700_000_000, 0)

// batches returns batches of size n covering [from, to].
func batches(from, to, n int64) []batchRange {
	var out []batchRange
	for o := from; o <= to; o += n {
		out = append(out, batchRange{first: o, last: min(o+n-1, to)})
	}
	return out
}

func acq(member string, max int) acquireRequest {
	return acquireRequest{member: member, maxRecords: max, now: t0}
}

func TestAcquireAcknowledgeAdvancesStart(t *testing.T) {
	var s partitionState
	got, _ := s.acquire(batches(0, 9, 5), acq("a", 0), testLimits)
	if want := []AcquiredRange{{0, 9, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	if s.nextFetchOffset() != 10 || s.end() != 10 {
		t.Fatalf("next %d end %d, want 10 10", s.nextFetchOffset(), s.end())
	}
	// Another member gets nothing of what a holds.
	if got, _ := s.acquire(batches(0, 9, 5), acq("b", 0), testLimits); len(got) != 0 {
		t.Fatalf("b acquired %v of a's records", got)
	}
	// b may not acknowledge a's records.
	if code, _, _ := s.acknowledge(ackRequest{member: "b", batches: []AckBatch{{0, 4, []int8{AckAccept}}}, now: t0}, testLimits); code != kerr.InvalidRecordState.Code {
		t.Fatalf("b's ack: code %d, want INVALID_RECORD_STATE", code)
	}
	// Accept 0-2, release 3, reject 4: start moves over 0-2 only.
	code, _, dirty := s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{0, 4, []int8{AckAccept, AckAccept, AckAccept, AckRelease, AckReject}}}, now: t0}, testLimits)
	if code != 0 || !dirty {
		t.Fatalf("ack: code %d dirty %v", code, dirty)
	}
	if s.start != 3 || s.nextFetchOffset() != 3 {
		t.Fatalf("start %d next %d, want 3 3", s.start, s.nextFetchOffset())
	}
	// Acknowledging 3 again is INVALID_RECORD_STATE (it is available);
	// 0 is below the start: done, ignored (Kafka 4.4).
	if code, _, _ := s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{3, 3, []int8{AckAccept}}}, now: t0}, testLimits); code != kerr.InvalidRecordState.Code {
		t.Fatalf("ack of an available record: code %d, want INVALID_RECORD_STATE", code)
	}
	if code, _, dirty := s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{0, 0, []int8{AckAccept}}}, now: t0}, testLimits); code != 0 || dirty {
		t.Fatalf("ack below the start: code %d dirty %v, want 0 and nothing changed", code, dirty)
	}
	// b now gets 3 (second delivery) and nothing else.
	got, _ = s.acquire(batches(0, 9, 5), acq("b", 0), testLimits)
	if want := []AcquiredRange{{3, 3, 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("b acquired %v, want %v", got, want)
	}
	// All or none: a batch with one bad offset applies nothing.
	if code, _, _ := s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{5, 6, []int8{AckAccept}}, {3, 3, []int8{AckAccept}}}, now: t0}, testLimits); code != kerr.InvalidRequest.Code {
		t.Fatalf("out of order batches: code %d, want INVALID_REQUEST", code)
	}
	// Reaching past the acquired records: INVALID_REQUEST with Kafka
	// 4.4's message (sharefacts -step s28past; it was
	// INVALID_RECORD_STATE).
	if code, msg, _ := s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{5, 6, []int8{AckAccept}}, {7, 10, []int8{AckAccept}}}, now: t0}, testLimits); code != kerr.InvalidRequest.Code || msg != msgLastPastAcquired {
		t.Fatalf("ack reaching past the end: code %d %q, want INVALID_REQUEST", code, msg)
	}
	// Starting past the acquired records: INVALID_REQUEST with Kafka's
	// message.
	if code, msg, _ := s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{5, 6, []int8{AckAccept}}, {50, 50, []int8{AckAccept}}}, now: t0}, testLimits); code != kerr.InvalidRequest.Code || msg != msgPastAcquired {
		t.Fatalf("ack past the acquired records: code %d %q, want INVALID_REQUEST", code, msg)
	}
	if s.at(5).state != sharestate.StateAcquired {
		t.Fatalf("offset 5 is %d after a refused ack, want acquired", s.at(5).state)
	}
	// Accept everything: the start reaches the end.
	if code, _, _ := s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{5, 9, []int8{AckAccept}}}, now: t0}, testLimits); code != 0 {
		t.Fatalf("ack 5-9: %d", code)
	}
	if code, _, _ := s.acknowledge(ackRequest{member: "b", batches: []AckBatch{{3, 3, []int8{AckAccept}}}, now: t0}, testLimits); code != 0 {
		t.Fatalf("ack 3: %d", code)
	}
	if s.start != 10 || len(s.recs) != 0 {
		t.Fatalf("start %d with %d in flight, want 10 and none", s.start, len(s.recs))
	}
}

func TestAckWithNothingInFlight(t *testing.T) {
	s := partitionState{start: 5}
	if code, msg, _ := s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{5, 7, []int8{AckAccept}}}, now: t0}, testLimits); code != kerr.InvalidRecordState.Code || msg != msgNotInCache {
		t.Fatalf("code %d %q, want INVALID_RECORD_STATE (Kafka 4.4)", code, msg)
	}
}

func TestAckTypesValidation(t *testing.T) {
	cases := []struct {
		name  string
		renew bool
		b     AckBatch
		want  int16
	}{
		{"type count mismatch", false, AckBatch{0, 2, []int8{1, 1}}, kerr.InvalidRequest.Code},
		{"unknown type", false, AckBatch{0, 0, []int8{5}}, kerr.InvalidRequest.Code},
		{"renew without IsRenewAck", false, AckBatch{0, 0, []int8{AckRenew}}, kerr.InvalidRequest.Code},
		{"empty types", false, AckBatch{0, 0, nil}, kerr.InvalidRequest.Code},
		{"last before first", false, AckBatch{2, 1, []int8{1}}, kerr.InvalidRequest.Code},
		{"renew", true, AckBatch{0, 1, []int8{AckRenew}}, 0},
		{"gap", false, AckBatch{0, 1, []int8{AckGap}}, 0},
	}
	for _, c := range cases {
		var s partitionState
		s.acquire(batches(0, 4, 5), acq("a", 0), testLimits)
		if code, _, _ := s.acknowledge(ackRequest{member: "a", renew: c.renew, batches: []AckBatch{c.b}, now: t0}, testLimits); code != c.want {
			t.Errorf("%s: code %d, want %d", c.name, code, c.want)
		}
	}
}

func TestDeliveryCountLimitArchives(t *testing.T) {
	var s partitionState
	for i := 1; i <= int(testLimits.deliveryLimit); i++ {
		got, _ := s.acquire(batches(0, 0, 1), acq("a", 0), testLimits)
		if want := []AcquiredRange{{0, 0, int16(i)}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("delivery %d: acquired %v, want %v", i, got, want)
		}
		if code, _, _ := s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{0, 0, []int8{AckRelease}}}, now: t0}, testLimits); code != 0 {
			t.Fatalf("release: %d", code)
		}
	}
	// The third release archived it: the start moved past it.
	if s.start != 1 {
		t.Fatalf("start %d after %d deliveries, want 1 (archived)", s.start, testLimits.deliveryLimit)
	}
}

func TestLockExpiry(t *testing.T) {
	var s partitionState
	s.acquire(batches(0, 4, 5), acq("a", 0), testLimits)
	if d := s.nextDeadline(); !d.Equal(t0.Add(testLimits.lockDuration)) {
		t.Fatalf("deadline %v", d)
	}
	// Renew 0-1 ten seconds later.
	if code, _, _ := s.acknowledge(ackRequest{member: "a", renew: true, batches: []AckBatch{{0, 1, []int8{AckRenew}}}, now: t0.Add(10 * time.Second)}, testLimits); code != 0 {
		t.Fatalf("renew: %d", code)
	}
	changed, next := s.expireLocks(t0.Add(testLimits.lockDuration), testLimits)
	if !changed || !next.Equal(t0.Add(10*time.Second+testLimits.lockDuration)) {
		t.Fatalf("expiry: changed %v next %v", changed, next)
	}
	if s.nextFetchOffset() != 2 || s.at(0).state != sharestate.StateAcquired {
		t.Fatalf("next fetch %d, offset 0 state %d: want 2 and still acquired", s.nextFetchOffset(), s.at(0).state)
	}
	// An expired record can no longer be acknowledged by its old holder.
	if code, _, _ := s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{2, 2, []int8{AckAccept}}}, now: t0}, testLimits); code != kerr.InvalidRecordState.Code {
		t.Fatalf("ack of an expired record: %d", code)
	}
}

func TestMaxRecordsAndModes(t *testing.T) {
	var s partitionState
	// Batch-optimized: 3 records asked, batches of 5: the whole first batch.
	got, _ := s.acquire(batches(0, 19, 5), acq("a", 3), testLimits)
	if want := []AcquiredRange{{0, 4, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("batch mode: %v, want %v", got, want)
	}
	// Record-limit: exactly 3.
	r := acq("b", 3)
	r.mode = AcquireRecordLimit
	got, _ = s.acquire(batches(5, 19, 5), r, testLimits)
	if want := []AcquiredRange{{5, 7, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("record-limit mode: %v, want %v", got, want)
	}
	// The rest of the log batch, 8-9, stays in flight available (Kafka
	// 4.4 keeps the whole batch as one in-flight batch).
	if s.end() != 10 || s.nextFetchOffset() != 8 {
		t.Fatalf("end %d next %d, want 10 8", s.end(), s.nextFetchOffset())
	}
}

func TestInFlightLimit(t *testing.T) {
	lim := testLimits
	lim.maxInFlight = 10
	var s partitionState
	got, _ := s.acquire(batches(0, 29, 4), acq("a", 0), lim)
	// Batches 0-3, 4-7, 8-11 (started below the limit, taken whole).
	if want := []AcquiredRange{{0, 11, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	if got, _ := s.acquire(batches(12, 29, 4), acq("b", 0), lim); len(got) != 0 {
		t.Fatalf("acquired %v past the in-flight limit", got)
	}
	s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{0, 3, []int8{AckAccept}}}, now: t0}, lim)
	if got, _ := s.acquire(batches(12, 29, 4), acq("b", 0), lim); !reflect.DeepEqual(got, []AcquiredRange{{12, 15, 1}}) {
		t.Fatalf("after acks: acquired %v, want 12-15", got)
	}
}

func TestSkippedBatchesAndGaps(t *testing.T) {
	var s partitionState
	// 0-2 data, 3 a control batch, 6-8 data (4-5 compacted away).
	got, dirty := s.acquire([]batchRange{{first: 0, last: 2}, {first: 3, last: 3, skip: true}, {first: 6, last: 8}}, acq("a", 0), testLimits)
	if want := []AcquiredRange{{0, 2, 1}, {6, 8, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	if !dirty {
		t.Fatal("archiving a control batch must be written")
	}
	s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{0, 2, []int8{AckAccept}}}, now: t0}, testLimits)
	if s.start != 6 {
		t.Fatalf("start %d, want 6 (3 archived, 4-5 gaps)", s.start)
	}
}

func TestReleaseMemberAndLogStart(t *testing.T) {
	var s partitionState
	s.acquire(batches(0, 4, 5), acq("a", 0), testLimits)
	s.acquire(batches(5, 9, 5), acq("b", 0), testLimits)
	if !s.releaseMember("a", testLimits) || s.nextFetchOffset() != 0 {
		t.Fatalf("release of a: next %d, want 0", s.nextFetchOffset())
	}
	// Retention removes 0-6: b's 7-9 stay acquired.
	if !s.advanceLogStart(7) || s.start != 7 || s.at(7).member != "b" {
		t.Fatalf("log start 7: start %d", s.start)
	}
	if s.advanceLogStart(3) {
		t.Fatal("an older log start moved the start")
	}
	if !s.advanceLogStart(20) || s.start != 20 || len(s.recs) != 0 {
		t.Fatalf("log start 20: start %d, %d in flight", s.start, len(s.recs))
	}
}

func TestDurableRoundTrip(t *testing.T) {
	var s partitionState
	s.acquire(batches(0, 9, 10), acq("a", 0), testLimits)
	s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{1, 9, []int8{AckAccept, AckAccept, AckRelease, AckReject, AckAccept, AckAccept, AckAccept, AckAccept, AckAccept}}}, now: t0}, testLimits)
	start, bs := s.durable()
	// 0 acquired (written as available at its count before the
	// acquisition, 0: not written), 1-2 acked, 3 available count 1, 4
	// archived, 5-9 acked.
	want := []sharestate.Batch{
		{FirstOffset: 1, LastOffset: 2, DeliveryState: sharestate.StateAcknowledged, DeliveryCount: 1},
		{FirstOffset: 3, LastOffset: 3, DeliveryState: sharestate.StateAvailable, DeliveryCount: 1},
		{FirstOffset: 4, LastOffset: 4, DeliveryState: sharestate.StateArchived, DeliveryCount: 1},
		{FirstOffset: 5, LastOffset: 9, DeliveryState: sharestate.StateAcknowledged, DeliveryCount: 1},
	}
	if start != 0 || !reflect.DeepEqual(bs, want) {
		t.Fatalf("durable: %d %+v", start, bs)
	}
	r := restore(start, bs)
	if r.start != 0 || r.end() != 10 || r.nextFetchOffset() != 0 {
		t.Fatalf("restored: start %d end %d next %d", r.start, r.end(), r.nextFetchOffset())
	}
	got, _ := r.acquire(batches(0, 9, 10), acq("c", 0), testLimits)
	if want := []AcquiredRange{{0, 0, 1}, {3, 3, 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after restore acquired %v, want %v", got, want)
	}
}
