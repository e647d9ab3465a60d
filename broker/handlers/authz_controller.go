package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/acl"
)

// The requests only controllers serve (Entry.ControllerOnly: broker
// registration and heartbeats, ISR changes, producer id blocks, directory
// assignments, voter updates, forwarded requests in an Envelope) come from
// other nodes. Kafka's ControllerApis answers them only for a principal
// allowed CLUSTER_ACTION on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
// samsa checks the same on a TLS or SASL controller listener with an
// authorizer; on a PLAINTEXT one every connection is User:ANONYMOUS and is
// trusted, as in earlier builds (docs/OPERATIONS.md "Controller listener":
// keep that port on the cluster's network).

// ClusterAction reports whether principal from host may perform
// CLUSTER_ACTION on the cluster under img's ACLs (nil img: super.users
// only, as before the metadata log is read).
func (a *Authz) ClusterAction(img *controller.Image, principal, host string) bool {
	var cands []acl.Binding
	if img != nil {
		cands = a.indexFor(img.ACLs).Candidates(acl.Cluster)
	}
	if img == nil && !a.IsSuperUser(principal) {
		return false
	}
	return a.Authorize(cands, acl.Request{Principal: principal, Host: host}, kmsg.ACLOperationClusterAction, acl.Cluster)
}

// authzControllerCheck returns the CLUSTER_ACTION check of a
// controller-only API, nil for the others.
func authzControllerCheck(key int16) authzFunc {
	switch kmsg.Key(key) {
	case kmsg.AlterPartition, kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.AllocateProducerIDs,
		kmsg.AssignReplicasToDirs, kmsg.UpdateRaftVoter, kmsg.Envelope:
		return authzClusterAction
	}
	return nil
}

func authzClusterAction(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	if r.Forwarded || r.SecurityProtocol == "" || r.SecurityProtocol == "PLAINTEXT" || d.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
		return next(d, r)
	}
	code := kerr.ClusterAuthorizationFailed.Code
	resp := r.Body.ResponseKind()
	switch out := resp.(type) {
	case *kmsg.AlterPartitionResponse:
		out.ErrorCode = code
	case *kmsg.BrokerRegistrationResponse:
		out.ErrorCode = code
	case *kmsg.BrokerHeartbeatResponse:
		out.ErrorCode = code
	case *kmsg.AllocateProducerIDsResponse:
		out.ErrorCode = code
	case *kmsg.AssignReplicasToDirsResponse:
		out.ErrorCode = code
	case *kmsg.UpdateRaftVoterResponse:
		out.ErrorCode = code
	case *kmsg.EnvelopeResponse:
		out.ErrorCode = code
	}
	return resp, nil
}
