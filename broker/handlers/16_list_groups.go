package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups, key 16, versions 0-5.
//
//   - Lists the groups of every __consumer_offsets partition this node
//     serves; while one is loading the error is COORDINATOR_LOAD_IN_PROGRESS
//     (with the groups of the others).
//   - v3 is flexible; v4 filters by state (case-insensitive; an unknown
//     name matches nothing) and returns each group's state; v5 filters by
//     type and returns it: "classic", "consumer" (KIP-848), "share" or
//     "streams".
func handleListGroups(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListGroupsRequest)
	c := groupCoordinator(d)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	return c.ListGroups(context.Background(), req), nil
}
