package handlers

import (
	"context"
	"errors"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/quorum"
)

// VoterChanges changes the metadata quorum's voter set (KIP-853); the
// node's *quorum.Quorum.
type VoterChanges interface {
	AddVoter(ctx context.Context, id int32, m quorum.Member) error
	RemoveVoter(ctx context.Context, id int32, directoryID [16]byte) error
	UpdateVoter(ctx context.Context, id int32, m quorum.Member) error
	// LeaderAndEpoch is the leader as this node knows it, the Raft term,
	// the leader's controller listener, and whether this node leads.
	LeaderAndEpoch() (leader int32, epoch int64, m quorum.Member, leading bool)
	// Members is the Raft configuration as this node knows it.
	Members() (map[int32]quorum.Member, map[int32]bool, error)
	// Controllers are the registered controllers as this node knows
	// them; UnregisterController removes one's registration
	// (94_unregister_controller.go).
	Controllers() (map[int32]quorum.Member, error)
	UnregisterController(ctx context.Context, id int32) error
}

// quorumVoterEndpoints lists the registered controllers
// (quorum.Quorum.Controllers) with their controller listener host and
// port (DescribeCluster on a controller listener), as Kafka lists its
// controller registrations: the voters, voters added with AddRaftVoter,
// and controllers removed from the voters until UnregisterController.
// Nil when unknown.
func quorumVoterEndpoints(d *Deps) []kmsg.DescribeClusterResponseBroker {
	if d.Voters == nil {
		return nil
	}
	ctrls, err := d.Voters.Controllers()
	if err != nil {
		return nil
	}
	var out []kmsg.DescribeClusterResponseBroker
	for _, id := range slices.Sorted(maps.Keys(ctrls)) {
		host, port, err := net.SplitHostPort(ctrls[id].Addr)
		p, perr := strconv.ParseUint(port, 10, 16)
		if err != nil || perr != nil {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = id, host, int32(p)
		out = append(out, rb)
	}
	return out
}

// maxVoterChangeTimeout bounds a voter change whose request names no
// timeout or a longer one. Kafka 4.4 does not wait as long as timeout_ms
// says either: its AddVoterHandler times the new voter out after
// controller.quorum.request.timeout.ms (javap); a handler that waited the
// request's 24 days (TestTCPFuzzShort) would hold its goroutine as long.
const maxVoterChangeTimeout = 30 * time.Second

// AddRaftVoter, key 80, versions 0-1 (KIP-853): make a controller a voter
// of the metadata quorum (kafka-metadata-quorum add-controller,
// Admin.addRaftVoter).
//
//   - Forwarded to the active controller from other nodes (Entry.Forward);
//     a node that still answers without leading says
//     NOT_LEADER_OR_FOLLOWER, as Kafka's non-leaders do.
//   - A cluster id other than this cluster's is INCONSISTENT_CLUSTER_ID;
//     the zero directory id INVALID_REQUEST (Kafka's "didn't include a
//     valid voter").
//   - The listeners must include the first of controller.listener.names
//     (the one voters reach each other on), else INVALID_REQUEST, as
//     Kafka.
//   - While another voter change runs, or before this leader committed an
//     entry of its term, REQUEST_TIMED_OUT at once with Kafka's messages
//     ("Request timed out waiting for leader to handle previous voter
//     change request", "... to establish HWM and fence previous voter
//     changes"), as Kafka 4.4's AddVoterHandler; RemoveRaftVoter and
//     UpdateRaftVoter answer the same.
//   - A node that already votes is DUPLICATE_VOTER. A node that is not
//     caught up with the log is REQUEST_TIMED_OUT "Aborted add voter
//     operation for ReplicaKey(...) since it is lagging behind", at once
//     for a node that already receives the log (a non-voting member),
//     after at most 2 s (Kafka's controller.quorum.request.timeout.ms)
//     for one that this request makes a member: it then stays a
//     non-voting member and receives the log, and the operator adds it
//     again once it has caught up, as with Kafka, whose joining
//     controllers fetch as observers from their start
//     (quorum.Quorum.AddVoter). A caught-up node is made a voter; both
//     versions answer once that is committed (ack_when_committed is
//     always true here), at most timeout_ms or maxVoterChangeTimeout
//     after the request.
//   - samsa allows voter changes on quorums set up with
//     controller.quorum.voters too; Kafka answers UNSUPPORTED_VERSION
//     there (kraft.version 0). See compat-tests/FINDINGS.md.
func handleAddRaftVoter(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	if req.ClusterID != nil && *req.ClusterID != d.Controller.Image().ClusterID {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp, nil
	}
	if req.VoterDirectoryID == ([16]byte{}) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = ptrTo("Add voter request didn't include a valid voter")
		return resp, nil
	}
	name := controllerListenerName(d)
	var m *quorum.Member
	for _, l := range req.Listeners {
		if strings.EqualFold(l.Name, name) {
			m = &quorum.Member{Addr: net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))), Listener: l.Name, DirectoryID: req.VoterDirectoryID}
		}
	}
	if m == nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = ptrTo("Provided listeners do not contain a listener for " + name)
		return resp, nil
	}
	if d.Voters == nil {
		resp.ErrorCode = kerr.NotLeaderForPartition.Code
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), voterChangeTimeout(req.TimeoutMillis))
	defer cancel()
	resp.ErrorCode, resp.ErrorMessage = voterChangeError(d.Voters.AddVoter(ctx, req.VoterID, *m))
	return resp, nil
}

func voterChangeTimeout(ms int32) time.Duration {
	if ms <= 0 {
		return maxVoterChangeTimeout
	}
	return min(time.Duration(ms)*time.Millisecond, maxVoterChangeTimeout)
}

// voterChangeError maps the quorum's errors to Kafka's codes, with the
// error's text as message.
func voterChangeError(err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	msg := ptrTo(err.Error())
	switch {
	case errors.Is(err, quorum.ErrDuplicateVoter):
		return kerr.DuplicateVoter.Code, msg
	case errors.Is(err, quorum.ErrVoterNotFound):
		return kerr.VoterNotFound.Code, msg
	case errors.Is(err, quorum.ErrInvalidVoter):
		return kerr.InvalidRequest.Code, msg
	case errors.Is(err, quorum.ErrNotCaughtUp), errors.Is(err, quorum.ErrChangePending):
		return kerr.RequestTimedOut.Code, msg
	case errors.Is(err, controller.ErrNotController):
		return kerr.NotLeaderForPartition.Code, msg
	}
	return kerr.UnknownServerError.Code, msg
}
