package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStreamsGroupTopologyDescriptionUpdate: key 93 answers as Kafka 4.4
// with no topology description plugin (its default), through the dispatch
// table: UNSUPPORTED_VERSION "The broker has no streams group topology
// description plugin configured." to a member allowed to READ the group,
// GROUP_AUTHORIZATION_FAILED with its message to one that is not, and,
// with streams groups off, UNSUPPORTED_VERSION with no message before any
// authorization, the key still listed by ApiVersions (Kafka 4.4 with
// group.coordinator.rebalance.protocols=classic,consumer, kafka-ref:
// code 35, null message, key 93 v0-0 listed; until session 33 samsa sent
// the error's own message and left the key out, as this test asserted).
func TestStreamsGroupTopologyDescriptionUpdate(t *testing.T) {
	e := newGroupEnv(t)
	e.withACLs(t, aclCreation(kmsg.ACLResourceTypeGroup, "app", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead))
	push := func(principal, group string) *kmsg.StreamsGroupTopologyDescriptionUpdateResponse {
		t.Helper()
		req := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
		req.Group, req.MemberID, req.TopologyEpoch = group, "m-1", 0
		node := kmsg.NewTopologyDescriptionNode()
		node.Name, node.NodeType, node.SourceTopics = "KSTREAM-SOURCE-0000000000", 1, []string{"in"}
		st := kmsg.NewTopologyDescriptionSubtopology()
		st.SubtopologyID, st.Nodes = "0", []kmsg.TopologyDescriptionNode{node}
		req.TopologyDescription.Subtopologies = []kmsg.TopologyDescriptionSubtopology{st}
		return e.callAs(t, principal, req, 0).(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
	}
	check := func(what string, r *kmsg.StreamsGroupTopologyDescriptionUpdateResponse, code int16, msg string) {
		t.Helper()
		if r.ErrorCode != code || (r.ErrorMessage == nil) != (msg == "") || (msg != "" && *r.ErrorMessage != msg) {
			t.Fatalf("%s: code %d message %q, want %d %q", what, r.ErrorCode, deref(r.ErrorMessage), code, msg)
		}
	}
	check("allowed", push("User:alice", "app"), kerr.UnsupportedVersion.Code, noTopologyDescriptionPlugin)
	check("denied", push("User:bob", "app"), kerr.GroupAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Message)
	if _, ok := apiKeys(ApiVersionsResponse(e.d))[int16(kmsg.StreamsGroupTopologyDescriptionUpdate)]; !ok {
		t.Fatal("ApiVersions does not list StreamsGroupTopologyDescriptionUpdate with streams groups on")
	}

	e.d.Config.GroupCoordinatorRebalanceProtocols = []string{"classic", "consumer"}
	check("streams off", push("User:bob", "app"), kerr.UnsupportedVersion.Code, "")
	if _, ok := apiKeys(ApiVersionsResponse(e.d))[int16(kmsg.StreamsGroupTopologyDescriptionUpdate)]; !ok {
		t.Fatal("ApiVersions does not list StreamsGroupTopologyDescriptionUpdate with streams groups off")
	}
}
