package handlers

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTxnOffsetCommitTopicResolution: v6 names topics by id. An unknown or
// zero id is UNKNOWN_TOPIC_ID, a partition the topic lacks
// UNKNOWN_TOPIC_OR_PARTITION, and only the partitions left go on to the
// transaction check (here no transaction coordinator runs, so they fail
// with COORDINATOR_NOT_AVAILABLE); the answer carries the ids in request
// order. As in Kafka 4.4's KafkaApis, a request whose partitions all fail
// that way reaches no coordinator. v5 names topics as before.
func TestTxnOffsetCommitTopicResolution(t *testing.T) {
	e := newGroupEnv(t)
	idA := e.createTopic(t, "a", 2, nil)
	unknown := [16]byte{1, 2, 3}
	commit := func(v int16, topics ...kmsg.TxnOffsetCommitRequestTopic) *kmsg.TxnOffsetCommitResponse {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "t", "g", 1, 0
		req.Topics = topics
		return e.call(t, req, v).(*kmsg.TxnOffsetCommitResponse)
	}
	topic := func(name string, id [16]byte, partitions ...int32) kmsg.TxnOffsetCommitRequestTopic {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = name, id
		for _, p := range partitions {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, 1
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rt
	}
	codes := func(resp *kmsg.TxnOffsetCommitResponse) string {
		var out []string
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				out = append(out, fmt.Sprintf("%x/%s/%d:%d", t.TopicID[:2], t.Topic, p.Partition, p.ErrorCode))
			}
		}
		return fmt.Sprint(out)
	}
	cna, uti, utp := kerr.CoordinatorNotAvailable.Code, kerr.UnknownTopicID.Code, kerr.UnknownTopicOrPartition.Code
	for _, tc := range []struct {
		name   string
		v      int16
		topics []kmsg.TxnOffsetCommitRequestTopic
		want   string
	}{
		{"v6 by id", 6, []kmsg.TxnOffsetCommitRequestTopic{topic("", idA, 0, 5), topic("", unknown, 0), topic("", [16]byte{}, 1)},
			fmt.Sprintf("[%x//0:%d %x//5:%d 0102//0:%d 0000//1:%d]", idA[:2], cna, idA[:2], utp, uti, uti)},
		{"v6 nothing left", 6, []kmsg.TxnOffsetCommitRequestTopic{topic("", unknown, 0), topic("", idA, 9)},
			fmt.Sprintf("[0102//0:%d %x//9:%d]", uti, idA[:2], utp)},
		{"v5 by name", 5, []kmsg.TxnOffsetCommitRequestTopic{topic("a", [16]byte{}, 1), topic("nope", [16]byte{}, 0)},
			fmt.Sprintf("[0000/a/1:%d 0000/nope/0:%d]", cna, utp)},
	} {
		if got := codes(commit(tc.v, tc.topics...)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
