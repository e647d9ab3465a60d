package share

import (
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	sharestate "github.com/samsa-broker/samsa/coordinator/share"
)

// kafkaLimits are Kafka 4.4's defaults as the sharefacts probe ran them
// (share.delivery.count.limit 5, lock 60 s).
var kafkaLimits = limits{lockDuration: time.Minute, deliveryLimit: 5, maxInFlight: 2000}

// logFrom returns the log batches of 3 records holding offsets 0-11 from
// the one holding offset next: what a fetch from the share-partition's
// next fetch offset reads.
func logFrom(next int64) []batchRange {
	if next > 11 {
		return nil
	}
	return batches(next-next%3, 11, 3)
}

// fetchAndRelease acquires for member m as a fetch from the next fetch
// offset does, then releases what it got.
func fetchAndRelease(t *testing.T, s *partitionState, m string, batchSize int, lim limits) []AcquiredRange {
	t.Helper()
	req := acq(m, 500)
	req.batchSize = batchSize
	got, _ := s.acquire(logFrom(s.nextFetchOffset()), req, lim)
	for _, g := range got {
		if code, _, _ := s.acknowledge(ackRequest{member: m, batches: []AckBatch{{g.FirstOffset, g.LastOffset, []int8{AckRelease}}}, now: t0}, lim); code != 0 {
			t.Fatalf("release of %v: code %d", g, code)
		}
	}
	return got
}

// TestInFlightBatchesKept replays compat-tests/sharefacts -step s28
// (FACTS.md, H6 sgaps): samsa merged released records into one range by
// delivery count ([{3,8,2}]); Kafka 4.4 keeps the ranges they were first
// acquired in, and within one of them splits by delivery count.
func TestInFlightBatchesKept(t *testing.T) {
	var s partitionState
	req := acq("a", 500)
	req.batchSize = 5
	if got, _ := s.acquire(logFrom(0), req, kafkaLimits); !reflect.DeepEqual(got, []AcquiredRange{{0, 5, 1}, {6, 11, 1}}) {
		t.Fatalf("first fetch: %v", got)
	}
	if code, _, _ := s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{3, 8, []int8{AckRelease}}}, now: t0}, kafkaLimits); code != 0 {
		t.Fatalf("release 3-8: %d", code)
	}
	req.batchSize = 500
	if got, _ := s.acquire(logFrom(s.nextFetchOffset()), req, kafkaLimits); !reflect.DeepEqual(got, []AcquiredRange{{3, 5, 2}, {6, 8, 2}}) {
		t.Fatalf("redelivery with BatchSize 500: %v, want [{3 5 2} {6 8 2}] (Kafka 4.4)", got)
	}
	if code, _, _ := s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{0, 2, []int8{AckAccept}}, {3, 11, []int8{AckRelease}}}, now: t0}, kafkaLimits); code != 0 {
		t.Fatalf("accept 0-2, release 3-11: %d", code)
	}
	if got := fetchAndRelease(t, &s, "a", 500, kafkaLimits); !reflect.DeepEqual(got, []AcquiredRange{{3, 5, 3}, {6, 8, 3}, {9, 11, 2}}) {
		t.Fatalf("redelivery: %v, want [{3 5 3} {6 8 3} {9 11 2}] (Kafka 4.4)", got)
	}
}

// TestDeliveryThrottling continues TestInFlightBatchesKept's sequence to
// the delivery limit, each fetch's records released: samsa handed every
// available record out whatever its delivery count; Kafka 4.4 hands out
// records delivered ceil(limit/2) times or more in ever smaller pieces,
// one in-flight batch per fetch, and a record's last delivery alone
// (sharefacts -step s28, the answers measured in FACTS.md).
func TestDeliveryThrottling(t *testing.T) {
	var s partitionState
	req := acq("a", 500)
	req.batchSize = 5
	s.acquire(logFrom(0), req, kafkaLimits)
	s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{3, 8, []int8{AckRelease}}}, now: t0}, kafkaLimits)
	req.batchSize = 500
	s.acquire(logFrom(s.nextFetchOffset()), req, kafkaLimits)
	s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{0, 2, []int8{AckAccept}}, {3, 11, []int8{AckRelease}}}, now: t0}, kafkaLimits)
	want := [][]AcquiredRange{
		{{3, 5, 3}, {6, 8, 3}, {9, 11, 2}},
		{{3, 5, 4}},                           // batch 0-5 throttled: 6>>1 records
		{{3, 3, 5}}, {{4, 4, 5}}, {{5, 5, 5}}, // last deliveries alone
		{{6, 8, 4}},
		{{6, 6, 5}}, {{7, 7, 5}}, {{8, 8, 5}},
		{{9, 11, 3}}, // count 2 < 3: not throttled
		{{9, 11, 4}},
		{{9, 9, 5}}, {{10, 10, 5}}, {{11, 11, 5}},
		nil, // all archived
	}
	for i, w := range want {
		if got := fetchAndRelease(t, &s, "a", 500, kafkaLimits); !reflect.DeepEqual(got, w) {
			t.Fatalf("fetch %d: %v, want %v (Kafka 4.4)", i+1, got, w)
		}
	}
	if s.start != 12 || len(s.recs) != 0 {
		t.Fatalf("start %d with %d in flight, want 12 and none", s.start, len(s.recs))
	}
}

// TestThrottleRules covers the throttling rules the replay does not: the
// piece size halves with each delivery past the threshold, a throttled
// batch waits when something was acquired before it in the fetch, new
// records wait behind a throttled batch, and a delivery limit of 2
// throttles nothing.
func TestThrottleRules(t *testing.T) {
	lim := limits{lockDuration: time.Minute, deliveryLimit: 10, maxInFlight: 2000}
	// One in-flight batch 0-63, every record available delivered c
	// times (threshold 5): below it the batch goes whole, from it
	// 64>>1, 64>>2, ... records, and at count 9 (the last delivery) one.
	for c := int16(1); c <= 9; c++ {
		s := partitionState{recs: make([]record, 64)}
		for i := range s.recs {
			s.recs[i] = record{state: sharestate.StateAvailable, count: c}
		}
		want := int64(64)
		switch {
		case c == 9:
			want = 1
		case c >= 5:
			want = 64 >> (c - 5 + 1)
		}
		if got, _ := s.acquire(batches(0, 63, 64), acq("a", 0), lim); !reflect.DeepEqual(got, []AcquiredRange{{0, want - 1, c + 1}}) {
			t.Fatalf("delivered %d times: %v, want 0-%d", c, got, want-1)
		}
	}

	// Two in-flight batches, the second throttled: the first goes, the
	// second waits for the next fetch, and new records behind it too.
	var u partitionState
	u.acquire(batches(0, 3, 4), acq("a", 0), kafkaLimits)
	u.acquire(batches(4, 7, 4), acq("b", 0), kafkaLimits)
	for range 2 {
		u.releaseMember("b", kafkaLimits)
		u.acquire(batches(4, 7, 4), acq("b", 0), kafkaLimits)
	}
	u.releaseMember("a", kafkaLimits)
	u.releaseMember("b", kafkaLimits) // 0-3 at count 1, 4-7 at 3
	if got, _ := u.acquire(batches(0, 11, 4), acq("c", 0), kafkaLimits); !reflect.DeepEqual(got, []AcquiredRange{{0, 3, 2}}) {
		t.Fatalf("fetch before a throttled batch: %v, want only 0-3", got)
	}
	if got, _ := u.acquire(batches(4, 11, 4), acq("c", 0), kafkaLimits); !reflect.DeepEqual(got, []AcquiredRange{{4, 5, 4}}) {
		t.Fatalf("throttled batch: %v, want 4-5 (4>>1) and no new records", got)
	}
	if u.end() != 8 {
		t.Fatalf("end %d: new records acquired behind a throttled batch", u.end())
	}

	// Limit 2: nothing is throttled (a record at count 2 is archived).
	lim2 := limits{lockDuration: time.Minute, deliveryLimit: 2, maxInFlight: 2000}
	var w partitionState
	w.acquire(batches(0, 5, 6), acq("a", 0), lim2)
	w.releaseMember("a", lim2)
	if got, _ := w.acquire(batches(0, 5, 6), acq("a", 0), lim2); !reflect.DeepEqual(got, []AcquiredRange{{0, 5, 2}}) {
		t.Fatalf("limit 2, second delivery: %v, want 0-5 whole", got)
	}
}

// TestRecordLimitKeepsBatch: a record-limit fetch that stops inside a log
// batch leaves the batch's rest in flight in the same in-flight batch, so
// the next fetch answers it apart from the batch after it, as Kafka 4.4
// ([{2,2,1},{3,5,1}], H4's v2 facts); samsa answered [{2,5,1}].
func TestRecordLimitKeepsBatch(t *testing.T) {
	var s partitionState
	req := acq("a", 2)
	req.mode = AcquireRecordLimit
	if got, _ := s.acquire(batches(0, 8, 3), req, kafkaLimits); !reflect.DeepEqual(got, []AcquiredRange{{0, 1, 1}}) {
		t.Fatalf("MaxRecords 2: %v", got)
	}
	req.maxRecords = 4
	if got, _ := s.acquire(batches(0, 8, 3), req, kafkaLimits); !reflect.DeepEqual(got, []AcquiredRange{{2, 2, 1}, {3, 5, 1}}) {
		t.Fatalf("MaxRecords 4: %v, want [{2 2 1} {3 5 1}] (Kafka 4.4)", got)
	}
}

// TestBatchModeTakesInFlightBatchWhole: in batch-optimized mode the
// record limit is checked between in-flight batches, as Kafka 4.4: a
// released in-flight batch spanning several log batches comes back whole.
func TestBatchModeTakesInFlightBatchWhole(t *testing.T) {
	var s partitionState
	s.acquire(batches(0, 11, 3), acq("a", 0), kafkaLimits) // in-flight batch 0-11
	s.releaseMember("a", kafkaLimits)
	if got, _ := s.acquire(batches(0, 11, 3), acq("b", 2), kafkaLimits); !reflect.DeepEqual(got, []AcquiredRange{{0, 11, 2}}) {
		t.Fatalf("MaxRecords 2 over a released batch 0-11: %v, want it whole", got)
	}
}

// TestNewPartOfStraddlingBatch: a log batch whose head is in flight (the
// end offset a restored state left inside it) and whose rest is new: the
// new part is taken only below the record limit, as Kafka 4.4 acquires
// past its in-flight batches only then.
func TestNewPartOfStraddlingBatch(t *testing.T) {
	s := restore(0, []sharestate.Batch{{FirstOffset: 0, LastOffset: 1, DeliveryState: sharestate.StateAvailable, DeliveryCount: 1}})
	if got, _ := s.acquire(batches(0, 5, 6), acq("a", 2), kafkaLimits); !reflect.DeepEqual(got, []AcquiredRange{{0, 1, 2}}) || s.end() != 2 {
		t.Fatalf("MaxRecords 2: %v, end %d; want 0-1 only, end 2", got, s.end())
	}
	if got, _ := s.acquire(batches(0, 5, 6), acq("b", 10), kafkaLimits); !reflect.DeepEqual(got, []AcquiredRange{{2, 5, 1}}) {
		t.Fatalf("then: %v, want the new part 2-5", got)
	}
}

// TestNotHeldMessages replays sharefacts -step s28msg: INVALID_RECORD_STATE
// carried no message; Kafka 4.4 words it by whether the record's in-flight
// batch tracks state per offset (after a fetch or an acknowledgement took
// part of it) or as a whole.
func TestNotHeldMessages(t *testing.T) {
	var s partitionState
	req := acq("a", 500)
	req.batchSize = 6
	s.acquire(batches(0, 11, 6), req, kafkaLimits) // in-flight batches 0-5, 6-11
	steps := []struct {
		member      string
		first, last int64
		code        int16
		msg         string
	}{
		{"b", 0, 5, kerr.InvalidRecordState.Code, msgNotBatchOwner},
		{"b", 2, 2, kerr.InvalidRecordState.Code, msgNotBatchOwner},
		{"a", 6, 11, 0, ""},
		{"a", 6, 11, kerr.InvalidRecordState.Code, msgBatchNotAcquired},
		{"a", 7, 7, kerr.InvalidRecordState.Code, msgBatchNotAcquired},
		{"a", 1, 1, 0, ""}, // part of 0-5: it is tracked per offset now
		{"a", 1, 1, kerr.InvalidRecordState.Code, msgOffsetNotAcquired},
		{"b", 2, 2, kerr.InvalidRecordState.Code, msgNotOffsetOwner},
		{"b", 1, 3, kerr.InvalidRecordState.Code, msgOffsetNotAcquired},
		{"a", 0, 5, kerr.InvalidRecordState.Code, msgOffsetNotAcquired},
	}
	for i, st := range steps {
		code, msg, _ := s.acknowledge(ackRequest{member: st.member, batches: []AckBatch{{st.first, st.last, []int8{AckAccept}}}, now: t0}, kafkaLimits)
		if code != st.code || msg != st.msg {
			t.Fatalf("step %d: %s accepts %d-%d: %d %q, want %d %q (Kafka 4.4)", i+1, st.member, st.first, st.last, code, msg, st.code, st.msg)
		}
	}
}
