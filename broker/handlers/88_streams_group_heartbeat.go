package handlers

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/acl"
	"github.com/samsa-broker/samsa/coordinator"
)

// StreamsGroupHeartbeat, key 88, versions 0-1 (KIP-1071).
//
//   - Joins (epoch 0, with the topology), heartbeats and leaves (-1; -2
//     for a static member) a streams group. The first member's topology
//     is the group's; it is resolved against the cluster at every
//     heartbeat: statuses MISSING_SOURCE_TOPICS,
//     INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS,
//     STALE_TOPOLOGY and SHUTDOWN_APPLICATION as Kafka 4.4 sends them.
//   - Missing repartition and changelog topics are created here, as
//     Kafka 4.4's broker does (with the partition count the topology
//     needs, the client's configs, and its replication factor or the
//     broker default), when the principal may CREATE on the cluster or
//     the topics; otherwise the MISSING_INTERNAL_TOPICS detail says it
//     was unauthorized.
//   - The answer carries the member epoch, intervals, and the active,
//     standby and warm-up tasks when they changed; partitions by user
//     endpoint when the member's endpoint epoch is behind.
//   - Errors: INVALID_REQUEST (Kafka's messages), UNKNOWN_MEMBER_ID,
//     FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED,
//     GROUP_ID_NOT_FOUND; UNSUPPORTED_VERSION when "streams" is not in
//     group.coordinator.rebalance.protocols.
func handleStreamsGroupHeartbeat(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.StreamsGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	c, code := modernHeartbeatCoordinator(d, streamsGroupsOn(d))
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	resp, create := c.StreamsGroupHeartbeat(context.Background(), groupClient(r), imageTopicView{d.Controller.Image()}, req)
	if len(create) > 0 && resp.ErrorCode == 0 {
		d.createStreamsTopics(r, resp, create)
	}
	return resp, nil
}

// createStreamsTopics creates a streams group's missing internal topics
// when r may, else says so in the MISSING_INTERNAL_TOPICS status.
func (d *Deps) createStreamsTopics(r *Request, resp *kmsg.StreamsGroupHeartbeatResponse, create []coordinator.StreamsInternalTopic) {
	if !d.authorizedCluster(r, kmsg.ACLOperationCreate) {
		var denied []string
		for _, t := range create {
			if !d.authorized(r, kmsg.ACLOperationCreate, acl.Topic(t.Name)) {
				denied = append(denied, t.Name)
			}
		}
		if len(denied) > 0 {
			for i := range resp.Status {
				if resp.Status[i].StatusCode == 3 {
					resp.Status[i].StatusDetail = "Unauthorized to CREATE on topics " + strings.Join(denied, ",") + "."
				}
			}
			return
		}
	}
	if d.ToController != nil {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 30000
		for _, t := range create {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Name, t.Partitions, t.ReplicationFactor
			for _, k := range sortedKeys(t.Configs) {
				v := t.Configs[k]
				c := kmsg.NewCreateTopicsRequestTopicConfig()
				c.Name, c.Value = k, &v
				rt.Configs = append(rt.Configs, c)
			}
			req.Topics = append(req.Topics, rt)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cr, err := d.ToController(ctx, req)
		if cr != nil || err != nil {
			if err != nil {
				d.Logger.Warn("streams internal topic creation at the active controller failed", "err", err)
			}
			return
		}
	}
	var cs []controller.CreateTopic
	for _, t := range create {
		cs = append(cs, controller.CreateTopic{Name: t.Name, NumPartitions: t.Partitions, ReplicationFactor: t.ReplicationFactor, Configs: t.Configs})
	}
	for _, res := range d.Controller.CreateTopics(cs, false) {
		if res.ErrorCode != 0 && res.ErrorCode != kerr.TopicAlreadyExists.Code {
			d.Logger.Warn("creating a streams internal topic failed", "topic", res.Name, "error", kerr.ErrorForCode(res.ErrorCode), "message", res.ErrorMessage)
		}
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// streamsProtocolEnabled tells whether group.coordinator.rebalance.protocols
// lists "streams".
func streamsProtocolEnabled(d *Deps) bool { return rebalanceProtocolEnabled(d, "streams") }

// StreamsGroupDescribe, key 89, versions 0-1 (KIP-1071).
//
//   - Per group: state (Empty, NotReady, Assigning, Reconciling, Stable),
//     group and assignment epochs, the topology as resolved (null
//     subtopologies while not ready), each member with its process,
//     endpoint, tags, task offsets, current and target tasks; v1 the
//     assignor ("sticky") and topology description status (NOT_STORED
//     when asked: samsa does not store topology descriptions).
//   - GROUP_ID_NOT_FOUND for an unknown group or one of another type.
func handleStreamsGroupDescribe(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.StreamsGroupDescribeRequest)
	c := groupCoordinator(d)
	if code := modernDescribeUnavailable(c, streamsGroupsOn(d)); code != 0 {
		resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
		resp.Groups = describeFailed(req.Groups, code, func(id string, code int16) kmsg.StreamsGroupDescribeResponseGroup {
			dg := kmsg.NewStreamsGroupDescribeResponseGroup()
			dg.Group, dg.ErrorCode = id, code
			return dg
		})
		return resp, nil
	}
	return c.StreamsGroupDescribe(context.Background(), req), nil
}
