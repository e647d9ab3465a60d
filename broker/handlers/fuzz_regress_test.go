package handlers

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// Regressions of differences the randomized differential run against Kafka
// 4.4 found (compat-tests/diff TestDiffFuzz; FINDINGS "Differential
// fuzzing"): the order Kafka checks a Produce's partitions in, a Produce
// with transactional records and no transactional id, a ListOffsets naming
// a partition twice, a Fetch below v13 naming the empty topic, and an
// OffsetDelete of partitions that do not exist.

func fuzzEnvTopic(t *testing.T, e *adminEnv, name string) controller.Uuid {
	t.Helper()
	id := e.createTopic(t, name, 1, nil)
	if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: name}, id, storage.DefaultLogConfig()); err != nil {
		t.Fatal(err)
	}
	return id
}

func fuzzBatch(t *testing.T, txn bool) []byte {
	t.Helper()
	spec := wire.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(),
		Records: []wire.Record{{Value: []byte("v")}}}
	if txn {
		spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence, spec.Transactional = 7, 0, 0, true
	}
	b, err := wire.EncodeBatch(spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func produceCodes(resp *kmsg.ProduceResponse) []int16 {
	var out []int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

func TestProduceCheckOrderAsKafka(t *testing.T) {
	e := newAdminEnv(t)
	id := fuzzEnvTopic(t, e, "t")
	part := func(topic string, tid [16]byte, p int32, txn bool) kmsg.ProduceRequestTopic {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = topic, tid
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, fuzzBatch(t, txn)
		rt.Partitions = append(rt.Partitions, rp)
		return rt
	}
	// Invalid acks: unknown topics and partitions are answered as such
	// first (KafkaApis), the acks only for the partitions that exist
	// (ReplicaManager.appendRecords).
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 2, 1000
	req.Topics = []kmsg.ProduceRequestTopic{part("nope", [16]byte{}, 0, false), part("t", id, 5, false), part("t", id, 0, false)}
	want := []int16{kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.InvalidRequiredAcks.Code}
	if got := produceCodes(e.call(t, req, 9).(*kmsg.ProduceResponse)); !equalCodes(got, want) {
		t.Errorf("acks 2, v9: codes %v, want %v", got, want)
	}
	req.Topics = []kmsg.ProduceRequestTopic{part("", [16]byte{1}, 0, false), part("", id, 0, false)}
	want = []int16{kerr.UnknownTopicID.Code, kerr.InvalidRequiredAcks.Code}
	if got := produceCodes(e.call(t, req, 13).(*kmsg.ProduceResponse)); !equalCodes(got, want) {
		t.Errorf("acks 2, v13: codes %v, want %v", got, want)
	}
	// Transactional records without a transactional id: the whole request
	// is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, whatever else is wrong.
	req.Acks = -1
	req.Topics = []kmsg.ProduceRequestTopic{part("t", id, 0, false), part("nope", [16]byte{}, 3, false), part("t", id, 0, true)}
	want = []int16{kerr.TransactionalIDAuthorizationFailed.Code, kerr.TransactionalIDAuthorizationFailed.Code, kerr.TransactionalIDAuthorizationFailed.Code}
	resp := e.call(t, req, 9).(*kmsg.ProduceResponse)
	if got := produceCodes(resp); !equalCodes(got, want) {
		t.Errorf("transactional records without an id: codes %v, want %v", got, want)
	}
	if p := resp.Topics[0].Partitions[0]; p.BaseOffset != -1 || p.LogStartOffset != -1 {
		t.Errorf("refused partition: base offset %d, log start %d, want -1, -1", p.BaseOffset, p.LogStartOffset)
	}
	l, _ := e.d.Logs.Log(storage.TopicPartition{Topic: "t"})
	if l.LogEndOffset() != 0 {
		t.Fatalf("log end %d after refused produces, want 0", l.LogEndOffset())
	}
}

func equalCodes(a, b []int16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestListOffsetsDuplicatePartition(t *testing.T) {
	e := newAdminEnv(t)
	fuzzEnvTopic(t, e, "t")
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "t"
	for _, c := range []struct {
		p  int32
		ts int64
	}{{0, -1}, {0, -7}, {7, -1}, {7, -2}, {0, -2}} {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = c.p, c.ts, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	other := kmsg.NewListOffsetsRequestTopicPartition()
	other.Partition, other.Timestamp, other.CurrentLeaderEpoch = 9, -1, -1
	nope := kmsg.NewListOffsetsRequestTopic()
	nope.Topic, nope.Partitions = "nope", []kmsg.ListOffsetsRequestTopicPartition{other}
	req.Topics = []kmsg.ListOffsetsRequestTopic{rt, nope}
	resp := e.call(t, req, 9).(*kmsg.ListOffsetsResponse)
	ps := resp.Topics[0].Partitions
	if len(ps) != 2 || ps[0].Partition != 0 || ps[1].Partition != 7 {
		t.Fatalf("partitions %+v, want 0 and 7 once each", ps)
	}
	for _, p := range ps {
		if p.ErrorCode != kerr.InvalidRequest.Code || p.Offset != -1 || p.Timestamp != -1 {
			t.Errorf("partition %d: error %d offset %d timestamp %d, want INVALID_REQUEST, -1, -1", p.Partition, p.ErrorCode, p.Offset, p.Timestamp)
		}
	}
	if p := resp.Topics[1].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("a single unknown partition: error %d, want UNKNOWN_TOPIC_OR_PARTITION", p.ErrorCode)
	}
}

func TestFetchEmptyTopicNameByVersion(t *testing.T) {
	e := newAdminEnv(t)
	fuzzEnvTopic(t, e, "t")
	for _, c := range []struct {
		v    int16
		want int16
	}{{4, kerr.UnknownTopicOrPartition.Code}, {12, kerr.UnknownTopicOrPartition.Code}, {13, kerr.UnknownTopicID.Code}} {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
		ft := kmsg.NewFetchRequestTopic()
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = 1<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp := e.call(t, req, c.v).(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: %+v", c.v, resp.Topics)
		}
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != c.want {
			t.Errorf("v%d, topic \"\": error %d, want %d", c.v, got, c.want)
		}
	}
}

func TestOffsetDeleteUnknownPartitions(t *testing.T) {
	e := newGroupEnv(t)
	e.createTopic(t, "orders", 2, nil)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "simple", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3, LeaderEpoch: -1}}}}
	groupCall(t, e.d, handleOffsetCommit, commit, 8)
	for _, group := range []string{"simple", "missing"} {
		req := &kmsg.OffsetDeleteRequest{Group: group, Topics: []kmsg.OffsetDeleteRequestTopic{
			{Topic: "orders", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}, {Partition: 5}}},
			{Topic: "nope", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		}}
		resp := groupCall(t, e.d, handleOffsetDelete, req, 0).(*kmsg.OffsetDeleteResponse)
		codes := map[string]int16{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				codes[fmt.Sprintf("%s/%d", rt.Topic, rp.Partition)] = rp.ErrorCode
			}
		}
		want := map[string]int16{}
		wantGroup := kerr.GroupIDNotFound.Code
		if group == "simple" {
			want = map[string]int16{"orders/0": 0, "orders/5": kerr.UnknownTopicOrPartition.Code, "nope/0": kerr.UnknownTopicOrPartition.Code}
			wantGroup = 0
		}
		if resp.ErrorCode != wantGroup || fmt.Sprint(codes) != fmt.Sprint(want) {
			t.Errorf("group %s: error %d, partitions %v; want %d, %v", group, resp.ErrorCode, codes, wantGroup, want)
		}
	}
}

func TestDeleteRecordsCompactedTopic(t *testing.T) {
	e := newAdminEnv(t)
	for _, c := range []struct {
		topic, policy string
		want          int16
	}{{"compacted", "compact", kerr.PolicyViolation.Code}, {"both", "compact,delete", 0}, {"plain", "delete", 0}} {
		id := e.createTopic(t, c.topic, 1, map[string]string{"cleanup.policy": c.policy})
		if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: c.topic}, id, storage.DefaultLogConfig()); err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.TimeoutMillis = 1000
		req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: c.topic, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 0}}}}
		resp := e.call(t, req, 2).(*kmsg.DeleteRecordsResponse)
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != c.want {
			t.Errorf("cleanup.policy %s: error %d, want %d", c.policy, got, c.want)
		}
	}
}

func TestIncrementalAlterConfigsUnknownTypeBeforeOp(t *testing.T) {
	e := newAdminEnv(t)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceType(77), "x"
	r.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "segment.bytes", Op: 9, Value: strp("1")}}
	req.Resources = append(req.Resources, r)
	resp := e.call(t, req, 1).(*kmsg.IncrementalAlterConfigsResponse)
	if got := resp.Resources[0].ErrorCode; got != kerr.InvalidRequest.Code {
		t.Errorf("unknown resource type with an unknown op: error %d, want INVALID_REQUEST", got)
	}
}
