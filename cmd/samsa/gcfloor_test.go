package main

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	const floor = 32 << 20
	for _, tc := range []struct {
		live, roots uint64
		want        int
	}{
		{0, 0, 100},               // nothing measured yet
		{1 << 20, 0, 800},         // 1 MiB live: the runtime's minimum, 4 MiB * 8
		{512 << 10, 0, 800},       // as small: the same
		{1 << 20, 3 << 20, 775},   // with 3 MiB of globals: 1 + 4*7.75
		{4 << 20, 0, 700},         // 4 MiB: 4 + 4*7
		{16 << 20, 0, 100},        // half the floor: GOGC=100 reaches it
		{12 << 20, 4 << 20, 125},  // 12 + 16*1.25
		{8 << 20, 8 << 20, 150},   // 8 + 16*1.5
		{12 << 20, 8 << 20, 100},  // 12 + 20: GOGC=100 reaches it
		{100 << 20, 0, 100},       // above: the default
		{floor / 4, 0, 300},       // a quarter: goal 4x
		{floor/2 - 1<<10, 0, 100}, // just under half: rounds down to 100
	} {
		if got := gcPercentFor(tc.live, tc.roots, floor); got != tc.want {
			t.Errorf("gcPercentFor(%d, %d, %d) = %d, want %d", tc.live, tc.roots, floor, got, tc.want)
		}
	}
}

// TestGCFloorTunes: after a collection the GC percent is raised so that a
// small live heap's goal reaches the floor; stop restores 100; GOGC or
// GOMEMLIMIT in the environment leave the collector alone.
func TestGCFloorTunes(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	env["GOGC"] = "200"
	if g := startGCFloor(1<<30, getenv); g != nil {
		t.Fatal("tuning with GOGC set")
	}
	delete(env, "GOGC")
	env["GOMEMLIMIT"] = "1GiB"
	if g := startGCFloor(1<<30, getenv); g != nil {
		t.Fatal("tuning with GOMEMLIMIT set")
	}
	delete(env, "GOMEMLIMIT")

	g := startGCFloor(1<<30, getenv) // a floor far above this test's heap
	defer func() {
		g.stop()
		if p := gogc(); p != 100 {
			t.Errorf("GC percent %d after stop, want 100", p)
		}
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		runtime.GC()
		if p := gogc(); p > 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GC percent still %d a minute of collections after starting", gogc())
		}
		runtime.Gosched() // cleanups run on their own goroutine
	}
}

// gogc reads the GC percent without changing it.
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}
