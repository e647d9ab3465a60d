package compattests

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

var kafkaGoCodecs = map[string]kafka.Compression{
	"none":   0,
	"gzip":   kafka.Gzip,
	"snappy": kafka.Snappy,
	"lz4":    kafka.Lz4,
	"zstd":   kafka.Zstd,
}

// TestKafkaGo drives the broker with segmentio/kafka-go: Client for topics and configs,
// Writer with every codec, one partition Reader per partition, Conn offset lookups.
func TestKafkaGo(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 2*time.Minute)
	_, adm := newAdmin(t, b.Addr)
	const topic = "kafka-go-records"
	client := &kafka.Client{Addr: kafka.TCP(b.Addr), Timeout: 30 * time.Second}

	created, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: numPartitions, ReplicationFactor: 1}},
	})
	if err != nil || created.Errors[topic] != nil {
		t.Fatalf("kafka-go CreateTopics: %v / %v", err, created.Errors)
	}
	waitTopicReady(t, ctx, adm, topic, numPartitions)

	want := genRecords(3, "kafkago", recordsPerCodec*len(codecs), time.Now().Add(-time.Hour))
	for i, codec := range codecs {
		produceKafkaGo(t, ctx, b.Addr, topic, codec, want[i*recordsPerCodec:(i+1)*recordsPerCodec])
	}
	checkConsumed(t, want, consumeKafkaGo(t, ctx, b.Addr, topic, len(want)))
	checkOffsetsKadm(t, ctx, adm, topic, want)

	t.Run("list offsets by timestamp", func(t *testing.T) {
		wantBy := byPartition(want)
		conns := make(map[int32]*kafka.Conn)
		for p := int32(0); p < numPartitions; p++ {
			conn, err := kafka.DialLeader(ctx, "tcp", b.Addr, topic, int(p))
			if err != nil {
				t.Fatalf("kafka-go DialLeader(%d): %v", p, err)
			}
			defer conn.Close()
			conns[p] = conn
			first, last, err := conn.ReadOffsets()
			if err != nil || first != 0 || last != int64(len(wantBy[p])) {
				t.Errorf("kafka-go ReadOffsets(%d) = %d, %d, %v; want 0, %d", p, first, last, err, len(wantBy[p]))
			}
		}
		for _, q := range timeQueries(want) {
			o, err := conns[q.Partition].ReadOffset(time.UnixMilli(q.Millis))
			if err != nil || o != q.Want {
				t.Errorf("kafka-go ReadOffset(%d, ts=%d) = %d, %v; want %d", q.Partition, q.Millis, o, err, q.Want)
			}
		}
	})

	t.Run("alter and describe config", func(t *testing.T) {
		altered, err := client.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{
			Resources: []kafka.IncrementalAlterConfigsRequestResource{{
				ResourceType: kafka.ResourceTypeTopic,
				ResourceName: topic,
				Configs: []kafka.IncrementalAlterConfigsRequestConfig{
					{Name: "retention.ms", Value: "5400000", ConfigOperation: kafka.ConfigOperationSet},
					{Name: "max.message.bytes", Value: "3000000", ConfigOperation: kafka.ConfigOperationSet},
				},
			}},
		})
		if err != nil {
			t.Fatalf("kafka-go IncrementalAlterConfigs: %v", err)
		}
		for _, r := range altered.Resources {
			if r.Error != nil {
				t.Fatalf("kafka-go IncrementalAlterConfigs %s: %v", r.ResourceName, r.Error)
			}
		}
		described, err := client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{
			Resources: []kafka.DescribeConfigRequestResource{{
				ResourceType: kafka.ResourceTypeTopic,
				ResourceName: topic,
				ConfigNames:  []string{"retention.ms", "max.message.bytes", "cleanup.policy"},
			}},
		})
		if err != nil {
			t.Fatalf("kafka-go DescribeConfigs: %v", err)
		}
		if len(described.Resources) != 1 || described.Resources[0].Error != nil {
			t.Fatalf("kafka-go DescribeConfigs: %+v", described.Resources)
		}
		found := map[string]kafka.DescribeConfigResponseConfigEntry{}
		for _, e := range described.Resources[0].ConfigEntries {
			found[e.ConfigName] = e
		}
		if len(found) != 3 {
			t.Errorf("kafka-go DescribeConfigs for 3 names returned %d entries: %+v", len(found), found)
		}
		dynamic := int8(kmsg.ConfigSourceDynamicTopicConfig)
		for name, value := range map[string]string{"retention.ms": "5400000", "max.message.bytes": "3000000"} {
			if e, ok := found[name]; !ok || e.ConfigValue != value || e.ConfigSource != dynamic {
				t.Errorf("kafka-go DescribeConfigs %s = %+v (found %v), want %s from DYNAMIC_TOPIC_CONFIG", name, e, ok, value)
			}
		}
		if e, ok := found["cleanup.policy"]; !ok || e.ConfigValue != "delete" || e.ConfigSource == dynamic {
			t.Errorf("kafka-go DescribeConfigs cleanup.policy = %+v (found %v), want default delete", e, ok)
		}
	})

	t.Run("delete topic", func(t *testing.T) {
		deleted, err := client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
		if err != nil || deleted.Errors[topic] != nil {
			t.Fatalf("kafka-go DeleteTopics: %v / %v", err, deleted.Errors)
		}
		waitTopicGone(t, ctx, adm, topic)
	})
}

func produceKafkaGo(t *testing.T, ctx context.Context, addr, topic, codec string, recs []testRecord) {
	t.Helper()
	w := &kafka.Writer{
		Addr:         kafka.TCP(addr),
		Topic:        topic,
		Balancer:     kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition }),
		RequiredAcks: kafka.RequireAll,
		Compression:  kafkaGoCodecs[codec],
		BatchSize:    200,
		BatchTimeout: 5 * time.Millisecond,
	}
	defer w.Close()
	msgs := make([]kafka.Message, len(recs))
	for i, r := range recs {
		msgs[i] = kafka.Message{
			Partition: int(r.Partition),
			Key:       r.Key,
			Value:     r.Value,
			Time:      r.Timestamp,
			Headers:   []kafka.Header{{Key: headerKey, Value: r.Header}},
		}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("kafka-go produce with %s: %v", codec, err)
	}
}

func consumeKafkaGo(t *testing.T, ctx context.Context, addr, topic string, n int) map[int32][]gotRecord {
	t.Helper()
	want := byPartition(genIndexOnly(n))
	got := make(map[int32][]gotRecord)
	for p := int32(0); p < numPartitions; p++ {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:   []string{addr},
			Topic:     topic,
			Partition: int(p),
			MinBytes:  1,
			MaxBytes:  4 << 20,
			MaxWait:   500 * time.Millisecond,
		})
		if err := r.SetOffset(0); err != nil {
			t.Fatalf("kafka-go SetOffset: %v", err)
		}
		for len(got[p]) < len(want[p]) {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("kafka-go ReadMessage partition %d after %d of %d records: %v", p, len(got[p]), len(want[p]), err)
			}
			headers := make(map[string][]byte)
			for _, h := range m.Headers {
				headers[h.Key] = h.Value
			}
			got[p] = append(got[p], gotRecord{
				Partition: int32(m.Partition), Offset: m.Offset, Key: m.Key, Value: m.Value,
				Timestamp: m.Time, Headers: headers,
			})
		}
		if err := r.Close(); err != nil {
			t.Errorf("kafka-go close reader %d: %v", p, err)
		}
	}
	return got
}
