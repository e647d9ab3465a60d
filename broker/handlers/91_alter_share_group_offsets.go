package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterShareGroupOffsets, key 91, version 0 (KIP-932).
//
//   - Resets share-partitions of an empty share group (one that does not
//     exist yet is created) to the given start offsets: the share state is
//     re-initialized through the share Persister with a new state epoch
//     (the bumped group epoch), so a partition leader holding the old state
//     is fenced. kafka-share-groups.sh --reset-offsets sends it.
//   - NON_EMPTY_GROUP for a group with members, GROUP_ID_NOT_FOUND for a
//     classic or consumer group of that id, UNKNOWN_TOPIC_OR_PARTITION per
//     partition; GROUP_AUTHORIZATION_FAILED and TOPIC_AUTHORIZATION_FAILED
//     (READ, authz_share.go).
func handleAlterShareGroupOffsets(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	c := groupCoordinator(d)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	return c.AlterShareGroupOffsets(context.Background(), imageTopicView{d.Controller.Image()}, req), nil
}
