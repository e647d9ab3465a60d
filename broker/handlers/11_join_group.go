package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup, key 11, versions 0-9.
//
//   - The request blocks until the group's join phase ends: all known
//     members rejoined, or the rebalance timeout (v0: the session timeout)
//     passed, or group.initial.rebalance.delay.ms for a new group. One
//     connection's requests run in order, so clients send group requests
//     on their own connection (franz-go and librdkafka do).
//   - v4+: a member without an id gets MEMBER_ID_REQUIRED and its id, and
//     joins again with it (KIP-394). v5 adds group.instance.id (static
//     membership, KIP-345: a restarted instance keeps its assignment
//     without a rebalance; a stale member id is FENCED_INSTANCE_ID). v6 is
//     flexible; v7 returns protocol_type; v8 adds reason; v9
//     skip_assignment for a static leader that rejoins a stable group.
//   - Session timeouts outside group.{min,max}.session.timeout.ms are
//     INVALID_SESSION_TIMEOUT; no common protocol INCONSISTENT_GROUP_PROTOCOL;
//     group.max.size GROUP_MAX_SIZE_REACHED.
func handleJoinGroup(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.JoinGroupRequest)
	c := groupCoordinator(d)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation, resp.MemberID = kerr.CoordinatorNotAvailable.Code, -1, req.MemberID
		return resp, nil
	}
	ctx, cancel := groupContext(d)
	defer cancel()
	return c.JoinGroup(ctx, groupClient(r), req), nil
}
