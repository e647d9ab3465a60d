package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
)

// WriteTxnMarkers, key 27, versions 0-2.
//
//   - Kafka's transaction coordinator sends this to partition leaders; in
//     samsa the coordinator writes markers in process (MarkerWriter), and
//     this handler serves the same path for tools and other brokers: each
//     marker is appended to each listed partition, through the
//     partition's producer state (a marker older than the producer's epoch
//     is INVALID_PRODUCER_EPOCH; a coordinator epoch older than the last
//     marker's TRANSACTION_COORDINATOR_FENCED), or completes the staged
//     offsets of __consumer_offsets partitions.
//   - Unknown partitions: UNKNOWN_TOPIC_OR_PARTITION. v1 is flexible; v2
//     adds transaction_version, which does not change the marker.
func handleWriteTxnMarkers(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	img := d.Controller.Image()
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			topic := topicByName(img, t.Topic)
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				if ref := d.lookupPartition(img, topic, p); ref.code != 0 {
					rp.ErrorCode = ref.code
				} else {
					tp := storage.TopicPartition{Topic: t.Topic, Partition: p}
					rp.ErrorCode = d.writeMarker(context.Background(), m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, tp)
					switch rp.ErrorCode {
					case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
						// The group coordinator's answers for a
						// __consumer_offsets partition, as Kafka maps
						// them: the sender retries on another leader.
						rp.ErrorCode = kerr.NotLeaderForPartition.Code
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}
