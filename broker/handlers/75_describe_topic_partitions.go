package handlers

import (
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/acl"
)

// describeTopicPartitionsLimit is Kafka's max.request.partition.size.limit
// default: the most partitions one answer holds.
const describeTopicPartitionsLimit = 2000

// DescribeTopicPartitions, key 75, version 0 (KIP-966): the partitions of
// topics with their eligible leader replicas, page by page. kafka-topics
// --describe uses it (Elr and LastKnownElr columns), as does the Java
// admin client's describeTopics.
//
//   - An empty topic list means every topic the principal may DESCRIBE;
//     named topics the principal may not describe are
//     TOPIC_AUTHORIZATION_FAILED with a zero topic id, unknown ones
//     UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an invalid
//     name), as Kafka does. Topics come in name order.
//   - response_partition_limit is bounded by 2000 (Kafka's
//     max.request.partition.size.limit) and at least 1. When the
//     partitions do not fit, next_cursor names the first one left out;
//     a cursor starts the answer there (a topic list must then hold the
//     cursor's topic, and its partition must be >= 0, else
//     INVALID_REQUEST).
//   - Each partition carries leader (-1 when its broker is not
//     registered), leader epoch, replicas, ISR, offline replicas (not
//     registered or fenced), and the eligible leader replicas and last
//     known leader (controller/elr.go), empty lists when none. Authorized
//     operations are the principal's.
func handleDescribeTopicPartitions(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	img := d.Controller.Image()
	all := len(req.Topics) == 0
	cursorTopic := ""
	if req.Cursor != nil {
		cursorTopic = req.Cursor.Topic
	}
	seen := map[string]bool{}
	var names []string
	add := func(name string) {
		if name >= cursorTopic && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	if all {
		for name := range img.Topics {
			add(name)
		}
	} else {
		for _, t := range req.Topics {
			add(t.Topic)
		}
	}
	if req.Cursor != nil && (!all && !seen[cursorTopic] || req.Cursor.Partition < 0) {
		for _, t := range req.Topics {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.ErrorCode, rt.Topic = kerr.InvalidRequest.Code, ptrTo(t.Topic)
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	sort.Strings(names)
	var denied []kmsg.DescribeTopicPartitionsResponseTopic
	names = slices.DeleteFunc(names, func(name string) bool {
		if d.authorized(r, kmsg.ACLOperationDescribe, acl.Topic(name)) {
			return false
		}
		if !all {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.ErrorCode, rt.Topic = kerr.TopicAuthorizationFailed.Code, ptrTo(name)
			denied = append(denied, rt)
		}
		return true
	})
	remaining := min(req.ResponsePartitionLimit, describeTopicPartitionsLimit)
	remaining = max(remaining, 1)
	for _, name := range names {
		if remaining == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		t := img.Topics[name]
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic = ptrTo(name)
		rt.IsInternal = isInternalTopic(name)
		rt.AuthorizedOperations = d.authorizedOperations(r, acl.Topic(name))
		if t == nil {
			if all {
				continue
			}
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if code, _ := controller.ValidateTopicName(name); code != 0 {
				rt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = t.ID
		start := int32(0)
		if name == cursorTopic && req.Cursor != nil {
			start = req.Cursor.Partition
		}
		end := min(int32(len(t.Partitions)), start+remaining)
		for i := start; i < end; i++ {
			rt.Partitions = append(rt.Partitions, describePartition(img, t.Partitions[i]))
		}
		resp.Topics = append(resp.Topics, rt)
		if end < int32(len(t.Partitions)) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: end}
			break
		}
		remaining -= max(end-start, 0)
	}
	resp.Topics = append(resp.Topics, denied...)
	return resp, nil
}

// describePartition is one partition of a DescribeTopicPartitions answer.
func describePartition(img *controller.Image, p controller.Partition) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	rp.Partition = p.Partition
	rp.LeaderID = -1
	if _, ok := img.Brokers[p.Leader]; ok {
		rp.LeaderID = p.Leader
	}
	rp.LeaderEpoch = p.LeaderEpoch
	rp.Replicas = append([]int32{}, p.Replicas...)
	rp.ISR = append([]int32{}, p.ISR...)
	rp.EligibleLeaderReplicas = append([]int32{}, p.ELR...)
	rp.LastKnownELR = append([]int32{}, p.LastKnownELR...)
	rp.OfflineReplicas = []int32{}
	for _, r := range p.Replicas {
		if b, ok := img.Brokers[r]; !ok || b.Fenced {
			rp.OfflineReplicas = append(rp.OfflineReplicas, r)
		}
	}
	return rp
}
