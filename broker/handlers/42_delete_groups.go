package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteGroups, key 42, versions 0-3.
//
//   - Deletes empty groups: tombstones for their offsets and metadata are
//     written to __consumer_offsets. A group with members is
//     NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND, "" INVALID_GROUP_ID.
//   - v1 is the same; v2 is flexible; v3 adds error messages.
func handleDeleteGroups(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteGroupsRequest)
	c := groupCoordinator(d)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
		for _, g := range req.Groups {
			dg := kmsg.NewDeleteGroupsResponseGroup()
			dg.Group, dg.ErrorCode = g, kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, dg)
		}
		return resp, nil
	}
	return c.DeleteGroups(context.Background(), req), nil
}
