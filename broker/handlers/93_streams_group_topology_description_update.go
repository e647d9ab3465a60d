package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// noTopologyDescriptionPlugin is Kafka 4.4's answer to a topology
// description push when group.streams.topology.description.plugin.class is
// unset (its default).
const noTopologyDescriptionPlugin = "The broker has no streams group topology description plugin configured."

// StreamsGroupTopologyDescriptionUpdate, key 93, version 0 (KIP-1331): a
// streams group member pushes its topology description for the broker to
// store, when its heartbeat answer said TopologyDescriptionRequired. Kafka
// 4.4 stores descriptions only through a plugin
// (group.streams.topology.description.plugin.class, a Java class; unset by
// default) and without one never asks for a description, answers
// StreamsGroupDescribe's TopologyDescriptionStatus NOT_STORED, and answers
// this API as here (GroupCoordinatorService.
// throwIfStreamsGroupTopologyDescriptionUpdateInvalid, javap of 4.4.0):
// UNSUPPORTED_VERSION with noTopologyDescriptionPlugin, after
// UNSUPPORTED_VERSION when streams groups are off and
// GROUP_AUTHORIZATION_FAILED without READ on the group (KafkaApis, in that
// order, authzStreamsTopologyDescriptionUpdate), and
// COORDINATOR_NOT_AVAILABLE when there is no group coordinator. samsa has
// no plugins, so that is all it does.
func handleStreamsGroupTopologyDescriptionUpdate(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.StreamsGroupTopologyDescriptionUpdateRequest)
	resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
	switch {
	case !streamsGroupsOn(d):
		resp.ErrorCode = kerr.UnsupportedVersion.Code // no message, as Kafka 4.4
	case groupCoordinator(d) == nil:
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	default:
		resp.ErrorCode, resp.ErrorMessage = kerr.UnsupportedVersion.Code, ptrTo(noTopologyDescriptionPlugin)
	}
	return resp, nil
}
