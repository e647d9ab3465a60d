package handlers

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups, key 15, versions 0-6.
//
//   - Per group: state, protocol type, and members (id, client id, client
//     host; protocol metadata and assignment only in Stable, as Kafka).
//   - v3 adds authorized operations (READ, DELETE, DESCRIBE without an
//     authorizer, the principal's with one, authz_groups.go; -2147483648
//     when not asked); v4 group.instance.id; v5 is
//     flexible; v6 answers an unknown group GROUP_ID_NOT_FOUND with a
//     message (KIP-1043), where older versions say state "Dead".
func handleDescribeGroups(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeGroupsRequest)
	c := groupCoordinator(d)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range req.Groups {
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.ErrorCode, dg.AuthorizedOperations = g, kerr.CoordinatorNotAvailable.Code, math.MinInt32
			resp.Groups = append(resp.Groups, dg)
		}
		return resp, nil
	}
	return c.DescribeGroups(context.Background(), req), nil
}
