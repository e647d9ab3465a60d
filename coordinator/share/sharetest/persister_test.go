package sharetest

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator/share"
)

// TestMemPersisterFencing: MemPersister answers as share.Persister says,
// since the tests that use it rely on those rules.
func TestMemPersisterFencing(t *testing.T) {
	ctx := context.Background()
	k := share.Key{Group: "g", Partition: 1}
	p := NewMemPersister()
	if _, ok, err := p.Read(ctx, k, 0); ok || err != nil {
		t.Fatalf("read of an absent key: %v %v", ok, err)
	}
	if err := p.Write(ctx, k, share.State{}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("write of an absent key: %v", err)
	}
	p.Initialize(ctx, k, 2, -1)
	if st, ok, err := p.Read(ctx, k, 5); !ok || err != nil || st.LeaderEpoch != 5 || st.StateEpoch != 2 || st.StartOffset != -1 {
		t.Fatalf("read at epoch 5: %+v %v %v", st, ok, err)
	}
	if _, _, err := p.Read(ctx, k, 4); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("read at an older leader epoch: %v", err)
	}
	batches := []share.Batch{{FirstOffset: 3, LastOffset: 4, DeliveryState: share.StateAvailable, DeliveryCount: 1}}
	if err := p.Write(ctx, k, share.State{StateEpoch: 1, LeaderEpoch: 5}); !errors.Is(err, kerr.FencedStateEpoch) {
		t.Fatalf("write at an older state epoch: %v", err)
	}
	if err := p.Write(ctx, k, share.State{StateEpoch: 2, LeaderEpoch: 4}); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("write at an older leader epoch: %v", err)
	}
	if err := p.Write(ctx, k, share.State{StateEpoch: 2, LeaderEpoch: 5, StartOffset: 3, Batches: batches}); err != nil {
		t.Fatal(err)
	}
	batches[0].DeliveryCount = 9 // the caller's slice is not the stored one
	if st := p.State(k); st.StartOffset != 3 || len(st.Batches) != 1 || st.Batches[0].DeliveryCount != 1 {
		t.Fatalf("state after the write: %+v", st)
	}
	errDown := errors.New("down")
	p.FailNextWrite(errDown)
	if err := p.Write(ctx, k, share.State{StateEpoch: 2, LeaderEpoch: 5, StartOffset: 4}); !errors.Is(err, errDown) {
		t.Fatalf("failed write: %v", err)
	}
	if err := p.Write(ctx, k, share.State{StateEpoch: 2, LeaderEpoch: 5, StartOffset: 4}); err != nil {
		t.Fatalf("write after the failed one: %v", err)
	}
	if st, ok, err := p.ReadSummary(ctx, k); !ok || err != nil || st.StartOffset != 4 || st.LeaderEpoch != 5 {
		t.Fatalf("summary: %+v %v %v", st, ok, err)
	}
	p.Delete(ctx, k)
	if _, ok, _ := p.ReadSummary(ctx, k); ok {
		t.Fatal("deleted key still read")
	}
}
