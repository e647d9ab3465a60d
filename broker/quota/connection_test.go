package quota

import (
	"net/netip"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/controller"
)

func ipEntity(name string) controller.QuotaEntity {
	if name == "" {
		return controller.QuotaEntity{IP: controller.QuotaEntityName{Present: true, Default: true}}
	}
	return controller.QuotaEntity{IP: controller.QuotaEntityName{Present: true, Name: name}}
}

// TestConnectionRateBound: the ip entity naming the address wins over
// the default ip entity; names are compared as addresses; user and
// client-id entities and other keys do not count.
func TestConnectionRateBound(t *testing.T) {
	rate := func(v float64) map[string]float64 {
		return map[string]float64{controller.QuotaConnectionCreationRate: v}
	}
	quotas := Quotas{
		ipEntity(""):          rate(10),
		ipEntity("127.0.0.1"): rate(5),
		ipEntity("0:0::1"):    rate(7),
		ipEntity("10.0.0.9"):  {controller.QuotaProducerByteRate: 100},
		{User: controller.QuotaEntityName{Present: true, Default: true}}: rate(1),
	}
	for _, tc := range []struct {
		addr  string
		quota Quotas
		want  float64
		ok    bool
	}{
		{"127.0.0.1", quotas, 5, true},
		{"::ffff:127.0.0.1", quotas, 5, true},
		{"::1", quotas, 7, true},
		{"127.0.0.2", quotas, 10, true},
		{"10.0.0.9", quotas, 10, true}, // its entity sets no connection rate
		{"127.0.0.2", Quotas{ipEntity("127.0.0.1"): rate(5)}, 0, false},
		{"127.0.0.1", nil, 0, false},
	} {
		got, ok := ConnectionRateBound(tc.quota, netip.MustParseAddr(tc.addr))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %v %v, want %v %v", tc.addr, got, ok, tc.want, tc.ok)
		}
	}
}

// TestRecordConnection: with quota 5 over 2 one-second samples a new
// address may open 5 connections at once (5 over samples-1 windows); the
// 6th waits until the rate is back within the quota (6 connections over
// 1.2 s: 200 ms) and, not being served, is taken back out of the rate,
// so the 7th waits as long; at 200 ms one more is served.
func TestRecordConnection(t *testing.T) {
	m := NewManager(Options{Window: time.Second, Samples: 2})
	a := netip.MustParseAddr("127.0.0.1")
	for i := range 5 {
		if d := m.RecordConnection(a, 5, t0); d != 0 {
			t.Fatalf("connection %d throttled %v", i+1, d)
		}
	}
	for i := 6; i <= 7; i++ {
		if d := m.RecordConnection(a, 5, t0); d != 200*time.Millisecond {
			t.Fatalf("connection %d: throttle %v, want 200ms", i, d)
		}
	}
	other := netip.MustParseAddr("127.0.0.2")
	if d := m.RecordConnection(other, 5, t0); d != 0 {
		t.Fatalf("another address throttled %v", d)
	}
	at := t0.Add(200 * time.Millisecond)
	if d := m.RecordConnection(a, 5, at); d != 0 {
		t.Fatalf("connection at +200ms throttled %v", d)
	}
	if d := m.RecordConnection(a, 5, at); d == 0 {
		t.Fatal("a second connection at +200ms not throttled")
	}
	// A raised quota applies to the connections already counted.
	if d := m.RecordConnection(a, 100, at); d != 0 {
		t.Fatalf("throttled %v under a raised quota", d)
	}
	if got := m.Stats(at); len(got) != 0 {
		t.Fatalf("connection rates in the client stats: %+v", got)
	}
}

// TestRecordConnectionDefaults: with Kafka's default windows (11 of 1 s)
// a burst may open quota × 10 connections; the next waits
// (51/5 - 10) s = 200 ms, and a throttle never exceeds one window.
func TestRecordConnectionDefaults(t *testing.T) {
	m := NewManager(Options{})
	a := netip.MustParseAddr("192.0.2.1")
	for i := range 50 {
		if d := m.RecordConnection(a, 5, t0); d != 0 {
			t.Fatalf("connection %d throttled %v", i+1, d)
		}
	}
	if d := m.RecordConnection(a, 5, t0); d != 200*time.Millisecond {
		t.Fatalf("connection 51: throttle %v, want 200ms", d)
	}
	b := netip.MustParseAddr("192.0.2.2")
	m.RecordConnection(b, 0.1, t0)
	if d := m.RecordConnection(b, 0.1, t0); d != time.Second {
		t.Fatalf("throttle %v, want the one-window cap of 1s", d)
	}
	if d := m.RecordConnection(b, 0, t0); d != 0 {
		t.Fatalf("throttle %v with no quota", d)
	}
}

// TestRecordAccept: the broker-wide rate lets quota × (samples-1)
// windows of connections through at once, then makes the next wait; the
// waiting connection stays counted (it is served after the wait) unless
// taken back, and the wait is at most one window.
func TestRecordAccept(t *testing.T) {
	m := NewManager(Options{Window: time.Second, Samples: 2})
	for i := range 10 {
		if d := m.RecordAccept(10, t0); d != 0 {
			t.Fatalf("connection %d waits %v", i+1, d)
		}
	}
	if d := m.RecordAccept(10, t0); d != 100*time.Millisecond {
		t.Fatalf("connection 11 waits %v, want 100ms", d)
	}
	if d := m.RecordAccept(10, t0); d != 200*time.Millisecond {
		t.Fatalf("connection 12 waits %v, want 200ms (11 still counted)", d)
	}
	m.UnrecordAccept(t0)
	if d := m.RecordAccept(10, t0); d != 200*time.Millisecond {
		t.Fatalf("after taking one back: wait %v, want 200ms", d)
	}
	if d := m.RecordAccept(0.5, t0); d != time.Second {
		t.Fatalf("wait %v, want the one-window cap", d)
	}
	if d := m.RecordAccept(0, t0); d != 0 {
		t.Fatalf("unlimited rate waits %v", d)
	}
}
