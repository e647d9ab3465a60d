package handlers

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// TestProduceKeylessRecordErrors is a regression test for librdkafka's
// 0011_produce_batch (test_message_single_partition_record_fail): a batch
// of 100 records to a compacted topic, every tenth without a key, must fail
// 10 records with INVALID_RECORD and the other 90 with librdkafka's
// _INVALID_DIFFERENT_RECORD. librdkafka tells them apart only by the
// Produce v8+ record_errors list (KIP-467), which Kafka fills with the
// batch index of each keyless record. samsa answered INVALID_RECORD with an
// empty list, so all 100 records failed with INVALID_RECORD and the test
// failed ("invalid_record_fail_cnt == 10"). Versions before 8 have no list
// and answer the partition error alone.
func TestProduceKeylessRecordErrors(t *testing.T) {
	e := newAdminEnv(t)
	const topic = "compacted-record-errors"
	id := e.createTopic(t, topic, 1, map[string]string{"cleanup.policy": "compact"})
	if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: topic}, id, storage.DefaultLogConfig()); err != nil {
		t.Fatal(err)
	}
	var recs []wire.Record
	var keyless []int32
	for i := range 100 {
		r := wire.Record{Value: []byte("v")}
		if i%10 == 0 {
			keyless = append(keyless, int32(i))
		} else {
			r.Key = []byte("k")
		}
		recs = append(recs, r)
	}
	for _, compression := range []wire.Compression{wire.CompressionNone, wire.CompressionZstd} {
		batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(),
			Compression: compression, Records: recs})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []int16{7, 8, 9, 11} {
			req := kmsg.NewPtrProduceRequest()
			req.Acks = -1
			req.TimeoutMillis = 5000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = batch
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			p := e.call(t, req, v).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if p.ErrorCode != kerr.InvalidRecord.Code {
				t.Fatalf("compression %v v%d: error %d, want INVALID_RECORD", compression, v, p.ErrorCode)
			}
			if v < 8 {
				if len(p.ErrorRecords) != 0 {
					t.Errorf("v%d: %d record errors in a version without the field", v, len(p.ErrorRecords))
				}
				continue
			}
			var got []int32
			for _, er := range p.ErrorRecords {
				got = append(got, er.RelativeOffset)
				if er.ErrorMessage == nil || !strings.Contains(*er.ErrorMessage, "without key") ||
					!strings.Contains(*er.ErrorMessage, topic+"-0") {
					t.Errorf("v%d record %d: message %q, want one naming the missing key and %s-0", v, er.RelativeOffset, deref(er.ErrorMessage), topic)
				}
			}
			if !slices.Equal(got, keyless) {
				t.Errorf("compression %v v%d: record error indexes %v, want %v", compression, v, got, keyless)
			}
			if p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "10 of the batch's 100 records") {
				t.Errorf("v%d: partition message %q, want the count of rejected records", v, deref(p.ErrorMessage))
			}
		}
	}
	l, _ := e.d.Logs.Log(storage.TopicPartition{Topic: topic})
	if l.LogEndOffset() != 0 {
		t.Fatalf("log end %d, want 0 (refused batches not appended)", l.LogEndOffset())
	}
}
