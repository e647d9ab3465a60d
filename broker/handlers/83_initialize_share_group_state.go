package handlers

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/coordinator/sharecoord"
)

// InitializeShareGroupState, key 83, version 0 (inter-broker, KIP-932).
//
//   - The group coordinator creates or resets a share-partition's state:
//     its state epoch and start offset (-1: the partition leader chooses),
//     no records in flight. Answered by the share coordinator that has
//     loaded the key's __share_group_state partition (NOT_COORDINATOR
//     elsewhere, COORDINATOR_LOAD_IN_PROGRESS while it loads); an older
//     state epoch than the stored one is FENCED_STATE_EPOCH, an unknown
//     topic partition UNKNOWN_TOPIC_OR_PARTITION (coordinator/share).
//   - Needs CLUSTER_ACTION (authz_share_state.go), as Kafka's KafkaApis.
func handleInitializeShareGroupState(d *Deps, r *Request) (kmsg.Response, error) {
	ctx, cancel := groupContext(d)
	defer cancel()
	return initializeShareGroupState(r.Body.(*kmsg.InitializeShareGroupStateRequest), shareStateCoordinator(ctx, d)), nil
}

// initializeShareGroupState answers req, running each partition's call
// with run.
func initializeShareGroupState(req *kmsg.InitializeShareGroupStateRequest, run shareStateRun) *kmsg.InitializeShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k := share.Key{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
			err := run(req.GroupID, func(ctx context.Context, c *sharecoord.Coordinator) error {
				return c.Initialize(ctx, k, p.StateEpoch, p.StartOffset)
			})
			rp.ErrorCode, rp.ErrorMessage = shareStateError(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// shareStateRun runs call, the share coordinator call of one partition
// of a share-state request (keys 83-87) from group, and returns its
// error.
type shareStateRun func(group string, call func(ctx context.Context, c *sharecoord.Coordinator) error) error

// shareStateCoordinator is the shareStateRun of d's share coordinator:
// INVALID_REQUEST without a group, COORDINATOR_NOT_AVAILABLE on a broker
// with no share coordinator.
func shareStateCoordinator(ctx context.Context, d *Deps) shareStateRun {
	return func(group string, call func(ctx context.Context, c *sharecoord.Coordinator) error) error {
		switch {
		case group == "":
			return kerr.InvalidRequest
		case d.ShareCoordinator == nil:
			return kerr.CoordinatorNotAvailable
		}
		return call(ctx, d.ShareCoordinator)
	}
}

// shareStateError is the error code and message of a share coordinator
// call's error (0, nil for nil).
func shareStateError(err error) (int16, *string) {
	if errors.Is(err, errShareStateDenied) {
		msg := kerr.ClusterAuthorizationFailed.Message
		return kerr.ClusterAuthorizationFailed.Code, &msg
	}
	code, msg := sharecoord.ErrorCode(err)
	if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && code != 0 && msg == nil {
		m := ke.Description
		msg = &m
	}
	return code, msg
}
