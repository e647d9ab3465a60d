package handlers

import (
	"context"

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
	if code := modernDescribeUnavailable(c, shareGroupsOn(d)); code != 0 {
		resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
		resp.Groups = describeFailed(req.GroupIDs, code, func(id string, code int16) kmsg.ShareGroupDescribeResponseGroup {
			dg := kmsg.NewShareGroupDescribeResponseGroup()
			dg.GroupID, dg.ErrorCode = id, code
			return dg
		})
		return resp, nil
	}
	return c.ShareGroupDescribe(context.Background(), req), nil
}
