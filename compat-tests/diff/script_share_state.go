package diff

import (
	"encoding/base64"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// scriptShareState drives the share coordinator's inter-broker APIs
// (83-87, KIP-932) as a broker would, for one share-partition of diff-a:
// FindCoordinator SHARE (which creates __share_group_state), the answers
// before Initialize, Initialize, Read with a leader epoch, Write, the
// fencing errors, the summary, Delete; and a topic id that does not
// exist.
func scriptShareState(s *Session) error {
	id := s.TopicID(topicA)
	if id == [16]byte{} {
		return fmt.Errorf("%w: %s: no topic id for %s", ErrDiffScript, s.Broker, topicA)
	}
	const group = "diff-sg"
	key := group + ":" + base64.RawURLEncoding.EncodeToString(id[:]) + ":0"
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 2, []string{key}
	if err := s.Settle(60*time.Second, 6, fc, func(r kmsg.Response) int16 {
		return r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode
	}); err != nil {
		return err
	}
	settle := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	settle.GroupID = group
	settle.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: id, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}}}}
	if err := s.Settle(60*time.Second, 0, settle, func(r kmsg.Response) int16 {
		return r.(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[0].ErrorCode
	}); err != nil {
		return err
	}
	// The recorded lookups use a made-up topic id, the same on both
	// brokers (the answer echoes the key; the topic need not exist).
	fixed := group + ":" + base64.RawURLEncoding.EncodeToString([]byte("diff-share-topic")) + ":0"
	same := kmsg.NewPtrFindCoordinatorRequest()
	same.CoordinatorType, same.CoordinatorKeys = 2, []string{fixed}
	s.Do("share-key", 6, same)
	bad := kmsg.NewPtrFindCoordinatorRequest()
	bad.CoordinatorType, bad.CoordinatorKeys = 2, []string{"not-a-share-key", group + ":nope:0"}
	s.Do("bad-share-key", 6, bad)
	old := kmsg.NewPtrFindCoordinatorRequest()
	old.CoordinatorType, old.CoordinatorKeys = 2, []string{fixed}
	s.Do("share-key-before-v6", 5, old)

	summary := func(name string, topic [16]byte) {
		each(kmsg.ReadShareGroupStateSummary, func(v int16) {
			r := kmsg.NewPtrReadShareGroupStateSummaryRequest()
			r.GroupID = group
			r.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: topic, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}}}}
			s.Do(name, v, r)
		})
	}
	read := func(name string, topic [16]byte, leaderEpoch int32) {
		r := kmsg.NewPtrReadShareGroupStateRequest()
		r.GroupID = group
		r.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: topic, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0, LeaderEpoch: leaderEpoch}}}}
		s.Do(name, 0, r)
	}
	write := func(name string, v int16, topic [16]byte, stateEpoch, leaderEpoch int32, start int64) {
		r := kmsg.NewPtrWriteShareGroupStateRequest()
		r.GroupID = group
		p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset, p.DeliveryCompleteCount = 0, stateEpoch, leaderEpoch, start, 2
		p.StateBatches = []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{
			{FirstOffset: start, LastOffset: start + 1, DeliveryState: 2, DeliveryCount: 1},
			{FirstOffset: start + 2, LastOffset: start + 4, DeliveryState: 0, DeliveryCount: 2},
		}
		r.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: topic, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{p}}}
		s.Do(name, v, r)
	}
	initialize := func(name string, topic [16]byte, stateEpoch int32, start int64) {
		r := kmsg.NewPtrInitializeShareGroupStateRequest()
		r.GroupID = group
		r.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: topic, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0, StateEpoch: stateEpoch, StartOffset: start}}}}
		s.Do(name, 0, r)
	}
	del := func(name string, topic [16]byte) {
		r := kmsg.NewPtrDeleteShareGroupStateRequest()
		r.GroupID = group
		r.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: topic, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 0}}}}
		s.Do(name, 0, r)
	}

	summary("uninitialized", id)
	read("uninitialized", id, 0)
	write("uninitialized", 0, id, 0, 0, 0)
	initialize("", id, 1, -1)
	summary("initialized", id)
	read("leader-epoch-3", id, 3)
	each(kmsg.WriteShareGroupState, func(v int16) { write("", v, id, 1, 3, int64(10*v)) })
	read("after-write", id, 3)
	summary("after-write", id)
	read("older-leader", id, 2)
	write("older-leader", 1, id, 1, 2, 0)
	write("older-state-epoch", 1, id, 0, 3, 0)
	initialize("older-state-epoch", id, 0, 0)
	read("negative-leader-epoch", id, -1)
	del("", id)
	del("again", id)
	read("deleted", id, 3)

	unknown := [16]byte{0xde, 0xad}
	initialize("unknown-topic", unknown, 0, 0)
	summary("unknown-topic", unknown)
	del("unknown-topic", unknown)
	return nil
}
