package handlers

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetDelete, key 47, version 0.
//
//   - Deletes committed offsets of a group (tombstones in
//     __consumer_offsets). An unknown group is GROUP_ID_NOT_FOUND; a
//     non-empty group that is not a "consumer" group NON_EMPTY_GROUP; a
//     topic some member subscribes to GROUP_SUBSCRIBED_TO_TOPIC for each of
//     its partitions. Partitions without an offset are answered with no
//     error, as in Kafka; a partition of a topic that does not exist (or
//     beyond its count) UNKNOWN_TOPIC_OR_PARTITION when the group has
//     no error.
func handleOffsetDelete(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetDeleteRequest)
	c := groupCoordinator(d)
	if c == nil {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	// Kafka 4.4's KafkaApis.handleOffsetDeleteRequest answers a partition
	// the metadata does not know UNKNOWN_TOPIC_OR_PARTITION itself and
	// asks the coordinator about the rest, then merges both answers;
	// a group-level error (unknown group, INVALID_GROUP_ID...) is
	// answered without partitions (compat-tests/diff fuzzing).
	img := d.Controller.Image()
	known := *req
	known.Topics = nil
	unknown := map[string][]int32{}
	var unknownOrder []string
	for _, t := range req.Topics {
		kt := t
		kt.Partitions = nil
		top := topicByName(img, t.Topic)
		for _, p := range t.Partitions {
			if top == nil || p.Partition < 0 || int(p.Partition) >= len(top.Partitions) {
				if _, seen := unknown[t.Topic]; !seen {
					unknownOrder = append(unknownOrder, t.Topic)
				}
				unknown[t.Topic] = append(unknown[t.Topic], p.Partition)
				continue
			}
			kt.Partitions = append(kt.Partitions, p)
		}
		if len(kt.Partitions) > 0 {
			known.Topics = append(known.Topics, kt)
		}
	}
	resp := c.OffsetDelete(context.Background(), &known)
	if resp.ErrorCode != 0 {
		return resp, nil // a group-level error comes alone, as in Kafka
	}
	for _, name := range unknownOrder {
		i := slices.IndexFunc(resp.Topics, func(t kmsg.OffsetDeleteResponseTopic) bool { return t.Topic == name })
		if i < 0 {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = name
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
		}
		for _, p := range unknown[name] {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, kerr.UnknownTopicOrPartition.Code
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
		}
	}
	return resp, nil
}
