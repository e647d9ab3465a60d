package broker

import (
	"context"
	"testing"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/share"
)

// recordingPersister is a share.Persister that remembers the last key and
// answers a fixed summary.
type recordingPersister struct {
	last  share.Key
	epoch int32
	start int64
}

func (r *recordingPersister) Initialize(_ context.Context, k share.Key, stateEpoch int32, startOffset int64) error {
	r.last, r.epoch, r.start = k, stateEpoch, startOffset
	return nil
}
func (r *recordingPersister) Read(context.Context, share.Key, int32) (share.State, bool, error) {
	return share.State{}, false, nil
}
func (r *recordingPersister) Write(context.Context, share.Key, share.State) error { return nil }
func (r *recordingPersister) Delete(_ context.Context, k share.Key) error {
	r.last = k
	return nil
}
func (r *recordingPersister) ReadSummary(_ context.Context, k share.Key) (share.State, bool, error) {
	r.last = k
	return share.State{StateEpoch: 3, LeaderEpoch: 4, StartOffset: 5}, true, nil
}

// TestGroupSharePersister: the adapter passes keys and values through.
func TestGroupSharePersister(t *testing.T) {
	if NewGroupSharePersister(nil) != nil {
		t.Fatal("nil Persister adapted to non-nil")
	}
	r := &recordingPersister{}
	p := NewGroupSharePersister(r)
	k := coordinator.SharePartitionKey{Group: "g", TopicID: [16]byte{1}, Partition: 2}
	want := share.Key{Group: "g", TopicID: [16]byte{1}, Partition: 2}
	if err := p.Initialize(t.Context(), k, 7, -1); err != nil || r.last != want || r.epoch != 7 || r.start != -1 {
		t.Fatalf("Initialize: %v %+v", err, r)
	}
	s, ok, err := p.ReadSummary(t.Context(), k)
	if err != nil || !ok || s != (coordinator.ShareStateSummary{StateEpoch: 3, LeaderEpoch: 4, StartOffset: 5}) {
		t.Fatalf("ReadSummary: %+v %v %v", s, ok, err)
	}
	r.last = share.Key{}
	if err := p.Delete(t.Context(), k); err != nil || r.last != want {
		t.Fatalf("Delete: %v %+v", err, r.last)
	}
}
