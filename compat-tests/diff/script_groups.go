package diff

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupLevels runs the classic group flow once per level: at level L each
// API is sent at version min(L, its max), so every advertised version of
// every group API is used once, in a flow that makes sense.
func scriptGroups(s *Session) error {
	levels := int16(0)
	for _, k := range []kmsg.Key{kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat,
		kmsg.LeaveGroup, kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.DescribeGroups, kmsg.ListGroups, kmsg.DeleteGroups} {
		levels = max(levels, Advertised()[int16(k)].Max)
	}
	for l := int16(0); l <= levels; l++ {
		if err := s.SettleCoordinator(0, fmt.Sprintf("diff-g%d", l)); err != nil {
			return err
		}
		groupFlow(s, l)
	}
	for _, g := range []string{"diff-g-simple", "diff-g-none", "diff-g-short", "diff-g-long"} {
		if err := s.SettleCoordinator(0, g); err != nil {
			return err
		}
	}
	// Invalid inputs.
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "", 30000, 30000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	s.Do("empty-group-id", 9, join)
	join2 := *join
	join2.Group, join2.SessionTimeoutMillis = "diff-g-short", 1
	s.Do("session-timeout-too-small", 9, &join2)
	join3 := *join
	join3.Group, join3.SessionTimeoutMillis = "diff-g-long", 10_000_000
	s.Do("session-timeout-too-large", 9, &join3)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation, hb.MemberID = "diff-g-none", 1, "nobody"
	s.Do("unknown-group", 4, hb)
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "diff-g-simple", -1
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic = "diff-nope"
	oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}
	oc.Topics = append(oc.Topics, oct)
	s.Do("unknown-topic", 9, oc)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "diff-g-simple"
	odt := kmsg.NewOffsetDeleteRequestTopic()
	odt.Topic = topicA
	odt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
	od.Topics = append(od.Topics, odt)
	// A simple (no member) commit, then OffsetDelete of it.
	oc2 := kmsg.NewPtrOffsetCommitRequest()
	oc2.Group, oc2.Generation = "diff-g-simple", -1
	oct2 := kmsg.NewOffsetCommitRequestTopic()
	oct2.Topic = topicA
	oct2.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 2, LeaderEpoch: -1}}
	oc2.Topics = append(oc2.Topics, oct2)
	s.Do("simple", 9, oc2)
	each(kmsg.OffsetDelete, func(v int16) { s.Do("", v, od) })
	odUnknown := *od
	odUnknown.Group = "diff-g-none"
	s.Do("unknown-group", 0, &odUnknown)
	return nil
}

// groupFlow joins, syncs, heartbeats, commits, fetches, describes, lists,
// leaves and deletes group "diff-g<level>".
func groupFlow(s *Session, l int16) {
	group := fmt.Sprintf("diff-g%d", l)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	v := clamp(kmsg.FindCoordinator, l)
	if v >= 4 {
		fc.CoordinatorKeys = []string{group, "bad\x00"}
	} else {
		fc.CoordinatorKey = group
	}
	s.Do("group", v, fc)

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = group, 30000, 30000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1, 2}}}
	jv := clamp(kmsg.JoinGroup, l)
	jr, _ := s.Do("first", jv, join).(*kmsg.JoinGroupResponse)
	if jr != nil && jr.ErrorCode == kerr.MemberIDRequired.Code {
		join.MemberID = jr.MemberID
		jr, _ = s.Do("with-member-id", jv, join).(*kmsg.JoinGroupResponse)
	}
	if jr == nil || jr.ErrorCode != 0 {
		return
	}
	member, gen := jr.MemberID, jr.Generation

	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = group, member, gen
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: member, MemberAssignment: []byte{9, 9}}}
	sv := clamp(kmsg.SyncGroup, l)
	s.Do("leader", sv, sync)
	stale := *sync
	stale.Generation = gen + 5
	s.Do("stale-generation", sv, &stale)

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation, hb.MemberID = group, gen, member
	hv := clamp(kmsg.Heartbeat, l)
	s.Do("ok", hv, hb)
	hbStale := *hb
	hbStale.Generation = gen - 1
	s.Do("stale-generation", hv, &hbStale)
	hbUnknown := *hb
	hbUnknown.MemberID = "unknown-member"
	s.Do("unknown-member", hv, &hbUnknown)

	ov := clamp(kmsg.OffsetCommit, l)
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation, oc.MemberID, oc.RetentionTimeMillis = group, gen, member, -1
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic = topicA
	if ov >= 10 {
		oct.TopicID = s.TopicID(topicA)
	}
	for p := int32(0); p < 3; p++ {
		ocp := kmsg.NewOffsetCommitRequestTopicPartition()
		ocp.Partition, ocp.Offset, ocp.Metadata = p, int64(p+1), kmsg.StringPtr("meta")
		ocp.LeaderEpoch = 0
		oct.Partitions = append(oct.Partitions, ocp)
	}
	oc.Topics = append(oc.Topics, oct)
	s.Do("member", ov, oc)
	ocBad := *oc
	ocBad.Generation = gen + 9
	s.Do("stale-generation", ov, &ocBad)

	fv := clamp(kmsg.OffsetFetch, l)
	of := kmsg.NewPtrOffsetFetchRequest()
	if fv >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		t := kmsg.NewOffsetFetchRequestGroupTopic()
		t.Topic, t.Partitions = topicA, []int32{0, 1, 2, 7}
		if fv >= 10 {
			t.TopicID = s.TopicID(topicA)
		}
		g.Topics = append(g.Topics, t)
		of.Groups = append(of.Groups, g)
		g2 := kmsg.NewOffsetFetchRequestGroup()
		g2.Group = "diff-g-none"
		of.Groups = append(of.Groups, g2)
	} else {
		of.Group = group
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic, t.Partitions = topicA, []int32{0, 1, 2, 7}
		of.Topics = append(of.Topics, t)
	}
	s.Do("named", fv, of)
	if fv >= 2 {
		all := kmsg.NewPtrOffsetFetchRequest()
		if fv >= 8 {
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = group
			g.Topics = nil
			all.Groups = append(all.Groups, g)
		} else {
			all.Group, all.Topics = group, nil
		}
		s.Do("all", fv, all)
	}

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{group, "diff-g-none"}
	dg.IncludeAuthorizedOperations = true
	s.Do("", clamp(kmsg.DescribeGroups, l), dg)

	lg := kmsg.NewPtrListGroupsRequest()
	s.Do("", clamp(kmsg.ListGroups, l), lg)
	if lv := clamp(kmsg.ListGroups, l); lv >= 4 {
		lgf := kmsg.NewPtrListGroupsRequest()
		lgf.StatesFilter = []string{"Stable"}
		if lv >= 5 {
			lgf.TypesFilter = []string{"classic"}
		}
		s.Do("filtered", lv, lgf)
	}

	lv := clamp(kmsg.LeaveGroup, l)
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = group
	if lv >= 3 {
		leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: member}, {MemberID: "unknown-member"}}
	} else {
		leave.MemberID = member
	}
	s.Do("", lv, leave)

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{group, "diff-g-none"}
	s.Do("", clamp(kmsg.DeleteGroups, l), del)
}

// scriptConsumerGroups drives a KIP-848 group: join, heartbeat, describe,
// leave, for each version.
func scriptConsumerGroups(s *Session) error {
	var err error
	each(kmsg.ConsumerGroupHeartbeat, func(v int16) {
		group := fmt.Sprintf("diff-cg%d", v)
		if err == nil {
			err = s.SettleCoordinator(0, group)
		}
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberEpoch, hb.RebalanceTimeoutMillis = group, 0, 30000
		hb.SubscribedTopicNames = []string{topicA}
		if v >= 1 {
			hb.MemberID = fmt.Sprintf("diff-member-%d-000000", v)
		}
		// A joining member names its owned partitions: none, an empty
		// (not null) list.
		hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		r, _ := s.Do("join", v, hb).(*kmsg.ConsumerGroupHeartbeatResponse)
		noTopics := *hb
		noTopics.Group, noTopics.Topics = group+"-null-topics", nil
		if v >= 1 {
			noTopics.MemberID = fmt.Sprintf("diff-member-%d-000001", v)
		}
		s.Do("join-null-owned", v, &noTopics)
		bad := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		bad.Group, bad.MemberID, bad.MemberEpoch = group, "diff-unknown-member-0000", 3
		s.Do("unknown-member", v, bad)
		dv := clamp(kmsg.ConsumerGroupDescribe, v)
		d := kmsg.NewPtrConsumerGroupDescribeRequest()
		d.Groups = []string{group, "diff-cg-none"}
		s.Do("", dv, d)
		if r == nil || r.ErrorCode != 0 {
			return
		}
		// Online migration: a classic member joining the live
		// consumer group learns its member id first (v4+), and one
		// with another protocol type is refused.
		cj := kmsg.NewPtrJoinGroupRequest()
		cj.Group, cj.SessionTimeoutMillis, cj.RebalanceTimeoutMillis, cj.ProtocolType = group, 30000, 30000, "consumer"
		md := kmsg.NewConsumerMemberMetadata()
		md.Topics = []string{topicA}
		cj.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: md.AppendTo(nil)}}
		s.Do("classic-join-live", 9, cj)
		other := *cj
		other.ProtocolType = "connect"
		s.Do("classic-join-live-other-type", 9, &other)
		leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		leave.Group, leave.MemberID, leave.MemberEpoch = group, deref(r.MemberID), -1
		s.Do("leave", v, leave)
	})
	return err
}
