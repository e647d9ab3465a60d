package share

import (
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestSessionEpochs(t *testing.T) {
	c := newSessionCache(2, time.Minute)
	a := SessionKey{"g", "a"}
	p0, p1 := TopicPartition{Partition: 0}, TopicPartition{Partition: 1}
	code := func(sf SessionFetch) int16 { return sf.Code }
	if got := code(c.fetchContext(0, a, 1, nil, nil, false, t0)); got != kerr.ShareSessionNotFound.Code {
		t.Fatalf("epoch 1 without a session: %d", got)
	}
	if got := code(c.fetchContext(0, a, 0, []FetchPartition{{p0, 100}}, nil, true, t0)); got != kerr.InvalidRequest.Code {
		t.Fatalf("epoch 0 with acknowledgements: %d", got)
	}
	sf := c.fetchContext(0, a, 0, []FetchPartition{{p0, 100}, {p1, 0}}, nil, false, t0)
	if sf.Code != 0 || !sf.Full || !reflect.DeepEqual(sf.Parts, []FetchPartition{{p0, 100}}) {
		t.Fatalf("open: %+v (a partition with max bytes 0 is not added)", sf)
	}
	if got := code(c.fetchContext(0, a, 2, nil, nil, false, t0)); got != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("epoch 2, want 1: %d", got)
	}
	sf = c.fetchContext(0, a, 1, []FetchPartition{{p1, 50}}, []TopicPartition{p0}, false, t0)
	if sf.Code != 0 || sf.Full || !reflect.DeepEqual(sf.Parts, []FetchPartition{{p1, 50}}) {
		t.Fatalf("epoch 1: %+v", sf)
	}
	// ShareAcknowledge: 0 is never valid, 2 is next.
	if got := c.acknowledgeContext(a, 0, t0); got != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("ack epoch 0: %d", got)
	}
	if got := c.acknowledgeContext(a, 2, t0); got != 0 {
		t.Fatalf("ack epoch 2: %d", got)
	}
	if got := code(c.fetchContext(0, a, 2, nil, nil, false, t0)); got != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("fetch at an epoch the ack used: %d", got)
	}
	// Final: no fetching allowed; needs a session.
	if got := code(c.fetchContext(0, a, FinalEpoch, []FetchPartition{{p0, 1}}, nil, false, t0)); got != kerr.InvalidRequest.Code {
		t.Fatalf("final with a fetch: %d", got)
	}
	if sf := c.fetchContext(0, SessionKey{"g", "zz"}, FinalEpoch, nil, nil, false, t0); sf.Code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("final without a session: %d", sf.Code)
	}
	// The limit: a second session fits, a third does not; reopening an
	// existing one does.
	if got := code(c.fetchContext(0, SessionKey{"g", "b"}, 0, nil, nil, false, t0)); got != 0 {
		t.Fatalf("second session: %d", got)
	}
	if got := code(c.fetchContext(0, SessionKey{"g", "c"}, 0, nil, nil, false, t0)); got != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("third session: %d", got)
	}
	if got := code(c.fetchContext(0, a, 0, nil, nil, false, t0)); got != 0 {
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

// TestSessionIdleEviction: a full cache takes a new session in place of
// one idle for the eviction time, never of a recently used one.
func TestSessionIdleEviction(t *testing.T) {
	c := newSessionCache(1, time.Minute)
	a, b := SessionKey{"g", "a"}, SessionKey{"g", "b"}
	c.fetchContext(0, a, 0, nil, nil, false, t0)
	if sf := c.fetchContext(0, b, 0, nil, nil, false, t0.Add(59*time.Second)); sf.Code != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("evicted a session idle 59s: %+v", sf)
	}
	if sf := c.fetchContext(0, b, 0, nil, nil, false, t0.Add(61*time.Second)); sf.Code != 0 {
		t.Fatalf("did not evict a session idle 61s: %+v", sf)
	}
	if sf := c.fetchContext(0, a, 1, nil, nil, false, t0.Add(62*time.Second)); sf.Code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("evicted session still there: %+v", sf)
	}
}
