package sharecoord

import (
	"testing"

	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/storage/vfs"
)

func TestDeliveryComplete(t *testing.T) {
	b := func(first, last int64, state int8) share.Batch {
		return share.Batch{FirstOffset: first, LastOffset: last, DeliveryState: state, DeliveryCount: 1}
	}
	for _, c := range []struct {
		name    string
		batches []share.Batch
		start   int64
		want    int32
	}{
		{"none", nil, 0, 0},
		// FACTS.md: 0-8 archived, 9-11 acquired (written as available).
		{"archived and acquired", []share.Batch{b(0, 8, share.StateArchived), b(9, 11, share.StateAvailable)}, 0, 9},
		{"acknowledged and archived", []share.Batch{b(10, 12, share.StateAcknowledged), b(13, 13, share.StateAcquired), b(14, 15, share.StateArchived)}, 10, 5},
		{"below the start offset", []share.Batch{b(0, 9, share.StateAcknowledged)}, 5, 5},
		{"all below the start offset", []share.Batch{b(0, 4, share.StateArchived)}, 5, 0},
		{"no start offset", []share.Batch{b(3, 4, share.StateArchived)}, -1, 2},
	} {
		if got := DeliveryComplete(c.batches, c.start); got != c.want {
			t.Errorf("%s: DeliveryComplete = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestWriteRecordsDeliveryComplete: a partition leader's Write (which
// carries no count) stores the count its batches give, so that
// ReadShareGroupStateSummary v1 and DescribeShareGroupOffsets' Lag have
// one; it survives a reload from the log.
func TestWriteRecordsDeliveryComplete(t *testing.T) {
	ls := testLogs(t, vfs.NewMem(), 1, false)
	defer closeLogs(t, ls)
	c := startCoordinator(t, ls)
	ctx := t.Context()
	k := testKey("g", 0)
	wantErr(t, "Initialize", c.Initialize(ctx, k, 1, -1), nil)
	if sum, _, _ := c.Summary(ctx, k); sum.DeliveryCompleteCount != -1 {
		t.Fatalf("count before the first write: %d, want -1", sum.DeliveryCompleteCount)
	}
	wantErr(t, "Write", c.Write(ctx, k, share.State{StateEpoch: 1, LeaderEpoch: 1, StartOffset: 0, Batches: []share.Batch{
		{FirstOffset: 0, LastOffset: 8, DeliveryState: share.StateArchived, DeliveryCount: 2},
		{FirstOffset: 9, LastOffset: 11, DeliveryState: share.StateAcquired, DeliveryCount: 1},
	}}), nil)
	if sum, ok, err := c.Summary(ctx, k); !ok || err != nil || sum.DeliveryCompleteCount != 9 {
		t.Fatalf("Summary after Write: %+v %v %v, want count 9", sum, ok, err)
	}
	c.Close()
	c = startCoordinator(t, ls)
	defer c.Close()
	if sum, ok, err := c.Summary(ctx, k); !ok || err != nil || sum.DeliveryCompleteCount != 9 {
		t.Fatalf("Summary after reload: %+v %v %v, want count 9", sum, ok, err)
	}
}
