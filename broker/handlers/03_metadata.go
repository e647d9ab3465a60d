package handlers

import (
	"context"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// Metadata, key 3, versions 0-13.
//
//   - v0: an empty topic list means all topics; v1+ a null list means all
//     topics and an empty one means none. v1 adds controller_id, rack and
//     is_internal; v2 cluster_id; v4 allow_auto_topic_creation (before v4
//     auto creation is always requested); v5 offline_replicas (replicas
//     on fenced or unknown brokers, or in an offline log directory); v7
//     leader_epoch; v8-v10 authorized operations (we answer "not
//     requested", -2147483648); v9 is flexible; v10 topic ids, and topics
//     may be asked for by id (v12+ in practice); v11 drops cluster
//     authorized operations; v13 adds a top-level error code.
//   - An unknown topic is UNKNOWN_TOPIC_OR_PARTITION unless auto creation is
//     both requested and enabled (auto.create.topics.enable), in which case
//     it is created with num.partitions / default.replication.factor and
//     returned at once: our controller commits before answering, so there
//     is no LEADER_NOT_AVAILABLE window as in Kafka. An invalid name is
//     INVALID_TOPIC_EXCEPTION; an unknown id is UNKNOWN_TOPIC_ID.
func handleMetadata(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	v := r.Header.APIVersion
	img := d.Controller.Image()

	allTopics := req.Topics == nil || (v == 0 && len(req.Topics) == 0)
	autoCreate := (v < 4 || req.AllowAutoTopicCreation) && d.Config.AutoCreateTopicsEnable
	if !allTopics && metadataIDsBeforeV12(v, req.Topics) {
		// Kafka 4.4 throws INVALID_REQUEST for the whole request
		// (KafkaApis.handleTopicMetadataRequest, javap): every topic
		// as named (null as ""), no brokers, controller -1.
		for _, rt := range req.Topics {
			et := kmsg.NewMetadataResponseTopic()
			et.Topic = ptrTo("")
			if rt.Topic != nil {
				et.Topic = ptrTo(*rt.Topic)
			}
			et.TopicID = rt.TopicID
			et.ErrorCode = kerr.InvalidRequest.Code
			et.Partitions = []kmsg.MetadataResponseTopicPartition{}
			resp.Topics = append(resp.Topics, et)
		}
		resp.ControllerID, resp.AuthorizedOperations = -1, -2147483648
		return resp, nil
	}
	if !allTopics {
		req.Topics = metadataTopics(v, req.Topics)
	}

	requested := map[string]bool{} // auto creation asked for
	if !allTopics && autoCreate {
		var create []controller.CreateTopic
		seen := map[string]bool{}
		for _, rt := range req.Topics {
			if rt.Topic == nil || seen[*rt.Topic] {
				continue
			}
			seen[*rt.Topic] = true
			if img.Topics[*rt.Topic] == nil {
				create = append(create, controller.CreateTopic{Name: *rt.Topic, NumPartitions: -1, ReplicationFactor: -1})
			}
		}
		if len(create) > 0 && d.autoCreate(create) {
			for _, c := range create {
				requested[c.Name] = true
			}
		}
		img = d.Controller.Image()
	}

	for _, b := range sortedBrokers(img) {
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID = b.ID
		rb.Host, rb.Port = b.Endpoint(r.ListenerName)
		rb.Rack = b.Rack
		resp.Brokers = append(resp.Brokers, rb)
	}
	clusterID := img.ClusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = controllerIDFor(d, img)
	if req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = clusterAuthorizedOperations()
	}

	addTopic := func(t *controller.Topic) {
		rt := kmsg.NewMetadataResponseTopic()
		name := t.Name
		rt.Topic = &name
		rt.TopicID = t.ID
		rt.IsInternal = isInternalTopic(t.Name)
		if req.IncludeTopicAuthorizedOperations {
			rt.AuthorizedOperations = allTopicOperations
		}
		for i := range t.Partitions {
			p := &t.Partitions[i]
			rp := kmsg.NewMetadataResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Leader = p.Leader
			rp.LeaderEpoch = p.LeaderEpoch
			rp.Replicas = append([]int32(nil), p.Replicas...)
			rp.ISR = append([]int32(nil), p.ISR...)
			rp.OfflineReplicas = img.OfflineReplicas(t, *p)
			if _, ok := img.Brokers[p.Leader]; !ok {
				rp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}

	if allTopics {
		names := make([]string, 0, len(img.Topics))
		for n := range img.Topics {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			addTopic(img.Topics[n])
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		var t *controller.Topic
		if rt.Topic != nil {
			t = img.Topics[*rt.Topic]
		} else {
			t = topicByID(img, rt.TopicID)
		}
		if t != nil {
			addTopic(t)
			continue
		}
		et := kmsg.NewMetadataResponseTopic()
		et.Topic = rt.Topic
		et.TopicID = rt.TopicID
		et.Partitions = []kmsg.MetadataResponseTopicPartition{}
		var nameCode int16
		if rt.Topic != nil {
			nameCode, _ = controller.ValidateTopicName(*rt.Topic)
		}
		switch {
		case rt.Topic == nil:
			et.ErrorCode = kerr.UnknownTopicID.Code
		case nameCode != 0:
			et.ErrorCode = kerr.InvalidTopicException.Code
		case requested[*rt.Topic]:
			et.ErrorCode = kerr.LeaderNotAvailable.Code
		default:
			et.ErrorCode = kerr.UnknownTopicOrPartition.Code
		}
		resp.Topics = append(resp.Topics, et)
	}
	return resp, nil
}

// metadataIDsBeforeV12 reports whether a v10-11 request names a topic by
// id or with a null name, which Kafka 4.4 refuses (topic ids from v12).
func metadataIDsBeforeV12(v int16, topics []kmsg.MetadataRequestTopic) bool {
	if v >= 12 {
		return false
	}
	for _, t := range topics {
		if t.Topic == nil || t.TopicID != [16]byte{} {
			return true
		}
	}
	return false
}

// metadataTopics is the set of topics a Metadata request names, as Kafka
// 4.4's KafkaApis.handleTopicMetadataRequest takes it (javap): from v12,
// when any entry has a topic id, the distinct non-zero ids only (the names
// are ignored, and entries without an id too); otherwise the distinct
// names. Each topic is answered once, in the order first named.
func metadataTopics(v int16, topics []kmsg.MetadataRequestTopic) []kmsg.MetadataRequestTopic {
	byID := false
	if v >= 12 {
		for _, t := range topics {
			byID = byID || t.TopicID != [16]byte{}
		}
	}
	out := make([]kmsg.MetadataRequestTopic, 0, len(topics))
	seenID := map[[16]byte]bool{}
	seenName := map[string]bool{}
	seenNull := false
	for _, t := range topics {
		switch {
		case byID:
			if t.TopicID == [16]byte{} || seenID[t.TopicID] {
				continue
			}
			seenID[t.TopicID] = true
			t.Topic = nil
		case t.Topic == nil:
			if seenNull {
				continue
			}
			seenNull = true
		default:
			if seenName[*t.Topic] {
				continue
			}
			seenName[*t.Topic] = true
		}
		out = append(out, t)
	}
	return out
}

const (
	// allTopicOperations is the authorized-operation bit set of a topic
	// that a broker without an authorizer reports when asked.
	// Topic: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
	// DESCRIBE_CONFIGS, ALTER_CONFIGS (3576, what Kafka 4.4 reports; the
	// cluster set is clusterAuthorizedOperations, 8096).
	allTopicOperations = int32(1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11)
)

func sortedBrokers(img *controller.Image) []controller.Broker {
	out := make([]controller.Broker, 0, len(img.Brokers))
	for _, b := range img.Brokers {
		if !b.Fenced {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// isInternalTopic: Kafka's internal topics, which clients may not produce
// to, delete or delete records of, and which Metadata marks internal.
// __share_group_state is created through CreateTopics by a broker that is
// not the active controller (broker/share_state.go), so the controller's
// own list leaves it out.
func isInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state" || name == "__share_group_state"
}

// controllerIDFor is the controller id given to clients: the active
// controller when it is a live broker (combined mode; admin clients then
// send metadata changes straight to it), else this node, which forwards
// them.
func controllerIDFor(d *Deps, img *controller.Image) int32 {
	if id := d.Controller.ActiveController(); id >= 0 {
		if b, ok := img.Brokers[id]; ok && !b.Fenced {
			return id
		}
	}
	if d.Config != nil {
		return d.Config.NodeID
	}
	return img.ControllerID
}

// autoCreate creates topics for Metadata's auto creation, at the active
// controller. A topic created elsewhere may not be in this node's image
// yet when the answer is built: it is then reported as
// LEADER_NOT_AVAILABLE, which clients retry, as Kafka answers for a topic
// it is still creating. It reports whether the active controller was
// another node.
func (d *Deps) autoCreate(create []controller.CreateTopic) (remote bool) {
	if d.ToController != nil {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 30000
		for _, c := range create {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = c.Name, -1, -1
			req.Topics = append(req.Topics, rt)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := d.ToController(ctx, req)
		if resp != nil || err != nil {
			if err != nil {
				d.Logger.Warn("auto creation at the active controller failed", "err", err)
			}
			return true
		}
	}
	d.Controller.CreateTopics(create, false)
	return false
}
