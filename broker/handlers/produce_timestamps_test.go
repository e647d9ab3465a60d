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

// TestProduceTimestampRange is a regression test: Kafka 4 refuses a record
// whose CreateTime timestamp is more than message.timestamp.after.max.ms
// (default one hour) ahead of the broker's clock, or older than
// message.timestamp.before.max.ms, with INVALID_TIMESTAMP and the records
// in record_errors (Produce v8+). samsa stored them: a franz-go produce
// with a timestamp two hours ahead got INVALID_TIMESTAMP from Kafka 4.4
// ("The timestamp of the message is out of acceptable range.") and
// success from samsa. LogAppendTime topics take any producer timestamp,
// and a record without one (-1) is never out of range.
func TestProduceTimestampRange(t *testing.T) {
	e := newAdminEnv(t)
	topics := map[string]map[string]string{
		"ts-default": nil,
		"ts-before":  {"message.timestamp.before.max.ms": "3600000"},
		"ts-append":  {"message.timestamp.type": "LogAppendTime"},
	}
	for name, configs := range topics {
		id := e.createTopic(t, name, 1, configs)
		if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: name}, id, storage.DefaultLogConfig()); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	ahead := 2 * time.Hour
	// produce sends one batch whose first timestamp is now+base and whose
	// records are deltas after it; a base of -1 (with zero deltas) makes
	// records without timestamps.
	produce := func(topic string, v int16, compression wire.Compression, base time.Duration, deltas ...time.Duration) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		baseTS := now.Add(base).UnixMilli()
		var recs []wire.Record
		for _, d := range deltas {
			recs = append(recs, wire.Record{Key: []byte("k"), Value: []byte("v"), TimestampDelta: d.Milliseconds()})
		}
		if base == -1 {
			baseTS = -1
		}
		batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: baseTS,
			Compression: compression, Records: recs})
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return e.call(t, req, v).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	indexes := func(p kmsg.ProduceResponseTopicPartition) []int32 {
		var out []int32
		for _, er := range p.ErrorRecords {
			out = append(out, er.RelativeOffset)
		}
		return out
	}
	for _, c := range []wire.Compression{wire.CompressionNone, wire.CompressionLZ4} {
		for _, tc := range []struct {
			name   string
			topic  string
			v      int16
			base   time.Duration
			deltas []time.Duration
			want   int16
			bad    []int32
		}{
			{"now", "ts-default", 9, 0, []time.Duration{0, time.Millisecond}, 0, nil},
			{"a minute ahead", "ts-default", 9, time.Minute, []time.Duration{0}, 0, nil},
			{"two hours ahead", "ts-default", 9, ahead, []time.Duration{0}, kerr.InvalidTimestamp.Code, []int32{0}},
			{"one record of three ahead", "ts-default", 11, 0, []time.Duration{0, ahead, time.Millisecond}, kerr.InvalidTimestamp.Code, []int32{1}},
			{"ahead at v7 (no record errors)", "ts-default", 7, ahead, []time.Duration{0}, kerr.InvalidTimestamp.Code, nil},
			{"two days old, no lower bound", "ts-default", 9, -48 * time.Hour, []time.Duration{0}, 0, nil},
			{"two hours old, before.max.ms one hour", "ts-before", 9, -ahead, []time.Duration{0, 3 * time.Hour}, kerr.InvalidTimestamp.Code, []int32{0}},
			{"no timestamps", "ts-default", 9, -1, []time.Duration{0, 0}, 0, nil},
			{"LogAppendTime takes any", "ts-append", 9, ahead, []time.Duration{0}, 0, nil},
		} {
			p := produce(tc.topic, tc.v, c, tc.base, tc.deltas...)
			if p.ErrorCode != tc.want {
				t.Errorf("%v %s: error %d, want %d (message %q)", c, tc.name, p.ErrorCode, tc.want, deref(p.ErrorMessage))
				continue
			}
			if got := indexes(p); !slices.Equal(got, tc.bad) {
				t.Errorf("%v %s: record errors at %v, want %v", c, tc.name, got, tc.bad)
			}
			if tc.want != 0 && p.BaseOffset != -1 {
				t.Errorf("%v %s: refused with base offset %d", c, tc.name, p.BaseOffset)
			}
			// The error message is a v8+ field.
			if tc.want != 0 && tc.v >= 8 && (p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "out of range")) {
				t.Errorf("%v %s: refused with message %q", c, tc.name, deref(p.ErrorMessage))
			}
		}
	}
	l, _ := e.d.Logs.Log(storage.TopicPartition{Topic: "ts-default"})
	// Per codec: now (2 records), a minute ahead (1), two days old (1),
	// no timestamps (2).
	if got := l.LogEndOffset(); got != 12 {
		t.Fatalf("ts-default log end %d, want 12 (refused batches not appended)", got)
	}
}
