package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupDescribe, key 69, versions 0-1 (KIP-848).
//
//   - Per group: state (Empty, Assigning, Reconciling, Stable), group
//     epoch, target assignment epoch, the assignor in use, and each member
//     with its epoch, subscription, current and target assignment (topic
//     IDs and names). Authorized operations are READ, DELETE, DESCRIBE when
//     asked (no authorizer; with one, the principal's and a group it may
//     not DESCRIBE is GROUP_AUTHORIZATION_FAILED, authz_groups.go), else
//     -2147483648.
//   - GROUP_ID_NOT_FOUND for an unknown group or a classic one;
//     INVALID_GROUP_ID for an empty id.
//   - v1 adds the member type (1: consumer protocol).
func handleConsumerGroupDescribe(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ConsumerGroupDescribeRequest)
	c := groupCoordinator(d)
	if code := modernDescribeUnavailable(c, consumerGroupsOn(d)); code != 0 {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		resp.Groups = describeFailed(req.Groups, code, func(id string, code int16) kmsg.ConsumerGroupDescribeResponseGroup {
			dg := kmsg.NewConsumerGroupDescribeResponseGroup()
			dg.Group, dg.ErrorCode = id, code
			return dg
		})
		return resp, nil
	}
	return c.ConsumerGroupDescribe(context.Background(), req), nil
}
