package compattests

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

var saramaCodecs = map[string]sarama.CompressionCodec{
	"none":   sarama.CompressionNone,
	"gzip":   sarama.CompressionGZIP,
	"snappy": sarama.CompressionSnappy,
	"lz4":    sarama.CompressionLZ4,
	"zstd":   sarama.CompressionZSTD,
}

// saramaConfig is sarama's default configuration for a Kafka 4.0 cluster, with the
// settings a by-partition test needs.
func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V4_0_0_0
	cfg.ClientID = "samsa-compat-sarama"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Consumer.Return.Errors = true
	cfg.Metadata.AllowAutoTopicCreation = false
	return cfg
}

// TestSarama drives the broker with IBM/sarama: ClusterAdmin for topics and configs,
// SyncProducer with every codec, partition consumers from offset 0, Client.GetOffset.
func TestSarama(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 2*time.Minute)
	_, adm := newAdmin(t, b.Addr)
	const topic = "sarama-records"
	addrs := []string{b.Addr}

	admin, err := sarama.NewClusterAdmin(addrs, saramaConfig())
	if err != nil {
		t.Fatalf("sarama.NewClusterAdmin: %v", err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	maxMessageBytes := "2000000"
	err = admin.CreateTopic(topic, &sarama.TopicDetail{
		NumPartitions:     numPartitions,
		ReplicationFactor: 1,
		ConfigEntries:     map[string]*string{"max.message.bytes": &maxMessageBytes},
	}, false)
	if err != nil {
		t.Fatalf("sarama CreateTopic: %v", err)
	}
	waitTopicReady(t, ctx, adm, topic, numPartitions)
	if c, ok := configOf(t, ctx, adm, topic, "max.message.bytes"); !ok || c.MaybeValue() != maxMessageBytes {
		t.Errorf("max.message.bytes set at creation described as %+v (found %v), want %s", c, ok, maxMessageBytes)
	}

	want := genRecords(2, "sarama", recordsPerCodec*len(codecs), time.Now().Add(-time.Hour))
	for i, codec := range codecs {
		produceSarama(t, addrs, topic, codec, want[i*recordsPerCodec:(i+1)*recordsPerCodec])
	}
	checkConsumed(t, want, consumeSarama(t, ctx, addrs, topic, len(want)))
	checkOffsetsKadm(t, ctx, adm, topic, want)

	t.Run("list offsets by timestamp", func(t *testing.T) {
		client, err := sarama.NewClient(addrs, saramaConfig())
		if err != nil {
			t.Fatalf("sarama.NewClient: %v", err)
		}
		defer client.Close()
		wantBy := byPartition(want)
		for p := int32(0); p < numPartitions; p++ {
			if o, err := client.GetOffset(topic, p, sarama.OffsetOldest); err != nil || o != 0 {
				t.Errorf("sarama GetOffset(%d, oldest) = %d, %v; want 0", p, o, err)
			}
			if o, err := client.GetOffset(topic, p, sarama.OffsetNewest); err != nil || o != int64(len(wantBy[p])) {
				t.Errorf("sarama GetOffset(%d, newest) = %d, %v; want %d", p, o, err, len(wantBy[p]))
			}
		}
		for _, q := range timeQueries(want) {
			if o, err := client.GetOffset(topic, q.Partition, q.Millis); err != nil || o != q.Want {
				t.Errorf("sarama GetOffset(%d, ts=%d) = %d, %v; want %d", q.Partition, q.Millis, o, err, q.Want)
			}
		}
	})

	t.Run("alter and describe config", func(t *testing.T) {
		// The legacy AlterConfigs request replaces the topic's whole dynamic config:
		// max.message.bytes, set at creation, must go back to its default.
		retention := "7200000"
		if err := admin.AlterConfig(sarama.TopicResource, topic, map[string]*string{"retention.ms": &retention}, false); err != nil {
			t.Fatalf("sarama AlterConfig: %v", err)
		}
		entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
		if err != nil {
			t.Fatalf("sarama DescribeConfig: %v", err)
		}
		found := map[string]sarama.ConfigEntry{}
		for _, e := range entries {
			found[e.Name] = e
		}
		if e, ok := found["retention.ms"]; !ok || e.Value != retention || e.Source != sarama.SourceTopic {
			t.Errorf("sarama DescribeConfig retention.ms = %+v (found %v), want %s from topic", e, ok, retention)
		}
		if e, ok := found["max.message.bytes"]; !ok || e.Value != "1048588" || e.Source == sarama.SourceTopic {
			t.Errorf("sarama DescribeConfig max.message.bytes after legacy AlterConfigs = %+v (found %v), want default 1048588", e, ok)
		}
		if c, ok := configOf(t, ctx, adm, topic, "retention.ms"); !ok || c.MaybeValue() != retention || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("kadm sees retention.ms = %+v (found %v), want %s", c, ok, retention)
		}
		// An unknown config name is rejected with INVALID_CONFIG.
		bogus := "1"
		err = admin.AlterConfig(sarama.TopicResource, topic, map[string]*string{"no.such.config": &bogus}, false)
		if !errors.Is(err, sarama.ErrInvalidConfig) {
			t.Errorf("sarama AlterConfig(no.such.config) = %v, want INVALID_CONFIG", err)
		}
	})

	t.Run("delete topic", func(t *testing.T) {
		if err := admin.DeleteTopic(topic); err != nil {
			t.Fatalf("sarama DeleteTopic: %v", err)
		}
		waitTopicGone(t, ctx, adm, topic)
	})
}

func produceSarama(t *testing.T, addrs []string, topic, codec string, recs []testRecord) {
	t.Helper()
	cfg := saramaConfig()
	cfg.Producer.Compression = saramaCodecs[codec]
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	producer, err := sarama.NewSyncProducer(addrs, cfg)
	if err != nil {
		t.Fatalf("sarama.NewSyncProducer: %v", err)
	}
	defer producer.Close()
	msgs := make([]*sarama.ProducerMessage, len(recs))
	for i, r := range recs {
		msgs[i] = &sarama.ProducerMessage{
			Topic:     topic,
			Partition: r.Partition,
			Key:       sarama.ByteEncoder(r.Key),
			Value:     sarama.ByteEncoder(r.Value),
			Timestamp: r.Timestamp,
			Headers:   []sarama.RecordHeader{{Key: []byte(headerKey), Value: r.Header}},
		}
	}
	if err := producer.SendMessages(msgs); err != nil {
		var perrs sarama.ProducerErrors
		if errors.As(err, &perrs) && len(perrs) > 0 {
			t.Fatalf("sarama produce with %s: %d failures, first: %v", codec, len(perrs), perrs[0].Err)
		}
		t.Fatalf("sarama produce with %s: %v", codec, err)
	}
}

func consumeSarama(t *testing.T, ctx context.Context, addrs []string, topic string, n int) map[int32][]gotRecord {
	t.Helper()
	consumer, err := sarama.NewConsumer(addrs, saramaConfig())
	if err != nil {
		t.Fatalf("sarama.NewConsumer: %v", err)
	}
	defer consumer.Close()
	want := byPartition(genIndexOnly(n))
	got := make(map[int32][]gotRecord)
	for p := int32(0); p < numPartitions; p++ {
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama ConsumePartition(%d): %v", p, err)
		}
		for len(got[p]) < len(want[p]) {
			select {
			case m := <-pc.Messages():
				headers := make(map[string][]byte)
				for _, h := range m.Headers {
					headers[string(h.Key)] = h.Value
				}
				got[p] = append(got[p], gotRecord{
					Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value,
					Timestamp: m.Timestamp, Headers: headers,
				})
			case err := <-pc.Errors():
				t.Errorf("sarama consume partition %d: %v", p, err)
			case <-ctx.Done():
				pc.Close()
				t.Fatalf("sarama consume partition %d: got %d of %d records before the deadline", p, len(got[p]), len(want[p]))
			}
		}
		if err := pc.Close(); err != nil {
			t.Errorf("sarama close partition consumer %d: %v", p, err)
		}
	}
	return got
}

// genIndexOnly returns n records carrying only their partition, to count per partition.
func genIndexOnly(n int) []testRecord {
	recs := make([]testRecord, n)
	for i := range recs {
		recs[i] = testRecord{Index: i, Partition: int32(i % numPartitions)}
	}
	return recs
}
