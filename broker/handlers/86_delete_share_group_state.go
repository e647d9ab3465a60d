package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/coordinator/sharecoord"
)

// DeleteShareGroupState, key 86, version 0 (inter-broker, KIP-932).
//
//   - The group coordinator removes share-partitions' state
//     (DeleteShareGroupOffsets, DeleteGroups): tombstones in
//     __share_group_state. Deleting a share-partition with no state is
//     not an error.
//   - Routing and load errors as InitializeShareGroupState; CLUSTER_ACTION.
func handleDeleteShareGroupState(d *Deps, r *Request) (kmsg.Response, error) {
	ctx, cancel := groupContext(d)
	defer cancel()
	return deleteShareGroupState(r.Body.(*kmsg.DeleteShareGroupStateRequest), shareStateCoordinator(ctx, d)), nil
}

// deleteShareGroupState answers req, running each partition's call with run.
func deleteShareGroupState(req *kmsg.DeleteShareGroupStateRequest, run shareStateRun) *kmsg.DeleteShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k := share.Key{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
			err := run(req.GroupID, func(ctx context.Context, c *sharecoord.Coordinator) error {
				return c.Delete(ctx, k)
			})
			rp.ErrorCode, rp.ErrorMessage = shareStateError(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
