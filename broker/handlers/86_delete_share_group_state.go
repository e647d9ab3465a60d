package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator/share"
)

// DeleteShareGroupState, key 86, version 0 (inter-broker, KIP-932).
//
//   - The group coordinator removes share-partitions' state
//     (DeleteShareGroupOffsets, DeleteGroups): tombstones in
//     __share_group_state. Deleting a share-partition with no state is
//     not an error.
//   - Routing and load errors as InitializeShareGroupState; CLUSTER_ACTION.
func handleDeleteShareGroupState(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	ctx, cancel := groupContext(d)
	defer cancel()
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k := share.Key{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
			var err error = kerr.CoordinatorNotAvailable
			switch {
			case req.GroupID == "":
				err = kerr.InvalidRequest
			case d.ShareCoordinator != nil:
				err = d.ShareCoordinator.Delete(ctx, k)
			}
			rp.ErrorCode, rp.ErrorMessage = shareStateError(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
