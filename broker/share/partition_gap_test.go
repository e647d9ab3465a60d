package share

import (
	"testing"
)

// TestAcquireAcrossLongCompactedGap: a compacted log whose next batch lies
// a billion offsets past the end of the records in flight. Acquisition
// used to archive every offset of the gap one record at a time (gigabytes
// for one fetch; FuzzPartitionState found it). Now the start offset moves
// over a gap when nothing is in flight, and a gap that does not fit the
// in-flight limit waits until the records before it are done.
func TestAcquireAcrossLongCompactedGap(t *testing.T) {
	const far = int64(1_000_000_000)
	var s partitionState
	got, _ := s.acquire([]batchRange{{first: 0, last: 1}, {first: far, last: far + 1}}, acq("a", 0), testLimits)
	if len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 1 {
		t.Fatalf("acquired %v, want offsets 0-1 only (the gap does not fit the in-flight limit)", got)
	}
	if len(s.recs) != 2 || cap(s.recs) > 1024 {
		t.Fatalf("%d records in flight (capacity %d), want 2", len(s.recs), cap(s.recs))
	}
	if code, _, _ := s.acknowledge(ackRequest{member: "a", batches: []AckBatch{{0, 1, []int8{AckAccept}}}, now: t0}, testLimits); code != 0 {
		t.Fatalf("ack: code %d", code)
	}
	got, dirty := s.acquire([]batchRange{{first: far, last: far + 1}}, acq("a", 0), testLimits)
	if len(got) != 1 || got[0].FirstOffset != far || got[0].LastOffset != far+1 || !dirty {
		t.Fatalf("acquired %v (dirty %v), want %d-%d and a start to write", got, dirty, far, far+1)
	}
	if s.start != far || len(s.recs) != 2 || cap(s.recs) > 1024 {
		t.Fatalf("start %d, %d records in flight (capacity %d), want %d and 2", s.start, len(s.recs), cap(s.recs), far)
	}
	// A short gap that fits the limit is archived in flight, as before.
	got, _ = s.acquire([]batchRange{{first: far + 5, last: far + 5}}, acq("a", 0), testLimits)
	if len(got) != 1 || got[0].FirstOffset != far+5 || s.end() != far+6 {
		t.Fatalf("acquired %v, end %d, want %d", got, s.end(), far+5)
	}
}
