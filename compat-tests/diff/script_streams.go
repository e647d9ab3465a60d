package diff

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsTopology is a word count's topology (KIP-1071): subtopology 0
// reads topicA and writes a repartition topic, subtopology 1 reads it and
// keeps a changelog; both internal topics are the group's to create.
func streamsTopology(group string) *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID = "0"
	s0.SourceTopics = []string{topicA}
	s0.RepartitionSinkTopics = []string{group + "-counts-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	rep := kmsg.NewTopicInfo()
	rep.Topic = group + "-counts-repartition"
	rep.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}}
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{rep}
	cl := kmsg.NewTopicInfo()
	cl.Topic = group + "-counts-changelog"
	cl.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}
	s1.StateChangelogTopics = []kmsg.TopicInfo{cl}
	t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	return &t
}

// scriptStreamsGroups drives a KIP-1071 streams group: a join whose
// internal topics do not exist yet, a join whose source topic does not
// exist, invalid requests, describe, leave, for each version.
func scriptStreamsGroups(s *Session) error {
	var err error
	each(kmsg.StreamsGroupHeartbeat, func(v int16) {
		group := fmt.Sprintf("diff-sg%d", v)
		if err == nil {
			err = s.SettleCoordinator(0, group)
		}
		process := "diff-process-0"
		hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = group, fmt.Sprintf("diff-member-%d-000000", v), 30000
		hb.Topology = streamsTopology(group)
		hb.ProcessID = &process
		hb.ActiveTasks, hb.StandbyTasks, hb.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		r, _ := s.Do("join", v, hb).(*kmsg.StreamsGroupHeartbeatResponse)

		missing := *hb
		missing.Group = group + "-missing"
		missing.Topology = streamsTopology(missing.Group)
		missing.Topology.Subtopologies[0].SourceTopics = []string{"diff-sg-no-such-topic"}
		s.Do("join-missing-source", v, &missing)

		noTopology := *hb
		noTopology.Group, noTopology.Topology = group+"-bad", nil
		s.Do("join-no-topology", v, &noTopology)
		bad := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		bad.Group, bad.MemberID, bad.MemberEpoch = group, "diff-unknown-member-0000", 3
		s.Do("unknown-member", v, bad)
		noGroup := *bad
		noGroup.Group = "diff-sg-none"
		s.Do("unknown-group", v, &noGroup)

		dv := clamp(kmsg.StreamsGroupDescribe, v)
		d := kmsg.NewPtrStreamsGroupDescribeRequest()
		d.Groups = []string{group}
		s.Do("", dv, d)
		// One group per request: Kafka answers groups in the order of
		// their coordinator shards.
		for _, other := range []string{"diff-sg-none", "diff-cg0", missing.Group} {
			od := kmsg.NewPtrStreamsGroupDescribeRequest()
			od.Groups = []string{other}
			s.Do(other, dv, od)
		}
		if r == nil || r.ErrorCode != 0 {
			return
		}
		// The other group APIs on a live streams group.
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{group}
		s.Do("streams-group", clamp(kmsg.DescribeGroups, 5), dg)
		s.Do("streams-group", clamp(kmsg.DescribeGroups, 6), dg)
		lg := kmsg.NewPtrListGroupsRequest()
		lg.TypesFilter = []string{"streams"}
		s.Do("streams", clamp(kmsg.ListGroups, 5), lg)
		// Kafka 4.4 matches state filters against lower-case names,
		// "not_ready" for NotReady: the name it lists matches nothing.
		lg.StatesFilter = []string{"NotReady"}
		s.Do("streams-NotReady", clamp(kmsg.ListGroups, 5), lg)
		lg.StatesFilter = []string{"not_ready"}
		s.Do("streams-not_ready", clamp(kmsg.ListGroups, 5), lg)
		jg := kmsg.NewPtrJoinGroupRequest()
		jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = group, 30000, 30000, "consumer"
		jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
		s.Do("streams-group", clamp(kmsg.JoinGroup, 9), jg)
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation, oc.MemberID = group, -1, ""
		oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topicA, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}}}
		s.Do("streams-group-admin", clamp(kmsg.OffsetCommit, 8), oc)
		oc2 := *oc
		oc2.Generation, oc2.MemberID = r.MemberEpoch+5, r.MemberID
		s.Do("streams-group-stale", clamp(kmsg.OffsetCommit, 9), &oc2)
		if v == 0 {
			// Kafka 4.4 with no topology description plugin (the
			// default) answers a member's push UNSUPPORTED_VERSION
			// "The broker has no streams group topology description
			// plugin configured.", for a live member and any other.
			td := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
			td.Group, td.MemberID, td.TopologyEpoch = group, r.MemberID, 0
			node := kmsg.NewTopologyDescriptionNode()
			node.Name, node.NodeType, node.SourceTopics, node.Successors = "KSTREAM-SOURCE-0000000000", 1, []string{topicA}, []string{}
			st := kmsg.NewTopologyDescriptionSubtopology()
			st.SubtopologyID, st.Nodes = "0", []kmsg.TopologyDescriptionNode{node}
			td.TopologyDescription.Subtopologies = []kmsg.TopologyDescriptionSubtopology{st}
			s.Do("member", 0, td)
			other := *td
			other.Group, other.MemberID = "diff-sg-none", "diff-unknown-member-0000"
			s.Do("unknown-group", 0, &other)
		}
		leave := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		leave.Group, leave.MemberID, leave.MemberEpoch = group, r.MemberID, -1
		s.Do("leave", v, leave)
		// An empty streams group becomes a classic one for a JoinGroup.
		s.Do("empty-streams-group", clamp(kmsg.JoinGroup, 9), jg)
		missingLeave := *leave
		missingLeave.Group = missing.Group
		s.Do("leave-missing-source", v, &missingLeave)
	})
	return err
}
