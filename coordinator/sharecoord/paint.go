package sharecoord

import (
	"container/heap"
	"slices"

	"github.com/samsa-broker/samsa/coordinator/share"
)

// paint returns bs as non-overlapping batches in offset order, a later
// batch of bs winning over an earlier one where they overlap (what
// folding each batch in with overlay gives, in O(n log n) instead of
// O(n^2): a WriteShareGroupState of 16,000 unsorted batches took the
// shard goroutine 23 s the quadratic way). It sweeps the batches'
// boundaries; between two boundaries the covering batch of the highest
// index wins, and runs won by one batch are joined. Batches must be
// valid (validBatches).
func paint(bs []share.Batch) []share.Batch {
	type edge struct {
		at    uint64 // an offset, or one past LastOffset (uint64: no overflow)
		index int
		open  bool
	}
	edges := make([]edge, 0, 2*len(bs))
	for i, b := range bs {
		edges = append(edges, edge{at: uint64(b.FirstOffset), index: i, open: true}, edge{at: uint64(b.LastOffset) + 1, index: i})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	var active maxIndexHeap
	closed := make([]bool, len(bs))
	var out []share.Batch
	outIndex := -1 // the batch of bs the last piece of out came from
	for i := 0; i < len(edges); {
		at := edges[i].at
		for ; i < len(edges) && edges[i].at == at; i++ {
			if edges[i].open {
				heap.Push(&active, edges[i].index)
			} else {
				closed[edges[i].index] = true
			}
		}
		for active.Len() > 0 && closed[active[0]] {
			heap.Pop(&active)
		}
		if active.Len() == 0 || i == len(edges) {
			continue
		}
		// Offsets at to edges[i].at-1 belong to the active batch of the
		// highest index.
		w := active[0]
		last := int64(edges[i].at - 1)
		if k := len(out) - 1; k >= 0 && outIndex == w && uint64(out[k].LastOffset)+1 == at {
			out[k].LastOffset = last
			continue
		}
		piece := bs[w]
		piece.FirstOffset, piece.LastOffset = int64(at), last
		out = append(out, piece)
		outIndex = w
	}
	return out
}

// maxIndexHeap is a max-heap of batch indexes.
type maxIndexHeap []int

func (h maxIndexHeap) Len() int           { return len(h) }
func (h maxIndexHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h maxIndexHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxIndexHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *maxIndexHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
