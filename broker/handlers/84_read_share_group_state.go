package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/coordinator/sharecoord"
)

// ReadShareGroupState, key 84, version 0 (inter-broker, KIP-932).
//
//   - A partition leader about to serve a share-partition reads its state
//     (start offset, state epoch, the records in flight) at its leader
//     epoch, which the share coordinator records: a read or write with an
//     older leader epoch is then FENCED_LEADER_EPOCH. A share-partition
//     never initialized is INVALID_REQUEST with Kafka 4.4's message.
//   - Routing and load errors as InitializeShareGroupState; CLUSTER_ACTION.
func handleReadShareGroupState(d *Deps, r *Request) (kmsg.Response, error) {
	ctx, cancel := groupContext(d)
	defer cancel()
	return readShareGroupState(r.Body.(*kmsg.ReadShareGroupStateRequest), shareStateCoordinator(ctx, d)), nil
}

// readShareGroupState answers req, running each partition's call with run.
func readShareGroupState(req *kmsg.ReadShareGroupStateRequest, run shareStateRun) *kmsg.ReadShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k := share.Key{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
			var (
				st share.State
				ok bool
			)
			err := run(req.GroupID, func(ctx context.Context, c *sharecoord.Coordinator) (err error) {
				st, ok, err = c.Read(ctx, k, p.LeaderEpoch)
				return err
			})
			switch {
			case err != nil:
				rp.ErrorCode, rp.ErrorMessage = shareStateError(err)
			case !ok:
				msg := sharecoord.ReadUninitializedMessage
				rp.ErrorCode, rp.ErrorMessage = kerr.InvalidRequest.Code, &msg
			default:
				rp.StateEpoch, rp.StartOffset = st.StateEpoch, st.StartOffset
				rp.StateBatches = []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{}
				for _, b := range st.Batches {
					sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
					sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
					rp.StateBatches = append(rp.StateBatches, sb)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
