package handlers

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator"
)

// FindCoordinator, key 10, versions 0-6.
//
//   - v0: one group key; the answer is node id, host and port.
//   - v1 adds key_type (0 group, 1 transaction) and error_message; v3 is
//     flexible; v4 batches keys (coordinator_keys in, coordinators out).
//   - A group key is answered with this node when it serves the key's
//     __consumer_offsets partition (PartitionFor, Kafka's hash, so tools
//     agree), else COORDINATOR_NOT_AVAILABLE and the client retries.
//     Transaction keys are answered with this node too (the transaction
//     coordinator will live here). Other key types: INVALID_REQUEST.
//   - host and port are this broker's advertised listener, as registered
//     in the metadata image.
func handleFindCoordinator(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	c := groupCoordinator(d)
	self, ok := d.Controller.Image().Brokers[d.Config.NodeID]
	if c == nil || !ok {
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		msg := kerr.CoordinatorNotAvailable.Error()
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Port = kerr.CoordinatorNotAvailable.Code, &msg, -1, -1
		for _, k := range req.CoordinatorKeys {
			resp.Coordinators = append(resp.Coordinators, kmsg.FindCoordinatorResponseCoordinator{
				Key: k, NodeID: -1, Port: -1, ErrorCode: kerr.CoordinatorNotAvailable.Code, ErrorMessage: &msg,
			})
		}
		return resp, nil
	}
	return c.FindCoordinator(req, coordinator.Node{ID: self.ID, Host: self.Host, Port: self.Port}), nil
}

// groupCoordinator returns the group coordinator, or nil when none is
// wired in (every group API then answers COORDINATOR_NOT_AVAILABLE).
// any() lets this compile whether Deps.Groups is an interface or a
// *coordinator.Coordinator.
func groupCoordinator(d *Deps) *coordinator.Coordinator {
	c, _ := any(d.Groups).(*coordinator.Coordinator)
	return c
}

// groupContext is the context of a group request that may block
// (JoinGroup, SyncGroup): it ends when the broker stops.
func groupContext(d *Deps) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	if d.Stopping != nil {
		go func() {
			select {
			case <-d.Stopping:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

// groupClient is who sent r, as DescribeGroups shows members: the client
// id and, like Kafka, "/" and the remote IP.
func groupClient(r *Request) coordinator.Client {
	var c coordinator.Client
	if r.Header.ClientID != nil {
		c.ID = *r.Header.ClientID
	}
	host := r.ClientHost
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host != "" {
		c.Host = "/" + host
	}
	return c
}
