package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RemoveRaftVoter, key 81, version 0 (KIP-853): take a controller out of
// the metadata quorum's voters (kafka-metadata-quorum remove-controller,
// Admin.removeRaftVoter).
//
//   - Forwarded to the active controller as AddRaftVoter; a cluster id
//     other than this cluster's is INCONSISTENT_CLUSTER_ID.
//   - The voter must match both voter_id and voter_directory_id as
//     DescribeQuorum shows them (the zero id, AAAAAAAAAAAAAAAAAAAAAA, for
//     voters of controller.quorum.voters), else VOTER_NOT_FOUND; removing
//     the last voter is VOTER_NOT_FOUND too, as in Kafka. The zero
//     directory id naming no voter is INVALID_REQUEST, as Kafka answers
//     every zero id (its static quorums cannot change; samsa's can, and
//     their voters have the zero id).
//   - The removed node keeps receiving the metadata log as an observer
//     (a combined node goes on serving as a broker) and can be added back
//     with AddRaftVoter. Removing the active controller makes it step down
//     once the change is committed.
func handleRemoveRaftVoter(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.RemoveRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	if req.ClusterID != nil && *req.ClusterID != d.Controller.Image().ClusterID {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp, nil
	}
	if d.Voters == nil {
		resp.ErrorCode = kerr.NotLeaderForPartition.Code
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), maxVoterChangeTimeout)
	defer cancel()
	resp.ErrorCode, resp.ErrorMessage = voterChangeError(d.Voters.RemoveVoter(ctx, req.VoterID, req.VoterDirectoryID))
	return resp, nil
}
