package handlers

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// DescribeCluster, key 60, versions 0-2.
//
//   - v0: cluster_id, controller_id, the unfenced brokers (id, host, port,
//     rack) sorted by id, and cluster_authorized_operations when
//     include_cluster_authorized_operations is set (else -2147483648, "not
//     requested"). With no authorizer every CLUSTER operation is allowed;
//     with one, the principal's (authz_admin.go).
//   - v1: endpoint_type: we are a broker endpoint, so 1 (BROKERS) is
//     answered; 2 (CONTROLLERS) is MISMATCHED_ENDPOINT_TYPE and any other
//     value UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST at v0, which has no
//     such codes, as in Kafka). The response echoes endpoint_type 1.
//     On a controller listener it is the other way round (Kafka's
//     ControllerApis): 2 (CONTROLLERS) lists the registered controllers
//     (the voters, and controllers removed from the voters until
//     UnregisterController) at their controller listeners with the
//     active controller as controller_id
//     (kafka-metadata-quorum --bootstrap-controller starts with it), and
//     1 is MISMATCHED_ENDPOINT_TYPE.
//   - v2: include_fenced_brokers lists the fenced brokers too, each with
//     is_fenced (KIP-1073, kafka-cluster.sh list-endpoints
//     --include-fenced-brokers); without it, and below v2, only unfenced
//     brokers are listed, as in Kafka's KafkaApis.
//
// controller_id is, as in Kafka's KRaft brokers, a broker the client can
// reach: the controller node when it is an unfenced broker (always so
// with combined broker and controller nodes), else the lowest unfenced
// broker, else -1.
func handleDescribeCluster(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.Default()
	v := r.Header.APIVersion

	endpoint := req.EndpointType
	if v < 1 {
		endpoint = 1
	}
	if r.Controller && endpoint == 2 {
		return describeControllers(d, resp), nil
	}
	switch endpoint {
	case 1:
		if r.Controller {
			resp.ErrorCode = kerr.MismatchedEndpointType.Code
			msg := "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER"
			resp.ErrorMessage = &msg
			return resp, nil
		}
	case 2:
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		if v == 0 {
			resp.ErrorCode = kerr.InvalidRequest.Code
		}
		msg := "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
		resp.ErrorMessage = &msg
		return resp, nil
	default:
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		if v == 0 {
			resp.ErrorCode = kerr.InvalidRequest.Code
		}
		msg := fmt.Sprintf("Unsupported endpoint type %d", endpoint)
		resp.ErrorMessage = &msg
		return resp, nil
	}

	img := d.Controller.Image()
	resp.EndpointType = 1
	resp.ClusterID = img.ClusterID
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = clusterAuthorizedOperations()
	}
	brokers := sortedBrokers(img)
	resp.ControllerID = -1
	for _, b := range brokers {
		if b.ID == img.ControllerID {
			resp.ControllerID = b.ID
		}
	}
	if resp.ControllerID == -1 && len(brokers) > 0 {
		resp.ControllerID = brokers[0].ID
	}
	if v >= 2 && req.IncludeFencedBrokers {
		brokers = allBrokers(img)
	}
	for _, b := range brokers {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID = b.ID
		rb.Host, rb.Port = b.Endpoint(r.ListenerName)
		rb.Rack = b.Rack
		rb.IsFenced = b.Fenced
		resp.Brokers = append(resp.Brokers, rb)
	}
	return resp, nil
}

// allBrokers is every registered broker, fenced or not, sorted by id.
func allBrokers(img *controller.Image) []controller.Broker {
	out := make([]controller.Broker, 0, len(img.Brokers))
	for _, b := range img.Brokers {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b controller.Broker) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// describeControllers answers DescribeCluster with endpoint type 2 on a
// controller listener: the registered controllers of the quorum's Raft
// configuration (quorumVoterEndpoints; controller.quorum.voters when
// there is none, or it names no host:port) and the active controller.
func describeControllers(d *Deps, resp *kmsg.DescribeClusterResponse) *kmsg.DescribeClusterResponse {
	img := d.Controller.Image()
	resp.EndpointType = 2
	resp.ClusterID = img.ClusterID
	resp.ControllerID = d.Controller.ActiveController()
	if voters := quorumVoterEndpoints(d); len(voters) > 0 {
		resp.Brokers = voters
		return resp
	}
	for _, v := range d.Config.QuorumVoters {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = v.ID, v.Host, int32(v.Port)
		resp.Brokers = append(resp.Brokers, rb)
	}
	return resp
}
