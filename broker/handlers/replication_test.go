package handlers

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// TestProduceAcksAndMinISR: on one node the ISR is {this node}, and
// min.insync.replicas=2 on a topic of one replica is capped at the
// replica count (Kafka's effectiveMinIsr), so acks=-1 is taken as Kafka
// 4.4 takes it (compat-tests/diff: Produce min-isr-over-replicas), as is
// acks=1; with the default (1) acks=-1 answers at once too, and the high
// watermark is the log end (the general rule, no single-node special
// case). A short ISR of a replicated partition still refuses acks=-1
// (replica's TestUnderMinISRHoldsHighWatermark, compat-tests'
// TestMinISRTwoOfThreeBrokersDown).
func TestProduceAcksAndMinISR(t *testing.T) {
	e := newAdminEnv(t)
	for _, topic := range []struct {
		name string
		cfg  map[string]string
	}{{"mi2", map[string]string{"min.insync.replicas": "2"}}, {"mi1", nil}} {
		id := e.createTopic(t, topic.name, 1, topic.cfg)
		if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: topic.name}, id, storage.DefaultLogConfig()); err != nil {
			t.Fatal(err)
		}
	}
	produce := func(topic string, acks int16) *kmsg.ProduceResponseTopicPartition {
		batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(),
			Records: []wire.Record{{Value: []byte("v")}}})
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks = acks
		req.TimeoutMillis = 1000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := e.call(t, req, 9).(*kmsg.ProduceResponse)
		return &resp.Topics[0].Partitions[0]
	}
	if p := produce("mi2", -1); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("acks=-1, min.insync.replicas 2 on one replica: code %d offset %d, want taken at 0", p.ErrorCode, p.BaseOffset)
	}
	if p := produce("mi2", 1); p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Fatalf("acks=1: code %d offset %d", p.ErrorCode, p.BaseOffset)
	}
	if p := produce("mi1", -1); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("acks=-1, min.insync.replicas 1: code %d offset %d", p.ErrorCode, p.BaseOffset)
	}
	for name, want := range map[string]int64{"mi1": 1, "mi2": 2} {
		l, _ := e.d.Logs.Log(storage.TopicPartition{Topic: name})
		if l.LogEndOffset() != want || l.HighWatermark() != want {
			t.Fatalf("%s: LEO %d HW %d, want %d %d", name, l.LogEndOffset(), l.HighWatermark(), want, want)
		}
	}
}

// TestFetchLeaderEpochAndReplicaFetch: a consumer fetch with a newer or
// older current_leader_epoch is refused as Kafka does; a fetch with a
// replica id that is not a replica of the partition is refused; the
// follower path answers the log end and high watermark.
func TestFetchLeaderEpochAndReplicaFetch(t *testing.T) {
	e := newAdminEnv(t)
	id := e.createTopic(t, "f", 1, nil)
	if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: "f"}, id, storage.DefaultLogConfig()); err != nil {
		t.Fatal(err)
	}
	fetch := func(v int16, replicaID, epoch int32) kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = replicaID
		req.ReplicaState.ID = replicaID
		req.MaxBytes = 1 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "f"
		rt.TopicID = id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.CurrentLeaderEpoch = epoch
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := e.call(t, req, v).(*kmsg.FetchResponse)
		return resp.Topics[0].Partitions[0]
	}
	for _, v := range []int16{12, 16} {
		if p := fetch(v, -1, 5); p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
			t.Errorf("v%d newer epoch: %d", v, p.ErrorCode)
		}
		if p := fetch(v, -1, 0); p.ErrorCode != 0 || p.HighWatermark != 0 {
			t.Errorf("v%d current epoch: %d hw %d", v, p.ErrorCode, p.HighWatermark)
		}
		if p := fetch(v, 7, 0); p.ErrorCode != kerr.ReplicaNotAvailable.Code {
			t.Errorf("v%d fetch from replica 7, not a replica: %d", v, p.ErrorCode)
		}
	}
}
