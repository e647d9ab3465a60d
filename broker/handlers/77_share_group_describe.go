package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareGroupDescribe, key 77, version 1 (KIP-932).
//
//   - Per group: state (Empty, Stable), group epoch, assignment epoch, the
//     assignor ("simple"), and each member with its epoch, client, rack,
//     subscribed topics and assignment (topic IDs and names). Authorized
//     operations when asked, else -2147483648.
//   - GROUP_ID_NOT_FOUND for an unknown group or one of another type;
//     INVALID_GROUP_ID for an empty id; GROUP_AUTHORIZATION_FAILED without
//     DESCRIBE on the group.
func handleShareGroupDescribe(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ShareGroupDescribeRequest)
	c := groupCoordinator(d)
	if c == nil || !shareGroupsOn(d) {
		resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
		code := kerr.CoordinatorNotAvailable.Code
		if c != nil {
			code = kerr.UnsupportedVersion.Code
		}
		for _, g := range req.GroupIDs {
			dg := kmsg.NewShareGroupDescribeResponseGroup()
			dg.GroupID, dg.ErrorCode = g, code
			resp.Groups = append(resp.Groups, dg)
		}
		return resp, nil
	}
	return c.ShareGroupDescribe(context.Background(), req), nil
}
