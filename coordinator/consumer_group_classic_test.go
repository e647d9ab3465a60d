package coordinator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// migImage is a fakeImage that is also the coordinator's TopicResolver,
// as the broker's metadata image is.
type migImage struct{ fakeImage }

func (m migImage) TopicName(id [16]byte) (string, bool) {
	for n := range m.fakeImage {
		if topicIDOf(n) == id {
			return n, true
		}
	}
	return "", false
}

func (m migImage) TopicID(name string) ([16]byte, bool) {
	_, ok := m.fakeImage[name]
	return topicIDOf(name), ok
}

// assignmentBytes is a classic consumer protocol assignment of one topic.
func assignmentBytes(topic string, parts ...int32) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: topic, Partitions: parts}}
	return a.AppendTo(nil)
}

// classicSync sends a follower's SyncGroup and returns the partitions of
// topic it was given.
func classicSync(t *testing.T, c *Coordinator, group, member string, gen int32, want *kerr.Error) []int32 {
	t.Helper()
	s := kmsg.NewPtrSyncGroupRequest()
	s.Version = 5
	s.Group, s.MemberID, s.Generation = group, member, gen
	s.ProtocolType, s.Protocol = ptr("consumer"), ptr("range")
	r := c.SyncGroup(t.Context(), s)
	wantCode(t, "sync "+member, r.ErrorCode, want)
	if want != nil {
		return nil
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(r.MemberAssignment); err != nil {
		t.Fatalf("sync %s: assignment %x: %v", member, r.MemberAssignment, err)
	}
	var out []int32
	for _, tp := range a.Topics {
		out = append(out, tp.Partitions...)
	}
	slices.Sort(out)
	return out
}

func classicHeartbeat(c *Coordinator, group, member string, gen int32) int16 {
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version = 4
	hb.Group, hb.MemberID, hb.Generation = group, member, gen
	return c.Heartbeat(context.Background(), hb).ErrorCode
}

// liveClassicGroup builds a classic group of two members, a (leader) and
// b, that split orders' four partitions 0-1 and 2-3; it returns their ids
// and the generation.
func liveClassicGroup(t *testing.T, c *Coordinator, group string) (a, b string, gen int32) {
	t.Helper()
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}
	ra := c.JoinGroup(ctx, cl, joinReq(group, "", "orders"))
	wantCode(t, "a first join", ra.ErrorCode, kerr.MemberIDRequired)
	a = ra.MemberID
	rb := c.JoinGroup(ctx, cl, joinReq(group, "", "orders"))
	wantCode(t, "b first join", rb.ErrorCode, kerr.MemberIDRequired)
	b = rb.MemberID
	joined := make(chan *kmsg.JoinGroupResponse, 2)
	go func() { joined <- c.JoinGroup(ctx, cl, joinReq(group, a, "orders")) }()
	go func() { joined <- c.JoinGroup(ctx, cl, joinReq(group, b, "orders")) }()
	j1, j2 := <-joined, <-joined
	wantCode(t, "join 1", j1.ErrorCode, nil)
	wantCode(t, "join 2", j2.ErrorCode, nil)
	leader := j1.LeaderID
	if leader != a && leader != b {
		t.Fatalf("leader %q", leader)
	}
	follower := a
	if leader == a {
		follower = b
	}
	gen = j1.Generation
	synced := make(chan []int32, 1)
	go func() {
		s := kmsg.NewPtrSyncGroupRequest()
		s.Version = 5
		s.Group, s.MemberID, s.Generation = group, follower, gen
		s.ProtocolType, s.Protocol = ptr("consumer"), ptr("range")
		r := c.SyncGroup(ctx, s)
		var as kmsg.ConsumerMemberAssignment
		if r.ErrorCode != 0 || as.ReadFrom(r.MemberAssignment) != nil {
			synced <- nil
			return
		}
		synced <- as.Topics[0].Partitions
	}()
	s := kmsg.NewPtrSyncGroupRequest()
	s.Version = 5
	s.Group, s.MemberID, s.Generation = group, leader, gen
	s.ProtocolType, s.Protocol = ptr("consumer"), ptr("range")
	s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{
		{MemberID: a, MemberAssignment: assignmentBytes("orders", 0, 1)},
		{MemberID: b, MemberAssignment: assignmentBytes("orders", 2, 3)},
	}
	wantCode(t, "leader sync", c.SyncGroup(ctx, s).ErrorCode, nil)
	if got := <-synced; len(got) != 2 {
		t.Fatalf("follower sync: %v", got)
	}
	return a, b, gen
}

// TestOnlineMigration rolls a live classic group to KIP-848 and back, as
// a rolling restart does (Kafka 4.4's online migration, javap of
// GroupMetadataManager): a ConsumerGroupHeartbeat converts the group
// keeping its classic members with their partitions, epochs and offsets;
// the classic members are told to rejoin, rejoin at the new epoch and get
// partitions that never overlap the KIP-848 member's; everything survives
// a restart; when the KIP-848 member leaves, the group is classic again.
func TestOnlineMigration(t *testing.T) {
	l := newLogs()
	img := migImage{fakeImage{"orders": 4}}
	c := newTestCoordinator(t, l, func(o *Options) { o.Topics = img })
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}

	a, b, gen := liveClassicGroup(t, c, "g")
	wantCode(t, "classic commit", commitCodes(c.OffsetCommit(ctx, commitReq("g", a, gen, "orders", map[int32]int64{0: 10, 1: 11})))[0], nil)

	// Upgrade: member c joins with ConsumerGroupHeartbeat.
	resp := c.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq("g", "c", "orders"))
	wantCode(t, "KIP-848 join of a live classic group", resp.ErrorCode, nil)
	if resp.MemberEpoch != gen+1 {
		t.Fatalf("member epoch %d, want %d (the classic generation bumped)", resp.MemberEpoch, gen+1)
	}
	if n := len(resp.Assignment.Topics); n != 0 {
		t.Fatalf("c got partitions the classic members still hold: %+v", resp.Assignment)
	}
	d := cgDescribe(t, c, "g")
	if d.ErrorCode != 0 || len(d.Members) != 3 || d.Epoch != gen+1 {
		t.Fatalf("describe after upgrade: %+v", d)
	}
	classic := 0
	for _, m := range d.Members {
		if m.MemberType == 0 {
			classic++
		}
	}
	if classic != 2 {
		t.Fatalf("%d classic members, want 2", classic)
	}
	if got := fetchAll(t, c, "g"); got["orders/0"] != 10 || got["orders/1"] != 11 {
		t.Fatalf("offsets after upgrade: %v", got)
	}

	// The classic members rejoin at the new epoch.
	wantCode(t, "a heartbeat after upgrade", classicHeartbeat(c, "g", a, gen), kerr.RebalanceInProgress)
	ja := c.JoinGroup(ctx, cl, joinReq("g", a, "orders"))
	wantCode(t, "a rejoin", ja.ErrorCode, nil)
	if ja.Generation != gen+1 || ja.LeaderID != "" || len(ja.Members) != 0 || ja.Protocol == nil || *ja.Protocol != "range" {
		t.Fatalf("a rejoin: %+v", ja)
	}
	pa := classicSync(t, c, "g", a, ja.Generation, nil)
	wantCode(t, "a heartbeat", classicHeartbeat(c, "g", a, ja.Generation), nil)
	wantCode(t, "a commit at the new generation", commitCodes(c.OffsetCommit(ctx, commitReq("g", a, ja.Generation, "orders", map[int32]int64{0: 12})))[0], nil)
	wantCode(t, "a commit at a newer generation", commitCodes(c.OffsetCommit(ctx, commitReq("g", a, ja.Generation+1, "orders", map[int32]int64{0: 13})))[0], kerr.IllegalGeneration)
	old := commitReq("g", a, ja.Generation, "orders", map[int32]int64{0: 12})
	old.Version = 2 // a classic member commits with any version
	wantCode(t, "a commit v2", commitCodes(c.OffsetCommit(ctx, old))[0], nil)
	jb := c.JoinGroup(ctx, cl, joinReq("g", b, "orders"))
	wantCode(t, "b rejoin", jb.ErrorCode, nil)
	pb := classicSync(t, c, "g", b, jb.Generation, nil)

	// c gets what the classic members released.
	hb := cgJoinReq("g", "c", "orders")
	hb.MemberEpoch = resp.MemberEpoch
	resp = c.ConsumerGroupHeartbeat(ctx, cl, img, hb)
	wantCode(t, "c heartbeat", resp.ErrorCode, nil)
	var pc []int32
	if resp.Assignment != nil {
		for _, tp := range resp.Assignment.Topics {
			pc = append(pc, tp.Partitions...)
		}
	}
	all := append(append(slices.Clone(pa), pb...), pc...)
	slices.Sort(all)
	if len(pc) == 0 || !slices.Equal(all, []int32{0, 1, 2, 3}) {
		t.Fatalf("assignments a %v b %v c %v: want a disjoint cover of 0-3", pa, pb, pc)
	}

	// A restart keeps the classic members as classic members.
	c.Close()
	c = newTestCoordinator(t, l, func(o *Options) { o.Topics = img })
	wantCode(t, "a heartbeat after restart", classicHeartbeat(c, "g", a, ja.Generation), nil)
	if d := cgDescribe(t, c, "g"); len(d.Members) != 3 {
		t.Fatalf("after restart: %+v", d)
	}

	// Downgrade: c leaves; only classic members remain.
	hb.MemberEpoch = -1
	wantCode(t, "c leaves", c.ConsumerGroupHeartbeat(ctx, cl, img, hb).ErrorCode, nil)
	if d := cgDescribe(t, c, "g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("still a consumer group after downgrade: %+v", d)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version = 5
	dg.Groups = []string{"g"}
	if g := c.DescribeGroups(ctx, dg).Groups[0]; g.ErrorCode != 0 || g.State != "PreparingRebalance" || len(g.Members) != 2 {
		t.Fatalf("classic group after downgrade: %+v", g)
	}
	wantCode(t, "a heartbeat after downgrade", classicHeartbeat(c, "g", a, ja.Generation), kerr.RebalanceInProgress)
	joined := make(chan *kmsg.JoinGroupResponse, 2)
	go func() { joined <- c.JoinGroup(ctx, cl, joinReq("g", a, "orders")) }()
	go func() { joined <- c.JoinGroup(ctx, cl, joinReq("g", b, "orders")) }()
	j1, j2 := <-joined, <-joined
	wantCode(t, "classic rejoin 1", j1.ErrorCode, nil)
	wantCode(t, "classic rejoin 2", j2.ErrorCode, nil)
	if j1.Generation <= ja.Generation || j1.LeaderID == "" {
		t.Fatalf("classic rejoin: %+v", j1)
	}
	if got := fetchAll(t, c, "g"); got["orders/0"] != 12 || got["orders/1"] != 11 {
		t.Fatalf("offsets after downgrade: %v", got)
	}
}

// TestMigrationPolicy checks group.consumer.migration.policy: disabled
// refuses both directions, upgrade keeps a consumer group with only
// classic members a consumer group.
func TestMigrationPolicy(t *testing.T) {
	img := migImage{fakeImage{"orders": 4}}
	cl := Client{ID: "cl", Host: "/127.0.0.1"}
	for _, policy := range []string{"disabled", "downgrade", "UPGRADE"} {
		t.Run(policy, func(t *testing.T) {
			ctx := t.Context()
			c := newTestCoordinator(t, newLogs(), func(o *Options) { o.Topics = img; o.ConsumerMigrationPolicy = policy })
			liveClassicGroup(t, c, "g")
			resp := c.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq("g", "c", "orders"))
			if strings.EqualFold(policy, "upgrade") {
				wantCode(t, "upgrade", resp.ErrorCode, nil)
				hb := cgJoinReq("g", "c", "orders")
				hb.MemberEpoch = -1
				wantCode(t, "leave", c.ConsumerGroupHeartbeat(ctx, cl, img, hb).ErrorCode, nil)
				if d := cgDescribe(t, c, "g"); d.ErrorCode != 0 || len(d.Members) != 2 {
					t.Fatalf("downgraded although the policy is upgrade: %+v", d)
				}
				return
			}
			wantCode(t, "upgrade refused", resp.ErrorCode, kerr.GroupIDNotFound)
			want := "Cannot upgrade classic group g to consumer group because online upgrade is disabled."
			if resp.ErrorMessage == nil || *resp.ErrorMessage != want {
				t.Fatalf("message %v, want %q", resp.ErrorMessage, want)
			}
			if policy != "disabled" {
				return
			}
			// A classic member cannot join a live consumer group.
			c2 := newTestCoordinator(t, newLogs(), func(o *Options) { o.Topics = img; o.ConsumerMigrationPolicy = policy })
			wantCode(t, "KIP-848 join", c2.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq("h", "c", "orders")).ErrorCode, nil)
			j := c2.JoinGroup(ctx, cl, joinReq("h", "", "orders"))
			wantCode(t, "classic join of a consumer group", j.ErrorCode, kerr.InconsistentGroupProtocol)
		})
	}
}

// TestClassicMemberJoinsConsumerGroup checks a classic member joining a
// consumer group that has only KIP-848 members: it learns its member id
// (v4+), joins at the group epoch, and gets partitions only once the
// KIP-848 member released them.
func TestClassicMemberJoinsConsumerGroup(t *testing.T) {
	img := migImage{fakeImage{"orders": 4}}
	c := newTestCoordinator(t, newLogs(), func(o *Options) { o.Topics = img })
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}
	resp := c.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq("g", "k", "orders"))
	wantCode(t, "KIP-848 join", resp.ErrorCode, nil)
	j := c.JoinGroup(ctx, cl, joinReq("g", "", "orders"))
	wantCode(t, "classic first join", j.ErrorCode, kerr.MemberIDRequired)
	id := j.MemberID
	wantCode(t, "KIP-848 member through JoinGroup", c.JoinGroup(ctx, cl, joinReq("g", "k", "orders")).ErrorCode, kerr.UnknownMemberID)
	j = c.JoinGroup(ctx, cl, joinReq("g", id, "orders"))
	wantCode(t, "classic join", j.ErrorCode, nil)
	if got := classicSync(t, c, "g", id, j.Generation, nil); len(got) != 0 {
		t.Fatalf("classic member got %v before k released them", got)
	}
	classicSync(t, c, "g", id, j.Generation+5, kerr.IllegalGeneration)
	classicSync(t, c, "g", "k", resp.MemberEpoch, kerr.UnknownMemberID) // a KIP-848 member

	// k revokes two partitions.
	hb := cgJoinReq("g", "k", "orders")
	hb.MemberEpoch = resp.MemberEpoch
	r2 := c.ConsumerGroupHeartbeat(ctx, cl, img, hb)
	wantCode(t, "k heartbeat", r2.ErrorCode, nil)
	var kept []int32
	for _, tp := range r2.Assignment.Topics {
		kept = append(kept, tp.Partitions...)
	}
	if len(kept) != 2 {
		t.Fatalf("k keeps %v, want 2 partitions", kept)
	}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topicIDOf("orders"), Partitions: kept}}
	r3 := c.ConsumerGroupHeartbeat(ctx, cl, img, hb)
	wantCode(t, "k acks revocation", r3.ErrorCode, nil)

	// The classic member is told to rejoin and gets the other two.
	wantCode(t, "classic heartbeat", classicHeartbeat(c, "g", id, j.Generation), kerr.RebalanceInProgress)
	j = c.JoinGroup(ctx, cl, joinReq("g", id, "orders"))
	wantCode(t, "classic rejoin", j.ErrorCode, nil)
	got := classicSync(t, c, "g", id, j.Generation, nil)
	all := append(slices.Clone(got), kept...)
	slices.Sort(all)
	if !slices.Equal(all, []int32{0, 1, 2, 3}) {
		t.Fatalf("classic %v k %v", got, kept)
	}
	wantCode(t, "classic heartbeat stable", classicHeartbeat(c, "g", id, j.Generation), nil)

	// The classic member leaves through LeaveGroup.
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Version = 5
	lv.Group = "g"
	lv.Members = []kmsg.LeaveGroupRequestMember{{MemberID: id}, {MemberID: "k"}}
	lr := c.LeaveGroup(ctx, lv)
	if lr.ErrorCode != 0 || lr.Members[0].ErrorCode != 0 || lr.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave: %+v", lr)
	}
	if d := cgDescribe(t, c, "g"); len(d.Members) != 1 {
		t.Fatalf("after leave: %s", fmt.Sprint(d.Members))
	}
}

// TestMigrationExpiry runs the shard's timers over a migrated group (fake
// clock): a classic member that stops heartbeating is expired from the
// consumer group after its classic session timeout, and when the KIP-848
// member's session expires the group, left with classic members only,
// turns classic again and its member rejoins as the leader.
func TestMigrationExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		img := migImage{fakeImage{"orders": 4}}
		c := newTestCoordinator(t, newLogs(), func(o *Options) { o.Topics = img })
		ctx := t.Context()
		cl := Client{ID: "cl", Host: "/127.0.0.1"}
		a, _, gen := liveClassicGroup(t, c, "g")
		k := c.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq("g", "k", "orders"))
		wantCode(t, "k joins", k.ErrorCode, nil)
		kEpoch := k.MemberEpoch

		// a keeps up (rejoining when told), k heartbeats, b is silent.
		aGen := gen
		leaderAgain := false
		keepA := func() {
			switch code := classicHeartbeat(c, "g", a, aGen); code {
			case 0:
			case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code:
				j := c.JoinGroup(ctx, cl, joinReq("g", a, "orders"))
				wantCode(t, "a rejoins", j.ErrorCode, nil)
				aGen = j.Generation
				if j.LeaderID == "" { // a classic member of a consumer group
					classicSync(t, c, "g", a, aGen, nil)
					return
				}
				// The leader of a classic group again.
				leaderAgain = j.LeaderID == a
				s := kmsg.NewPtrSyncGroupRequest()
				s.Version = 5
				s.Group, s.MemberID, s.Generation = "g", a, aGen
				s.ProtocolType, s.Protocol = ptr("consumer"), ptr("range")
				s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: a, MemberAssignment: assignmentBytes("orders", 0, 1, 2, 3)}}
				wantCode(t, "a syncs as leader", c.SyncGroup(ctx, s).ErrorCode, nil)
			default:
				t.Fatalf("a heartbeat: %s", errName(code))
			}
		}
		for range 5 {
			time.Sleep(3 * time.Second)
			keepA()
			hb := cgJoinReq("g", "k", "orders")
			hb.MemberEpoch = kEpoch
			r := c.ConsumerGroupHeartbeat(ctx, cl, img, hb)
			wantCode(t, "k heartbeat", r.ErrorCode, nil)
			kEpoch = r.MemberEpoch
		}
		if d := cgDescribe(t, c, "g"); len(d.Members) != 2 {
			t.Fatalf("b not expired after its 10 s session: %+v", d.Members)
		}

		// A classic member that joins and never syncs is fenced after
		// its rebalance timeout (20 s), long before its session ends.
		lazy := joinReq("g", "lazy", "orders")
		lazy.SessionTimeoutMillis = 60000
		wantCode(t, "lazy joins", c.JoinGroup(ctx, cl, lazy).ErrorCode, nil)
		if d := cgDescribe(t, c, "g"); len(d.Members) != 3 {
			t.Fatalf("lazy not in the group: %+v", d.Members)
		}
		for range 8 {
			time.Sleep(3 * time.Second)
			keepA()
			hb := cgJoinReq("g", "k", "orders")
			hb.MemberEpoch = kEpoch
			r := c.ConsumerGroupHeartbeat(ctx, cl, img, hb)
			wantCode(t, "k heartbeat", r.ErrorCode, nil)
			kEpoch = r.MemberEpoch
			if hbc := classicHeartbeat(c, "g", "lazy", 0); hbc != kerr.UnknownMemberID.Code && hbc != kerr.IllegalGeneration.Code && hbc != kerr.RebalanceInProgress.Code && hbc != 0 {
				t.Fatalf("lazy heartbeat: %s", errName(hbc))
			}
		}
		if d := cgDescribe(t, c, "g"); len(d.Members) != 2 {
			t.Fatalf("lazy not fenced after its rebalance timeout without a SyncGroup: %+v", d.Members)
		}

		// k goes silent: after its 45 s session the group is classic.
		for range 17 {
			time.Sleep(3 * time.Second)
			keepA()
		}
		if d := cgDescribe(t, c, "g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
			t.Fatalf("still a consumer group after k expired: %+v", d)
		}
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Version = 5
		dg.Groups = []string{"g"}
		d := c.DescribeGroups(ctx, dg).Groups[0]
		if d.ErrorCode != 0 || d.State != "Stable" || d.ProtocolType != "consumer" || len(d.Members) != 1 || d.Members[0].MemberID != a || !leaderAgain {
			t.Fatalf("classic group after downgrade: %+v (a led a classic rebalance: %v)", d, leaderAgain)
		}
	})
}

func classicTestMember() *cgMember {
	return &cgMember{
		modernMember: modernMember{id: "m", clientID: "c", clientHost: "/h", rebalanceTimeout: 20 * time.Second},
		topicNames:   []string{"orders"},
		classic: &classicMeta{sessionTimeout: 10 * time.Second, protocols: []kmsg.JoinGroupRequestProtocol{
			{Name: "range", Metadata: consumerMetadata("orders")},
			{Name: "cooperative-sticky", Metadata: []byte{0, 3}},
		}},
	}
}

// TestClassicMemberMetadataRecord round-trips a classic member's
// ConsumerGroupMemberMetadata value, with its tag 0 (Kafka's
// ClassicMemberMetadata), and a KIP-848 member's, without it.
func TestClassicMemberMetadataRecord(t *testing.T) {
	for _, m := range []*cgMember{classicTestMember(), {modernMember: modernMember{id: "k", clientID: "c", clientHost: "/h"}, topicNames: []string{"orders"}}} {
		r := recCGMember("g", m)
		ls := newLoadState()
		if err := ls.apply(r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
		got := ls.consumerGroups["g"].members[m.id]
		if !sameClassic(got.classic, m.classic) || !slices.Equal(got.topicNames, m.topicNames) || got.rebalanceTimeout != m.rebalanceTimeout {
			t.Fatalf("member %s: got %+v classic %+v, want classic %+v", m.id, got, got.classic, m.classic)
		}
	}
}
