package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareGroupHeartbeat, key 76, version 1 (KIP-932; v0 was Kafka's early
// access version and is not served, as in Kafka 4.4).
//
//   - Joins (member epoch 0, with a client-made member id of at most 36
//     characters and the subscribed topic names), heartbeats and leaves
//     (-1) a share group. The broker assigns with the "simple" share
//     assignor: every partition of a subscribed topic to at least one
//     member, shared when members outnumber partitions. There is no
//     revocation: the answer carries the member's whole assignment by
//     topic ID whenever it changed or the request carried the
//     subscription.
//   - The heartbeat interval is group.share.heartbeat.interval.ms; a
//     member silent for group.share.session.timeout.ms is removed.
//   - Before a share-partition is first assigned, its state is initialized
//     through the share Persister (start offset -1, so the partition leader
//     applies share.auto.offset.reset; 0 for partitions added to a topic
//     the group already has).
//   - Errors: INVALID_REQUEST for missing fields, UNKNOWN_MEMBER_ID,
//     FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED (group.share.max.size),
//     GROUP_ID_NOT_FOUND for a classic or consumer group of that id or a
//     heartbeat (epoch != 0) to no group; GROUP_AUTHORIZATION_FAILED and
//     TOPIC_AUTHORIZATION_FAILED (authz_share.go).
func handleShareGroupHeartbeat(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ShareGroupHeartbeatRequest)
	c := groupCoordinator(d)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	if !shareGroupsOn(d) {
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	return c.ShareGroupHeartbeat(context.Background(), groupClient(r), imageTopicView{d.Controller.Image()}, req), nil
}
