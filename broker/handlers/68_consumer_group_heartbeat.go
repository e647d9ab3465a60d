package handlers

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
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
	if !consumerGroupsOn(d) {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	c := groupCoordinator(d)
	if c == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	return c.ConsumerGroupHeartbeat(context.Background(), groupClient(r), imageTopicView{d.Controller.Image()}, req), nil
}

// consumerProtocolEnabled tells whether group.coordinator.rebalance.protocols
// lists "consumer".
func consumerProtocolEnabled(d *Deps) bool {
	if d == nil || d.Config == nil {
		return true
	}
	return slices.ContainsFunc(d.Config.GroupCoordinatorRebalanceProtocols, func(p string) bool {
		return strings.EqualFold(strings.TrimSpace(p), "consumer")
	})
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
