package faults

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// TestShaperReleaseTimes checks the delay mechanics on a made-up clock:
// latency and jitter bounds, the bandwidth cap's queueing, stalls within
// their bounds, and that no chunk is released before the one read ahead
// of it.
func TestShaperReleaseTimes(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	ms := time.Millisecond

	s := newShaper(1)
	if got := s.release(t0, 100, Degradation{}); !got.Equal(t0) {
		t.Fatalf("healthy link: release %v after the read, want 0", got.Sub(t0))
	}

	s = newShaper(2)
	d := Degradation{Latency: 50 * ms, Jitter: 150 * ms}
	prev := time.Time{}
	for i := range 1000 {
		now := t0.Add(time.Duration(i) * ms)
		got := s.release(now, 10, d)
		if wait := got.Sub(now); wait < 50*ms {
			t.Fatalf("chunk %d released %v after its read, below the latency", i, wait)
		}
		if got.Before(prev) {
			t.Fatalf("chunk %d released at %v, before chunk %d at %v", i, got, i-1, prev)
		}
		prev = got
	}
	// A chunk read long after the others is not held back by them: its
	// wait is within latency + jitter.
	late := t0.Add(time.Hour)
	if wait := s.release(late, 10, d).Sub(late); wait < 50*ms || wait >= 200*ms {
		t.Fatalf("lone chunk waited %v, want [50ms, 200ms)", wait)
	}

	// 1000 B/s: five chunks of 100 bytes read at once go out 100 ms
	// apart.
	s = newShaper(3)
	d = Degradation{BytesPerSecond: 1000}
	for i := range 5 {
		if got, want := s.release(t0, 100, d).Sub(t0), time.Duration(i+1)*100*ms; got != want {
			t.Fatalf("chunk %d at %v, want %v", i, got, want)
		}
	}

	// Every chunk stalls: each waits [50, 300) ms after the link is free.
	s = newShaper(4)
	d = Degradation{StallProb: 1, StallMin: 50 * ms, StallMax: 300 * ms}
	for i := range 100 {
		now := t0.Add(time.Duration(i) * time.Second)
		if wait := s.release(now, 1, d).Sub(now); wait < 50*ms || wait >= 300*ms {
			t.Fatalf("stall %d: %v, want [50ms, 300ms)", i, wait)
		}
	}
	// A stall probability of 10%: some chunks stall, most do not.
	s = newShaper(5)
	d = Degradation{StallProb: 0.1, StallMin: 50 * ms, StallMax: 300 * ms}
	stalled := 0
	for i := range 1000 {
		now := t0.Add(time.Duration(i) * time.Second)
		if s.release(now, 1, d).After(now) {
			stalled++
		}
	}
	if stalled < 50 || stalled > 200 {
		t.Fatalf("%d of 1000 chunks stalled at 10%%", stalled)
	}
}

// TestProxyDegradedLinkKeepsBytes sends data through a proxy whose links
// are slow, capped and lossy (in both directions of a client connection,
// to an echo server): every byte comes back, in order; the round trip
// took at least what the cap and the latency impose (a lower bound only:
// load cannot make it fail). After Restore the links are whole again.
func TestProxyDegradedLinkKeepsBytes(t *testing.T) {
	echo, front := echoAndFront(t)
	p := NewProxyNet(2, []net.Listener{front}, []proxyTarget{{dst: 0, addr: echo.Addr().String()}})
	defer p.Close()
	var dg Degrader = p
	d := Degradation{Latency: 20 * time.Millisecond, Jitter: 10 * time.Millisecond, BytesPerSecond: 1 << 20,
		StallProb: 0.3, StallMin: time.Millisecond, StallMax: 5 * time.Millisecond}
	dg.Degrade(-1, 0, d)
	dg.Degrade(0, -1, d)

	c, err := net.DialTimeout("tcp", front.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	data := make([]byte, 256<<10)
	for i := range data {
		data[i] = byte(i*7 + i>>8)
	}
	start := time.Now()
	go func() {
		for off := 0; off < len(data); off += 1000 {
			if _, err := c.Write(data[off:min(off+1000, len(data))]); err != nil {
				return
			}
		}
	}()
	got := make([]byte, len(data))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if !bytes.Equal(got, data) {
		t.Fatal("the bytes came back changed or out of order")
	}
	// 256 KiB at 1 MiB/s each way through one pipeline: at least 250 ms,
	// plus a latency per direction.
	if floor := 250*time.Millisecond + 2*d.Latency; elapsed < floor {
		t.Fatalf("round trip took %v, below the %v the degradation imposes", elapsed, floor)
	}
	dg.Restore()
	if l := p.link(-1, 0); !l.IsZero() {
		t.Fatalf("after Restore the link is %v", l)
	}
	// The connection still works when restored.
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("after Restore: %q, %v", buf, err)
	}
}

// TestSoakStepsDegradeKinds: the soak schedule holds the asked numbers of
// slow-leader and lossy-link steps, and both kinds are told apart from
// the namespace network's kinds.
func TestSoakStepsDegradeKinds(t *testing.T) {
	count := map[Kind]int{}
	for _, s := range SoakSteps(9, SoakTargets{LeaderKills: 2, SlowLeaders: 3, LossyLinks: 4}, time.Second, 2*time.Second) {
		count[s.Kind]++
	}
	if count[SlowLeader] != 3 || count[LossyLink] != 4 {
		t.Fatalf("steps: %v", count)
	}
	for _, k := range []Kind{SlowLeader, LossyLink} {
		if !k.DegradeKind() || k.NetworkKind() {
			t.Fatalf("%s: DegradeKind %v, NetworkKind %v", k, k.DegradeKind(), k.NetworkKind())
		}
	}
	if KillLeader.DegradeKind() {
		t.Fatal("kill-leader counted as a degradation")
	}
}

// TestQueueUnderSlowLinks runs the queue workload on three nodes behind
// the proxy network under slow-leader and lossy-link steps (the slow and
// lossy links of issue 14, for a kernel without tc netem) and checks
// every anomaly. SAMSA_FAULTS_EXTRA=1 (run.sh --extra): about three
// minutes.
func TestQueueUnderSlowLinks(t *testing.T) {
	extraTests(t)
	if !ProxyAvailable() {
		t.Skip("the proxy network reads /proc")
	}
	p := Plan{
		Nodes: 3,
		Seed:  SeedFromEnvOrTime(),
		Steps: []Step{
			{Kind: SlowLeader, Hold: 15 * time.Second, Pick: 0},
			{Kind: LossyLink, Hold: 15 * time.Second, Pick: 1},
			{Kind: SlowLeader, Hold: 10 * time.Second, Pick: 2},
			{Kind: LossyLink, Hold: 10 * time.Second, Pick: 3},
			{Kind: KillLeader, Hold: 3 * time.Second, Pick: 4},
			{Kind: SlowLeader, Hold: 10 * time.Second, Pick: 5},
			{Kind: LossyLink, Hold: 10 * time.Second, Pick: 6},
		},
		Deadline: 4 * time.Minute,
		Quiet:    2 * time.Second,
		Proxy:    true,
		Queue: QueueOptions{Topic: "slow", Partitions: 4, Producers: 2, Interval: 5 * time.Millisecond,
			Group: "slow-group", GroupMembers: 2, Acks: -1},
	}
	rep, _ := RunPlan(t, p)
	if rep.Acked == 0 {
		t.Fatal("no record was acknowledged")
	}
	if rep.Anomalies() != 0 {
		t.Errorf("anomalies (seed %d):\n%s", p.Seed, rep)
	}
}
