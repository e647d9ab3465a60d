package diff

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scriptShareGroups drives a KIP-932 share group with the group
// coordinator's APIs: join, a heartbeat at a wrong epoch, an unknown
// member, describe, the share admin APIs on a live group (refused) and on
// the empty group after the member left, and the classic listing of it.
// ShareFetch and ShareAcknowledge are the partition leaders' and are
// scripted with them.
func scriptShareGroups(s *Session) error {
	const group = "diff-sg"
	if err := s.SettleCoordinator(0, group); err != nil {
		return err
	}
	var member string
	each(kmsg.ShareGroupHeartbeat, func(v int16) {
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.MemberEpoch = group, "diff-share-member-0001", 0
		hb.SubscribedTopicNames = []string{topicA}
		r, _ := s.Do("join", v, hb).(*kmsg.ShareGroupHeartbeatResponse)
		if r != nil && r.ErrorCode == 0 {
			member = hb.MemberID
		}
		noSub := kmsg.NewPtrShareGroupHeartbeatRequest()
		noSub.GroupID, noSub.MemberID = group, "diff-share-member-0002"
		s.Do("join-no-subscription", v, noSub)
		unknown := kmsg.NewPtrShareGroupHeartbeatRequest()
		unknown.GroupID, unknown.MemberID, unknown.MemberEpoch = group, "diff-share-unknown-01", 1
		s.Do("unknown-member", v, unknown)
		future := kmsg.NewPtrShareGroupHeartbeatRequest()
		future.GroupID, future.MemberID, future.MemberEpoch = group, hb.MemberID, 99
		s.Do("future-epoch", v, future)
		noGroup := kmsg.NewPtrShareGroupHeartbeatRequest()
		noGroup.GroupID, noGroup.MemberID, noGroup.MemberEpoch = "diff-sg-none", hb.MemberID, 3
		s.Do("no-group", v, noGroup)
	})
	each(kmsg.ShareGroupDescribe, func(v int16) {
		d := kmsg.NewPtrShareGroupDescribeRequest()
		d.GroupIDs = []string{"diff-sg-none"}
		s.Do("unknown", v, d)
	})
	alter := func(name string) {
		a := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		a.GroupID = group
		t := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		t.Topic = topicA
		t.Partitions = []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 1}, {Partition: 1, StartOffset: -1}}
		a.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{t}
		each(kmsg.AlterShareGroupOffsets, func(v int16) { s.Do(name, v, a) })
	}
	deleteOffsets := func(name string, topics ...string) {
		d := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		d.GroupID = group
		for _, t := range topics {
			d.Topics = append(d.Topics, kmsg.DeleteShareGroupOffsetsRequestTopic{Topic: t})
		}
		each(kmsg.DeleteShareGroupOffsets, func(v int16) { s.Do(name, v, d) })
	}
	describeOffsets := func(name string) {
		each(kmsg.DescribeShareGroupOffsets, func(v int16) {
			d := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
			g.GroupID = group
			t := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
			t.Topic, t.Partitions = topicA, []int32{0, 1}
			g.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{t}
			none := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
			none.GroupID = "diff-sg-none"
			none.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{t}
			d.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{g, none}
			s.Do(name, v, d)
		})
	}
	alter("live-group")
	deleteOffsets("live-group", topicA)
	lg := kmsg.NewPtrListGroupsRequest()
	lg.TypesFilter = []string{"share"}
	s.Do("share", clamp(kmsg.ListGroups, 5), lg)
	if member != "" {
		leave := kmsg.NewPtrShareGroupHeartbeatRequest()
		leave.GroupID, leave.MemberID, leave.MemberEpoch = group, member, -1
		s.Do("leave", clamp(kmsg.ShareGroupHeartbeat, 1), leave)
	}
	alter("empty-group")
	describeOffsets("after-alter")
	deleteOffsets("empty-group", topicA, "diff-no-such-topic")
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{group}
	s.Do("share", clamp(kmsg.DeleteGroups, 3), del)
	return nil
}
