package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/coordinator/sharecoord"
)

// WriteShareGroupState, key 85, versions 0-1 (inter-broker, KIP-932).
//
//   - A partition leader replaces a share-partition's state: start offset
//     (-1 keeps it), the records in flight. An older leader or state epoch
//     than recorded is FENCED_LEADER_EPOCH / FENCED_STATE_EPOCH, a
//     share-partition never initialized INVALID_REQUEST. The answer comes
//     once the write is committed to the __share_group_state partition.
//   - v1 adds delivery_complete_count (KIP-1226), kept and answered by
//     ReadShareGroupStateSummary v1.
//   - Routing and load errors as InitializeShareGroupState; CLUSTER_ACTION.
func handleWriteShareGroupState(d *Deps, r *Request) (kmsg.Response, error) {
	ctx, cancel := groupContext(d)
	defer cancel()
	return writeShareGroupState(r.Body.(*kmsg.WriteShareGroupStateRequest), shareStateCoordinator(ctx, d)), nil
}

// writeShareGroupState answers req, running each partition's call with run.
func writeShareGroupState(req *kmsg.WriteShareGroupStateRequest, run shareStateRun) *kmsg.WriteShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k := share.Key{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
			st := share.State{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset}
			for _, b := range p.StateBatches {
				st.Batches = append(st.Batches, share.Batch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount})
			}
			dcc := p.DeliveryCompleteCount
			if req.Version < 1 {
				dcc = -1
			}
			err := run(req.GroupID, func(ctx context.Context, c *sharecoord.Coordinator) error {
				return c.WriteState(ctx, k, st, dcc)
			})
			rp.ErrorCode, rp.ErrorMessage = shareStateError(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
