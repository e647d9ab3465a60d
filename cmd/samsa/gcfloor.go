package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// gcFloor keeps the garbage collector's heap goal at or above a floor.
//
// The broker's live heap is small (1-3 MB while serving 10,000 records a
// second), so with GOGC=100 the heap goal is the runtime's minimum of 4 MB
// and the collector ran about ten times a second at that rate: each cycle
// stops the world twice, takes a quarter of the CPU while it marks and
// makes allocating goroutines assist, which is latency a record pays at
// the tail (GODEBUG=gctrace=1: 99 cycles in 12 s). After each cycle, gcFloor
// sets the GC percent so that the next goal is at least floor bytes (and
// never under GOGC=100's), so the collector runs about a tenth as often at
// low load, while the heap still follows the live data once it is larger
// than half the floor. Memory stays independent of the data held: at most
// floor bytes of heap beyond what GOGC=100 would keep.
//
// It runs only when the environment sets neither GOGC nor GOMEMLIMIT (the
// operator's own tuning wins).
type gcFloor struct {
	floor  uint64
	sample []metrics.Sample
	mu     struct {
		sync.Mutex
		stopped bool
		percent int
	}
}

// defaultGCFloor is the heap goal floor of the broker process.
const defaultGCFloor = 32 << 20

// maxGCPercent bounds the percent for a live heap of a few bytes.
const maxGCPercent = 1 << 20

// runtimeHeapMinimum is the Go runtime's smallest heap goal at GOGC=100;
// it scales with the percent (4 MiB * percent/100).
const runtimeHeapMinimum = 4 << 20

// gcPercentFor returns the GC percent whose heap goal is floor, for live
// bytes of live heap and roots bytes of stacks and globals scanned. The
// runtime's goal is the larger of live + (live+roots)*percent/100 and
// runtimeHeapMinimum*percent/100, so the percent is the smaller of the two
// that reach the floor. It is 100 (Go's default) once that reaches the
// floor already.
func gcPercentFor(live, roots, floor uint64) int {
	if live == 0 || live >= floor || live+(live+roots) >= floor {
		return 100
	}
	p := min((floor-live)*100/(live+roots), floor*100/runtimeHeapMinimum, maxGCPercent)
	return int(max(p, 100))
}

// startGCFloor starts tuning unless the environment tunes the collector;
// it returns nil then.
func startGCFloor(floor uint64, getenv func(string) string) *gcFloor {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return nil
	}
	g := &gcFloor{floor: floor, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}}
	g.mu.percent = 100
	g.arm()
	return g
}

// gcSentinel is garbage the moment it is made: its cleanup runs after
// the next collection.
type gcSentinel struct{ _ [4]*byte } // with pointers: never a tiny allocation

// arm registers g.afterGC to run after the next collection.
func (g *gcFloor) arm() {
	s := &gcSentinel{}
	runtime.AddCleanup(s, func(g *gcFloor) { g.afterGC() }, g)
}

// afterGC sets the percent for the live heap the cycle found and re-arms.
func (g *gcFloor) afterGC() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.stopped {
		return
	}
	metrics.Read(g.sample)
	var v [3]uint64 // live heap, stacks, globals
	for i, s := range g.sample {
		if s.Value.Kind() == metrics.KindUint64 {
			v[i] = s.Value.Uint64()
		}
	}
	if v[0] > 0 {
		if p := gcPercentFor(v[0], v[1]+v[2], g.floor); p != g.mu.percent {
			g.mu.percent = p
			debug.SetGCPercent(p)
		}
	}
	g.arm()
}

// stop ends the tuning and restores GOGC=100.
func (g *gcFloor) stop() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.mu.stopped {
		g.mu.stopped = true
		debug.SetGCPercent(100)
	}
}
