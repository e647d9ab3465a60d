package broker

import (
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
)

// alterIPQuota sets (or with remove, removes) connection_creation_rate
// on the ip entity name ("" for the default ip entity).
func alterIPQuota(t *testing.T, c *rawClient, name string, value float64, remove bool) {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ent.Type = "ip"
	if name != "" {
		ent.Name = &name
	}
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = "connection_creation_rate", value, remove
	e.Entity, e.Ops = append(e.Entity, ent), append(e.Ops, op)
	req.Entries = append(req.Entries, e)
	resp, err := c.roundTrip(req, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.AlterClientQuotasResponse); len(r.Entries) != 1 || r.Entries[0].ErrorCode != 0 {
		t.Fatalf("AlterClientQuotas ip %q: %+v", name, r.Entries)
	}
}

// burstResult is what became of each connection of a burst: answered or
// closed unanswered, at that long after the burst began.
type burstResult struct {
	served []bool
	at     []time.Duration
}

func (b burstResult) servedCount() int {
	n := 0
	for _, s := range b.served {
		if s {
			n++
		}
	}
	return n
}

// connectionBurst opens n connections to addr from the local address
// local ("" for any), one after the other, then sends an ApiVersions
// request on each and waits for its answer or its close.
func connectionBurst(t *testing.T, addr, local string, n int) burstResult {
	t.Helper()
	d := net.Dialer{Timeout: 10 * time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	start := time.Now()
	conns := make([]net.Conn, n)
	for i := range conns {
		nc, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		defer nc.Close()
		conns[i] = nc
	}
	res := burstResult{served: make([]bool, n), at: make([]time.Duration, n)}
	var wg sync.WaitGroup
	for i, nc := range conns {
		wg.Go(func() {
			c := &rawClient{t: t, nc: nc, fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID("burst"))}
			req := kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(3)
			defer func() { res.at[i] = time.Since(start) }()
			if _, err := nc.Write(c.fmtr.AppendRequest(nil, req, 1)); err != nil {
				return // reset before the request went out
			}
			_, err := c.readResponse(req, 1)
			res.served[i] = err == nil
		})
	}
	wg.Wait()
	return res
}

// TestIPConnectionCreationRate: with connection_creation_rate 5 on the
// ip entity 127.0.0.1 and 2 windows of 1 s, a burst of 20 connections
// from it gets its first 5 served; the excess are accepted but never
// answered and closed after their throttle time (the rate is back within
// the quota 200 ms after the burst began at the earliest). The ip entity
// of the address wins over the default ip entity, a quota on another
// address does not limit this one, and removing the quotas lifts the
// limit, all without a restart.
func TestIPConnectionCreationRate(t *testing.T) {
	n := startTestNode(t, t.TempDir(), "quota.window.num=2", "quota.window.size.seconds=1")
	defer closeTestNode(t, n)
	addr := n.Addrs()[0].String()
	admin := dialRaw(t, addr)

	alterIPQuota(t, admin, "127.0.0.1", 5, false)
	b := connectionBurst(t, addr, "127.0.0.1", 20)
	for i := range 5 {
		if !b.served[i] {
			t.Errorf("connection %d of the burst not served", i)
		}
	}
	if b.servedCount() == 20 {
		t.Fatal("no connection of a burst of 20 throttled under connection_creation_rate 5")
	}
	for i, s := range b.served {
		if !s && b.at[i] < 150*time.Millisecond {
			t.Errorf("connection %d closed %v after the burst began, before its throttle time", i, b.at[i])
		}
	}

	// The ip entity of the address wins over the default ip entity.
	alterIPQuota(t, admin, "", 5, false)
	alterIPQuota(t, admin, "127.0.0.1", 1000, false)
	if b := connectionBurst(t, addr, "127.0.0.1", 20); b.servedCount() != 20 {
		t.Fatalf("%d of 20 served under its own quota of 1000 (default 5)", b.servedCount())
	}
	// Without its own quota the address falls under the default one.
	alterIPQuota(t, admin, "127.0.0.1", 0, true)
	if b := connectionBurst(t, addr, "127.0.0.1", 20); b.servedCount() == 20 {
		t.Fatal("no connection throttled under the default ip quota of 5")
	}
	// A quota on another address does not limit this one.
	alterIPQuota(t, admin, "", 0, true)
	alterIPQuota(t, admin, "127.0.0.2", 1, false)
	if b := connectionBurst(t, addr, "127.0.0.1", 20); b.servedCount() != 20 {
		t.Fatalf("%d of 20 served with a quota only on 127.0.0.2", b.servedCount())
	}
	if b := connectionBurst(t, addr, "127.0.0.2", 5); !b.served[0] || b.servedCount() == 5 {
		t.Fatalf("127.0.0.2 under quota 1: served %v", b.served)
	}
	// Removing it lifts the limit.
	alterIPQuota(t, admin, "127.0.0.2", 0, true)
	if b := connectionBurst(t, addr, "127.0.0.2", 20); b.servedCount() != 20 {
		t.Fatalf("%d of 20 served after the quota was removed", b.servedCount())
	}
}

// TestMaxConnectionCreationRate: max.connection.creation.rate=10 over 2
// windows of 1 s lets 10 connections of a burst through at once; the
// next ones wait (100 ms more each) and are then served, none closed.
func TestMaxConnectionCreationRate(t *testing.T) {
	n := startTestNode(t, t.TempDir(), "quota.window.num=2", "max.connection.creation.rate=10")
	defer closeTestNode(t, n)
	b := connectionBurst(t, n.Addrs()[0].String(), "", 15)
	if b.servedCount() != 15 {
		t.Fatalf("%d of 15 served: %v", b.servedCount(), b.served)
	}
	last := slices.Max(b.at)
	if last < 300*time.Millisecond {
		t.Fatalf("the burst of 15 was served in %v: connections over max.connection.creation.rate=10 did not wait", last)
	}
	t.Logf("burst of 15 served in %v", last)
}

// TestMaxConnectionCreationRateOption: Kafka's default (Integer.MAX_VALUE)
// is no limit, and 0 (which Kafka accepts) throttles every connection.
func TestMaxConnectionCreationRateOption(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  float64
	}{{"2147483647", 0}, {"10", 10}, {"0", 1e-6}} {
		cfg, err := config.Load([]string{"--override", "max.connection.creation.rate=" + tc.value}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := serverOptions(cfg, nil, slog.New(slog.DiscardHandler)).MaxConnectionCreationRate; got != tc.want {
			t.Errorf("max.connection.creation.rate=%s: %v, want %v", tc.value, got, tc.want)
		}
	}
	if _, err := config.Load([]string{"--override", "max.connection.creation.rate=-1"}, nil); err == nil {
		t.Error("max.connection.creation.rate=-1 accepted")
	}
}
