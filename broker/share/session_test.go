package share

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestSessionEpochs(t *testing.T) {
	c := newSessionCache(2)
	a := SessionKey{"g", "a"}
	p0, p1 := TopicPartition{Partition: 0}, TopicPartition{Partition: 1}
	code := func(sf SessionFetch) int16 { return sf.Code }
	if got := code(c.fetchContext(0, a, 1, nil, nil, false)); got != kerr.ShareSessionNotFound.Code {
		t.Fatalf("epoch 1 without a session: %d", got)
	}
	if got := code(c.fetchContext(0, a, 0, []FetchPartition{{p0, 100}}, nil, true)); got != kerr.InvalidRequest.Code {
		t.Fatalf("epoch 0 with acknowledgements: %d", got)
	}
	sf := c.fetchContext(0, a, 0, []FetchPartition{{p0, 100}, {p1, 0}}, nil, false)
	if sf.Code != 0 || !sf.Full || !reflect.DeepEqual(sf.Parts, []FetchPartition{{p0, 100}}) {
		t.Fatalf("open: %+v (a partition with max bytes 0 is not added)", sf)
	}
	if got := code(c.fetchContext(0, a, 2, nil, nil, false)); got != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("epoch 2, want 1: %d", got)
	}
	sf = c.fetchContext(0, a, 1, []FetchPartition{{p1, 50}}, []TopicPartition{p0}, false)
	if sf.Code != 0 || sf.Full || !reflect.DeepEqual(sf.Parts, []FetchPartition{{p1, 50}}) {
		t.Fatalf("epoch 1: %+v", sf)
	}
	// ShareAcknowledge: 0 is never valid, 2 is next.
	if got := c.acknowledgeContext(a, 0); got != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("ack epoch 0: %d", got)
	}
	if got := c.acknowledgeContext(a, 2); got != 0 {
		t.Fatalf("ack epoch 2: %d", got)
	}
	if got := code(c.fetchContext(0, a, 2, nil, nil, false)); got != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("fetch at an epoch the ack used: %d", got)
	}
	// Final: no fetching allowed; needs a session.
	if got := code(c.fetchContext(0, a, FinalEpoch, []FetchPartition{{p0, 1}}, nil, false)); got != kerr.InvalidRequest.Code {
		t.Fatalf("final with a fetch: %d", got)
	}
	if sf := c.fetchContext(0, SessionKey{"g", "zz"}, FinalEpoch, nil, nil, false); sf.Code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("final without a session: %d", sf.Code)
	}
	// The limit: a second session fits, a third does not; reopening an
	// existing one does.
	if got := code(c.fetchContext(0, SessionKey{"g", "b"}, 0, nil, nil, false)); got != 0 {
		t.Fatalf("second session: %d", got)
	}
	if got := code(c.fetchContext(0, SessionKey{"g", "c"}, 0, nil, nil, false)); got != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("third session: %d", got)
	}
	if got := code(c.fetchContext(0, a, 0, nil, nil, false)); got != 0 {
		t.Fatalf("reopening: %d", got)
	}
	if parts := c.remove(a); parts != nil {
		t.Fatalf("reopened session kept partitions %v", parts)
	}
	if c.len() != 1 {
		t.Fatalf("%d sessions, want 1", c.len())
	}
	if nextEpoch(1<<31-1) != 1 {
		t.Fatal("epoch does not wrap to 1")
	}
}

// TestSessionCacheFullNeverEvicts: samsa let a full cache evict the
// session idle longest once it was idle for a minute; Kafka 4.4 never
// evicts (sharefacts -step s28, FACTS.md H6 sgaps): a new session gets
// SHARE_SESSION_LIMIT_REACHED however long the others were idle (the
// cache has no clock now), the member of a session may open it again
// (its own is removed first), and a session closing makes room.
func TestSessionCacheFullNeverEvicts(t *testing.T) {
	c := newSessionCache(2)
	a, b, d := SessionKey{"g", "a"}, SessionKey{"g", "b"}, SessionKey{"g", "d"}
	c.fetchContext(0, a, 0, nil, nil, false)
	c.fetchContext(0, b, 0, nil, nil, false)
	if sf := c.fetchContext(0, d, 0, nil, nil, false); sf.Code != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("third session: %+v, want SHARE_SESSION_LIMIT_REACHED", sf)
	}
	if sf := c.fetchContext(0, a, 1, nil, nil, false); sf.Code != 0 {
		t.Fatalf("a's session: %+v, want it still there", sf)
	}
	if sf := c.fetchContext(0, a, 0, nil, nil, false); sf.Code != 0 || !sf.Full {
		t.Fatalf("a opening again in a full cache: %+v, want a new session", sf)
	}
	c.remove(b)
	if sf := c.fetchContext(0, d, 0, nil, nil, false); sf.Code != 0 {
		t.Fatalf("third session after b closed: %+v", sf)
	}
}
