package share

import (
	"context"
	"maps"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestRenewDisabled: before, share.renew.acknowledge.enable was accepted
// as a group config but not honoured (a renew always extended the lock).
// Kafka 4.4 answers a renew acknowledgement in a group that turned it off
// with INVALID_RECORD_STATE "Renewing acquisition locks is not enabled
// for the group.", applies none of the partition's acknowledgements, and
// reads the setting at each acknowledgement.
func TestRenewDisabled(t *testing.T) {
	p := newFakePersister()
	p.Initialize(context.Background(), testKey, 0, 0)
	l := testLog(t, 1, 4) // offsets 0-3
	var mu sync.Mutex
	overrides := map[string]string{"share.renew.acknowledge.enable": "false"}
	m := NewManager(Options{Persister: p, GroupConfig: func(string) map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(overrides)
	}})
	defer m.Close()
	ctx := context.Background()
	tg := Target{Key: testKey, Log: l}
	if res := m.Fetch(ctx, tg, FetchRequest{Member: "a", MaxBytes: 1 << 20}); res.Count() != 4 {
		t.Fatalf("fetch: %+v", res)
	}
	renew := Acknowledgement{Member: "a", Renew: true, Batches: []AckBatch{{0, 0, []int8{AckAccept}}, {1, 1, []int8{AckRenew}}}}
	r := m.Acknowledge(ctx, tg, renew)
	if r.Code != kerr.InvalidRecordState.Code || r.Message != msgRenewDisabled {
		t.Fatalf("renew with share.renew.acknowledge.enable=false: %+v", r)
	}
	// All or none: offset 0 was not accepted by the refused request.
	if r := m.Acknowledge(ctx, tg, Acknowledgement{Member: "a", Batches: []AckBatch{{0, 0, []int8{AckAccept}}}}); r.Code != 0 {
		t.Fatalf("accepting 0 after the refused request: %+v", r)
	}
	// A renew of records the member does not hold is refused for that
	// first (Kafka checks the state before the setting), with Kafka's
	// message for a batch tracked per offset since 0 was accepted alone
	// (sharefacts -step s28msg; samsa had none).
	if r := m.Acknowledge(ctx, tg, Acknowledgement{Member: "b", Renew: true, Batches: []AckBatch{{1, 1, []int8{AckRenew}}}}); r.Code != kerr.InvalidRecordState.Code || r.Message != msgNotOffsetOwner {
		t.Fatalf("b renewing a's record: %+v", r)
	}
	// Turned on again (or removed: the default is true): renew works.
	mu.Lock()
	overrides["share.renew.acknowledge.enable"] = "TRUE"
	mu.Unlock()
	if r := m.Acknowledge(ctx, tg, Acknowledgement{Member: "a", Renew: true, Batches: []AckBatch{{1, 3, []int8{AckRenew}}}}); r.Code != 0 {
		t.Fatalf("renew with share.renew.acknowledge.enable=true: %+v", r)
	}
	mu.Lock()
	delete(overrides, "share.renew.acknowledge.enable")
	mu.Unlock()
	if r := m.Acknowledge(ctx, tg, Acknowledgement{Member: "a", Renew: true, Batches: []AckBatch{{1, 3, []int8{AckRenew}}}}); r.Code != 0 {
		t.Fatalf("renew by default: %+v", r)
	}
}
