package handlers

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/quorum"
)

// UnregisterController, key 94, version 0 (flexible): remove a
// controller's registration (kafka-cluster unregister-controller,
// kafka-metadata-quorum remove-controller --unregister,
// Admin.unregisterController). Served on broker and controller listeners,
// as in Kafka.
//
//   - Needs ALTER on the cluster (authzClusterAlter), else
//     CLUSTER_AUTHORIZATION_FAILED.
//   - Forwarded to the active controller from other nodes.
//   - The active controller's own id is INVALID_REQUEST ("Controller
//     cannot unregister itself while it is active."), checked first as in
//     Kafka's QuorumController; an id that is not a registered controller
//     (a broker-only node's included) is CONTROLLER_ID_NOT_REGISTERED.
//   - samsa's controller registrations are the metadata quorum's members
//     (quorum.Quorum.Controllers): a controller removed from the voters
//     (RemoveRaftVoter) stays registered, and listed by DescribeCluster on
//     a controller listener, until it is unregistered; it then keeps
//     receiving the metadata log (a combined node goes on serving as a
//     broker). A voter stays registered (answered NONE): Kafka removes its
//     registration, which a running controller writes again at once (a
//     stopped one's stays gone until it starts).
func handleUnregisterController(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.UnregisterControllerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterControllerResponse)
	if d.Voters == nil {
		resp.ErrorCode = kerr.NotController.Code
		resp.ErrorMessage = ptrTo(kerr.NotController.Message)
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), maxVoterChangeTimeout)
	defer cancel()
	err := d.Voters.UnregisterController(ctx, req.ControllerID)
	switch {
	case err == nil:
	case errors.Is(err, quorum.ErrUnregisterActive):
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = ptrTo("Controller cannot unregister itself while it is active.")
	case errors.Is(err, quorum.ErrControllerNotRegistered):
		resp.ErrorCode = kerr.ControllerIDNotRegistered.Code
		resp.ErrorMessage = ptrTo(kerr.ControllerIDNotRegistered.Message)
	case errors.Is(err, controller.ErrNotController):
		resp.ErrorCode = kerr.NotController.Code
		resp.ErrorMessage = ptrTo(err.Error())
	default:
		resp.ErrorCode = kerr.UnknownServerError.Code
		resp.ErrorMessage = ptrTo(err.Error())
	}
	return resp, nil
}
