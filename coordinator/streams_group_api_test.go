package coordinator

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func stJoinReq(group, member, process string) *kmsg.StreamsGroupHeartbeatRequest {
	r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	r.Version = 1
	r.Group, r.MemberID = group, member
	r.RebalanceTimeoutMillis = 30000
	r.Topology = wordCountTopology(group)
	r.ProcessID = &process
	return r
}

func stDescribe(t *testing.T, c *Coordinator, group string) kmsg.StreamsGroupDescribeResponseGroup {
	t.Helper()
	r := kmsg.NewPtrStreamsGroupDescribeRequest()
	r.Version = 1
	r.Groups = []string{group}
	return c.StreamsGroupDescribe(t.Context(), r).Groups[0]
}

// TestStreamsGroupThroughCoordinator drives a streams group through the
// Coordinator: join, internal topics to create, commits with the member
// epoch, the classic and KIP-848 APIs' answers for a streams group,
// ListGroups, DeleteGroups and a session expiry on the shard's timer.
func TestStreamsGroupThroughCoordinator(t *testing.T) {
	l := newLogs()
	c := newTestCoordinator(t, l, func(o *Options) { o.StreamsSessionTimeout = 300 * time.Millisecond })
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}
	img := fakeImage{"input": 2}

	hb := stJoinReq("app", "m1", "p1")
	hb.MemberEpoch = 2
	hb.Topology = nil
	resp, _ := c.StreamsGroupHeartbeat(ctx, cl, img, hb)
	wantCode(t, "heartbeat to unknown group", resp.ErrorCode, kerr.GroupIDNotFound)
	if *resp.ErrorMessage != "Streams group app not found." {
		t.Fatal(*resp.ErrorMessage)
	}

	resp, create := c.StreamsGroupHeartbeat(ctx, cl, img, stJoinReq("app", "m1", "p1"))
	wantCode(t, "join", resp.ErrorCode, nil)
	if len(create) != 2 || len(resp.Status) != 1 || resp.Status[0].StatusCode != streamsStatusMissingInternalTopics || resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: %+v create %+v", resp, create)
	}
	if d := stDescribe(t, c, "app"); d.ErrorCode != 0 || d.State != "NotReady" || d.Topology == nil || len(d.Topology.Subtopologies) != 2 {
		t.Fatalf("describe not ready: %+v", d)
	}
	// Kafka 4.4 filters by lower-case state names: NotReady is "not_ready".
	lgr := kmsg.NewPtrListGroupsRequest()
	lgr.Version = 5
	lgr.StatesFilter = []string{"NotReady"}
	if gs := c.ListGroups(ctx, lgr).Groups; len(gs) != 0 {
		t.Fatalf("ListGroups NotReady: %+v", gs)
	}
	lgr.StatesFilter = []string{"not_ready"}
	if gs := c.ListGroups(ctx, lgr).Groups; len(gs) != 1 || gs[0].GroupState != "NotReady" {
		t.Fatalf("ListGroups not_ready: %+v", gs)
	}
	for _, ct := range create {
		img[ct.Name] = ct.Partitions
	}
	hb = kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch = 1, "app", "m1", resp.MemberEpoch
	resp, create = c.StreamsGroupHeartbeat(ctx, cl, img, hb)
	if resp.ErrorCode != 0 || len(create) != 0 || len(resp.Status) != 0 || len(resp.ActiveTasks) != 2 {
		t.Fatalf("after creation: %+v", resp)
	}
	epoch := resp.MemberEpoch

	codes := commitCodes(c.OffsetCommit(ctx, commitReq("app", "m1", epoch, "input", map[int32]int64{0: 5})))
	wantCode(t, "commit", codes[0], nil)
	codes = commitCodes(c.OffsetCommit(ctx, commitReq("app", "m1", epoch-1, "input", map[int32]int64{0: 6})))
	wantCode(t, "stale commit", codes[0], kerr.StaleMemberEpoch)
	codes = commitCodes(c.OffsetCommit(ctx, commitReq("app", "", -1, "input", map[int32]int64{0: 6})))
	wantCode(t, "admin commit to a live group", codes[0], kerr.UnknownMemberID)
	if got := fetchAll(t, c, "app"); got["input/0"] != 5 {
		t.Fatalf("offsets %v", got)
	}

	// Other protocols.
	wantCode(t, "JoinGroup", c.JoinGroup(ctx, cl, joinReq("app", "", "input")).ErrorCode, kerr.InconsistentGroupProtocol)
	wantCode(t, "ConsumerGroupHeartbeat", c.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq("app", "x", "input")).ErrorCode, kerr.GroupIDNotFound)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version = 6
	dg.Groups = []string{"app"}
	wantCode(t, "DescribeGroups v6", c.DescribeGroups(ctx, dg).Groups[0].ErrorCode, kerr.GroupIDNotFound)
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	lg.TypesFilter = []string{"streams"}
	groups := c.ListGroups(ctx, lg).Groups
	if len(groups) != 1 || groups[0].Group != "app" || groups[0].GroupType != "streams" || groups[0].GroupState != "Stable" {
		t.Fatalf("ListGroups streams: %+v", groups)
	}
	lg.TypesFilter = []string{"classic", "consumer"}
	if groups := c.ListGroups(ctx, lg).Groups; len(groups) != 0 {
		t.Fatalf("ListGroups classic: %+v", groups)
	}
	joinAndSync(t, c, "classic", "input")
	resp, _ = c.StreamsGroupHeartbeat(ctx, cl, img, stJoinReq("classic", "m", "p"))
	wantCode(t, "streams join to a live classic group", resp.ErrorCode, kerr.GroupIDNotFound)
	if d := stDescribe(t, c, "classic"); d.ErrorCode != kerr.GroupIDNotFound.Code || *d.ErrorMessage != "Group classic is not a streams group." {
		t.Fatalf("describe classic: %+v", d)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"app"}
	wantCode(t, "delete live group", c.DeleteGroups(ctx, del).Groups[0].ErrorCode, kerr.NonEmptyGroup)

	// The member stops heartbeating: the shard's timer fences it.
	deadline := time.Now().Add(10 * time.Second)
	for stDescribe(t, c, "app").State != "Empty" {
		if time.Now().After(deadline) {
			t.Fatalf("member not expired: %+v", stDescribe(t, c, "app"))
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	codes = commitCodes(c.OffsetCommit(ctx, commitReq("app", "", -1, "input", map[int32]int64{1: 9})))
	wantCode(t, "admin commit to an empty group", codes[0], nil)
	wantCode(t, "delete empty group", c.DeleteGroups(ctx, del).Groups[0].ErrorCode, nil)
	if d := stDescribe(t, c, "app"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("after delete: %+v", d)
	}
	if got := fetchAll(t, c, "app"); len(got) != 0 {
		t.Fatalf("offsets after delete %v", got)
	}

	// Offsets survive a restart in the holder; a member joining the
	// (now classic, empty) group converts it back.
	resp, create = c.StreamsGroupHeartbeat(ctx, cl, img, stJoinReq("app2", "m1", "p1"))
	wantCode(t, "join app2", resp.ErrorCode, nil)
	for _, ct := range create {
		img[ct.Name] = ct.Partitions
	}
	hb = kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch = 1, "app2", "m1", resp.MemberEpoch
	resp, _ = c.StreamsGroupHeartbeat(ctx, cl, img, hb)
	wantCode(t, "commit app2", commitCodes(c.OffsetCommit(ctx, commitReq("app2", "m1", resp.MemberEpoch, "input", map[int32]int64{0: 3})))[0], nil)
	d := stDescribe(t, c, "app2")
	c.Close()

	// A restart keeps the group: its epochs, topology, members and
	// assignments (Kafka's records 17-23), and the member heartbeats on.
	c = newTestCoordinator(t, l)
	if got := fetchAll(t, c, "app2"); got["input/0"] != 3 {
		t.Fatalf("offsets after restart %v", got)
	}
	d2 := stDescribe(t, c, "app2")
	if d2.ErrorCode != 0 || d2.Epoch != d.Epoch || d2.AssignmentEpoch != d.AssignmentEpoch || len(d2.Members) != 1 ||
		d2.Members[0].MemberEpoch != d.Members[0].MemberEpoch || d2.Members[0].ProcessID != "p1" ||
		len(d2.Members[0].Assignment.ActiveTasks) != 2 || d2.Topology == nil || len(d2.Topology.Subtopologies) != 2 ||
		d2.Topology.Subtopologies[1].StateChangelogTopics[0].Configs[0].Value != "compact" {
		t.Fatalf("after restart: %+v\nbefore: %+v", d2, d)
	}
	hb = kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch = 1, "app2", "m1", d.Members[0].MemberEpoch
	resp, _ = c.StreamsGroupHeartbeat(ctx, cl, img, hb)
	if resp.ErrorCode != 0 || resp.MemberEpoch != d.Members[0].MemberEpoch {
		t.Fatalf("heartbeat after restart: %+v", resp)
	}
	wantCode(t, "commit after restart", commitCodes(c.OffsetCommit(ctx, commitReq("app2", "m1", resp.MemberEpoch, "input", map[int32]int64{0: 4})))[0], nil)

	// A classic JoinGroup to the group while it has a member is refused.
	wantCode(t, "JoinGroup to a live streams group", c.JoinGroup(ctx, cl, joinReq("app2", "", "input")).ErrorCode, kerr.InconsistentGroupProtocol)

	// Leave and delete: nothing of the group comes back.
	hb.MemberEpoch = -1
	resp, _ = c.StreamsGroupHeartbeat(ctx, cl, img, hb)
	wantCode(t, "leave after restart", resp.ErrorCode, nil)
	del.Groups = []string{"app2"}
	wantCode(t, "delete app2", c.DeleteGroups(ctx, del).Groups[0].ErrorCode, nil)
	c.Close()
	c = newTestCoordinator(t, l)
	if d := stDescribe(t, c, "app2"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group back after restart: %+v", d)
	}
}

// TestStreamsGroupConfigOverrides: the group configs streams.* (the GROUP
// config resource) override the broker's settings for one group.
func TestStreamsGroupConfigOverrides(t *testing.T) {
	l := newLogs()
	c := newTestCoordinator(t, l, func(o *Options) {
		o.GroupConfig = func(g string) map[string]string {
			if g != "app" {
				return nil
			}
			return map[string]string{"streams.num.standby.replicas": "1", "streams.heartbeat.interval.ms": "2000", "streams.session.timeout.ms": "50000"}
		}
	})
	ctx := t.Context()
	img := fakeImage{"input": 2, "app-counts-repartition": 2, "app-counts-changelog": 2}
	epochs := map[string]int32{}
	for range 4 {
		for _, m := range []string{"a", "b"} {
			var r *kmsg.StreamsGroupHeartbeatResponse
			if _, ok := epochs[m]; !ok {
				r, _ = c.StreamsGroupHeartbeat(ctx, Client{}, img, stJoinReq("app", m, "p-"+m))
			} else {
				hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
				hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch = 1, "app", m, epochs[m]
				r, _ = c.StreamsGroupHeartbeat(ctx, Client{}, img, hb)
			}
			wantCode(t, "heartbeat "+m, r.ErrorCode, nil)
			if r.HeartbeatIntervalMillis != 2000 {
				t.Fatalf("heartbeat interval %d", r.HeartbeatIntervalMillis)
			}
			epochs[m] = r.MemberEpoch
		}
	}
	d := stDescribe(t, c, "app")
	for _, m := range d.Members {
		standbys := 0
		for _, ts := range m.TargetAssignment.StandbyTasks {
			standbys += len(ts.Partitions)
		}
		// One: only subtopology 1 is stateful, and Kafka 4.4 makes
		// standby tasks of stateful subtopologies only (2 before
		// session 33, when samsa made them of every subtopology).
		if standbys != 1 {
			t.Fatalf("member %s: %d standby tasks, want 1 (streams.num.standby.replicas=1): %+v", m.MemberID, standbys, d)
		}
	}
}

// TestStreamsGroupConvertedByJoinGroup: a classic JoinGroup turns an empty
// streams group into a classic group, keeping its offsets, as Kafka does.
func TestStreamsGroupConvertedByJoinGroup(t *testing.T) {
	l := newLogs()
	c := newTestCoordinator(t, l)
	ctx := t.Context()
	img := fakeImage{"input": 2, "app-counts-repartition": 2, "app-counts-changelog": 2}
	r, _ := c.StreamsGroupHeartbeat(ctx, Client{}, img, stJoinReq("app", "m", "p"))
	wantCode(t, "join", r.ErrorCode, nil)
	wantCode(t, "commit", commitCodes(c.OffsetCommit(ctx, commitReq("app", "m", r.MemberEpoch, "input", map[int32]int64{0: 7})))[0], nil)
	hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch = 1, "app", "m", -1
	r, _ = c.StreamsGroupHeartbeat(ctx, Client{}, img, hb)
	wantCode(t, "leave", r.ErrorCode, nil)
	wantCode(t, "JoinGroup to an empty streams group", c.JoinGroup(ctx, Client{}, joinReq("app", "", "input")).ErrorCode, kerr.MemberIDRequired)
	if d := stDescribe(t, c, "app"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("still a streams group: %+v", d)
	}
	c.Close()
	c = newTestCoordinator(t, l)
	if d := stDescribe(t, c, "app"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("streams group back after restart: %+v", d)
	}
	if got := fetchAll(t, c, "app"); got["input/0"] != 7 {
		t.Fatalf("offsets %v", got)
	}
}
