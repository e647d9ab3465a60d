package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/coordinator/sharecoord"
)

// ReadShareGroupStateSummary, key 87, versions 0-1 (inter-broker,
// KIP-932).
//
//   - The group coordinator reads share-partitions' start offset, state
//     epoch and leader epoch for DescribeShareGroupOffsets, fencing
//     nothing (the request's leader_epoch is not checked, as Kafka 4.4).
//     A share-partition never initialized answers start offset -1, state
//     and leader epoch 0, no error, as Kafka does.
//   - v1 adds delivery_complete_count (KIP-1226): the last count written,
//     -1 when unknown.
//   - Routing and load errors as InitializeShareGroupState; CLUSTER_ACTION.
func handleReadShareGroupStateSummary(d *Deps, r *Request) (kmsg.Response, error) {
	ctx, cancel := groupContext(d)
	defer cancel()
	return readShareGroupStateSummary(r.Body.(*kmsg.ReadShareGroupStateSummaryRequest), shareStateCoordinator(ctx, d)), nil
}

// readShareGroupStateSummary answers req, running each partition's call with run.
func readShareGroupStateSummary(req *kmsg.ReadShareGroupStateSummaryRequest, run shareStateRun) *kmsg.ReadShareGroupStateSummaryResponse {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition = p.Partition
			k := share.Key{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
			var (
				sum sharecoord.Summary
				ok  bool
			)
			err := run(req.GroupID, func(ctx context.Context, c *sharecoord.Coordinator) (err error) {
				sum, ok, err = c.Summary(ctx, k)
				return err
			})
			switch {
			case err != nil:
				rp.ErrorCode, rp.ErrorMessage = shareStateError(err)
			case !ok:
				rp.StartOffset, rp.StateEpoch, rp.LeaderEpoch, rp.DeliveryCompleteCount = -1, 0, 0, -1
			default:
				rp.StartOffset, rp.StateEpoch, rp.LeaderEpoch, rp.DeliveryCompleteCount = sum.StartOffset, sum.StateEpoch, sum.LeaderEpoch, sum.DeliveryCompleteCount
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
