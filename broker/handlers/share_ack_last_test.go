package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/share"
)

// TestShareAckRepeatedPartition: samsa applied the acknowledgements of
// every entry of a partition a ShareAcknowledge or ShareFetch named more
// than once, and answered each; Kafka 4.4 applies the last entry's only
// (none when it has none) and answers the partition once (sharefacts
// -step s28dup, FACTS.md H6 sgaps). Offset 0 stays acquired throughout,
// so the start offset never moves: a later release of an offset answers
// 0 while the member still holds it, INVALID_RECORD_STATE once accepted.
func TestShareAckRepeatedPartition(t *testing.T) {
	e := newShareEnv(t)
	for range 4 {
		e.produce(t, 3) // 0-11
	}
	if got := acquired(e.fetch(t, 2, "a", 0, 0)); len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 11 {
		t.Fatalf("fetch acquired %+v, want 0-11", got)
	}
	epoch := int32(1)
	accept := func(o int64) kmsg.ShareAcknowledgeRequestTopicPartition {
		return kmsg.ShareAcknowledgeRequestTopicPartition{AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: o, LastOffset: o, AcknowledgeTypes: []int8{share.AckAccept}}}}
	}
	topic := func(parts ...kmsg.ShareAcknowledgeRequestTopicPartition) kmsg.ShareAcknowledgeRequestTopic {
		return kmsg.ShareAcknowledgeRequestTopic{TopicID: e.id, Partitions: parts}
	}
	ack := func(topics ...kmsg.ShareAcknowledgeRequestTopic) int16 {
		t.Helper()
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = strp("g"), strp("a"), epoch
		req.Topics = topics
		epoch++
		resp := e.call(t, req, 2).(*kmsg.ShareAcknowledgeResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("answer %+v, want the partition once", resp)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	release := func(o int64) int16 {
		t.Helper()
		return ack(topic(kmsg.ShareAcknowledgeRequestTopicPartition{AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: o, LastOffset: o, AcknowledgeTypes: []int8{share.AckRelease}}}}))
	}
	applied := func(label string, held, accepted []int64) {
		t.Helper()
		for _, o := range held {
			if c := release(o); c != 0 {
				t.Fatalf("%s: release of %d answered %d, want 0 (its acknowledgement not applied)", label, o, c)
			}
		}
		for _, o := range accepted {
			if c := release(o); c != kerr.InvalidRecordState.Code {
				t.Fatalf("%s: release of %d answered %d, want INVALID_RECORD_STATE (accepted)", label, o, c)
			}
		}
	}

	if c := ack(topic(accept(1), accept(2))); c != 0 {
		t.Fatalf("partition twice: %d", c)
	}
	applied("partition twice", []int64{1}, []int64{2})
	if c := ack(topic(accept(3)), topic(accept(4))); c != 0 {
		t.Fatalf("topic twice: %d", c)
	}
	applied("topic twice", []int64{3}, []int64{4})
	if c := ack(topic(accept(5), accept(99))); c != kerr.InvalidRequest.Code {
		t.Fatalf("accept 5 / bad 99: %d, want INVALID_REQUEST (the last entry's)", c)
	}
	applied("accept 5 / bad 99", []int64{5}, nil)

	// Piggybacked on a ShareFetch.
	fetch := func(first, second []int64) {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID = strp("g"), strp("a")
		req.ShareSessionEpoch, req.MinBytes, req.MaxBytes, req.MaxRecords = epoch, 1, 1<<20, 500
		rt := kmsg.ShareFetchRequestTopic{TopicID: e.id}
		for _, offsets := range [][]int64{first, second} {
			var rp kmsg.ShareFetchRequestTopicPartition
			for _, o := range offsets {
				rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: o, LastOffset: o, AcknowledgeTypes: []int8{share.AckAccept}})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		epoch++
		resp := e.call(t, req, 2).(*kmsg.ShareFetchResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].AcknowledgeErrorCode != 0 {
			t.Fatalf("fetch answer %+v, want the partition once, no error", resp)
		}
	}
	fetch([]int64{6}, []int64{7})
	applied("fetch: accept 6 / accept 7", []int64{6}, []int64{7})
	fetch([]int64{8}, nil)
	applied("fetch: accept 8 / none", []int64{8}, nil)
	fetch(nil, []int64{9})
	applied("fetch: none / accept 9", nil, []int64{9})
}
