package handlers

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/coordinator/txn"
)

// FindCoordinator, key 10, versions 0-6.
//
//   - v0: one group key; the answer is node id, host and port.
//   - v1 adds key_type (0 group, 1 transaction) and error_message; v3 is
//     flexible; v4 batches keys (coordinator_keys in, coordinators out).
//   - A key is answered with the leader of its partition of
//     __consumer_offsets (groups) or __transaction_state (transactional
//     ids), found with Kafka's hash (PartitionFor) so tools agree, and that
//     leader's advertised listener as registered in the metadata image.
//     While the topic does not exist (fewer brokers than its replication
//     factor) or the partition has no live leader, the answer is
//     COORDINATOR_NOT_AVAILABLE and the client retries, as from Kafka.
//     v6 adds key type 2 (SHARE, KIP-932): a share-partition key
//     "group:topicId:partition" answered with the leader of its
//     __share_group_state partition (share_find_coordinator.go).
//     Other key types: INVALID_REQUEST.
func handleFindCoordinator(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	img := d.Controller.Image()
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key, rc.NodeID, rc.Port = key, -1, -1
		var topic string
		hashed := key
		switch req.CoordinatorType {
		case 0:
			topic = coordinator.OffsetsTopic
			if groupCoordinator(d) == nil {
				rc.ErrorCode = kerr.CoordinatorNotAvailable.Code
			}
		case 1:
			topic = txn.TransactionStateTopic
			if d.Transactions == nil {
				rc.ErrorCode = kerr.CoordinatorNotAvailable.Code
			}
		case 2:
			topic = share.StateTopic
			hashed = shareCoordinatorKey(d, req.Version, key, img, &rc)
		default:
			rc.ErrorCode = kerr.InvalidRequest.Code
		}
		if rc.ErrorCode == 0 {
			rc.ErrorCode = kerr.CoordinatorNotAvailable.Code
			if t := img.Topics[topic]; t != nil && len(t.Partitions) > 0 {
				p := t.Partitions[coordinator.PartitionFor(hashed, int32(len(t.Partitions)))]
				if b, ok := img.Brokers[p.Leader]; ok && !b.Fenced {
					rc.Host, rc.Port = b.Endpoint(r.ListenerName)
					rc.ErrorCode, rc.NodeID = 0, b.ID
				}
			}
		}
		if rc.ErrorCode != 0 && rc.ErrorMessage == nil {
			msg := kerr.ErrorForCode(rc.ErrorCode).Error()
			rc.ErrorMessage = &msg
		}
		if rc.ErrorCode == 0 {
			// Kafka 4.4 leaves a found coordinator's message at its
			// default, "" (compat-tests/diff, DIFF_ERROR_MESSAGE=null).
			rc.ErrorMessage = ptrTo("")
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	if req.Version < 4 && len(resp.Coordinators) == 1 {
		rc := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.ErrorMessage = rc.ErrorCode, rc.ErrorMessage
		if rc.ErrorCode == 0 {
			// v1-v3: Kafka 4.4 puts Errors.NONE.message(), "NONE".
			resp.ErrorMessage = ptrTo("NONE")
		}
		resp.NodeID, resp.Host, resp.Port = rc.NodeID, rc.Host, rc.Port
	}
	return resp, nil
}

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
