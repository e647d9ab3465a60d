package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
)

// DeleteRecords, key 21, versions 0-2.
//
// Moves a partition's log start offset up to the given offset; -1 means
// the high watermark. An offset above the high watermark is
// OFFSET_OUT_OF_RANGE. Segments wholly below the new start are deleted.
// The response carries the new low watermark. v2 is flexible. The
// internal topics refuse it with INVALID_TOPIC_EXCEPTION, as in Kafka:
// deleting records of __consumer_offsets would lose committed offsets.
// A topic compacted and not deleted (cleanup.policy=compact) refuses it
// with POLICY_VIOLATION, as in Kafka.
func handleDeleteRecords(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	img := d.Controller.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		t := topicByName(img, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			ref := d.lookupPartition(img, t, rp.Partition)
			switch {
			case ref.code != 0:
				sp.ErrorCode = ref.code
			case isInternalTopic(rt.Topic):
				sp.ErrorCode = kerr.InvalidTopicException.Code
			case compactOnly(d.topicConfig(t)):
				// Kafka 4.4's Partition.deleteRecordsOnLeader refuses a
				// topic whose cleanup.policy is compact without delete
				// (PolicyViolationException; compat-tests/diff fuzzing).
				sp.ErrorCode = kerr.PolicyViolation.Code
			default:
				low, code, err := ref.replica.DeleteRecords(rp.Offset)
				if code != 0 {
					sp.ErrorCode = code
					break
				}
				if err != nil {
					d.Logger.Error("delete records failed", "topic", rt.Topic, "partition", rp.Partition, "err", err)
					sp.ErrorCode = kerr.KafkaStorageError.Code
					break
				}
				sp.LowWatermark = low
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// compactOnly reports a cleanup.policy of compact without delete.
func compactOnly(tc config.TopicConfig) bool {
	return tc.CleanupPolicyCompact && !tc.CleanupPolicyDelete
}
