package controller

import (
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

func TestSessionExpiry(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	c := newTestController(t, 3, func(o *Options) {
		o.Now = clock.Now
		o.SessionTimeout = 10 * time.Second
		o.NodeID = 3 // the active controller's own broker is never expired
	})
	r := c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2, 3}}}}, false)[0]
	if r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	clock.Advance(6 * time.Second)
	if err := c.Heartbeat(2); err != nil {
		t.Fatal(err)
	}
	if err := c.Heartbeat(3); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ExpireSessions(); err != nil || len(got) != 0 {
		t.Fatalf("expired %v %v", got, err)
	}
	clock.Advance(5 * time.Second) // broker 1 last seen 11s ago
	got, err := c.ExpireSessions()
	if err != nil || !equalInt32s(got, []int32{1}) {
		t.Fatalf("expired %v %v", got, err)
	}
	img := c.Image()
	if !img.Brokers[1].Fenced || img.Topics["t"].Partitions[0].Leader != 2 {
		t.Fatalf("%+v %+v", img.Brokers[1], img.Topics["t"].Partitions[0])
	}
	// Already fenced brokers are not expired again.
	if got, _ := c.ExpireSessions(); len(got) != 0 {
		t.Fatalf("expired again %v", got)
	}
	// A heartbeat unfences.
	if err := c.Heartbeat(1); err != nil {
		t.Fatal(err)
	}
	if c.Image().Brokers[1].Fenced {
		t.Fatal("still fenced after heartbeat")
	}
	// Twenty seconds of silence: brokers 1 and 2 expire, the controller's
	// own broker 3 does not.
	clock.Advance(20 * time.Second)
	if got, err := c.ExpireSessions(); err != nil || !equalInt32s(got, []int32{1, 2}) {
		t.Fatalf("expired %v %v, want [1 2]", got, err)
	}
}

func TestSessionExpiryDisabled(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	c := newTestController(t, 1, func(o *Options) { o.Now = clock.Now })
	clock.Advance(time.Hour)
	if got, err := c.ExpireSessions(); err != nil || len(got) != 0 {
		t.Fatalf("expired %v %v", got, err)
	}
}

func TestDecideExpiredUsesStartForUnseen(t *testing.T) {
	img, err := applyBatch(EmptyImage("c", 1), 0, []Record{RegisterBrokerRecord{BrokerID: 1, Host: "h", Port: 1}, RegisterBrokerRecord{BrokerID: 2, Host: "h", Port: 1}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(0, 0)
	seen := map[int32]time.Time{2: start.Add(20 * time.Second)}
	if got := decideExpired(img, seen, start, start.Add(15*time.Second), 10*time.Second); !equalInt32s(got, []int32{1}) {
		t.Fatalf("%v", got)
	}
}

// sinceQuorum is a Quorum that became the active controller at since.
type sinceQuorum struct {
	Quorum
	since func() time.Time
}

func (q sinceQuorum) LeadingSince() time.Time { return q.since() }

// TestSessionsStartWhenActive is a regression test (issue 13 item 4): the
// session of a broker this controller had not heard from counted from the
// controller's creation, so a node that became the active controller more
// than one session timeout after its start (an election under load, or a
// failover) fenced every other broker at its first tick, though they had
// been heartbeating to the previous active controller all along; and a
// heartbeat seen in an earlier term counted as fresh. Sessions now start
// when the node became active.
func TestSessionsStartWhenActive(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	c := newTestController(t, 3, func(o *Options) {
		o.Now = clock.Now
		o.SessionTimeout = 10 * time.Second
		o.NodeID = 3
	})
	if err := c.Heartbeat(2); err != nil { // seen in an earlier term
		t.Fatal(err)
	}
	var active time.Time
	c.quorum = sinceQuorum{Quorum: c.quorum, since: func() time.Time { return active }}
	clock.Advance(30 * time.Second)
	active = clock.Now() // becomes active 30 s after its start
	if got, err := c.ExpireSessions(); err != nil || len(got) != 0 {
		t.Fatalf("expired %v %v at activation, want none", got, err)
	}
	clock.Advance(9 * time.Second)
	if got, err := c.ExpireSessions(); err != nil || len(got) != 0 {
		t.Fatalf("expired %v %v within a session of activation, want none", got, err)
	}
	if err := c.Heartbeat(1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second) // 11 s after activation; broker 1 seen 2 s ago
	if got, err := c.ExpireSessions(); err != nil || !equalInt32s(got, []int32{2}) {
		t.Fatalf("expired %v %v, want [2]", got, err)
	}
}

func TestDecideExpiredIgnoresHeartbeatsBeforeStart(t *testing.T) {
	img, err := applyBatch(EmptyImage("c", 1), 0, []Record{RegisterBrokerRecord{BrokerID: 1, Host: "h", Port: 1}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(100, 0)
	seen := map[int32]time.Time{1: start.Add(-time.Minute)}
	if got := decideExpired(img, seen, start, start.Add(5*time.Second), 10*time.Second); len(got) != 0 {
		t.Fatalf("%v", got)
	}
	if got := decideExpired(img, seen, start, start.Add(11*time.Second), 10*time.Second); !equalInt32s(got, []int32{1}) {
		t.Fatalf("%v", got)
	}
}
