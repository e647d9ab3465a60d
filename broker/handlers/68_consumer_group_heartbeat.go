package handlers

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/coordinator"
)

// ConsumerGroupHeartbeat, key 68, versions 0-1 (KIP-848).
//
//   - Joins (member epoch 0), heartbeats, and leaves (-1; -2 for a static
//     member that comes back) a consumer group whose assignment the broker
//     computes with the "uniform" or "range" assignor (ServerAssignor, else
//     the first of group.consumer.assignors; others UNSUPPORTED_ASSIGNOR).
//     The answer carries the member epoch, the heartbeat interval
//     (group.consumer.heartbeat.interval.ms) and, when it changed or the
//     request was a full one, the member's assignment by topic ID.
//     Partitions move only once their previous owner revoked them.
//   - Subscriptions are topic names or (v1) a regex matched against whole
//     topic names; both are resolved against the current metadata image at
//     every heartbeat, so created and deleted topics are picked up.
//   - Errors: INVALID_REQUEST for missing fields (v1 needs a client-made
//     member id), UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
//     UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED,
//     INVALID_REGULAR_EXPRESSION, GROUP_ID_NOT_FOUND when a non-empty
//     classic group has the id (an empty one is converted) or when a
//     heartbeat or leave (epoch != 0) names no group, and
//     UNSUPPORTED_VERSION when "consumer" is not in
//     group.coordinator.rebalance.protocols, which clients take as "fall
//     back to the classic protocol".
func handleConsumerGroupHeartbeat(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	c, code := modernHeartbeatCoordinator(d, consumerGroupsOn(d))
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	return c.ConsumerGroupHeartbeat(context.Background(), groupClient(r), imageTopicView{d.Controller.Image()}, req), nil
}

// consumerProtocolEnabled tells whether group.coordinator.rebalance.protocols
// lists "consumer".
func consumerProtocolEnabled(d *Deps) bool { return rebalanceProtocolEnabled(d, "consumer") }

// rebalanceProtocolEnabled tells whether group.coordinator.rebalance.protocols
// lists protocol (all are without a config).
func rebalanceProtocolEnabled(d *Deps, protocol string) bool {
	if d == nil || d.Config == nil {
		return true
	}
	return slices.ContainsFunc(d.Config.GroupCoordinatorRebalanceProtocols, func(p string) bool {
		return strings.EqualFold(strings.TrimSpace(p), protocol)
	})
}

// modernHeartbeatCoordinator is the coordinator a heartbeat of a consumer
// or streams group goes to, or the code it is answered with: UNSUPPORTED_VERSION
// when the group type's protocol is off (clients then fall back to the
// classic protocol), else COORDINATOR_NOT_AVAILABLE without a coordinator.
func modernHeartbeatCoordinator(d *Deps, enabled bool) (*coordinator.Coordinator, int16) {
	if !enabled {
		return nil, kerr.UnsupportedVersion.Code
	}
	c := groupCoordinator(d)
	if c == nil {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	return c, 0
}

// modernDescribeUnavailable is the code every group of a describe of
// consumer or streams groups gets when there is no group coordinator
// (COORDINATOR_NOT_AVAILABLE) or the group type's protocol is off
// (UNSUPPORTED_VERSION); 0 when the coordinator answers.
func modernDescribeUnavailable(c *coordinator.Coordinator, enabled bool) int16 {
	switch {
	case c == nil:
		return kerr.CoordinatorNotAvailable.Code
	case !enabled:
		return kerr.UnsupportedVersion.Code
	}
	return 0
}

// describeFailed answers every group id of a describe with code.
func describeFailed[G any](ids []string, code int16, group func(id string, code int16) G) []G {
	var out []G
	for _, id := range ids {
		out = append(out, group(id, code))
	}
	return out
}

// imageTopicView shows a metadata image to the coordinator's assignors.
type imageTopicView struct{ img *controller.Image }

func (v imageTopicView) TopicByName(name string) ([16]byte, int32, bool) {
	t := v.img.Topic(name)
	if t == nil {
		return [16]byte{}, 0, false
	}
	return [16]byte(t.ID), int32(len(t.Partitions)), true
}

func (v imageTopicView) TopicNames() []string {
	names := make([]string, 0, len(v.img.Topics))
	for n := range v.img.Topics {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
