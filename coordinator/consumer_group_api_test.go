package coordinator

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func cgJoinReq(group, member string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = 1
	r.Group, r.MemberID = group, member
	r.RebalanceTimeoutMillis = 30000
	r.SubscribedTopicNames = topics
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return r
}

func cgDescribe(t *testing.T, c *Coordinator, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	r := kmsg.NewPtrConsumerGroupDescribeRequest()
	r.Groups = []string{group}
	return c.ConsumerGroupDescribe(t.Context(), r).Groups[0]
}

// TestConsumerGroupThroughCoordinator drives a consumer group through the
// Coordinator: join, commit with the member epoch, the classic APIs'
// answers for a consumer group, and a restart over the same logs.
func TestConsumerGroupThroughCoordinator(t *testing.T) {
	l := newLogs()
	img := fakeImage{"orders": 4}
	c := newTestCoordinator(t, l)
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}

	// Heartbeat with an epoch to a group that does not exist.
	r := cgJoinReq("g", "m1", "orders")
	r.MemberEpoch = 3
	wantCode(t, "unknown group", c.ConsumerGroupHeartbeat(ctx, cl, img, r).ErrorCode, kerr.GroupIDNotFound)

	resp := c.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq("g", "m1", "orders"))
	wantCode(t, "join", resp.ErrorCode, nil)
	if resp.MemberEpoch != 2 || resp.Assignment == nil || len(resp.Assignment.Topics[0].Partitions) != 4 || resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: %+v", resp)
	}

	// Commits: the member epoch is the generation.
	codes := commitCodes(c.OffsetCommit(ctx, commitReq("g", "m1", 2, "orders", map[int32]int64{0: 5, 1: 6})))
	wantCode(t, "commit", codes[0], nil)
	codes = commitCodes(c.OffsetCommit(ctx, commitReq("g", "m1", 3, "orders", map[int32]int64{0: 7})))
	wantCode(t, "commit stale epoch", codes[0], kerr.StaleMemberEpoch)
	codes = commitCodes(c.OffsetCommit(ctx, commitReq("g", "zz", 2, "orders", map[int32]int64{0: 7})))
	wantCode(t, "commit unknown member", codes[0], kerr.UnknownMemberID)
	codes = commitCodes(c.OffsetCommit(ctx, commitReq("g", "", -1, "orders", map[int32]int64{0: 7})))
	wantCode(t, "admin commit to a live group", codes[0], kerr.UnknownMemberID)
	old := commitReq("g", "m1", 2, "orders", map[int32]int64{0: 7})
	old.Version = 8
	wantCode(t, "commit v8", commitCodes(c.OffsetCommit(ctx, old))[0], kerr.UnsupportedVersion)

	fetch := func(member *string, epoch int32) int16 {
		f := kmsg.NewPtrOffsetFetchRequest()
		f.Version = 9
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.MemberID, g.MemberEpoch = "g", member, epoch
		f.Groups = []kmsg.OffsetFetchRequestGroup{g}
		return c.OffsetFetch(ctx, f).Groups[0].ErrorCode
	}
	wantCode(t, "fetch as member", fetch(ptr("m1"), 2), nil)
	wantCode(t, "fetch stale", fetch(ptr("m1"), 0), kerr.StaleMemberEpoch)
	wantCode(t, "fetch unknown", fetch(ptr("zz"), 2), kerr.UnknownMemberID)
	wantCode(t, "fetch as admin", fetch(nil, -1), nil)
	if got := fetchAll(t, c, "g"); got["orders/0"] != 5 || got["orders/1"] != 6 {
		t.Fatalf("offsets %v", got)
	}

	// Classic APIs against a consumer group. A classic member may join
	// a live consumer group (online migration, as Kafka 4.4's
	// classicGroupJoinToConsumerGroup): v4+ learns its member id first.
	j := c.JoinGroup(ctx, cl, joinReq("g", "", "orders"))
	wantCode(t, "JoinGroup to a live consumer group", j.ErrorCode, kerr.MemberIDRequired)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version = 6
	dg.Groups = []string{"g"}
	wantCode(t, "DescribeGroups v6", c.DescribeGroups(ctx, dg).Groups[0].ErrorCode, kerr.GroupIDNotFound)
	dg.Version = 5
	if d := c.DescribeGroups(ctx, dg).Groups[0]; d.ErrorCode != 0 || d.State != "Dead" {
		t.Fatalf("DescribeGroups v5: %d %s", d.ErrorCode, d.State)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	lg.TypesFilter = []string{"consumer"}
	groups := c.ListGroups(ctx, lg).Groups
	if len(groups) != 1 || groups[0].Group != "g" || groups[0].GroupType != "consumer" || groups[0].GroupState != "Stable" || groups[0].ProtocolType != "consumer" {
		t.Fatalf("ListGroups consumer: %+v", groups)
	}
	lg.TypesFilter = []string{"classic"}
	if groups := c.ListGroups(ctx, lg).Groups; len(groups) != 0 {
		t.Fatalf("ListGroups classic: %+v", groups)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g"}
	wantCode(t, "delete live group", c.DeleteGroups(ctx, del).Groups[0].ErrorCode, kerr.NonEmptyGroup)

	// A live classic group whose assignment is not in the embedded
	// consumer protocol (joinAndSync assigns "all") refuses KIP-848
	// members: Kafka cannot upgrade it either.
	joinAndSync(t, c, "classic", "orders")
	wantCode(t, "heartbeat to a classic group", c.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq("classic", "x", "orders")).ErrorCode, kerr.GroupIDNotFound)
	if d := cgDescribe(t, c, "classic"); d.ErrorCode != kerr.GroupIDNotFound.Code || *d.ErrorMessage != "Group classic is not a consumer group." {
		t.Fatalf("describe classic: %d %v", d.ErrorCode, d.ErrorMessage)
	}

	d := cgDescribe(t, c, "g")
	if d.ErrorCode != 0 || d.State != "Stable" || d.Epoch != 2 || d.AssignmentEpoch != 2 || d.AssignorName != "uniform" || len(d.Members) != 1 ||
		d.Members[0].MemberEpoch != 2 || len(d.Members[0].Assignment.TopicPartitions) != 1 || d.Members[0].Assignment.TopicPartitions[0].Topic != "orders" {
		t.Fatalf("describe: %+v", d)
	}

	// Restart: group, epochs, assignment and offsets come back.
	c.Close()
	c = newTestCoordinator(t, l)
	d2 := cgDescribe(t, c, "g")
	if d2.ErrorCode != 0 || d2.Epoch != d.Epoch || d2.AssignmentEpoch != d.AssignmentEpoch || len(d2.Members) != 1 ||
		len(d2.Members[0].Assignment.TopicPartitions) != 1 || len(d2.Members[0].Assignment.TopicPartitions[0].Partitions) != 4 {
		t.Fatalf("after restart: %+v", d2)
	}
	if got := fetchAll(t, c, "g"); got["orders/0"] != 5 {
		t.Fatalf("offsets after restart %v", got)
	}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = 1, "g", "m1", 2, -1
	wantCode(t, "heartbeat after restart", c.ConsumerGroupHeartbeat(ctx, cl, img, hb).ErrorCode, nil)

	// Leave, then the empty group can be deleted; a JoinGroup converts
	// an empty one back to classic.
	hb.MemberEpoch = -1
	wantCode(t, "leave", c.ConsumerGroupHeartbeat(ctx, cl, img, hb).ErrorCode, nil)
	if d := cgDescribe(t, c, "g"); d.State != "Empty" || d.Epoch != 3 {
		t.Fatalf("after leave: %s epoch %d", d.State, d.Epoch)
	}
	codes = commitCodes(c.OffsetCommit(ctx, commitReq("g", "", -1, "orders", map[int32]int64{2: 9})))
	wantCode(t, "admin commit to an empty consumer group", codes[0], nil)
	j = c.JoinGroup(ctx, cl, joinReq("g", "", "orders"))
	wantCode(t, "JoinGroup to an empty consumer group", j.ErrorCode, kerr.MemberIDRequired)
	if d := cgDescribe(t, c, "g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("still a consumer group after conversion: %+v", d)
	}
	if got := fetchAll(t, c, "g"); got["orders/2"] != 9 || got["orders/0"] != 5 {
		t.Fatalf("offsets after conversion %v", got)
	}
}

// TestConsumerGroupSessionExpiryOnShard checks the shard's timer fences
// a member that stops heartbeating.
func TestConsumerGroupSessionExpiryOnShard(t *testing.T) {
	l := newLogs()
	c := newTestCoordinator(t, l, func(o *Options) { o.ConsumerSessionTimeout = 50 * time.Millisecond })
	img := fakeImage{"orders": 2}
	ctx := t.Context()
	wantCode(t, "join", c.ConsumerGroupHeartbeat(ctx, Client{}, img, cgJoinReq("g", "m1", "orders")).ErrorCode, nil)
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := cgDescribe(t, c, "g")
		if d.State == "Empty" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("member not expired: %+v", d)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g"}
	wantCode(t, "delete empty group", c.DeleteGroups(ctx, del).Groups[0].ErrorCode, nil)
	if d := cgDescribe(t, c, "g"); d.ErrorCode != kerr.GroupIDNotFound.Code || *d.ErrorMessage != "Group g not found." {
		t.Fatalf("after delete: %+v", d)
	}
	c.Close()
	c = newTestCoordinator(t, l)
	if d := cgDescribe(t, c, "g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group back after restart: %+v", d)
	}
}
