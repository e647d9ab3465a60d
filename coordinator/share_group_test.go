package coordinator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakePersister is an in-memory SharePersister that records its calls.
type fakePersister struct {
	mu struct {
		sync.Mutex
		states map[SharePartitionKey]ShareStateSummary
		inits  []string // "group/topic/partition@epoch:start"
		failed map[SharePartitionKey]bool
		// deleteErr is what Delete answers, by key (a deleted topic).
		deleteErr map[SharePartitionKey]error
	}
}

func newFakePersister() *fakePersister {
	p := &fakePersister{}
	p.mu.states = map[SharePartitionKey]ShareStateSummary{}
	p.mu.failed = map[SharePartitionKey]bool{}
	return p
}

var errFakePersister = errors.New("fake persister: failing")

func (p *fakePersister) Initialize(_ context.Context, k SharePartitionKey, stateEpoch int32, start int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.failed[k] {
		return errFakePersister
	}
	p.mu.inits = append(p.mu.inits, fmt.Sprintf("%s/%x/%d@%d:%d", k.Group, k.TopicID[:2], k.Partition, stateEpoch, start))
	p.mu.states[k] = ShareStateSummary{StateEpoch: stateEpoch, StartOffset: start}
	return nil
}

func (p *fakePersister) Delete(_ context.Context, k SharePartitionKey) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.mu.deleteErr[k]; err != nil {
		return err
	}
	delete(p.mu.states, k)
	return nil
}

func (p *fakePersister) ReadSummary(_ context.Context, k SharePartitionKey) (ShareStateSummary, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.mu.states[k]
	return st, ok, nil
}

func (p *fakePersister) keys() []SharePartitionKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Collect(maps.Keys(p.mu.states))
}

func (p *fakePersister) initCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.inits)
}

func (p *fakePersister) fail(k SharePartitionKey, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.failed[k] = on
}

func sgReq(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.Version = 1
	r.GroupID, r.MemberID, r.MemberEpoch = group, member, epoch
	r.SubscribedTopicNames = topics
	return r
}

func sgOwned(resp *kmsg.ShareGroupHeartbeatResponse) map[string][]int32 {
	out := map[string][]int32{}
	if resp.Assignment == nil {
		return nil
	}
	for _, tp := range resp.Assignment.TopicPartitions {
		out[fmt.Sprintf("%x", tp.TopicID[:2])] = tp.Partitions
	}
	return out
}

func sgCount(resp *kmsg.ShareGroupHeartbeatResponse) int {
	n := 0
	if resp.Assignment != nil {
		for _, tp := range resp.Assignment.TopicPartitions {
			n += len(tp.Partitions)
		}
	}
	return n
}

// TestShareGroupHeartbeatLifecycle drives a share group through the
// Coordinator: join (initializing every partition at start offset -1 with
// the group epoch as state epoch), a second member sharing the load, more
// members than partitions, fencing, leave, and a restart over the same
// logs that keeps the epoch, members and initialized share-partitions.
func TestShareGroupHeartbeatLifecycle(t *testing.T) {
	l := newLogs()
	img := fakeImage{"orders": 2}
	p := newFakePersister()
	c := newTestCoordinator(t, l, func(o *Options) { o.Persister = p })
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}

	r := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", 3, "orders"))
	wantCode(t, "heartbeat to no group", r.ErrorCode, kerr.GroupIDNotFound)

	r1 := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", 0, "orders"))
	wantCode(t, "join", r1.ErrorCode, nil)
	if sgCount(r1) != 2 || r1.HeartbeatIntervalMillis != 5000 || r1.MemberEpoch < 1 {
		t.Fatalf("join: %+v owned %v", r1, sgOwned(r1))
	}
	if got := p.initCount(); got != 2 {
		t.Fatalf("initialized %d share-partitions, want 2", got)
	}
	for _, k := range p.keys() {
		st, _, _ := p.ReadSummary(ctx, k)
		if st.StartOffset != -1 {
			t.Fatalf("%v initialized at %d, want -1", k, st.StartOffset)
		}
	}

	// A second member: the two partitions are split.
	r2 := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m2", 0, "orders"))
	wantCode(t, "join m2", r2.ErrorCode, nil)
	if sgCount(r2) != 1 {
		t.Fatalf("m2 owns %v, want 1 partition", sgOwned(r2))
	}
	r1 = c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", r1.MemberEpoch, nil...))
	wantCode(t, "m1 heartbeat", r1.ErrorCode, nil)
	if sgCount(r1) != 1 || r1.MemberEpoch != r2.MemberEpoch {
		t.Fatalf("m1 after m2 joined: epoch %d (m2 %d) owns %v", r1.MemberEpoch, r2.MemberEpoch, sgOwned(r1))
	}
	if p.initCount() != 2 {
		t.Fatalf("share-partitions initialized again: %d", p.initCount())
	}

	// A third member shares a partition: every member gets one.
	r3 := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m3", 0, "orders"))
	wantCode(t, "join m3", r3.ErrorCode, nil)
	if sgCount(r3) != 1 {
		t.Fatalf("m3 owns %v, want 1 partition", sgOwned(r3))
	}

	// Fencing: an epoch from the future, an unknown member.
	wantCode(t, "future epoch", c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m3", r3.MemberEpoch+5)).ErrorCode, kerr.FencedMemberEpoch)
	wantCode(t, "unknown member", c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "zz", 4)).ErrorCode, kerr.UnknownMemberID)

	d := describeShare(t, c, "sg")
	if d.ErrorCode != 0 || d.GroupState != "Stable" || len(d.Members) != 3 || d.Assignor != "simple" || d.GroupEpoch != r3.MemberEpoch {
		t.Fatalf("describe: %+v", d)
	}

	// m3 leaves.
	lv := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m3", -1))
	wantCode(t, "leave", lv.ErrorCode, nil)
	if lv.MemberEpoch != -1 {
		t.Fatalf("leave answered epoch %d", lv.MemberEpoch)
	}
	epoch := describeShare(t, c, "sg").GroupEpoch

	// Restart over the same logs.
	c.Close()
	c = newTestCoordinator(t, l, func(o *Options) { o.Persister = p })
	d = describeShare(t, c, "sg")
	if d.ErrorCode != 0 || d.GroupEpoch != epoch || len(d.Members) != 2 {
		t.Fatalf("after restart: %+v (epoch want %d)", d, epoch)
	}
	r1 = c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", r1.MemberEpoch))
	wantCode(t, "m1 after restart", r1.ErrorCode, nil)
	if p.initCount() != 2 {
		t.Fatalf("restart initialized share-partitions again: %d", p.initCount())
	}

	// Share groups and other group types exclude each other.
	cg := c.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq("sg", "x1", "orders"))
	wantCode(t, "consumer heartbeat to a share group", cg.ErrorCode, kerr.GroupIDNotFound)
	j := c.JoinGroup(ctx, cl, joinReq("sg", "", "orders"))
	wantCode(t, "JoinGroup to a share group", j.ErrorCode, kerr.InconsistentGroupProtocol)
	c.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq("cg", "x1", "orders"))
	wantCode(t, "share heartbeat to a consumer group", c.ShareGroupHeartbeat(ctx, cl, img, sgReq("cg", "m1", 0, "orders")).ErrorCode, kerr.GroupIDNotFound)
}

func describeShare(t *testing.T, c *Coordinator, group string) kmsg.ShareGroupDescribeResponseGroup {
	t.Helper()
	r := kmsg.NewPtrShareGroupDescribeRequest()
	r.GroupIDs = []string{group}
	return c.ShareGroupDescribe(t.Context(), r).Groups[0]
}

// TestShareGroupInitializeFailureRetried: a share-partition whose
// initialization fails is not assigned, and the next heartbeat retries it.
func TestShareGroupInitializeFailureRetried(t *testing.T) {
	l := newLogs()
	img := fakeImage{"orders": 2}
	p := newFakePersister()
	bad := SharePartitionKey{Group: "sg", TopicID: topicIDOf("orders"), Partition: 1}
	p.fail(bad, true)
	c := newTestCoordinator(t, l, func(o *Options) { o.Persister = p })
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}
	r := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", 0, "orders"))
	wantCode(t, "join", r.ErrorCode, nil)
	orders := topicIDOf("orders")
	if got := sgOwned(r)[fmt.Sprintf("%x", orders[:2])]; !slices.Equal(got, []int32{0}) {
		t.Fatalf("owned %v, want only partition 0", sgOwned(r))
	}
	p.fail(bad, false)
	r = c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", r.MemberEpoch))
	wantCode(t, "retry", r.ErrorCode, nil)
	if sgCount(r) != 2 {
		t.Fatalf("after retry owned %v, want both partitions", sgOwned(r))
	}
}

// TestShareGroupNewPartitionsStartAtZero: partitions added to a topic the
// group already initialized start at offset 0 (nothing produced to them
// is skipped); a new topic's start at -1.
func TestShareGroupNewPartitionsStartAtZero(t *testing.T) {
	l := newLogs()
	p := newFakePersister()
	c := newTestCoordinator(t, l, func(o *Options) { o.Persister = p })
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}
	r := c.ShareGroupHeartbeat(ctx, cl, fakeImage{"orders": 1}, sgReq("sg", "m1", 0, "orders", "audit"))
	wantCode(t, "join", r.ErrorCode, nil)
	r = c.ShareGroupHeartbeat(ctx, cl, fakeImage{"orders": 3, "audit": 1}, sgReq("sg", "m1", r.MemberEpoch))
	wantCode(t, "heartbeat", r.ErrorCode, nil)
	if sgCount(r) != 4 {
		t.Fatalf("owned %v, want 4 partitions", sgOwned(r))
	}
	want := map[SharePartitionKey]int64{
		{Group: "sg", TopicID: topicIDOf("orders"), Partition: 0}: -1,
		{Group: "sg", TopicID: topicIDOf("orders"), Partition: 1}: 0,
		{Group: "sg", TopicID: topicIDOf("orders"), Partition: 2}: 0,
		{Group: "sg", TopicID: topicIDOf("audit"), Partition: 0}:  -1,
	}
	for k, start := range want {
		st, ok, _ := p.ReadSummary(ctx, k)
		if !ok || st.StartOffset != start {
			t.Errorf("%v: initialized %v at %d, want %d", k, ok, st.StartOffset, start)
		}
	}
}

// TestShareGroupSessionExpiry: a member that stops heartbeating is removed
// after group.share.session.timeout.ms and its partitions go to the rest.
// Under load m1 may itself miss its session between two heartbeats: it
// then rejoins, as a client does, and the test still waits for m2 to go.
func TestShareGroupSessionExpiry(t *testing.T) {
	l := newLogs()
	img := fakeImage{"orders": 2}
	c := newTestCoordinator(t, l, func(o *Options) {
		o.ShareSessionTimeout = time.Second
	})
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}
	r1 := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", 0, "orders"))
	r2 := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m2", 0, "orders"))
	wantCode(t, "join", r2.ErrorCode, nil)
	// m1 keeps heartbeating; m2 goes silent and must be expired.
	deadline := time.Now().Add(60 * time.Second)
	for {
		r1 = c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", r1.MemberEpoch))
		if r1.ErrorCode == kerr.UnknownMemberID.Code {
			r1 = c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", 0, "orders"))
		}
		wantCode(t, "m1 heartbeat", r1.ErrorCode, nil)
		d := describeShare(t, c, "sg")
		if len(d.Members) == 1 && d.Members[0].MemberID == "m1" && sgCount(r1) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("m2 not expired: %+v", d)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
}

// TestShareAssignor checks the simple assignor's promises on a few
// shapes: every partition assigned, no member idle while a partition
// could be shared, balanced counts.
func TestShareAssignor(t *testing.T) {
	a, b := topicIDOf("a"), topicIDOf("b")
	cases := []struct {
		name    string
		members []string
		subs    map[string][][16]byte
		parts   map[[16]byte][]int32
		// wantCounts is each member's number of partitions.
		wantCounts map[string]int
	}{
		{"fewer members", []string{"m1", "m2"}, map[string][][16]byte{"m1": {a}, "m2": {a}}, map[[16]byte][]int32{a: {0, 1, 2, 3}}, map[string]int{"m1": 2, "m2": 2}},
		{"more members", []string{"m1", "m2", "m3"}, map[string][][16]byte{"m1": {a}, "m2": {a}, "m3": {a}}, map[[16]byte][]int32{a: {0}}, map[string]int{"m1": 1, "m2": 1, "m3": 1}},
		{"two topics uneven", []string{"m1", "m2"}, map[string][][16]byte{"m1": {a, b}, "m2": {a, b}}, map[[16]byte][]int32{a: {0, 1, 2}, b: {0, 1, 2}}, map[string]int{"m1": 3, "m2": 3}},
		{"heterogeneous", []string{"m1", "m2"}, map[string][][16]byte{"m1": {a}, "m2": {b}}, map[[16]byte][]int32{a: {0, 1}, b: {0}}, map[string]int{"m1": 2, "m2": 1}},
		{"unsubscribed member", []string{"m1", "m2"}, map[string][][16]byte{"m1": {a}}, map[[16]byte][]int32{a: {0, 1}}, map[string]int{"m1": 2, "m2": 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := assignShare(tc.members, tc.subs, tc.parts, nil)
			covered := map[assignTP]bool{}
			for m, as := range out {
				if got := as.count(); got != tc.wantCounts[m] {
					t.Errorf("%s has %d partitions, want %d (%v)", m, got, tc.wantCounts[m], out)
				}
				for tid, ps := range as {
					if !slices.Contains(tc.subs[m], tid) {
						t.Errorf("%s got unsubscribed topic %x", m, tid[:2])
					}
					for _, p := range ps {
						covered[assignTP{tid, p}] = true
					}
				}
			}
			for tid, ps := range tc.parts {
				subscribed := false
				for _, s := range tc.subs {
					subscribed = subscribed || slices.Contains(s, tid)
				}
				for _, p := range ps {
					if subscribed && !covered[assignTP{tid, p}] {
						t.Errorf("partition %x/%d not assigned", tid[:2], p)
					}
				}
			}
		})
	}
}

// TestGroupConfigOverrides: a group's share.heartbeat.interval.ms and
// consumer.heartbeat.interval.ms (GROUP config resource) replace the
// broker's for that group only; share.session.timeout.ms expires its
// members.
func TestGroupConfigOverrides(t *testing.T) {
	l := newLogs()
	img := fakeImage{"orders": 1}
	var mu sync.Mutex
	overrides := map[string]map[string]string{
		"sg-fast": {"share.heartbeat.interval.ms": "6000", "share.session.timeout.ms": "50"},
		"cg-fast": {"consumer.heartbeat.interval.ms": "7000"},
	}
	c := newTestCoordinator(t, l, func(o *Options) {
		o.GroupConfig = func(g string) map[string]string {
			mu.Lock()
			defer mu.Unlock()
			return overrides[g]
		}
	})
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}
	if r := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg-fast", "m1", 0, "orders")); r.HeartbeatIntervalMillis != 6000 {
		t.Fatalf("share override: %+v", r)
	}
	if r := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg-plain", "m1", 0, "orders")); r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("share default: %+v", r)
	}
	if r := c.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq("cg-fast", "m1", "orders")); r.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("consumer override: %+v", r)
	}
	// The 50 ms session of sg-fast expires its silent member.
	deadline := time.Now().Add(30 * time.Second)
	for len(describeShare(t, c, "sg-fast").Members) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("sg-fast member not expired: %+v", describeShare(t, c, "sg-fast"))
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	if n := len(describeShare(t, c, "sg-plain").Members); n != 1 {
		t.Fatalf("sg-plain has %d members, want 1 (45 s session)", n)
	}
}

// TestShareGroupLostAnswer: a member whose answer moving it to a new epoch
// was lost heartbeats with its previous epoch; it is accepted and gets its
// assignment again. An older epoch still is fenced.
func TestShareGroupLostAnswer(t *testing.T) {
	l := newLogs()
	img := fakeImage{"orders": 2}
	c := newTestCoordinator(t, l)
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}
	r1 := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", 0, "orders"))
	wantCode(t, "join", r1.ErrorCode, nil)
	first := r1.MemberEpoch
	// m2 joins: m1's next answer moves it on, and is "lost".
	c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m2", 0, "orders"))
	lost := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", first))
	wantCode(t, "heartbeat", lost.ErrorCode, nil)
	if lost.MemberEpoch <= first {
		t.Fatalf("m1 not moved on: %+v", lost)
	}
	again := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", first))
	wantCode(t, "previous epoch", again.ErrorCode, nil)
	if again.MemberEpoch != lost.MemberEpoch || sgCount(again) != 1 {
		t.Fatalf("previous epoch answered %+v, want epoch %d and the assignment", again, lost.MemberEpoch)
	}
	if r := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", first-1)); first > 1 && r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("older epoch: %+v", r)
	}
	unchanged := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", again.MemberEpoch))
	if unchanged.ErrorCode != 0 || unchanged.Assignment != nil {
		t.Fatalf("an unchanged heartbeat carries an assignment: %+v", unchanged)
	}
}

// TestShareAssignorSticky: members keep their partitions as far as
// balance allows when one joins or leaves, and the promises of
// TestShareAssignor hold after each step.
func TestShareAssignorSticky(t *testing.T) {
	a := topicIDOf("a")
	parts := map[[16]byte][]int32{a: {0, 1, 2, 3, 4, 5}}
	subs := func(ms ...string) map[string][][16]byte {
		out := map[string][][16]byte{}
		for _, m := range ms {
			out[m] = [][16]byte{a}
		}
		return out
	}
	moved := func(prev, next map[string]Assignment) int {
		n := 0
		for m, as := range next {
			for _, p := range as[a] {
				if !prev[m].has(a, p) {
					n++
				}
			}
		}
		return n
	}
	two := assignShare([]string{"m1", "m2"}, subs("m1", "m2"), parts, nil)
	three := assignShare([]string{"m1", "m2", "m3"}, subs("m1", "m2", "m3"), parts, two)
	if n := moved(two, three); n != 2 {
		t.Fatalf("m3 joining moved %d partitions, want 2: %v -> %v", n, two, three)
	}
	for m, as := range three {
		if as.count() != 2 {
			t.Fatalf("%s has %d partitions: %v", m, as.count(), three)
		}
	}
	back := assignShare([]string{"m1", "m3"}, subs("m1", "m3"), parts, three)
	if n := moved(three, back); n != 2 {
		t.Fatalf("m2 leaving moved %d partitions, want 2: %v -> %v", n, three, back)
	}
	// More members than partitions: each keeps its partition while the
	// sharing stays even.
	one := map[[16]byte][]int32{a: {0, 1}}
	four := assignShare([]string{"m1", "m2", "m3", "m4"}, subs("m1", "m2", "m3", "m4"), one, nil)
	five := assignShare([]string{"m1", "m2", "m3", "m4", "m5"}, subs("m1", "m2", "m3", "m4", "m5"), one, four)
	if n := moved(four, five); n != 1 {
		t.Fatalf("m5 joining moved %d, want only its own: %v -> %v", n, four, five)
	}
	counts := map[int32]int{}
	for _, as := range five {
		for _, p := range as[a] {
			counts[p]++
		}
	}
	if counts[0]+counts[1] != 5 || counts[0] < 2 || counts[1] < 2 {
		t.Fatalf("sharing uneven: %v", counts)
	}
}

// TestShareSetPersister: a Persister set after New is used from then on.
func TestShareSetPersister(t *testing.T) {
	l := newLogs()
	img := fakeImage{"orders": 1, "audit": 1}
	c := newTestCoordinator(t, l)
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}
	r := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", 0, "orders"))
	wantCode(t, "join without a Persister", r.ErrorCode, nil)
	p := newFakePersister()
	c.SetPersister(p)
	r = c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", r.MemberEpoch, "orders", "audit"))
	wantCode(t, "subscribe", r.ErrorCode, nil)
	if keys := p.keys(); len(keys) != 1 || keys[0].TopicID != topicIDOf("audit") {
		t.Fatalf("initialized through the set Persister: %v, want audit's partition only", keys)
	}
}

// TestShareDeleteGroupOfDeletedTopic: an empty share group whose
// initialized share-partitions belong to a topic deleted since can still
// be deleted (the share coordinator answers UNKNOWN_TOPIC_OR_PARTITION for
// their state); another Persister error fails the deletion.
func TestShareDeleteGroupOfDeletedTopic(t *testing.T) {
	l := newLogs()
	img := fakeImage{"orders": 1}
	p := newFakePersister()
	c := newTestCoordinator(t, l, func(o *Options) { o.Persister = p })
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}
	wantCode(t, "join", c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", 0, "orders")).ErrorCode, nil)
	wantCode(t, "leave", c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", -1)).ErrorCode, nil)
	k := SharePartitionKey{Group: "sg", TopicID: topicIDOf("orders"), Partition: 0}
	p.mu.Lock()
	p.mu.deleteErr = map[SharePartitionKey]error{k: fmt.Errorf("routing: %w", kerr.CoordinatorNotAvailable)}
	p.mu.Unlock()
	del := c.DeleteGroups(ctx, &kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"sg"}})
	wantCode(t, "delete while the share coordinator is away", del.Groups[0].ErrorCode, kerr.CoordinatorNotAvailable)
	p.mu.Lock()
	p.mu.deleteErr[k] = kerr.UnknownTopicOrPartition
	p.mu.Unlock()
	del = c.DeleteGroups(ctx, &kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"sg"}})
	wantCode(t, "delete with the topic gone", del.Groups[0].ErrorCode, nil)
}
