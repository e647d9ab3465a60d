package handlers

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator/sharecoord"
)

// Share coordinator APIs (83-87) are inter-broker: they need
// CLUSTER_ACTION on the cluster, else every partition gets
// CLUSTER_AUTHORIZATION_FAILED, as Kafka's KafkaApis answers them.
func authzShareStateCheck(key int16) authzFunc {
	switch kmsg.Key(key) {
	case kmsg.InitializeShareGroupState, kmsg.ReadShareGroupState, kmsg.WriteShareGroupState,
		kmsg.DeleteShareGroupState, kmsg.ReadShareGroupStateSummary:
		return authzShareState
	}
	return nil
}

// errShareStateDenied is the error of every partition of a share-state
// request without CLUSTER_ACTION: CLUSTER_AUTHORIZATION_FAILED with
// kerr's message (shareStateError).
var errShareStateDenied = fmt.Errorf("handlers: share state denied: %w", kerr.ClusterAuthorizationFailed)

func authzShareState(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	if d.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
		return next(d, r)
	}
	deny := func(string, func(context.Context, *sharecoord.Coordinator) error) error { return errShareStateDenied }
	switch req := r.Body.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		return initializeShareGroupState(req, deny), nil
	case *kmsg.ReadShareGroupStateRequest:
		return readShareGroupState(req, deny), nil
	case *kmsg.WriteShareGroupStateRequest:
		return writeShareGroupState(req, deny), nil
	case *kmsg.DeleteShareGroupStateRequest:
		return deleteShareGroupState(req, deny), nil
	case *kmsg.ReadShareGroupStateSummaryRequest:
		return readShareGroupStateSummary(req, deny), nil
	}
	return next(d, r)
}
