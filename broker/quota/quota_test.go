package quota

import (
	"math"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/controller"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestRateNewClient: a client's first bytes are measured over samples-1
// whole windows, so 11 MB at once against 1 MB/s over 11 one-second
// samples is 1.1 MB/s and a throttle of (1.1-1)/1 × 10 s = 1 s.
func TestRateNewClient(t *testing.T) {
	r := NewRate(time.Second, 11)
	r.Record(11e6, t0)
	if w := r.Window(t0); w != 10*time.Second {
		t.Fatalf("window %v, want 10s", w)
	}
	if got := r.Measure(t0); math.Abs(got-1.1e6) > 1 {
		t.Fatalf("rate %v, want 1.1e6", got)
	}
	if got := r.ThrottleTime(1e6, t0); got != time.Second {
		t.Fatalf("throttle %v, want 1s", got)
	}
	if got := r.ThrottleTime(2e6, t0); got != 0 {
		t.Fatalf("throttle within quota %v", got)
	}
}

// TestRateSamplesExpire: samples older than samples × window stop
// counting, and a client active for longer than a window is measured over
// the whole samples × window.
func TestRateSamplesExpire(t *testing.T) {
	r := NewRate(time.Second, 11)
	for i := range 20 {
		r.Record(1000, t0.Add(time.Duration(i)*time.Second))
	}
	now := t0.Add(19*time.Second + 500*time.Millisecond)
	// Samples started at 9 s..19 s are kept (11 of them).
	if w := r.Window(now); w != 11*time.Second {
		t.Fatalf("window %v", w)
	}
	if got := r.Measure(now); math.Abs(got-11000/11.0) > 1e-6 {
		t.Fatalf("rate %v", got)
	}
	if got := r.Measure(t0.Add(time.Hour)); got != 0 {
		t.Fatalf("rate after an idle hour %v", got)
	}
}

// TestThrottledClientConverges plays a client that sends as fast as it
// may, waiting out each throttle: it never has more than its quota over
// any span (plus its first credit and the request that went over), and
// over ten minutes its average is the quota, for requests up to 1 MiB
// (the default batch size limit).
func TestThrottledClientConverges(t *testing.T) {
	for _, size := range []float64{16 << 10, 100e3, 1 << 20} {
		m := NewManager(Options{})
		q := Quotas{{ClientID: controller.QuotaEntityName{Present: true, Name: "app"}}: {controller.QuotaProducerByteRate: 1e6}}
		now := t0
		sent := 0.0
		for now.Sub(t0) < 10*time.Minute {
			sent += size
			// At most the quota over any 11 s, plus the one request
			// of each span that went over it.
			elapsed := now.Sub(t0).Seconds()
			if credit := 1e6*(elapsed+11) + size*(elapsed/11+2); sent > credit {
				t.Fatalf("request size %v: %.0f bytes sent by %v, more than the quota allows (%.0f)", size, sent, now.Sub(t0), credit)
			}
			now = now.Add(2 * time.Millisecond) // the request's own time
			now = now.Add(m.Record(q, controller.QuotaProducerByteRate, "ANONYMOUS", "app", size, now))
		}
		// Each request is accepted before it is throttled, so a client
		// is about half a request per span ahead of its quota.
		rate := sent / now.Sub(t0).Seconds()
		if tol := 0.02 + size/22e6; math.Abs(rate-1e6)/1e6 > tol {
			t.Errorf("request size %v: %.0f B/s over %v, want 1e6 within %.1f%%", size, rate, now.Sub(t0), 100*tol)
		}
	}
}

// TestResolve checks Kafka's order of precedence, and which names the
// shared rate carries.
func TestResolve(t *testing.T) {
	n := func(s string) controller.QuotaEntityName { return controller.QuotaEntityName{Present: true, Name: s} }
	d := controller.QuotaEntityName{Present: true, Default: true}
	var none controller.QuotaEntityName
	levels := []controller.QuotaEntity{
		{User: n("u"), ClientID: n("c")},
		{User: n("u"), ClientID: d},
		{User: n("u")},
		{User: d, ClientID: n("c")},
		{User: d, ClientID: d},
		{User: d},
		{ClientID: n("c")},
		{ClientID: d},
	}
	shared := []controller.QuotaEntity{
		{User: n("u"), ClientID: n("c")},
		{User: n("u"), ClientID: n("c")},
		{User: n("u")},
		{User: n("u"), ClientID: n("c")},
		{User: n("u"), ClientID: n("c")},
		{User: n("u")},
		{ClientID: n("c")},
		{ClientID: n("c")},
	}
	// With levels i.. set, level i wins.
	for i := range levels {
		q := Quotas{}
		for j := i; j < len(levels); j++ {
			q[levels[j]] = map[string]float64{controller.QuotaProducerByteRate: float64(j + 1)}
		}
		// Noise: other users, clients and keys never match.
		q[controller.QuotaEntity{User: n("other")}] = map[string]float64{controller.QuotaProducerByteRate: 99}
		q[controller.QuotaEntity{ClientID: n("x"), User: none}] = map[string]float64{controller.QuotaProducerByteRate: 98}
		bound, ent, ok := Resolve(q, controller.QuotaProducerByteRate, "u", "c")
		if !ok || bound != float64(i+1) || ent != shared[i] {
			t.Errorf("from level %d: got %v %+v %v, want %v %+v", i, bound, ent, ok, i+1, shared[i])
		}
		if _, _, ok := Resolve(q, controller.QuotaConsumerByteRate, "u", "c"); ok {
			t.Errorf("level %d: consumer quota resolved from producer quotas", i)
		}
	}
	if _, _, ok := Resolve(nil, controller.QuotaProducerByteRate, "u", "c"); ok {
		t.Error("resolved with no quotas")
	}
}

// TestManagerSharing: a /clients/<default> quota gives each client id a
// rate of its own; a /users/<u> quota is shared by every client id of u.
func TestManagerSharing(t *testing.T) {
	d := controller.QuotaEntityName{Present: true, Default: true}
	key := controller.QuotaProducerByteRate
	m := NewManager(Options{})
	q := Quotas{{ClientID: d}: {key: 1e6}}
	if m.Record(q, key, "u", "a", 10e6, t0) != 0 || m.Record(q, key, "u", "b", 10e6, t0) != 0 {
		t.Fatal("throttled within the quota of each client id")
	}
	if m.Len() != 2 {
		t.Fatalf("%d rates, want 2", m.Len())
	}
	m = NewManager(Options{})
	q = Quotas{{User: controller.QuotaEntityName{Present: true, Name: "u"}}: {key: 1e6}}
	if m.Record(q, key, "u", "a", 10e6, t0) != 0 {
		t.Fatal("throttled within the quota")
	}
	// 20 MB against 1 MB/s: the rate is back within the quota when the
	// sample expires, 11 s on (Kafka's formula says 10 s, after which
	// the client is still over: see Rate).
	if got := m.Record(q, key, "u", "b", 10e6, t0); got != 11*time.Second {
		t.Fatalf("shared user quota: throttle %v, want 11s", got)
	}
	if got := m.Exceeded(q, key, "u", "c", t0); got != 11*time.Second {
		t.Fatalf("Exceeded %v", got)
	}
	// An hour later the rates are forgotten.
	m.Record(q, key, "v", "a", 1, t0.Add(2*time.Hour))
	if m.Len() != 1 {
		t.Fatalf("%d rates after expiry, want 1", m.Len())
	}
}

// TestRequestPercentageCap: a request quota throttle is at most one
// window.
func TestRequestPercentageCap(t *testing.T) {
	m := NewManager(Options{})
	q := Quotas{{ClientID: controller.QuotaEntityName{Present: true, Default: true}}: {controller.QuotaRequestPercentage: 1}}
	if got := m.Record(q, controller.QuotaRequestPercentage, "u", "c", 1000, t0); got != time.Second {
		t.Fatalf("throttle %v, want the 1s cap", got)
	}
}

// TestMutationQuota follows Kafka's TokenBucket: a client starts with
// quota × 11 s of tokens, may take more than it holds once (strict mode
// refuses the next mutation), and is back at zero after -tokens/quota.
func TestMutationQuota(t *testing.T) {
	m := NewManager(Options{})
	q := Quotas{{ClientID: controller.QuotaEntityName{Present: true, Name: "admin"}}: {controller.QuotaControllerMutationRate: 2}}
	if got := m.MutationExceeded(q, "u", "admin", t0); got != 0 {
		t.Fatalf("fresh client exceeded: %v", got)
	}
	if got := m.RecordMutations(q, "u", "admin", 20, t0); got != 0 {
		t.Fatalf("20 of 22 tokens: throttle %v", got)
	}
	// 22 tokens at the start; 20 + 10 leaves -8: 4 s at 2 per second.
	if got := m.RecordMutations(q, "u", "admin", 10, t0); got != 4*time.Second {
		t.Fatalf("throttle %v, want 4s", got)
	}
	if got := m.MutationExceeded(q, "u", "admin", t0.Add(time.Second)); got != 3*time.Second {
		t.Fatalf("exceeded after 1 s: %v, want 3s", got)
	}
	if got := m.MutationExceeded(q, "u", "admin", t0.Add(4*time.Second)); got != 0 {
		t.Fatalf("exceeded after 4 s: %v", got)
	}
	// The bucket never holds more than its burst.
	if got := m.RecordMutations(q, "u", "admin", 23, t0.Add(time.Hour-time.Second)); got != 500*time.Millisecond {
		t.Fatalf("after a long idle: throttle %v, want 500ms", got)
	}
	if got := m.RecordMutations(q, "u", "other", 1000, t0); got != 0 {
		t.Fatalf("unlimited client throttled %v", got)
	}
}

// TestMutationWindowOptions: the burst is the quota times
// controller.quota.window.num windows of controller.quota.window.size.
func TestMutationWindowOptions(t *testing.T) {
	m := NewManager(Options{MutationSamples: 5, MutationWindow: 2 * time.Second})
	q := Quotas{{ClientID: controller.QuotaEntityName{Present: true, Default: true}}: {controller.QuotaControllerMutationRate: 1}}
	// 10 tokens: 12 leave -2, 2 s at 1 per second.
	if got := m.RecordMutations(q, "u", "c", 12, t0); got != 2*time.Second {
		t.Fatalf("throttle %v, want 2s", got)
	}
}

// TestStats: each entity in use reports its rate and the average of the
// throttles it was given, under Kafka's quota type names.
func TestStats(t *testing.T) {
	m := NewManager(Options{})
	q := Quotas{
		{ClientID: controller.QuotaEntityName{Present: true, Default: true}}: {controller.QuotaProducerByteRate: 1e6},
		{User: controller.QuotaEntityName{Present: true, Name: "alice"}}:     {controller.QuotaControllerMutationRate: 1},
	}
	m.Record(q, controller.QuotaProducerByteRate, "alice", "app", 5e6, t0)
	m.Record(q, controller.QuotaProducerByteRate, "alice", "app", 5.5e6, t0) // 10.5 MB: 0.5 s over
	m.RecordMutations(q, "alice", "admin", 3, t0)
	got := m.Stats(t0)
	want := []Stat{
		{Type: "ControllerMutation", User: "alice", Rate: 3.0 / 10},
		{Type: "Produce", ClientID: "app", Rate: 10.5e6 / 10, ThrottleMs: 500},
	}
	if len(got) != len(want) {
		t.Fatalf("stats %+v", got)
	}
	for i := range want {
		if got[i].Type != want[i].Type || got[i].User != want[i].User || got[i].ClientID != want[i].ClientID ||
			math.Abs(got[i].Rate-want[i].Rate) > 1e-6 || math.Abs(got[i].ThrottleMs-want[i].ThrottleMs) > 1e-6 {
			t.Errorf("stat %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
