package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetDelete, key 47, version 0.
//
//   - Deletes committed offsets of a group (tombstones in
//     __consumer_offsets). An unknown group is GROUP_ID_NOT_FOUND; a
//     non-empty group that is not a "consumer" group NON_EMPTY_GROUP; a
//     topic some member subscribes to GROUP_SUBSCRIBED_TO_TOPIC for each of
//     its partitions. Partitions without an offset are answered with no
//     error, as in Kafka.
func handleOffsetDelete(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetDeleteRequest)
	c := groupCoordinator(d)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	return c.OffsetDelete(context.Background(), req), nil
}
