package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator/share"
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
	req := r.Body.(*kmsg.WriteShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	ctx, cancel := groupContext(d)
	defer cancel()
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
			var err error = kerr.CoordinatorNotAvailable
			switch {
			case req.GroupID == "":
				err = kerr.InvalidRequest
			case d.ShareCoordinator != nil:
				err = d.ShareCoordinator.WriteState(ctx, k, st, dcc)
			}
			rp.ErrorCode, rp.ErrorMessage = shareStateError(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
