package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestOffsetCommitAndFetch(t *testing.T) {
	e := newGroupEnv(t)
	ordersID := e.createTopic(t, "orders", 2, nil)
	member, gen := joinOne(t, e.d, "g", 9, "orders")

	// Every version commits partition 0 of orders; unknown topics and
	// partitions are refused without touching the rest.
	for v := int16(0); v <= 10; v++ {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = "g", member, gen
		if v == 0 {
			req.Group = "simple" // v0 has no generation: a simple commit
		}
		known := kmsg.OffsetCommitRequestTopic{Topic: "orders", TopicID: ordersID, Partitions: []kmsg.OffsetCommitRequestTopicPartition{
			{Partition: 0, Offset: int64(100 + v), LeaderEpoch: 3, Metadata: strp("m")},
			{Partition: 5, Offset: 1},
		}}
		unknown := kmsg.OffsetCommitRequestTopic{Topic: "nope", TopicID: [16]byte{9}, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}
		req.Topics = []kmsg.OffsetCommitRequestTopic{unknown, known}
		resp := groupCall(t, e.d, handleOffsetCommit, req, v).(*kmsg.OffsetCommitResponse)
		wantUnknown := kerr.UnknownTopicOrPartition.Code
		if v >= 10 {
			wantUnknown = kerr.UnknownTopicID.Code
		}
		if len(resp.Topics) != 2 || resp.Topics[0].Partitions[0].ErrorCode != wantUnknown ||
			resp.Topics[1].Partitions[0].ErrorCode != 0 || resp.Topics[1].Partitions[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("commit v%d: %+v", v, resp.Topics)
		}
	}

	// v1 and v7: one group, named partitions and all partitions.
	f := &kmsg.OffsetFetchRequest{Group: "g", Topics: []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0, 1}}}}
	fr := groupCall(t, e.d, handleOffsetFetch, f, 1).(*kmsg.OffsetFetchResponse)
	if ps := fr.Topics[0].Partitions; ps[0].Offset != 110 || ps[1].Offset != -1 {
		t.Fatalf("fetch v1: %+v", ps)
	}
	f = &kmsg.OffsetFetchRequest{Group: "g"}
	fr = groupCall(t, e.d, handleOffsetFetch, f, 7).(*kmsg.OffsetFetchResponse)
	if len(fr.Topics) != 1 || fr.Topics[0].Partitions[0].Offset != 110 || fr.Topics[0].Partitions[0].LeaderEpoch != 3 {
		t.Fatalf("fetch v7 all: %+v", fr.Topics)
	}
	// v8: several groups. v10: by topic id, and all partitions get ids.
	f = &kmsg.OffsetFetchRequest{Groups: []kmsg.OffsetFetchRequestGroup{{Group: "g"}, {Group: "simple"}}}
	fr = groupCall(t, e.d, handleOffsetFetch, f, 8).(*kmsg.OffsetFetchResponse)
	if len(fr.Groups) != 2 || fr.Groups[1].Topics[0].Partitions[0].Offset != 100 {
		t.Fatalf("fetch v8: %+v", fr.Groups)
	}
	f = &kmsg.OffsetFetchRequest{Groups: []kmsg.OffsetFetchRequestGroup{
		{Group: "g"},
		{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{TopicID: ordersID, Partitions: []int32{0}}, {TopicID: [16]byte{9}, Partitions: []int32{0}}}},
	}}
	fr = groupCall(t, e.d, handleOffsetFetch, f, 10).(*kmsg.OffsetFetchResponse)
	all, named := fr.Groups[0], fr.Groups[1]
	if len(all.Topics) != 1 || all.Topics[0].TopicID != [16]byte(ordersID) || all.Topics[0].Partitions[0].Offset != 110 {
		t.Fatalf("fetch v10 all: %+v", all)
	}
	if named.Topics[0].Partitions[0].Offset != 110 || named.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("fetch v10 named: %+v", named)
	}

	// OffsetDelete: the member subscribes to orders.
	od := &kmsg.OffsetDeleteRequest{Group: "g", Topics: []kmsg.OffsetDeleteRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}}
	odr := groupCall(t, e.d, handleOffsetDelete, od, 0).(*kmsg.OffsetDeleteResponse)
	if odr.ErrorCode != 0 || odr.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
		t.Fatalf("offset delete subscribed: %+v", odr)
	}
	od.Group = "simple"
	odr = groupCall(t, e.d, handleOffsetDelete, od, 0).(*kmsg.OffsetDeleteResponse)
	if odr.ErrorCode != 0 || odr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v", odr)
	}
	f = &kmsg.OffsetFetchRequest{Group: "simple"}
	if fr = groupCall(t, e.d, handleOffsetFetch, f, 7).(*kmsg.OffsetFetchResponse); len(fr.Topics) != 0 {
		t.Fatalf("after offset delete: %+v", fr.Topics)
	}
}
