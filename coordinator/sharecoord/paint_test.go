package sharecoord

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/coordinator/share"
)

// paintSlow is what clipBatches did before paint: fold each batch in with
// overlay, quadratic.
func paintSlow(bs []share.Batch) []share.Batch {
	var merged []share.Batch
	for _, b := range bs {
		merged = overlay(merged, []share.Batch{b}, -1)
	}
	return merged
}

// TestPaintMatchesOverlay: paint gives what folding the batches in one by
// one with overlay gives, for random overlapping, unsorted batches
// (MaxInt64 ends included).
func TestPaintMatchesOverlay(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 7))
	for range 3000 {
		var bs []share.Batch
		for range r.IntN(8) {
			first := int64(r.IntN(30))
			last := first + int64(r.IntN(10))
			if r.IntN(10) == 0 {
				last = math.MaxInt64
			}
			bs = append(bs, share.Batch{FirstOffset: first, LastOffset: last, DeliveryState: []int8{0, 2, 4}[r.IntN(3)], DeliveryCount: int16(r.IntN(4))})
		}
		if got, want := paint(bs), paintSlow(bs); !reflect.DeepEqual(got, want) {
			t.Fatalf("paint(%v)\n= %v\nwant %v", bs, got, want)
		}
	}
}

// TestClipBatchesManyUnsorted: a WriteShareGroupState of 200,000 batches in
// reverse order is merged in well under a second of work (it was
// quadratic: 16,000 batches took 23 s); the deadline is generous for a
// loaded machine.
func TestClipBatchesManyUnsorted(t *testing.T) {
	const n = 200_000
	bs := make([]share.Batch, 0, n)
	for i := range n {
		o := int64(n-i) * 2
		bs = append(bs, share.Batch{FirstOffset: o, LastOffset: o, DeliveryState: share.StateAcknowledged, DeliveryCount: 1})
	}
	start := time.Now()
	out := clipBatches(bs, 0)
	if len(out) != n || out[0].FirstOffset != 2 || out[n-1].FirstOffset != 2*n {
		t.Fatalf("%d batches from %d to %d, want %d from 2 to %d", len(out), out[0].FirstOffset, out[len(out)-1].FirstOffset, n, 2*n)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("merging %d batches took %v", n, d)
	}
}

// TestDeliveryCompleteSaturates: batches over 2^63 offsets (a hostile
// WriteShareGroupState) count MaxInt32, not an overflowed sum.
func TestDeliveryCompleteSaturates(t *testing.T) {
	for _, bs := range [][]share.Batch{
		{{FirstOffset: 0, LastOffset: math.MaxInt64, DeliveryState: share.StateAcknowledged}},
		{{FirstOffset: math.MinInt64, LastOffset: math.MaxInt64, DeliveryState: share.StateArchived}},
		{{FirstOffset: 0, LastOffset: math.MaxInt64, DeliveryState: share.StateArchived}, {FirstOffset: 0, LastOffset: math.MaxInt64, DeliveryState: share.StateArchived}},
	} {
		if got := DeliveryComplete(bs, -1); got != math.MaxInt32 {
			t.Fatalf("DeliveryComplete(%v) = %d, want MaxInt32", bs, got)
		}
	}
	if got := DeliveryComplete([]share.Batch{{FirstOffset: 3, LastOffset: 5, DeliveryState: share.StateAcknowledged}, {FirstOffset: 9, LastOffset: 9, DeliveryState: share.StateArchived}}, 4); got != 3 {
		t.Fatalf("DeliveryComplete = %d, want 3", got)
	}
}
