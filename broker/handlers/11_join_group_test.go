package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func consumerProtocols(topics ...string) []kmsg.JoinGroupRequestProtocol {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: m.AppendTo(nil)}}
}

// joinOne joins a group alone at JoinGroup version v and syncs, through
// the handlers; it returns the member id and generation.
func joinOne(t *testing.T, d *Deps, group string, v int16, topics ...string) (string, int32) {
	t.Helper()
	join := func(member string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
		req.Protocols = consumerProtocols(topics...)
		return groupCall(t, d, handleJoinGroup, req, v).(*kmsg.JoinGroupResponse)
	}
	jr := join("")
	if v >= 4 {
		if jr.ErrorCode != kerr.MemberIDRequired.Code || jr.MemberID == "" {
			t.Fatalf("v%d first join: %+v", v, jr)
		}
		jr = join(jr.MemberID)
	}
	if jr.ErrorCode != 0 || jr.LeaderID != jr.MemberID || len(jr.Members) != 1 || jr.Generation != 1 {
		t.Fatalf("v%d join: %+v", v, jr)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = group, jr.MemberID, jr.Generation
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range") // mandatory at v5
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jr.MemberID, MemberAssignment: []byte("asg")}}
	sr := groupCall(t, d, handleSyncGroup, sync, min(v, 5)).(*kmsg.SyncGroupResponse)
	if sr.ErrorCode != 0 || string(sr.MemberAssignment) != "asg" {
		t.Fatalf("sync: %+v", sr)
	}
	return jr.MemberID, jr.Generation
}

func TestGroupLifecycleThroughHandlers(t *testing.T) {
	e := newGroupEnv(t)
	for _, v := range []int16{0, 3, 4, 9} {
		joinOne(t, e.d, "g-v"+string(rune('0'+v)), v, "orders")
	}
	member, gen := joinOne(t, e.d, "g", 9, "orders")

	for v := int16(0); v <= 4; v++ {
		hb := &kmsg.HeartbeatRequest{Group: "g", MemberID: member, Generation: gen}
		if r := groupCall(t, e.d, handleHeartbeat, hb, v).(*kmsg.HeartbeatResponse); r.ErrorCode != 0 {
			t.Errorf("heartbeat v%d: %d", v, r.ErrorCode)
		}
	}
	for v := int16(0); v <= 6; v++ {
		dr := groupCall(t, e.d, handleDescribeGroups, &kmsg.DescribeGroupsRequest{Groups: []string{"g", "missing"}}, v).(*kmsg.DescribeGroupsResponse)
		g := dr.Groups[0]
		if g.ErrorCode != 0 || g.State != "Stable" || g.ProtocolType != "consumer" || g.Protocol != "range" || len(g.Members) != 1 ||
			g.Members[0].ClientID != "test-client" || g.Members[0].ClientHost != "/127.0.0.1" || string(g.Members[0].MemberAssignment) != "asg" {
			t.Errorf("describe v%d: %+v", v, g)
		}
		wantMissing := int16(0)
		if v >= 6 {
			wantMissing = kerr.GroupIDNotFound.Code
		}
		if dr.Groups[1].ErrorCode != wantMissing || (v < 6 && dr.Groups[1].State != "Dead") {
			t.Errorf("describe missing v%d: %+v", v, dr.Groups[1])
		}
	}
	for v := int16(0); v <= 5; v++ {
		req := &kmsg.ListGroupsRequest{}
		if v >= 4 {
			req.StatesFilter = []string{"stable"}
		}
		lr := groupCall(t, e.d, handleListGroups, req, v).(*kmsg.ListGroupsResponse)
		if lr.ErrorCode != 0 || len(lr.Groups) != 5 {
			t.Errorf("list v%d: %+v", v, lr)
		}
	}

	// Deleting a group with members fails; after it leaves it works.
	del := groupCall(t, e.d, handleDeleteGroups, &kmsg.DeleteGroupsRequest{Groups: []string{"g"}}, 3).(*kmsg.DeleteGroupsResponse)
	if del.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code || del.Groups[0].ErrorMessage == nil {
		t.Fatalf("delete non-empty: %+v", del.Groups[0])
	}
	lv := &kmsg.LeaveGroupRequest{Group: "g", Members: []kmsg.LeaveGroupRequestMember{{MemberID: member}, {MemberID: "ghost"}}}
	lr := groupCall(t, e.d, handleLeaveGroup, lv, 5).(*kmsg.LeaveGroupResponse)
	if lr.ErrorCode != 0 || len(lr.Members) != 2 || lr.Members[0].ErrorCode != 0 || lr.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave: %+v", lr)
	}
	for v := int16(0); v <= 3; v++ {
		del = groupCall(t, e.d, handleDeleteGroups, &kmsg.DeleteGroupsRequest{Groups: []string{"g"}}, v).(*kmsg.DeleteGroupsResponse)
		want := kerr.GroupIDNotFound.Code
		if v == 0 {
			want = 0
		}
		if del.Groups[0].ErrorCode != want {
			t.Fatalf("delete v%d: %+v", v, del.Groups[0])
		}
	}
	lv1 := &kmsg.LeaveGroupRequest{Group: "g-v0", MemberID: "nobody"}
	if r := groupCall(t, e.d, handleLeaveGroup, lv1, 0).(*kmsg.LeaveGroupResponse); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave v0 unknown: %+v", r)
	}
}
