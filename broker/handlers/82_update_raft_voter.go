package handlers

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller/quorum"
)

// kraftVersion is the kraft.version samsa's quorum behaves as: 1, voter
// changes supported (a quorum of controller.quorum.voters too).
const kraftVersion = 1

// UpdateRaftVoter, key 82, version 0 (KIP-853): a voter tells the active
// controller its controller listener endpoints, directory id and the
// kraft.version range it supports (Kafka's controllers send it at start
// when these differ from the voter set's).
//
//   - Served on the controller listener only (ControllerOnly), never
//     forwarded, as in Kafka; CurrentLeader names the leader, its epoch
//     (the Raft term) and its controller listener.
//   - In Kafka's order: a cluster id other than this cluster's is
//     INCONSISTENT_CLUSTER_ID; a current_leader_epoch below the term
//     FENCED_LEADER_EPOCH (-1, unknown, included), above it
//     UNKNOWN_LEADER_EPOCH; a node that does not lead
//     NOT_LEADER_OR_FOLLOWER; the zero directory id, no endpoint for the
//     first of controller.listener.names, or a malformed version range
//     INVALID_REQUEST; a range without kraft.version 1 INVALID_REQUEST;
//     no voter with that id and directory id VOTER_NOT_FOUND (a voter
//     of controller.quorum.voters, with the zero directory id, matches any
//     directory id, as Kafka's static voters do).
//   - An unchanged endpoint and directory id succeed without a change.
//     A changed one is applied by removing the voter and adding it back
//     at its new address (quorum.UpdateVoter: hashicorp/raft cannot change
//     a live member's address in place without a data race); a voter that
//     does not answer at the new address in time is REQUEST_TIMED_OUT
//     (Kafka's answer while a voter change cannot complete). Kafka answers
//     before the change commits; samsa once it is done.
//   - A change of the active controller's own endpoint is INVALID_REQUEST
//     (it cannot remove itself while it leads; Kafka's leader never gets
//     such a request from itself).
func handleUpdateRaftVoter(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.UpdateRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
	resp.Default()
	if d.Voters == nil {
		resp.ErrorCode = kerr.NotLeaderForPartition.Code
		return resp, nil
	}
	leader, epoch, lm, leading := d.Voters.LeaderAndEpoch()
	resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch = leader, int32(epoch)
	if host, port, err := net.SplitHostPort(lm.Addr); err == nil {
		if p, err := strconv.ParseInt(port, 10, 32); err == nil {
			resp.CurrentLeader.Host, resp.CurrentLeader.Port = host, int32(p)
		}
	}
	if req.ClusterID != nil && *req.ClusterID != d.Controller.Image().ClusterID {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp, nil
	}
	switch {
	case int64(req.CurrentLeaderEpoch) < epoch:
		resp.ErrorCode = kerr.FencedLeaderEpoch.Code
		return resp, nil
	case int64(req.CurrentLeaderEpoch) > epoch:
		resp.ErrorCode = kerr.UnknownLeaderEpoch.Code
		return resp, nil
	case !leading:
		resp.ErrorCode = kerr.NotLeaderForPartition.Code
		return resp, nil
	}
	name := controllerListenerName(d)
	var m *quorum.Member
	for _, l := range req.Listeners {
		if strings.EqualFold(l.Name, name) {
			m = &quorum.Member{Addr: net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))), Listener: l.Name, DirectoryID: req.VoterDirectoryID}
		}
	}
	v := req.KRaftVersionFeature
	if req.VoterDirectoryID == ([16]byte{}) || m == nil ||
		v.MinSupportedVersion < 0 || v.MaxSupportedVersion < 0 || v.MaxSupportedVersion < v.MinSupportedVersion ||
		v.MinSupportedVersion > kraftVersion || v.MaxSupportedVersion < kraftVersion {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), maxVoterChangeTimeout)
	defer cancel()
	err := d.Voters.UpdateVoter(ctx, req.VoterID, *m)
	if errors.Is(err, quorum.ErrLeaderEndpoint) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	resp.ErrorCode, _ = voterChangeError(err)
	return resp, nil
}
