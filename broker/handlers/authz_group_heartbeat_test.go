package handlers

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller/acl"
)

// withACLs gives the node an authorizer (User:admin a super user) and
// creates the ACLs, as admin, through CreateAcls.
func (e *adminEnv) withACLs(t *testing.T, creations ...kmsg.CreateACLsRequestCreation) {
	t.Helper()
	e.d.Authz = &Authz{Authorizer: acl.Authorizer{SuperUsers: []string{"User:admin"}}}
	c := kmsg.NewPtrCreateACLsRequest()
	c.Creations = creations
	r := e.callAs(t, "User:admin", c, 3).(*kmsg.CreateACLsResponse)
	if len(r.Results) != len(creations) {
		t.Fatalf("create ACLs: %d results for %d creations", len(r.Results), len(creations))
	}
	for i, res := range r.Results {
		if res.ErrorCode != 0 {
			t.Fatalf("create ACL %d: %+v", i, res)
		}
	}
}

// TestGroupHeartbeatAndDescribeAuthorized drives the checks consumer and
// share groups share (authzGroupHeartbeat, authzGroupDescribe) through
// the dispatch table: a heartbeat needs GROUP READ and TOPIC DESCRIBE on
// its subscription; a describe of an allowed and a denied group answers
// the allowed one with the principal's operations and the denied one
// GROUP_AUTHORIZATION_FAILED with unknown operations, in that order; a
// describe of denied groups only is answered without running it.
func TestGroupHeartbeatAndDescribeAuthorized(t *testing.T) {
	e := newGroupEnv(t)
	e.withACLs(t,
		aclCreation(kmsg.ACLResourceTypeGroup, "cg", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead),
		aclCreation(kmsg.ACLResourceTypeGroup, "sg", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead),
		aclCreation(kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead),
	)
	e.createTopic(t, "orders", 2, nil)
	e.createTopic(t, "secret", 1, nil)
	const readDescribe = 1<<kmsg.ACLOperationRead | 1<<kmsg.ACLOperationDescribe

	type describedGroup struct {
		id   string
		code int16
		msg  *string
		ops  int32
	}
	for _, tc := range []struct {
		kind      string
		heartbeat func(principal string, topics ...string) (code int16, msg *string)
		describe  func(principal string, groups ...string) []describedGroup
	}{
		{
			kind: "consumer",
			heartbeat: func(principal string, topics ...string) (int16, *string) {
				req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				req.Group, req.MemberID, req.RebalanceTimeoutMillis = "cg", "m-"+principal, 30000
				req.SubscribedTopicNames, req.Topics = topics, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				r := e.callAs(t, principal, req, 1).(*kmsg.ConsumerGroupHeartbeatResponse)
				return r.ErrorCode, r.ErrorMessage
			},
			describe: func(principal string, groups ...string) (out []describedGroup) {
				req := kmsg.NewPtrConsumerGroupDescribeRequest()
				req.Groups, req.IncludeAuthorizedOperations = groups, true
				for _, g := range e.callAs(t, principal, req, 1).(*kmsg.ConsumerGroupDescribeResponse).Groups {
					out = append(out, describedGroup{g.Group, g.ErrorCode, g.ErrorMessage, g.AuthorizedOperations})
				}
				return out
			},
		},
		{
			kind: "share",
			heartbeat: func(principal string, topics ...string) (int16, *string) {
				req := kmsg.NewPtrShareGroupHeartbeatRequest()
				req.GroupID, req.MemberID, req.SubscribedTopicNames = "sg", "m-"+principal, topics
				r := e.callAs(t, principal, req, 1).(*kmsg.ShareGroupHeartbeatResponse)
				return r.ErrorCode, r.ErrorMessage
			},
			describe: func(principal string, groups ...string) (out []describedGroup) {
				req := kmsg.NewPtrShareGroupDescribeRequest()
				req.GroupIDs, req.IncludeAuthorizedOperations = groups, true
				for _, g := range e.callAs(t, principal, req, 1).(*kmsg.ShareGroupDescribeResponse).Groups {
					out = append(out, describedGroup{g.GroupID, g.ErrorCode, g.ErrorMessage, g.AuthorizedOperations})
				}
				return out
			},
		},
	} {
		group := tc.kind[:1] + "g"
		if code, _ := tc.heartbeat("User:bob", "orders"); code != kerr.GroupAuthorizationFailed.Code {
			t.Errorf("%s: bob heartbeats: %d", tc.kind, code)
		}
		if code, msg := tc.heartbeat("User:alice", "orders", "secret"); code != kerr.TopicAuthorizationFailed.Code || msg == nil || *msg != "The following topics are not authorized: secret" {
			t.Errorf("%s: alice subscribes to secret: %d %v", tc.kind, code, msg)
		}
		if code, _ := tc.heartbeat("User:alice", "orders"); code != 0 {
			t.Fatalf("%s: alice joins: %d", tc.kind, code)
		}
		got := tc.describe("User:alice", "secret-group", group)
		if len(got) != 2 {
			t.Fatalf("%s: alice describes: %+v", tc.kind, got)
		}
		if g := got[0]; g.id != group || g.code != 0 || g.ops != readDescribe {
			t.Errorf("%s: the allowed group: %+v", tc.kind, g)
		}
		if g := got[1]; g.id != "secret-group" || g.code != kerr.GroupAuthorizationFailed.Code || g.msg == nil || *g.msg != kerr.GroupAuthorizationFailed.Message || g.ops != math.MinInt32 {
			t.Errorf("%s: the denied group: %+v", tc.kind, g)
		}
		if got := tc.describe("User:bob", group); len(got) != 1 || got[0].code != kerr.GroupAuthorizationFailed.Code || got[0].ops != math.MinInt32 {
			t.Errorf("%s: bob describes: %+v", tc.kind, got)
		}
	}
}
