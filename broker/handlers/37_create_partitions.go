package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// CreatePartitions, key 37, versions 0-3.
//
//   - v0: topics, each with the new total count and an optional manual
//     assignment of the new partitions; timeout_ms; validate_only. The
//     controller applies Kafka's rules: an unknown topic is
//     UNKNOWN_TOPIC_OR_PARTITION; a count that does not grow the topic is
//     INVALID_PARTITIONS; an assignment of the wrong length, with unknown or
//     repeated brokers or the wrong replica count is
//     INVALID_REPLICA_ASSIGNMENT; an unreachable replication factor is
//     INVALID_REPLICATION_FACTOR.
//   - v1: throttle_time_ms is applied after the response (always 0 here).
//   - v2: flexible.
//   - v3: no change (KIP-599 throttling; we do not throttle).
//
// The topics of one request are decided together and their partitions are
// committed with one metadata append, as Kafka's controller does. Limits
// (Kafka 4.4): more than 10,000 partitions added in all (to known topics,
// by counts that grow them) fails the whole request with POLICY_VIOLATION
// "Excessively large number of additional partitions per request.", also
// with validate_only and before anything is placed; every topic of the
// request then carries that error. So does a request whose new partitions
// would not fit in the broker's open file limit (samsa only).
//
// A topic given more than once gets one INVALID_REQUEST result
// "Duplicate topic name." and is not changed, as in Kafka's ControllerApis;
// those results come first. Every error carries a message. timeout_ms is
// ignored: the controller commits before answering.
func handleCreatePartitions(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)

	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	reported := map[string]bool{}
	for _, t := range req.Topics {
		if count[t.Topic] > 1 && !reported[t.Topic] {
			reported[t.Topic] = true
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic = t.Topic
			rt.ErrorCode = kerr.InvalidRequest.Code
			rt.ErrorMessage = adminErrorMessage(rt.ErrorCode, "Duplicate topic name.")
			resp.Topics = append(resp.Topics, rt)
		}
	}
	var grows []controller.CreatePartitionsTopic
	for _, t := range req.Topics {
		if count[t.Topic] > 1 {
			continue
		}
		var assignment [][]int32
		if t.Assignment != nil {
			assignment = make([][]int32, len(t.Assignment))
			for i, a := range t.Assignment {
				assignment[i] = a.Replicas
			}
		}
		grows = append(grows, controller.CreatePartitionsTopic{Topic: t.Topic, Count: t.Count, Assignment: assignment})
	}
	if len(grows) == 0 {
		return resp, nil
	}
	// Above Kafka's per-request limit the controller's POLICY_VIOLATION
	// answers, not the open file check.
	var rerr *controller.RequestError
	if n := createPartitionsCount(d.Controller.Image(), grows); n <= controller.MaxPartitionsPerRequest {
		rerr = d.checkPartitionFiles(n)
	}
	var results []controller.CreatePartitionsResult
	if rerr == nil {
		results, rerr = d.Controller.CreatePartitionsRequest(grows, req.ValidateOnly)
	}
	if rerr != nil {
		// The whole request failed: every topic, duplicates included, in
		// request order, gets the error (Kafka's getErrorResponse).
		resp.Topics = make([]kmsg.CreatePartitionsResponseTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic = t.Topic
			rt.ErrorCode = rerr.Code
			rt.ErrorMessage = adminErrorMessage(rerr.Code, rerr.Message)
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	for _, res := range results {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = res.Topic
		rt.ErrorCode = res.ErrorCode
		rt.ErrorMessage = adminErrorMessage(res.ErrorCode, res.ErrorMessage)
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
