package handlers

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// TestProduceKeylessToCompactedTopic checks that a compacted topic refuses
// records without a key with INVALID_RECORD, as Kafka does, and takes
// keyed ones; a delete-policy topic takes both.
func TestProduceKeylessToCompactedTopic(t *testing.T) {
	e := newAdminEnv(t)
	for _, topic := range []struct {
		name   string
		policy string
	}{{"compacted", "compact"}, {"both", "compact,delete"}, {"plain", "delete"}} {
		id := e.createTopic(t, topic.name, 1, map[string]string{"cleanup.policy": topic.policy})
		if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: topic.name}, id, storage.DefaultLogConfig()); err != nil {
			t.Fatal(err)
		}
	}
	produce := func(topic string, recs ...wire.Record) *kmsg.ProduceResponseTopicPartition {
		batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(),
			Compression: wire.CompressionGzip, Records: recs})
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := e.call(t, req, 9).(*kmsg.ProduceResponse)
		return &resp.Topics[0].Partitions[0]
	}
	keyed := wire.Record{Key: []byte("k"), Value: []byte("v")}
	keyless := wire.Record{Value: []byte("v")}
	for _, tc := range []struct {
		topic string
		recs  []wire.Record
		want  int16
	}{
		{"compacted", []wire.Record{keyed}, 0},
		{"compacted", []wire.Record{keyed, keyless}, kerr.InvalidRecord.Code},
		{"compacted", []wire.Record{{Key: []byte{}, Value: []byte("empty key is a key")}}, 0},
		{"both", []wire.Record{keyless}, kerr.InvalidRecord.Code},
		{"plain", []wire.Record{keyless}, 0},
	} {
		p := produce(tc.topic, tc.recs...)
		if p.ErrorCode != tc.want {
			t.Errorf("%s %d records: error %d, want %d", tc.topic, len(tc.recs), p.ErrorCode, tc.want)
		}
		if tc.want != 0 && (p.ErrorMessage == nil || p.BaseOffset != -1) {
			t.Errorf("%s: refused without message or with offset %d", tc.topic, p.BaseOffset)
		}
	}
	l, _ := e.d.Logs.Log(storage.TopicPartition{Topic: "compacted"})
	if l.LogEndOffset() != 2 {
		t.Fatalf("compacted log end %d, want 2 (refused batches not appended)", l.LogEndOffset())
	}
}
