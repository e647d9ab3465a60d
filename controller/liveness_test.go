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
