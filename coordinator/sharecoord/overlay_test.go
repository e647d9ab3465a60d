package sharecoord

import (
	"cmp"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/coordinator/share"
)

// overlayQuadratic is overlay as it was: every base batch cut by every top
// batch in turn. TestOverlayMatchesQuadratic checks the new one against
// it.
func overlayQuadratic(base, top []share.Batch, start int64) []share.Batch {
	var out []share.Batch
	for _, b := range base {
		pieces := []share.Batch{b}
		for _, t := range top {
			var next []share.Batch
			for _, p := range pieces {
				if t.LastOffset < p.FirstOffset || t.FirstOffset > p.LastOffset {
					next = append(next, p)
					continue
				}
				if t.FirstOffset > p.FirstOffset {
					left := p
					left.LastOffset = t.FirstOffset - 1
					next = append(next, left)
				}
				if t.LastOffset < p.LastOffset {
					right := p
					right.FirstOffset = t.LastOffset + 1
					next = append(next, right)
				}
			}
			pieces = next
		}
		out = append(out, pieces...)
	}
	out = append(out, top...)
	kept := out[:0]
	for _, b := range out {
		if b.LastOffset < start {
			continue
		}
		b.FirstOffset = max(b.FirstOffset, start)
		kept = append(kept, b)
	}
	slices.SortFunc(kept, func(a, b share.Batch) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return kept
}

// TestOverlayMatchesQuadratic: overlay (entry.apply's fold of a
// ShareUpdate, O(n log n) now) gives what the quadratic version gave, for
// random unsorted batches overlapping each other within base and within
// top, MaxInt64 ends, and start offsets from -1 up.
func TestOverlayMatchesQuadratic(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 6))
	batches := func() []share.Batch {
		var bs []share.Batch
		for range r.IntN(9) {
			first := int64(r.IntN(40))
			last := first + int64(r.IntN(12))
			if r.IntN(12) == 0 {
				last = math.MaxInt64
			}
			bs = append(bs, share.Batch{FirstOffset: first, LastOffset: last, DeliveryState: []int8{0, 2, 4}[r.IntN(3)], DeliveryCount: int16(r.IntN(4))})
		}
		return bs
	}
	for i := range 20000 {
		base, top := batches(), batches()
		if i%3 == 0 {
			base = paint(base) // as loaded snapshots mostly are: sorted, disjoint
		}
		start := int64(r.IntN(50)) - 1
		got := overlay(slices.Clone(base), slices.Clone(top), start)
		want := overlayQuadratic(slices.Clone(base), slices.Clone(top), start)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("overlay(%v, %v, %d)\n= %v\nwant %v", base, top, start, got, want)
		}
	}
}

// TestOverlayLarge: a ShareUpdate of 100,000 batches over a snapshot of
// 100,000 folds in well under a second of work (quadratic it was 10^10
// cuts); the deadline is generous for a loaded machine.
func TestOverlayLarge(t *testing.T) {
	const n = 100_000
	base := make([]share.Batch, 0, n)
	top := make([]share.Batch, 0, n)
	for i := range n {
		o := int64(i) * 4
		base = append(base, share.Batch{FirstOffset: o, LastOffset: o + 2, DeliveryState: share.StateAvailable, DeliveryCount: 1})
		top = append(top, share.Batch{FirstOffset: o + 1, LastOffset: o + 1, DeliveryState: share.StateAcknowledged, DeliveryCount: 1})
	}
	begin := time.Now()
	out := overlay(base, top, 0)
	if len(out) != 3*n || out[0] != (share.Batch{FirstOffset: 0, LastOffset: 0, DeliveryState: share.StateAvailable, DeliveryCount: 1}) ||
		out[1] != (share.Batch{FirstOffset: 1, LastOffset: 1, DeliveryState: share.StateAcknowledged, DeliveryCount: 1}) {
		t.Fatalf("%d batches, first %v", len(out), out[:min(3, len(out))])
	}
	if d := time.Since(begin); d > 30*time.Second {
		t.Fatalf("overlay of %d over %d batches took %v", n, n, d)
	}
}
