package handlers

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetForLeaderEpoch, key 23, versions 0-4.
//
// For each partition, the largest epoch <= the requested leader_epoch that
// the log knows, and the offset where it ended (the start of the next
// epoch, or the log end offset for the current one). Clients use it after a
// leader change to detect truncation; followers use it to truncate. v2 adds
// current_leader_epoch (fenced / unknown as in Fetch); v3 replica_id; v4
// is flexible. An epoch older than all we know is answered with epoch -1,
// offset -1 (UNDEFINED), as Kafka does.
func handleOffsetForLeaderEpoch(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	img := d.Controller.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		t := topicByName(img, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			ref := d.lookupPartitionEpoch(img, t, rp.Partition, rp.CurrentLeaderEpoch)
			if ref.code != 0 {
				sp.ErrorCode = ref.code
			} else {
				sp.LeaderEpoch, sp.EndOffset = ref.log.EndOffsetForEpoch(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
