package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Degradation is how one directed link of the proxy network misbehaves
// without being cut: every chunk the proxy forwards on it is held back by
// Latency plus a uniform draw from [0, Jitter), after the time its bytes
// take at BytesPerSecond (0: no cap); and with probability StallProb a
// chunk also stalls the link for a uniform draw from [StallMin, StallMax).
// TCP never loses bytes across the proxy (the kernel's loopback does not
// drop segments and the proxy forwards everything it reads), so packet
// loss is emulated by what it looks like to the endpoints: the stalls a
// retransmission timeout causes. Chunks keep their order: a late chunk
// holds back the ones read after it, as on a TCP stream.
type Degradation struct {
	Latency, Jitter    time.Duration
	BytesPerSecond     int64
	StallProb          float64
	StallMin, StallMax time.Duration
}

// IsZero reports whether d leaves the link as it is.
func (d Degradation) IsZero() bool { return d == Degradation{} }

func (d Degradation) String() string {
	s := fmt.Sprintf("latency %v", d.Latency)
	if d.Jitter > 0 {
		s += fmt.Sprintf("+[0,%v)", d.Jitter)
	}
	if d.BytesPerSecond > 0 {
		s += fmt.Sprintf(", %d B/s", d.BytesPerSecond)
	}
	if d.StallProb > 0 {
		s += fmt.Sprintf(", stall %.0f%% of chunks for [%v,%v)", 100*d.StallProb, d.StallMin, d.StallMax)
	}
	return s
}

// Degrader is a network whose links can be slowed (ProxyNet).
type Degrader interface {
	// Degrade sets the link from node from to node to (0-based; -1
	// stands for every connection that does not come from a node: the
	// test's clients). The zero Degradation restores the link.
	Degrade(from, to int, d Degradation)
	// Restore restores every link.
	Restore()
}

// shaper computes when each chunk of one direction of one connection may
// be written on: its state is that direction's own, so it needs no lock.
type shaper struct {
	rng *rand.Rand
	// busyUntil is when the bytes handed to the link so far have gone
	// through the bandwidth cap (or a stall has ended).
	busyUntil time.Time
	// last is the release time of the previous chunk: no chunk is
	// released before it.
	last time.Time
}

func newShaper(seed uint64) *shaper {
	return &shaper{rng: rand.New(rand.NewPCG(seed, seed^0x51a0))}
}

// release returns when a chunk of n bytes read at now may be written on.
func (s *shaper) release(now time.Time, n int, d Degradation) time.Time {
	t := now
	if !d.IsZero() {
		start := now
		if s.busyUntil.After(start) {
			start = s.busyUntil
		}
		if d.StallProb > 0 && s.rng.Float64() < d.StallProb {
			stall := d.StallMin
			if d.StallMax > d.StallMin {
				stall += time.Duration(s.rng.Int64N(int64(d.StallMax - d.StallMin)))
			}
			start = start.Add(stall)
		}
		if d.BytesPerSecond > 0 {
			start = start.Add(time.Duration(int64(n) * int64(time.Second) / d.BytesPerSecond))
		}
		s.busyUntil = start
		t = start.Add(d.Latency)
		if d.Jitter > 0 {
			t = t.Add(time.Duration(s.rng.Int64N(int64(d.Jitter))))
		}
	}
	if t.Before(s.last) {
		t = s.last
	}
	s.last = t
	return t
}

// waitUntil blocks until t or until done is closed; false when done.
func waitUntil(t time.Time, done <-chan struct{}) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-done:
		return false
	}
}

// The degradation faults, for the proxy network only (ProxyNet): skipped
// elsewhere. The kernel here has no tc netem (docs/DURABILITY.md, finding
// 5), so these are the slow and lossy links of issue 14.
const (
	// SlowLeader gives every link of a partition leader, both ways and
	// the clients' too, 50 ms latency plus up to 150 ms of jitter for the
	// hold.
	SlowLeader Kind = "slow-leader"
	// LossyLink makes the link between a partition leader and one other
	// replica lossy both ways for the hold: 10% of chunks stall the link
	// for 50-300 ms (what a retransmission timeout looks like), on top of
	// 5 ms latency.
	LossyLink Kind = "lossy-link"
)

// DegradeKind reports whether k needs a network that degrades links.
func (k Kind) DegradeKind() bool { return k == SlowLeader || k == LossyLink }

var (
	slowLeaderLink = Degradation{Latency: 50 * time.Millisecond, Jitter: 150 * time.Millisecond}
	lossyLink      = Degradation{Latency: 5 * time.Millisecond, StallProb: 0.1,
		StallMin: 50 * time.Millisecond, StallMax: 300 * time.Millisecond}
)

// degrade applies a SlowLeader or LossyLink step to node n (0-based
// index i) and holds it; the caller restores the links.
func (nm *Nemesis) degrade(ctx context.Context, dg Degrader, s Step, i int, what string) {
	switch s.Kind {
	case SlowLeader:
		for j := -1; j < len(nm.C.Nodes); j++ {
			if j != i {
				dg.Degrade(i, j, slowLeaderLink)
				dg.Degrade(j, i, slowLeaderLink)
			}
		}
		nm.logf("nemesis: every link of node %d (%s) slow (%v) for %v", i+1, what, slowLeaderLink, s.Hold)
	case LossyLink:
		rest := others(len(nm.C.Nodes), i)
		j := rest[int(s.Pick)%len(rest)]
		dg.Degrade(i, j, lossyLink)
		dg.Degrade(j, i, lossyLink)
		nm.logf("nemesis: link node %d (%s) <-> node %d lossy (%v) for %v", i+1, what, j+1, lossyLink, s.Hold)
	}
	holdFor(ctx, s.Hold)
}
