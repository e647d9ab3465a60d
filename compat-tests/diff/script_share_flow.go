package diff

import (
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareFlowKafkaVersions are Kafka 4.4's client-facing version ranges of the
// share-group APIs (KIP-932), used for the ones samsa does not advertise
// when DIFF_SHARE=1 forces the share section.
var shareFlowKafkaVersions = map[kmsg.Key]Versions{
	kmsg.ShareGroupHeartbeat:        {1, 1},
	kmsg.ShareGroupDescribe:         {1, 1},
	kmsg.ShareFetch:                 {1, 2},
	kmsg.ShareAcknowledge:           {1, 2},
	kmsg.DescribeShareGroupOffsets:  {0, 1},
	kmsg.AlterShareGroupOffsets:     {0, 0},
	kmsg.DeleteShareGroupOffsets:    {0, 0},
	kmsg.ReadShareGroupStateSummary: {0, 1},
}

// shareFlowVersions returns the range samsa advertises for key, or Kafka's
// when samsa does not advertise it.
func shareFlowVersions(key kmsg.Key) Versions {
	if r, ok := Advertised()[int16(key)]; ok {
		return r
	}
	return shareFlowKafkaVersions[key]
}

// eachShareFlow calls fn for every version of shareFlowVersions(key).
func eachShareFlow(key kmsg.Key, fn func(v int16)) {
	r := shareFlowVersions(key)
	for v := r.Min; v <= r.Max; v++ {
		fn(v)
	}
}

// The share section's names. The member id is the client's to choose
// (KIP-932), so both brokers see the same one.
const (
	shareFlowGroup  = "diff-sfl"
	shareFlowGroup2 = "diff-sfl-empty"
	shareFlowMember = "diff-sfl-member-0001"
)

// scriptShareFlow runs one share group (KIP-932) through a consumer's
// whole life with records, beside the per-API sections of the share group,
// partition leader and share coordinator work: group configs,
// ShareGroupHeartbeat (invalid joins, join, steady state, stale epochs,
// leave), ShareGroupDescribe, ShareFetch and ShareAcknowledge (session
// epochs, accept/release/reject, acknowledgements of offsets not acquired,
// unknown topic ids), the offsets admin APIs and the classic group APIs on
// a share group. It runs when samsa advertises ShareGroupHeartbeat (or
// DIFF_SHARE=1): until then the comparison would only list the unserved
// APIs.
func scriptShareFlow(s *Session) error {
	if _, ok := Advertised()[int16(kmsg.ShareGroupHeartbeat)]; !ok && os.Getenv("DIFF_SHARE") != "1" {
		return nil
	}
	for _, g := range []string{shareFlowGroup, shareFlowGroup2} {
		if err := s.SettleCoordinator(0, g); err != nil {
			return err
		}
	}
	// Group configs: defaults of a group that does not exist yet, a bad
	// value, then earliest so the fetches below see the script's records.
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dcr := kmsg.NewDescribeConfigsRequestResource()
	dcr.ResourceType, dcr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, shareFlowGroup
	dc.Resources = append(dc.Resources, dcr)
	s.Do("share-group-defaults", 4, dc)
	s.Do("share-bad-reset", 1, shareFlowConfigReq(shareFlowGroup, "share.auto.offset.reset", "bogus"))
	s.Do("share-lock-above-max", 1, shareFlowConfigReq(shareFlowGroup, "share.record.lock.duration.ms", "60001"))
	s.Do("share-earliest", 1, shareFlowConfigReq(shareFlowGroup, "share.auto.offset.reset", "earliest"))

	hv := shareFlowVersions(kmsg.ShareGroupHeartbeat).Max
	hb := func(member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatRequest {
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.GroupID, r.MemberID, r.MemberEpoch, r.SubscribedTopicNames = shareFlowGroup, member, epoch, topics
		return r
	}
	s.Do("empty-member-id", hv, hb("", 0, []string{topicA}))
	s.Do("no-topics", hv, hb(shareFlowMember, 0, nil))
	s.Do("unknown-member-epoch-5", hv, hb("diff-sfl-nobody", 5, []string{topicA}))
	join, _ := s.Do("join", hv, hb(shareFlowMember, 0, []string{topicA})).(*kmsg.ShareGroupHeartbeatResponse)
	if join == nil || join.ErrorCode != 0 {
		return nil
	}
	// The assignment comes with a later heartbeat (Kafka computes it
	// every group.share.assignment.interval.ms): poll unrecorded.
	epoch, err := shareFlowAssigned(s, hv, hb)
	if err != nil {
		return err
	}
	s.Do("steady", hv, hb(shareFlowMember, epoch, nil))
	s.Do("future-epoch", hv, hb(shareFlowMember, epoch+5, nil))
	// One group per request: Kafka orders the groups of a multi-group
	// answer by its coordinator's map, not by the request.
	for _, g := range []string{shareFlowGroup, "diff-sfl-none"} {
		describe := kmsg.NewPtrShareGroupDescribeRequest()
		describe.GroupIDs = []string{g}
		describe.IncludeAuthorizedOperations = true
		eachShareFlow(kmsg.ShareGroupDescribe, func(v int16) { s.Do("stable-"+g, v, describe) })
	}

	// ShareFetch: each version opens its own session (epoch 0) and
	// acknowledges what it got in ShareAcknowledge.
	id := s.TopicID(topicA)
	sessionEpoch := int32(0)
	eachShareFlow(kmsg.ShareFetch, func(v int16) {
		// Each version takes its own partition of diff-a, which holds
		// records of the produce section.
		p := int32(v-1) % 3
		f := shareFlowFetchReq(id, p, 3000)
		f.ShareSessionEpoch = 0
		resp, _ := s.Do(fmt.Sprintf("open-session-%d", v), v, f).(*kmsg.ShareFetchResponse)
		sessionEpoch = 1
		acq := shareFlowAcquired(resp)
		if len(acq) == 0 {
			return
		}
		// Release the first acquired range; accept the rest (below).
		first := acq[0]
		f2 := shareFlowFetchReq(id, p, 500)
		f2.ShareSessionEpoch = sessionEpoch
		f2.Topics[0].Partitions[0].AcknowledgementBatches = []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{
			{FirstOffset: first.FirstOffset, LastOffset: first.LastOffset, AcknowledgeTypes: []int8{2}},
		}
		resp2, _ := s.Do(fmt.Sprintf("release-and-fetch-%d", v), v, f2).(*kmsg.ShareFetchResponse)
		sessionEpoch++
		var acks []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch
		for _, a := range append(acq[1:], shareFlowAcquired(resp2)...) {
			acks = append(acks, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
				FirstOffset: a.FirstOffset, LastOffset: a.LastOffset, AcknowledgeTypes: []int8{1},
			})
		}
		av := clampShareFlow(kmsg.ShareAcknowledge, v)
		s.Do(fmt.Sprintf("accept-rest-%d", v), av, shareFlowAckReq(id, p, sessionEpoch, acks))
		sessionEpoch++
		// An offset never acquired, and an invalid acknowledge type.
		s.Do(fmt.Sprintf("past-acquired-%d", v), av, shareFlowAckReq(id, p, sessionEpoch,
			[]kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 1 << 40, LastOffset: 1 << 40, AcknowledgeTypes: []int8{1}}}))
		sessionEpoch++
		s.Do(fmt.Sprintf("bad-type-%d", v), av, shareFlowAckReq(id, p, sessionEpoch,
			[]kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: first.FirstOffset, LastOffset: first.FirstOffset, AcknowledgeTypes: []int8{9}}}))
		sessionEpoch++
		bad := shareFlowFetchReq(id, p, 0)
		bad.ShareSessionEpoch = sessionEpoch + 50
		s.Do(fmt.Sprintf("wrong-session-epoch-%d", v), v, bad)
		unknown := shareFlowFetchReq([16]byte{1, 2, 3}, 0, 0)
		unknown.ShareSessionEpoch = sessionEpoch
		s.Do(fmt.Sprintf("unknown-topic-id-%d", v), v, unknown)
		sessionEpoch++
		closing := shareFlowFetchReq(id, p, 0)
		closing.Topics = nil
		closing.ShareSessionEpoch = -1
		s.Do(fmt.Sprintf("close-session-%d", v), v, closing)
	})
	eachShareFlow(kmsg.ShareAcknowledge, func(v int16) {
		s.Do("epoch-0", v, shareFlowAckReq(id, 0, 0, []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}))
	})
	nobody := shareFlowFetchReq(id, 0, 0)
	nobody.MemberID = kmsg.StringPtr("diff-sfl-nobody")
	nobody.ShareSessionEpoch = 1
	s.Do("unknown-member-session", shareFlowVersions(kmsg.ShareFetch).Max, nobody)

	// Offsets admin and the classic group APIs on a share group.
	dso := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	dso.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{
		{GroupID: shareFlowGroup, Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topicA, Partitions: []int32{0, 1}}}},
		{GroupID: "diff-sfl-none", Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topicA, Partitions: []int32{0}}}},
		{GroupID: shareFlowGroup2},
	}
	eachShareFlow(kmsg.DescribeShareGroupOffsets, func(v int16) { s.Do("", v, dso) })
	lg := kmsg.NewPtrListGroupsRequest()
	lg.TypesFilter = []string{"share"}
	s.Do("share-type", 5, lg)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{shareFlowGroup}
	s.Do("share-group", 5, dg)
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Groups = []kmsg.OffsetFetchRequestGroup{{Group: shareFlowGroup}}
	s.Do("share-group", 8, of)
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{shareFlowGroup}
	s.Do("non-empty-share-group", 2, del)
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = shareFlowGroup
	alter.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topicA, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 1}}}}
	s.Do("non-empty", shareFlowVersions(kmsg.AlterShareGroupOffsets).Max, alter)

	s.Do("leave", hv, hb(shareFlowMember, -1, nil))
	s.Do("after-leave", hv, hb(shareFlowMember, epoch, nil))
	eachShareFlow(kmsg.AlterShareGroupOffsets, func(v int16) { s.Do("empty", v, alter) })
	eachShareFlow(kmsg.DescribeShareGroupOffsets, func(v int16) { s.Do("after-alter", v, dso) })
	dsgo := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	dsgo.GroupID = shareFlowGroup
	dsgo.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: topicA}, {Topic: "diff-nope"}}
	eachShareFlow(kmsg.DeleteShareGroupOffsets, func(v int16) { s.Do("", v, dsgo) })
	if _, ok := Advertised()[int16(kmsg.ReadShareGroupStateSummary)]; ok {
		sum := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		sum.GroupID = shareFlowGroup
		sum.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: id, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 1, LeaderEpoch: 0}}}}
		eachShareFlow(kmsg.ReadShareGroupStateSummary, func(v int16) { s.Do("", v, sum) })
	}
	s.Do("empty-share-group", 2, del)
	s.Do("deleted-share-group", 2, del)
	return nil
}

// shareFlowAssigned heartbeats (unrecorded) until the member has partitions
// and returns its epoch.
func shareFlowAssigned(s *Session, hv int16, hb func(string, int32, []string) *kmsg.ShareGroupHeartbeatRequest) (int32, error) {
	deadline := time.Now().Add(60 * time.Second)
	epoch := int32(0)
	for first := true; ; first = false {
		req := hb(shareFlowMember, epoch, nil)
		if first {
			req.SubscribedTopicNames = []string{topicA}
		}
		resp, err := s.Quiet(hv, req)
		if err != nil {
			return 0, err
		}
		r := resp.(*kmsg.ShareGroupHeartbeatResponse)
		if r.ErrorCode == 0 {
			epoch = r.MemberEpoch
			if r.Assignment != nil && len(r.Assignment.TopicPartitions) > 0 {
				return epoch, nil
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%w: %s: member of %s never assigned (last error %d)", ErrDiffTimeout, s.Broker, shareFlowGroup, r.ErrorCode)
		}
		<-time.After(200 * time.Millisecond)
	}
}

func clampShareFlow(key kmsg.Key, v int16) int16 {
	r := shareFlowVersions(key)
	return max(r.Min, min(v, r.Max))
}

func shareFlowConfigReq(group, name, value string) *kmsg.IncrementalAlterConfigsRequest {
	r := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value, c.Op = name, kmsg.StringPtr(value), kmsg.IncrementalAlterConfigOpSet
	rr.Configs = append(rr.Configs, c)
	r.Resources = append(r.Resources, rr)
	return r
}

// shareFlowFetchReq fetches partition p of topic id for the script's member.
func shareFlowFetchReq(id [16]byte, p int32, wait int32) *kmsg.ShareFetchRequest {
	r := kmsg.NewPtrShareFetchRequest()
	r.GroupID, r.MemberID = kmsg.StringPtr(shareFlowGroup), kmsg.StringPtr(shareFlowMember)
	r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.MaxRecords, r.BatchSize = wait, 1, 1<<20, 500, 500
	r.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: p, PartitionMaxBytes: 1 << 20}}}}
	return r
}

func shareFlowAckReq(id [16]byte, p, epoch int32, acks []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareAcknowledgeRequest {
	r := kmsg.NewPtrShareAcknowledgeRequest()
	r.GroupID, r.MemberID, r.ShareSessionEpoch = kmsg.StringPtr(shareFlowGroup), kmsg.StringPtr(shareFlowMember), epoch
	r.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: p, AcknowledgementBatches: acks}}}}
	return r
}

// shareFlowAcquired returns the acquired ranges of a ShareFetch response.
func shareFlowAcquired(r *kmsg.ShareFetchResponse) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
	if r == nil {
		return nil
	}
	var out []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.AcquiredRecords...)
		}
	}
	return out
}
