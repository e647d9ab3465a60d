package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// OffsetCommit, key 8, versions 0-10.
//
//   - Group members commit with their generation and member id
//     (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID with v7+
//     group.instance.id, REBALANCE_IN_PROGRESS while the assignment is
//     being synced). Generation -1 is a simple consumer's commit, allowed
//     on an empty or unknown group. v9+ commits by a member to an unknown
//     group are GROUP_ID_NOT_FOUND, older ones ILLEGAL_GENERATION.
//   - v1 has a per-partition timestamp, v2-v4 a retention time: both are
//     ignored, as in Kafka since 2.1 (offsets.retention.minutes applies).
//     v6 adds the leader epoch, v8 is flexible, v10 names topics by id.
//   - Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION (v10:
//     UNKNOWN_TOPIC_ID) and are not committed; the rest are written to
//     __consumer_offsets before the response (metadata over
//     offset.metadata.max.bytes: OFFSET_METADATA_TOO_LARGE).
func handleOffsetCommit(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetCommitRequest)
	c := groupCoordinator(d)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: kerr.CoordinatorNotAvailable.Code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	img := d.Controller.Image()

	// Commit only partitions that exist: the coordinator gets a copy of
	// the request without the others, topics in the same order, and the
	// answers are merged back.
	filtered := *req
	filtered.Topics = make([]kmsg.OffsetCommitRequestTopic, len(req.Topics))
	missing := make([]int16, len(req.Topics)) // per topic: 0, or the code of an unknown topic
	badPartition := make([][]bool, len(req.Topics))
	for i, t := range req.Topics {
		var topic *controller.Topic
		if req.Version >= 10 {
			topic = topicByID(img, t.TopicID)
			missing[i] = kerr.UnknownTopicID.Code
		} else {
			topic = topicByName(img, t.Topic)
			missing[i] = kerr.UnknownTopicOrPartition.Code
		}
		ft := t
		ft.Partitions = nil
		badPartition[i] = make([]bool, len(t.Partitions))
		if topic != nil {
			missing[i] = 0
			ft.Topic = topic.Name
			for j, p := range t.Partitions {
				if p.Partition < 0 || int(p.Partition) >= len(topic.Partitions) {
					badPartition[i][j] = true
					continue
				}
				ft.Partitions = append(ft.Partitions, p)
			}
		}
		filtered.Topics[i] = ft
	}
	got := c.OffsetCommit(context.Background(), &filtered)

	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	resp.ThrottleMillis = got.ThrottleMillis
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		k := 0
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case missing[i] != 0:
				rp.ErrorCode = missing[i]
			case badPartition[i][j]:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				rp.ErrorCode = got.Topics[i].Partitions[k].ErrorCode
				k++
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
