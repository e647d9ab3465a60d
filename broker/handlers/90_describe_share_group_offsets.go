package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeShareGroupOffsets, key 90, versions 0-1 (KIP-932; v1 adds Lag,
// KIP-1226).
//
//   - Per group and share-partition: the share-partition start offset and
//     the leader epoch of its last state write, read from the share
//     Persister's summary; -1 for a partition whose state was never
//     initialized. Topics null asks for every share-partition the group
//     initialized.
//   - Lag is -1 (not computed by samsa yet).
//   - GROUP_ID_NOT_FOUND for a group that is not a share group;
//     UNKNOWN_TOPIC_OR_PARTITION per partition; GROUP_AUTHORIZATION_FAILED
//     and TOPIC_AUTHORIZATION_FAILED (DESCRIBE, authz_share.go).
func handleDescribeShareGroupOffsets(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	c := groupCoordinator(d)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			rg.GroupID, rg.ErrorCode = g.GroupID, kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
	return c.DescribeShareGroupOffsets(context.Background(), imageTopicView{d.Controller.Image()}, req), nil
}
