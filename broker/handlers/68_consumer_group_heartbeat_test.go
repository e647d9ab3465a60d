package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func cgHeartbeat(t *testing.T, d *Deps, v int16, group, member string, epoch int32, topics []string, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	req.RebalanceTimeoutMillis = -1
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
	}
	req.SubscribedTopicNames = topics
	req.Topics = owned
	return groupCall(t, d, handleConsumerGroupHeartbeat, req, v).(*kmsg.ConsumerGroupHeartbeatResponse)
}

func ownedFrom(a *kmsg.ConsumerGroupHeartbeatResponseAssignment) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if a == nil {
		return out
	}
	for _, t := range a.Topics {
		out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: t.Partitions})
	}
	return out
}

func TestConsumerGroupHeartbeatAndDescribeThroughHandlers(t *testing.T) {
	e := newGroupEnv(t)
	id := e.createTopic(t, "orders", 4, nil)

	// v0: the coordinator names the member.
	r0 := cgHeartbeat(t, e.d, 0, "g0", "", 0, []string{"orders"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	if r0.ErrorCode != 0 || r0.MemberID == nil || *r0.MemberID == "" || r0.MemberEpoch != 2 {
		t.Fatalf("v0 join: %+v", r0)
	}
	// v1: the member id is the client's and required.
	if r := cgHeartbeat(t, e.d, 1, "g", "", 0, []string{"orders"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("v1 without member id: %d", r.ErrorCode)
	}
	r := cgHeartbeat(t, e.d, 1, "g", "m1", 0, []string{"orders"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	if r.ErrorCode != 0 || *r.MemberID != "m1" || r.MemberEpoch != 2 || r.HeartbeatIntervalMillis != 5000 ||
		r.Assignment == nil || len(r.Assignment.Topics) != 1 || r.Assignment.Topics[0].TopicID != [16]byte(id) || len(r.Assignment.Topics[0].Partitions) != 4 {
		t.Fatalf("v1 join: %+v", r)
	}
	owned1 := ownedFrom(r.Assignment)
	r2 := cgHeartbeat(t, e.d, 1, "g", "m2", 0, []string{"orders"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	if r2.ErrorCode != 0 || r2.MemberEpoch != 3 || len(ownedFrom(r2.Assignment)) != 0 {
		t.Fatalf("m2 join: %+v", r2)
	}
	// m1 must give up two partitions first.
	r = cgHeartbeat(t, e.d, 1, "g", "m1", 2, nil, owned1)
	if r.ErrorCode != 0 || r.MemberEpoch != 2 || r.Assignment == nil || len(r.Assignment.Topics[0].Partitions) != 2 {
		t.Fatalf("m1 revoking: %+v", r)
	}
	owned1 = ownedFrom(r.Assignment)
	r = cgHeartbeat(t, e.d, 1, "g", "m1", 2, nil, owned1)
	if r.ErrorCode != 0 || r.MemberEpoch != 3 {
		t.Fatalf("m1 revoked: %+v", r)
	}
	r2 = cgHeartbeat(t, e.d, 1, "g", "m2", 3, nil, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	if r2.ErrorCode != 0 || r2.Assignment == nil || len(r2.Assignment.Topics[0].Partitions) != 2 {
		t.Fatalf("m2 after release: %+v", r2)
	}
	if r := cgHeartbeat(t, e.d, 1, "g", "m1", 7, nil, nil); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("future epoch: %d", r.ErrorCode)
	}

	for v := int16(0); v <= 1; v++ {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"g", "nope"}
		req.IncludeAuthorizedOperations = v == 1
		resp := groupCall(t, e.d, handleConsumerGroupDescribe, req, v).(*kmsg.ConsumerGroupDescribeResponse)
		g := resp.Groups[0]
		if g.ErrorCode != 0 || g.State != "Stable" || g.Epoch != 3 || g.AssignmentEpoch != 3 || len(g.Members) != 2 || g.AssignorName != "uniform" {
			t.Fatalf("describe v%d: %+v", v, g)
		}
		if v == 0 && g.AuthorizedOperations != -2147483648 {
			t.Fatalf("authorized operations not asked: %d", g.AuthorizedOperations)
		}
		if v == 1 && (g.AuthorizedOperations == -2147483648 || g.Members[0].MemberType != 1) {
			t.Fatalf("v1: ops %d type %d", g.AuthorizedOperations, g.Members[0].MemberType)
		}
		if resp.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
			t.Fatalf("unknown group: %d", resp.Groups[1].ErrorCode)
		}
	}

	// A topic created later matches a regex subscription at the next
	// heartbeat.
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = "rx", "x1", 30000
	req.SubscribedTopicRegex = strp("pay.*")
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	rr := groupCall(t, e.d, handleConsumerGroupHeartbeat, req, 1).(*kmsg.ConsumerGroupHeartbeatResponse)
	if rr.ErrorCode != 0 || rr.Assignment == nil || len(rr.Assignment.Topics) != 0 {
		t.Fatalf("regex join: %+v", rr)
	}
	e.createTopic(t, "payments", 2, nil)
	rr = cgHeartbeat(t, e.d, 1, "rx", "x1", rr.MemberEpoch, nil, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	if rr.ErrorCode != 0 || rr.MemberEpoch != 3 || rr.Assignment == nil || len(rr.Assignment.Topics) != 1 {
		t.Fatalf("regex after topic creation: %+v", rr)
	}
}

func TestConsumerGroupHeartbeatDisabled(t *testing.T) {
	e := newGroupEnv(t)
	e.d.Config.GroupCoordinatorRebalanceProtocols = []string{"classic"}
	r := cgHeartbeat(t, e.d, 1, "g", "m1", 0, []string{"orders"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	if r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("disabled: %d", r.ErrorCode)
	}
}
