package handlers

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
)

// CreateTopics, key 19, versions 0-7.
//
//   - v0: topics with num_partitions, replication_factor, a manual
//     replica assignment and configs; timeout_ms. The controller applies
//     Kafka's rules (legal and non-colliding name, partitions and
//     replication factor ≥ 1 and reachable, assignment consistent, configs
//     valid) and answers each topic with its kerr code.
//   - v1: validate_only (decide, but commit nothing) and error_message.
//   - v2: throttle_time_ms (always 0).
//   - v4: num_partitions / replication_factor -1 mean the broker defaults
//     (num.partitions, default.replication.factor). Like Kafka 4.x, whose
//     controller does not look at the version, we accept -1 from older
//     versions too.
//   - v5: flexible; each created topic returns num_partitions,
//     replication_factor and its resolved configs (name, value, read_only,
//     config_source, is_sensitive), sorted by name, also for validate_only.
//   - v7: topic_id.
//
// Limits (Kafka 4.4, KAFKA-17870): a request whose topics ask for more
// than 10,000 partitions in all (-1 counts as num.partitions, an
// assignment as its length) fails as a whole with POLICY_VIOLATION
// "Excessively large number of partitions per request.", also with
// validate_only, before any other check; one that would commit more than
// 10,000 metadata records fails with POLICY_VIOLATION "Unable to perform
// excessively large batch operation.". Every topic of the request then
// carries that error. So does a request whose partitions would not fit in
// the broker's open file limit (samsa only; POLICY_VIOLATION naming the
// numbers, see broker/fdlimit.go).
//
// A name given more than once is not created: it gets one INVALID_REQUEST
// result "Duplicate topic name.", after the others, as in Kafka's
// ControllerApis. A config with a null value is INVALID_CONFIG. timeout_ms
// is ignored: our controller commits before answering, so even a timeout of
// 0 gets the real outcome rather than REQUEST_TIMED_OUT.
func handleCreateTopics(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	v := r.Header.APIVersion
	validateOnly := v >= 1 && req.ValidateOnly

	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}

	// Kafka's per-request partition limit (KAFKA-17870) is checked first,
	// over every topic that is not a duplicate, before anything is built
	// per partition; a violation fails the whole request.
	sized := make([]controller.CreateTopic, 0, len(req.Topics))
	for _, t := range req.Topics {
		if count[t.Topic] > 1 {
			continue
		}
		ct := controller.CreateTopic{Name: t.Topic, NumPartitions: t.NumPartitions}
		if len(t.ReplicaAssignment) > 0 {
			ct.Assignment = map[int32][]int32{}
			for _, a := range t.ReplicaAssignment {
				ct.Assignment[a.Partition] = nil
			}
		}
		sized = append(sized, ct)
	}
	if rerr := controller.CheckCreateTopicsPartitions(sized, d.Controller.DefaultPartitions()); rerr != nil {
		return createTopicsFailed(req, resp, rerr), nil
	}
	if rerr := d.checkPartitionFiles(createTopicsPartitionCount(d.Controller.Image(), sized, d.Controller.DefaultPartitions())); rerr != nil {
		return createTopicsFailed(req, resp, rerr), nil
	}

	// early holds topics answered here, before the controller, by index.
	early := map[int]kmsg.CreateTopicsResponseTopic{}
	var creates []controller.CreateTopic
	var createIdx []int
	for i, t := range req.Topics {
		if count[t.Topic] > 1 {
			continue
		}
		ct := controller.CreateTopic{
			Name:              t.Topic,
			NumPartitions:     t.NumPartitions,
			ReplicationFactor: t.ReplicationFactor,
		}
		if len(t.ReplicaAssignment) > 0 {
			ct.Assignment = make(map[int32][]int32, len(t.ReplicaAssignment))
			for _, a := range t.ReplicaAssignment {
				ct.Assignment[a.Partition] = a.Replicas
			}
		}
		var nullConfig string
		for _, c := range t.Configs {
			if c.Value == nil {
				nullConfig = c.Name
				break
			}
			if ct.Configs == nil {
				ct.Configs = make(map[string]string, len(t.Configs))
			}
			ct.Configs[c.Name] = *c.Value
		}
		if nullConfig != "" {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic = t.Topic
			rt.ErrorCode = kerr.InvalidConfig.Code
			rt.ErrorMessage = adminErrorMessage(rt.ErrorCode, fmt.Sprintf("Null value not supported for topic configs: %s", nullConfig))
			early[i] = rt
			continue
		}
		creates = append(creates, ct)
		createIdx = append(createIdx, i)
	}

	var results []controller.CreateTopicResult
	if len(creates) > 0 {
		var rerr *controller.RequestError
		results, rerr = d.Controller.CreateTopicsRequest(creates, validateOnly)
		if rerr != nil {
			return createTopicsFailed(req, resp, rerr), nil
		}
	}
	img := d.Controller.Image()
	levels := newBrokerLevels(d, img)
	// pos maps a request index to its place in creates and results.
	pos := make(map[int]int, len(createIdx))
	for j, i := range createIdx {
		pos[i] = j
	}

	for i, t := range req.Topics {
		if count[t.Topic] > 1 {
			continue
		}
		if rt, ok := early[i]; ok {
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		j := pos[i]
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		if j >= len(results) {
			rt.ErrorCode = kerr.UnknownServerError.Code
			rt.ErrorMessage = adminErrorMessage(rt.ErrorCode, "The controller returned no result for this topic.")
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		res := results[j]
		rt.ErrorCode = res.ErrorCode
		rt.ErrorMessage = adminErrorMessage(res.ErrorCode, res.ErrorMessage)
		if res.ErrorCode == 0 {
			rt.TopicID = res.ID
			rt.NumPartitions = res.NumPartitions
			rt.ReplicationFactor = res.ReplicationFactor
			rt.Configs = createdTopicConfigs(d, levels, creates[j].Configs)
		}
		resp.Topics = append(resp.Topics, rt)
	}

	reported := map[string]bool{}
	for _, t := range req.Topics {
		if count[t.Topic] > 1 && !reported[t.Topic] {
			reported[t.Topic] = true
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic = t.Topic
			rt.ErrorCode = kerr.InvalidRequest.Code
			rt.ErrorMessage = adminErrorMessage(rt.ErrorCode, "Duplicate topic name.")
			resp.Topics = append(resp.Topics, rt)
		}
	}
	// A topic that failed has an empty configs array, not null (v5+),
	// as Kafka sends it (compat-tests/diff).
	for i := range resp.Topics {
		if resp.Topics[i].Configs == nil {
			resp.Topics[i].Configs = []kmsg.CreateTopicsResponseTopicConfig{}
		}
	}
	return resp, nil
}

// createTopicsFailed answers a request that failed as a whole: every topic
// of the request, duplicates included, in request order, gets the error,
// as Kafka's CreateTopicsRequest.getErrorResponse does.
func createTopicsFailed(req *kmsg.CreateTopicsRequest, resp *kmsg.CreateTopicsResponse, rerr *controller.RequestError) *kmsg.CreateTopicsResponse {
	resp.Topics = make([]kmsg.CreateTopicsResponseTopic, 0, len(req.Topics))
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		rt.ErrorCode = rerr.Code
		rt.ErrorMessage = adminErrorMessage(rt.ErrorCode, rerr.Message)
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// createdTopicConfigs is the v5+ configs array of a created topic: every
// topic setting, resolved against the topic's overrides, sorted by name.
func createdTopicConfigs(d *Deps, levels brokerLevels, overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	defs := config.TopicDefs()
	out := make([]kmsg.CreateTopicsResponseTopicConfig, 0, len(defs))
	for _, def := range defs {
		e := topicConfigEntry(d, levels, def, overrides, false)
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name = e.name
		c.Value = e.value
		c.ReadOnly = e.readOnly
		c.Source = int8(e.source)
		c.IsSensitive = e.sensitive
		out = append(out, c)
	}
	return out
}
