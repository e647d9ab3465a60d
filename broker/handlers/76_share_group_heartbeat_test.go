package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareGroupAPIsThroughServe drives ShareGroupHeartbeat,
// ShareGroupDescribe and the share admin APIs through the dispatch table
// with an authorizer: GROUP READ and TOPIC DESCRIBE to join, GROUP
// DESCRIBE to describe, GROUP DELETE to delete offsets, as Kafka checks.
func TestShareGroupAPIsThroughServe(t *testing.T) {
	e := newGroupEnv(t)
	e.createTopic(t, "orders", 4, nil)
	e.createTopic(t, "secret", 1, nil)
	e.withACLs(t,
		aclCreation(kmsg.ACLResourceTypeGroup, "sg", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead),
		aclCreation(kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead),
	)

	hb := func(principal, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = "sg", member, epoch, topics
		return e.callAs(t, principal, req, 1).(*kmsg.ShareGroupHeartbeatResponse)
	}
	if r := hb("User:bob", "m-bob", 0, "orders"); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("bob joins: %+v", r)
	}
	if r := hb("User:alice", "m-alice", 0, "orders", "secret"); r.ErrorCode != kerr.TopicAuthorizationFailed.Code || r.ErrorMessage == nil || *r.ErrorMessage != "The following topics are not authorized: secret" {
		t.Fatalf("alice subscribes to secret: %+v", r)
	}
	r := hb("User:alice", "m-alice", 0, "orders")
	if r.ErrorCode != 0 || r.Assignment == nil || len(r.Assignment.TopicPartitions) != 1 || len(r.Assignment.TopicPartitions[0].Partitions) != 4 {
		t.Fatalf("alice joins: %+v", r)
	}
	if r := hb("User:alice", "", 0, "orders"); r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage != nil {
		t.Fatalf("empty member id: %+v", r)
	}

	d := kmsg.NewPtrShareGroupDescribeRequest()
	d.GroupIDs = []string{"sg"}
	d.IncludeAuthorizedOperations = true
	if dr := e.callAs(t, "User:bob", d, 1).(*kmsg.ShareGroupDescribeResponse); dr.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("bob describes: %+v", dr.Groups)
	}
	dr := e.callAs(t, "User:alice", d, 1).(*kmsg.ShareGroupDescribeResponse)
	if g := dr.Groups[0]; g.ErrorCode != 0 || len(g.Members) != 1 || g.Members[0].Assignment.TopicPartitions[0].Topic != "orders" || g.AuthorizedOperations != 1<<3|1<<8 {
		t.Fatalf("alice describes: %+v", g)
	}

	// DescribeShareGroupOffsets: the topic alice may not describe is
	// TOPIC_AUTHORIZATION_FAILED, the other answered.
	dso := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	dso.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "sg", Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{
		{Topic: "orders", Partitions: []int32{0}}, {Topic: "secret", Partitions: []int32{0}},
	}}}
	got := map[string]int16{}
	for _, tp := range e.callAs(t, "User:alice", dso, 1).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].Topics {
		got[tp.Topic] = tp.Partitions[0].ErrorCode
	}
	if got["orders"] != 0 || got["secret"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("describe offsets as alice: %v", got)
	}

	// DeleteShareGroupOffsets needs GROUP DELETE, which alice lacks.
	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID, del.Topics = "sg", []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "orders"}}
	if r := e.callAs(t, "User:alice", del, 0).(*kmsg.DeleteShareGroupOffsetsResponse); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alice deletes offsets: %+v", r)
	}
	// AlterShareGroupOffsets as alice reaches the group: it has a member.
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "sg"
	alter.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "orders", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 3}}}}
	if r := e.callAs(t, "User:alice", alter, 0).(*kmsg.AlterShareGroupOffsetsResponse); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("alice alters a live group: %+v", r)
	}
}
