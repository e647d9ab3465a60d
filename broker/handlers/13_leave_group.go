package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup, key 13, versions 0-5.
//
//   - v0-v2: one member by id, its error at the top level.
//   - v3+ batches members, by member id and/or group.instance.id (an
//     instance alone removes whichever member it has; a mismatched pair is
//     FENCED_INSTANCE_ID), each with its own error; unknown members are
//     UNKNOWN_MEMBER_ID. v4 is flexible, v5 adds a reason.
//   - Removing a member starts a rebalance for the others.
func handleLeaveGroup(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.LeaveGroupRequest)
	c := groupCoordinator(d)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	return c.LeaveGroup(context.Background(), req), nil
}
