package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat, key 12, versions 0-4.
//
//   - Keeps a member's session alive. REBALANCE_IN_PROGRESS tells it to
//     rejoin; UNKNOWN_MEMBER_ID that its session expired or it left;
//     ILLEGAL_GENERATION that it missed a generation; FENCED_INSTANCE_ID
//     (v3+ group.instance.id) that a newer instance took its place.
//   - v1 adds throttle time, v3 group.instance.id, v4 is flexible.
func handleHeartbeat(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.HeartbeatRequest)
	c := groupCoordinator(d)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	return c.Heartbeat(context.Background(), req), nil
}
