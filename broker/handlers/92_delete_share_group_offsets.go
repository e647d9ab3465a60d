package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteShareGroupOffsets, key 92, version 0 (KIP-932).
//
//   - Deletes the share state of every share-partition of the named topics
//     in an empty share group (through the share Persister); the group
//     forgets them, so a later member starts them afresh from
//     share.auto.offset.reset. kafka-share-groups.sh --delete-offsets
//     sends it.
//   - NON_EMPTY_GROUP for a group with members, GROUP_ID_NOT_FOUND for no
//     share group of that id, UNKNOWN_TOPIC_OR_PARTITION per topic;
//     GROUP_AUTHORIZATION_FAILED (DELETE) and TOPIC_AUTHORIZATION_FAILED
//     (READ, authz_share.go).
func handleDeleteShareGroupOffsets(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	c := groupCoordinator(d)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	return c.DeleteShareGroupOffsets(context.Background(), imageTopicView{d.Controller.Image()}, req), nil
}
