package share

import (
	"context"
	"reflect"
	"testing"
)

// TestAcquireSplitsByBatchSize: before, AcquiredRecords was one range per
// run of offsets acquired together whatever the request's BatchSize;
// Kafka 4.4 (KIP-1206) splits new acquisitions in batch-optimized mode at
// log batch boundaries into ranges of at least BatchSize records, and
// never splits in record-limit mode.
func TestAcquireSplitsByBatchSize(t *testing.T) {
	cases := []struct {
		name      string
		batches   []batchRange
		batchSize int
		mode      int8
		max       int
		want      []AcquiredRange
	}{
		{"no batch size", batches(0, 11, 3), 0, AcquireBatchOptimized, 0, []AcquiredRange{{0, 11, 1}}},
		{"batch size 5 over batches of 3", batches(0, 11, 3), 5, AcquireBatchOptimized, 0, []AcquiredRange{{0, 5, 1}, {6, 11, 1}}},
		{"batch size 3", batches(0, 11, 3), 3, AcquireBatchOptimized, 0, []AcquiredRange{{0, 2, 1}, {3, 5, 1}, {6, 8, 1}, {9, 11, 1}}},
		{"batch size 1: one range per log batch", batches(0, 5, 3), 1, AcquireBatchOptimized, 0, []AcquiredRange{{0, 2, 1}, {3, 5, 1}}},
		{"batch size at least the run", batches(0, 11, 3), 12, AcquireBatchOptimized, 0, []AcquiredRange{{0, 11, 1}}},
		{"never inside a log batch", batches(0, 19, 10), 4, AcquireBatchOptimized, 0, []AcquiredRange{{0, 9, 1}, {10, 19, 1}}},
		{"with max records, whole batches", batches(0, 11, 3), 2, AcquireBatchOptimized, 5, []AcquiredRange{{0, 2, 1}, {3, 5, 1}}},
		{"record-limit mode is not split", batches(0, 11, 3), 2, AcquireRecordLimit, 5, []AcquiredRange{{0, 4, 1}}},
	}
	for _, c := range cases {
		var s partitionState
		req := acq("a", c.max)
		req.batchSize, req.mode = c.batchSize, c.mode
		if got, _ := s.acquire(c.batches, req, testLimits); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: acquired %v, want %v", c.name, got, c.want)
		}
	}
}

// TestAcquireSplitsRedelivery: released records come again in ranges cut
// by the same rule, and never merge with new records (their delivery
// counts differ).
func TestAcquireSplitsRedelivery(t *testing.T) {
	var s partitionState
	req := acq("a", 0)
	req.batchSize = 3
	s.acquire(batches(0, 5, 3), req, testLimits)
	if code, _, _ := s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{0, 5, []int8{AckRelease}}}, now: t0}, testLimits); code != 0 {
		t.Fatalf("release: %d", code)
	}
	req.member = "b"
	got, _ := s.acquire(batches(0, 11, 3), req, testLimits)
	if want := []AcquiredRange{{0, 2, 2}, {3, 5, 2}, {6, 8, 1}, {9, 11, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
}

// TestFetchBatchSize: Manager.Fetch passes BatchSize on; Records still
// holds every batch of the acquired offsets.
func TestFetchBatchSize(t *testing.T) {
	p := newFakePersister()
	p.Initialize(context.Background(), testKey, 0, 0)
	l := testLog(t, 4, 3) // offsets 0-11
	m := newTestManager(p, nil)
	defer m.Close()
	res := m.Fetch(context.Background(), Target{Key: testKey, Log: l}, FetchRequest{Member: "a", MaxBytes: 1 << 20, BatchSize: 6})
	if want := []AcquiredRange{{0, 5, 1}, {6, 11, 1}}; res.Code != 0 || !reflect.DeepEqual(res.Acquired, want) {
		t.Fatalf("fetch: code %d acquired %v, want %v", res.Code, res.Acquired, want)
	}
	if res.Count() != 12 || len(res.Records) == 0 {
		t.Fatalf("count %d, %d bytes of records", res.Count(), len(res.Records))
	}
}
