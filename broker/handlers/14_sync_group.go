package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup, key 14, versions 0-5.
//
//   - After JoinGroup the leader sends the assignment; it is written to
//     __consumer_offsets (GroupMetadataValue) and then every member's
//     SyncGroup gets its part. A follower's SyncGroup blocks until then;
//     one that arrives in a new rebalance gets REBALANCE_IN_PROGRESS.
//   - v1 adds throttle time, v3 group.instance.id, v4 is flexible, v5
//     checks protocol_type and protocol_name (INCONSISTENT_GROUP_PROTOCOL),
//     which are mandatory: a v5+ request without them is
//     INCONSISTENT_GROUP_PROTOCOL before anything else, as Kafka's
//     KafkaApis (and before authorization, authz_groups.go).
func handleSyncGroup(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.SyncGroupRequest)
	if syncGroupLacksProtocol(r) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
		return resp, nil
	}
	c := groupCoordinator(d)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	ctx, cancel := groupContext(d)
	defer cancel()
	return c.SyncGroup(ctx, req), nil
}

// syncGroupLacksProtocol reports whether r is a SyncGroup v5+ without its
// mandatory protocol type or name.
func syncGroupLacksProtocol(r *Request) bool {
	req := r.Body.(*kmsg.SyncGroupRequest)
	return r.Header.APIVersion >= 5 && (req.ProtocolType == nil || req.Protocol == nil)
}
