package coordinator

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// fakeImage is a TopicImage over a map, topic IDs derived from names.
type fakeImage map[string]int32

func topicIDOf(name string) [16]byte {
	var id [16]byte
	copy(id[:], name)
	id[15] = 1
	return id
}

func (f fakeImage) TopicByName(name string) ([16]byte, int32, bool) {
	n, ok := f[name]
	return topicIDOf(name), n, ok
}

func (f fakeImage) TopicNames() []string { return slices.Sorted(maps.Keys(f)) }

var testCGConfig = ConsumerGroupConfig{
	SessionTimeout:    10 * time.Second,
	HeartbeatInterval: time.Second,
	MaxSize:           3,
	Assignors:         []string{"uniform", "range"},
}

// cgClient is a well-behaved KIP-848 client: it owns what the last
// assignment said, and reports it.
type cgClient struct {
	id    string
	epoch int32
	owned Assignment
	sent  bool // joined
}

func (c *cgClient) request(group string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = 1
	r.Group = group
	r.MemberID = c.id
	r.MemberEpoch = c.epoch
	r.RebalanceTimeoutMillis = 5000
	if !c.sent {
		r.SubscribedTopicNames = topics
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		return r
	}
	r.RebalanceTimeoutMillis = -1
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, id := range c.owned.topicIDs() {
		r.Topics = append(r.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: slices.Clone(c.owned[id])})
	}
	return r
}

// hb sends one heartbeat and applies the answer as a client would.
func (c *cgClient) hb(t *testing.T, g *ConsumerGroup, now time.Time, img TopicImage, topics ...string) (*kmsg.ConsumerGroupHeartbeatResponse, []wire.Record) {
	t.Helper()
	req := c.request(g.id, topics...)
	if e, msg := validateHeartbeat(g.cfg, req); e != nil {
		t.Fatalf("%s: invalid request: %v %s", c.id, e, msg)
	}
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	recs := g.Heartbeat(now, Client{ID: "client-" + c.id, Host: "/127.0.0.1"}, img, req, resp)
	if resp.ErrorCode != 0 {
		return resp, recs
	}
	c.sent = true
	c.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		c.owned = Assignment{}
		for _, tp := range resp.Assignment.Topics {
			for _, p := range tp.Partitions {
				c.owned.add(tp.TopicID, p)
			}
		}
	}
	return resp, recs
}

// checkDisjoint fails if two clients own the same partition.
func checkDisjoint(t *testing.T, clients ...*cgClient) {
	t.Helper()
	seen := map[assignTP]string{}
	for _, c := range clients {
		for id, ps := range c.owned {
			for _, p := range ps {
				if o, ok := seen[assignTP{id, p}]; ok {
					t.Fatalf("partition %v/%d owned by %s and %s", id[:3], p, o, c.id)
				}
				seen[assignTP{id, p}] = c.id
			}
		}
	}
}

func TestConsumerGroupJoinRevokeOrder(t *testing.T) {
	now := time.Unix(1000, 0)
	img := fakeImage{"orders": 6}
	g := NewConsumerGroup(&testCGConfig, "g", now)
	a := &cgClient{id: "a"}
	resp, recs := a.hb(t, g, now, img, "orders")
	if resp.ErrorCode != 0 || resp.MemberEpoch != 2 || a.owned.count() != 6 || len(recs) == 0 {
		t.Fatalf("first join: code %d epoch %d owned %d recs %d", resp.ErrorCode, resp.MemberEpoch, a.owned.count(), len(recs))
	}
	if got := g.StateName(); got != "Stable" {
		t.Fatalf("state %s, want Stable", got)
	}
	b := &cgClient{id: "b"}
	resp, _ = b.hb(t, g, now, img, "orders")
	if resp.MemberEpoch != 3 || b.owned.count() != 0 {
		t.Fatalf("b joins: epoch %d owned %d; want 3 and nothing yet (a still owns)", resp.MemberEpoch, b.owned.count())
	}
	if g.members["b"].state != memberUnreleased || g.StateName() != "Reconciling" {
		t.Fatalf("b state %d group %s", g.members["b"].state, g.StateName())
	}
	checkDisjoint(t, a, b)
	// a learns it must revoke 3; its epoch stays 2 until it did.
	resp, _ = a.hb(t, g, now, img)
	if resp.MemberEpoch != 2 || a.owned.count() != 3 || g.members["a"].state != memberUnrevoked {
		t.Fatalf("a revoking: epoch %d owned %d state %d", resp.MemberEpoch, a.owned.count(), g.members["a"].state)
	}
	checkDisjoint(t, a, b)
	// b still waits: a has not acknowledged.
	b.hb(t, g, now, img)
	if b.owned.count() != 0 {
		t.Fatalf("b got %d partitions before a revoked", b.owned.count())
	}
	// a acknowledges (its request lists only the 3 it kept).
	resp, _ = a.hb(t, g, now, img)
	if resp.MemberEpoch != 3 || g.members["a"].state != memberStable {
		t.Fatalf("a after revoking: epoch %d state %d", resp.MemberEpoch, g.members["a"].state)
	}
	b.hb(t, g, now, img)
	if b.owned.count() != 3 || g.StateName() != "Stable" {
		t.Fatalf("b after release: owned %d group %s", b.owned.count(), g.StateName())
	}
	checkDisjoint(t, a, b)

	// b leaves: a gets everything back at the next heartbeat.
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Version, leave.Group, leave.MemberID, leave.MemberEpoch = 1, "g", "b", -1
	lresp := leave.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	g.Heartbeat(now, Client{}, img, leave, lresp)
	if lresp.ErrorCode != 0 || lresp.MemberEpoch != -1 || g.epoch != 4 {
		t.Fatalf("leave: code %d epoch %d group epoch %d", lresp.ErrorCode, lresp.MemberEpoch, g.epoch)
	}
	if g.StateName() != "Assigning" {
		t.Fatalf("after leave: %s, want Assigning", g.StateName())
	}
	a.hb(t, g, now, img)
	if a.owned.count() != 6 || a.epoch != 4 {
		t.Fatalf("a after b left: owned %d epoch %d", a.owned.count(), a.epoch)
	}
}

func TestConsumerGroupErrors(t *testing.T) {
	now := time.Unix(1000, 0)
	img := fakeImage{"orders": 3}
	g := NewConsumerGroup(&testCGConfig, "g", now)
	a := &cgClient{id: "a"}
	a.hb(t, g, now, img, "orders")

	send := func(mut func(r *kmsg.ConsumerGroupHeartbeatRequest)) int16 {
		r := a.request("g")
		mut(r)
		if e, _ := validateHeartbeat(g.cfg, r); e != nil {
			return e.Code
		}
		resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		recs := g.Heartbeat(now, Client{}, img, r, resp)
		if resp.ErrorCode != 0 && len(recs) > 0 {
			t.Fatalf("error %d with %d records", resp.ErrorCode, len(recs))
		}
		return resp.ErrorCode
	}
	cases := []struct {
		name string
		mut  func(r *kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"newer epoch", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 5 }, kerr.FencedMemberEpoch},
		{"unknown member", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "zz" }, kerr.UnknownMemberID},
		{"empty member v1", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		{"empty group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidRequest},
		{"join without rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch, r.RebalanceTimeoutMillis, r.SubscribedTopicNames = 0, -1, []string{"orders"}
		}, kerr.InvalidRequest},
		{"join owning partitions", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch, r.RebalanceTimeoutMillis, r.SubscribedTopicNames = 0, 1000, []string{"orders"}
		}, kerr.InvalidRequest},
		{"join without subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch, r.RebalanceTimeoutMillis, r.Topics = 0, 1000, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}, kerr.InvalidRequest},
		{"bad assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = ptr("sticky") }, kerr.UnsupportedAssignor},
		{"bad regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = ptr("(") }, kerr.InvalidRegularExpression},
		// Kafka 4.4 judges the member before the regex (compat-tests/diff fuzzing).
		{"bad regex from an unknown member", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberID, r.SubscribedTopicRegex = "zz", ptr("(")
		}, kerr.UnknownMemberID},
		{"bad regex with a newer epoch", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch, r.SubscribedTopicRegex = 5, ptr("(")
		}, kerr.FencedMemberEpoch},
		{"static leave without instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest},
		{"epoch -3", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest},
		{"unknown leave", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.MemberEpoch = "zz", -1 }, kerr.UnknownMemberID},
	}
	for _, tc := range cases {
		if got := send(tc.mut); got != tc.want.Code {
			t.Errorf("%s: code %d, want %s", tc.name, got, tc.want.Message)
		}
	}
	// The group is full at 3.
	for _, id := range []string{"b", "c"} {
		c := &cgClient{id: id}
		if resp, _ := c.hb(t, g, now, img, "orders"); resp.ErrorCode != 0 {
			t.Fatalf("%s: %d", id, resp.ErrorCode)
		}
	}
	d := &cgClient{id: "d"}
	if resp, _ := d.hb(t, g, now, img, "orders"); resp.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("4th member: %d, want GROUP_MAX_SIZE_REACHED", resp.ErrorCode)
	}
}

func TestConsumerGroupPreviousEpochAccepted(t *testing.T) {
	now := time.Unix(1000, 0)
	img := fakeImage{"orders": 4}
	g := NewConsumerGroup(&testCGConfig, "g", now)
	a := &cgClient{id: "a"}
	a.hb(t, g, now, img, "orders")
	b := &cgClient{id: "b"}
	b.hb(t, g, now, img, "orders")
	a.hb(t, g, now, img) // told to revoke
	a.hb(t, g, now, img) // revoked; epoch 3 (answer "lost" below)
	if a.epoch != 3 {
		t.Fatalf("epoch %d", a.epoch)
	}
	// The client retries with its previous epoch, owning a subset: fine.
	a.epoch = 2
	if resp, _ := a.hb(t, g, now, img); resp.ErrorCode != 0 || resp.MemberEpoch != 3 {
		t.Fatalf("previous epoch retry: code %d epoch %d", resp.ErrorCode, resp.MemberEpoch)
	}
	// With partitions it was never given: fenced.
	a.epoch = 2
	a.owned.add(topicIDOf("orders"), 3)
	a.owned.add(topicIDOf("orders"), 2)
	if resp, _ := a.hb(t, g, now, img); resp.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("previous epoch with foreign partitions: code %d", resp.ErrorCode)
	}
}

func TestConsumerGroupSessionAndRebalanceTimeouts(t *testing.T) {
	now := time.Unix(1000, 0)
	img := fakeImage{"orders": 4}
	g := NewConsumerGroup(&testCGConfig, "g", now)
	a := &cgClient{id: "a"}
	a.hb(t, g, now, img, "orders")
	b := &cgClient{id: "b"}
	b.hb(t, g, now, img, "orders")
	// a is told to revoke and then never acknowledges: after its
	// rebalance timeout (5 s) it is fenced, though its session (10 s)
	// is kept alive by b's... no: a stops heartbeating entirely.
	a.hb(t, g, now, img)
	if d, ok := g.NextDeadline(); !ok || !d.Equal(now.Add(5*time.Second)) {
		t.Fatalf("next deadline %v %v, want the rebalance timeout", d, ok)
	}
	if recs := g.Tick(now.Add(4 * time.Second)); len(recs) != 0 {
		t.Fatalf("tick before deadline wrote %d records", len(recs))
	}
	recs := g.Tick(now.Add(5 * time.Second))
	if len(recs) == 0 || g.members["a"] != nil {
		t.Fatal("a not fenced after its rebalance timeout")
	}
	now = now.Add(5 * time.Second)
	b.hb(t, g, now, img)
	b.hb(t, g, now, img)
	if b.owned.count() != 4 {
		t.Fatalf("b owns %d after a was fenced", b.owned.count())
	}
	// b crashes: gone after the session timeout.
	g.Tick(now.Add(9 * time.Second))
	if g.members["b"] == nil {
		t.Fatal("b expired early")
	}
	g.Tick(now.Add(10 * time.Second))
	if !g.Empty() || g.StateName() != "Empty" {
		t.Fatalf("b not expired: %d members, %s", len(g.members), g.StateName())
	}
	// a's stale heartbeat is now unknown.
	if resp, _ := a.hb(t, g, now, img); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("fenced member: %d", resp.ErrorCode)
	}
}

func TestConsumerGroupRegexFollowsTopics(t *testing.T) {
	now := time.Unix(1000, 0)
	img := fakeImage{"orders-eu": 2, "payments": 2}
	g := NewConsumerGroup(&testCGConfig, "g", now)
	a := &cgClient{id: "a"}
	req := a.request("g")
	req.SubscribedTopicRegex = ptr("orders-.*")
	req.SubscribedTopicNames = nil
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	if e, _ := validateHeartbeat(g.cfg, req); e != nil {
		t.Fatal(e)
	}
	g.Heartbeat(now, Client{}, img, req, resp)
	if resp.ErrorCode != 0 || resp.Assignment == nil || len(resp.Assignment.Topics) != 1 || resp.Assignment.Topics[0].TopicID != topicIDOf("orders-eu") {
		t.Fatalf("regex join: %+v", resp)
	}
	a.sent, a.epoch = true, resp.MemberEpoch
	a.owned = Assignment{topicIDOf("orders-eu"): {0, 1}}
	// A new matching topic appears: the next heartbeat bumps the epoch
	// and assigns it.
	img["orders-us"] = 3
	r2, _ := a.hb(t, g, now, img)
	if r2.MemberEpoch != 3 || a.owned.count() != 5 {
		t.Fatalf("after topic creation: epoch %d owned %d", r2.MemberEpoch, a.owned.count())
	}
	delete(img, "orders-eu")
	a.hb(t, g, now, img)
	a.hb(t, g, now, img)
	if a.owned.count() != 3 || a.owned.has(topicIDOf("orders-eu"), 0) {
		t.Fatalf("after topic deletion: owned %v", a.owned)
	}
}

func TestConsumerGroupStaticMember(t *testing.T) {
	now := time.Unix(1000, 0)
	img := fakeImage{"orders": 4}
	g := NewConsumerGroup(&testCGConfig, "g", now)
	join := func(member string) *kmsg.ConsumerGroupHeartbeatResponse {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Version, r.Group, r.MemberID, r.MemberEpoch = 1, "g", member, 0
		r.InstanceID = ptr("i1")
		r.RebalanceTimeoutMillis = 1000
		r.SubscribedTopicNames = []string{"orders"}
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		g.Heartbeat(now, Client{}, img, r, resp)
		return resp
	}
	if r := join("m1"); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("static join: %d %d", r.ErrorCode, r.MemberEpoch)
	}
	if r := join("m2"); r.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("second instance: %d", r.ErrorCode)
	}
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Version, leave.Group, leave.MemberID, leave.MemberEpoch, leave.InstanceID = 1, "g", "m1", -2, ptr("i1")
	lr := leave.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	g.Heartbeat(now, Client{}, img, leave, lr)
	if lr.ErrorCode != 0 || lr.MemberEpoch != -2 || g.epoch != 2 {
		t.Fatalf("static leave: %d %d, group epoch %d (must not bump)", lr.ErrorCode, lr.MemberEpoch, g.epoch)
	}
	r := join("m2")
	if r.ErrorCode != 0 || r.Assignment == nil || len(r.Assignment.Topics[0].Partitions) != 4 || g.epoch != 2 {
		t.Fatalf("static rejoin: %+v, group epoch %d", r, g.epoch)
	}
	if g.members["m1"] != nil || g.static["i1"] != "m2" {
		t.Fatal("old static member id still present")
	}
}

// TestConsumerGroupSimulation drives members joining, leaving and
// crashing in a fixed pseudo-random order and checks after every step
// that no two clients own a partition and that, once everyone heartbeats
// enough, all partitions are owned and balanced.
func TestConsumerGroupSimulation(t *testing.T) {
	cfg := testCGConfig
	cfg.MaxSize = 100
	now := time.Unix(1000, 0)
	img := fakeImage{"a": 7, "b": 5}
	g := NewConsumerGroup(&cfg, "g", now)
	var clients []*cgClient
	seed := uint32(7)
	rnd := func(n int) int { seed = seed*1664525 + 1013904223; return int(seed>>16) % n }
	settle := func() {
		for range 4 {
			for _, c := range clients {
				c.hb(t, g, now, img, "a", "b")
				checkDisjoint(t, clients...)
			}
		}
		total, lo, hi := 0, 1<<30, 0
		for _, c := range clients {
			n := c.owned.count()
			total += n
			lo, hi = min(lo, n), max(hi, n)
		}
		if len(clients) > 0 && (total != 12 || hi-lo > 1) {
			t.Fatalf("after settling with %d members: total %d, spread %d-%d", len(clients), total, lo, hi)
		}
	}
	for step := range 40 {
		switch op := rnd(3); {
		case op == 0 || len(clients) < 2:
			c := &cgClient{id: fmt.Sprintf("m%d", step)}
			clients = append(clients, c)
			c.hb(t, g, now, img, "a", "b")
		case op == 1:
			i := rnd(len(clients))
			leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			leave.Version, leave.Group, leave.MemberID, leave.MemberEpoch = 1, "g", clients[i].id, -1
			g.Heartbeat(now, Client{}, img, leave, leave.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse))
			clients = slices.Delete(clients, i, i+1)
		default:
			// A few heartbeats in random order, without settling.
			for range 3 {
				clients[rnd(len(clients))].hb(t, g, now, img)
			}
		}
		checkDisjoint(t, clients...)
		if step%5 == 4 {
			settle()
		}
	}
	settle()
}

// loadApplier returns a function that applies records to ls as a load
// does, failing t on a record that does not apply.
func loadApplier(t *testing.T, ls *loadState) func(recs []wire.Record) {
	return func(recs []wire.Record) {
		t.Helper()
		for _, r := range recs {
			if err := ls.apply(r.Key, r.Value); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestConsumerGroupRecordsReload writes a group's records through a load
// state and checks the restored group matches.
func TestConsumerGroupRecordsReload(t *testing.T) {
	now := time.Unix(1000, 0)
	img := fakeImage{"orders": 5}
	g := NewConsumerGroup(&testCGConfig, "g", now)
	ls := newLoadState()
	apply := loadApplier(t, ls)
	a, b, c := &cgClient{id: "a"}, &cgClient{id: "b"}, &cgClient{id: "c"}
	for _, cl := range []*cgClient{a, b, c} {
		_, recs := cl.hb(t, g, now, img, "orders")
		apply(recs)
	}
	_, recs := a.hb(t, g, now, img) // a revoking
	apply(recs)
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Version, leave.Group, leave.MemberID, leave.MemberEpoch = 1, "g", "c", -1
	apply(g.Heartbeat(now, Client{}, img, leave, leave.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)))

	r := restoreConsumerGroup(&testCGConfig, "g", ls.consumerGroups["g"], now)
	if r.epoch != g.epoch || r.assignmentEpoch != g.assignmentEpoch || len(r.members) != 2 {
		t.Fatalf("restored epochs %d/%d members %d, want %d/%d 2", r.epoch, r.assignmentEpoch, len(r.members), g.epoch, g.assignmentEpoch)
	}
	if !maps.Equal(r.meta, g.meta) {
		t.Fatalf("meta %v want %v", r.meta, g.meta)
	}
	for id, m := range g.members {
		rm := r.members[id]
		if rm == nil || rm.epoch != m.epoch || rm.prevEpoch != m.prevEpoch || rm.state != m.state ||
			!rm.assigned.equal(m.assigned) || !rm.pendingRevocation.equal(m.pendingRevocation) ||
			!slices.Equal(rm.topicNames, m.topicNames) || rm.clientID != m.clientID || rm.rebalanceTimeout != m.rebalanceTimeout {
			t.Fatalf("member %s restored as %+v, want %+v", id, rm, m)
		}
		if !r.target[id].equal(g.target[id]) {
			t.Fatalf("target of %s: %v want %v", id, r.target[id], g.target[id])
		}
	}
	if r.StateName() != g.StateName() {
		t.Fatalf("state %s want %s", r.StateName(), g.StateName())
	}
	// Tombstones of the group records drop it.
	apply(recsCGGroupGone("g"))
	if ls.consumerGroups["g"] != nil {
		t.Fatal("group survived its tombstones")
	}
}

// FuzzConsumerGroupRecords feeds arbitrary KIP-848 record keys and values
// to the loader: an error or a state, never a panic, and a restorable
// group.
func FuzzConsumerGroupRecords(f *testing.F) {
	now := time.Unix(1000, 0)
	g := NewConsumerGroup(&testCGConfig, "g", now)
	a := &cgClient{id: "a"}
	req := a.request("g", "orders")
	req.InstanceID, req.RackID, req.SubscribedTopicRegex = ptr("i"), ptr("r"), ptr("ord.*")
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	for _, r := range g.Heartbeat(now, Client{ID: "c", Host: "/h"}, fakeImage{"orders": 3}, req, resp) {
		f.Add(r.Key, r.Value)
	}
	classic := recCGMember("g", classicTestMember())
	f.Add(classic.Key, classic.Value)
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if len(key) < 2 {
			return
		}
		ls := newLoadState()
		if err := ls.apply(key, value); err != nil {
			return
		}
		for id, l := range ls.consumerGroups {
			rg := restoreConsumerGroup(&testCGConfig, id, l, now)
			rg.StateName()
			rg.Describe(rg.topicName)
		}
	})
}

// TestConsumerGroupAssignmentEpochs checks KIP-1251's commit rule: an
// epoch older than the member's is good for the partitions the member had
// at that epoch, and the epochs survive a reload.
func TestConsumerGroupAssignmentEpochs(t *testing.T) {
	now := time.Unix(1000, 0)
	img := fakeImage{"orders": 4}
	g := NewConsumerGroup(&testCGConfig, "g", now)
	ls := newLoadState()
	apply := loadApplier(t, ls)
	a, b := &cgClient{id: "a"}, &cgClient{id: "b"}
	_, recs := a.hb(t, g, now, img, "orders")
	apply(recs)
	_, recs = b.hb(t, g, now, img, "orders")
	apply(recs)
	for range 2 { // a revokes, then acknowledges: epoch 3, keeping 2 partitions from epoch 2
		_, recs = a.hb(t, g, now, img)
		apply(recs)
	}
	_, recs = b.hb(t, g, now, img) // b takes the released partitions at epoch 3
	apply(recs)
	if a.epoch != 3 || b.epoch != 3 || a.owned.count() != 2 || b.owned.count() != 2 {
		t.Fatalf("epochs %d/%d owned %d/%d", a.epoch, b.epoch, a.owned.count(), b.owned.count())
	}
	var aKept, bGot int32 = -1, -1
	for _, p := range a.owned[topicIDOf("orders")] {
		aKept = p
	}
	for _, p := range b.owned[topicIDOf("orders")] {
		bGot = p
	}
	check := func(g *ConsumerGroup) {
		t.Helper()
		if code := g.OffsetCommitCheck(9, 2, "a"); code != 0 {
			t.Fatalf("a at its previous epoch: %d", code)
		}
		if code := g.PartitionCommitCheck(2, "a", "orders", aKept); code != 0 {
			t.Fatalf("a's kept partition at epoch 2: %d", code)
		}
		if code := g.PartitionCommitCheck(2, "a", "orders", bGot); code != kerr.StaleMemberEpoch.Code {
			t.Fatalf("a committing b's partition at epoch 2: %d", code)
		}
		if code := g.PartitionCommitCheck(2, "b", "orders", bGot); code != kerr.StaleMemberEpoch.Code {
			t.Fatalf("b's partition assigned at epoch 3, committed at 2: %d", code)
		}
		if code := g.OffsetCommitCheck(9, 4, "a"); code != kerr.StaleMemberEpoch.Code {
			t.Fatalf("future epoch: %d", code)
		}
		if code := g.CommitCheck(9, 2, "a"); code != kerr.StaleMemberEpoch.Code {
			t.Fatalf("strict check (transactional commits) at epoch 2: %d", code)
		}
	}
	check(g)
	check(restoreConsumerGroup(&testCGConfig, "g", ls.consumerGroups["g"], now))
}
