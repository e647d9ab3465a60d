package compattests

import (
	"testing"
	"time"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// TestTopicCompressionClients produces with franz-go in one codec to topics
// whose compression.type names another (gzip, snappy, lz4, zstd,
// uncompressed), so that the broker rebuilds every batch in the topic's
// codec (wire.RecompressLimited; snappy in the xerial framing Kafka
// writes), and reads the records back with franz-go, librdkafka
// (confluent-kafka-go), Sarama and kafka-go: offsets, keys, values,
// timestamps and headers as produced.
func TestTopicCompressionClients(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 3*time.Minute)
	_, adm := newAdmin(t, b.Addr)
	topicCodecs := []string{"gzip", "snappy", "lz4", "zstd", "uncompressed"}
	producerCodecs := []string{"zstd", "lz4", "gzip", "snappy", "zstd"}
	for i, codec := range topicCodecs {
		topic := "rebuilt-" + codec
		created, err := adm.CreateTopic(ctx, numPartitions, 1, map[string]*string{"compression.type": &codec}, topic)
		if err != nil || created.Err != nil {
			t.Fatalf("kadm CreateTopic %s: %v / %v", topic, err, created.Err)
		}
		waitTopicReady(t, ctx, adm, topic, numPartitions)
		want := genRecords(uint64(40+i), "rebuilt", 600, time.Now().Add(-time.Hour))
		produceKgo(t, ctx, b.Addr, topic, producerCodecs[i], want)
		t.Run(codec+"/franz-go", func(t *testing.T) { checkConsumed(t, want, consumeKgo(t, ctx, b.Addr, topic, len(want))) })
		t.Run(codec+"/confluent", func(t *testing.T) { checkConsumed(t, want, consumeConfluent(t, ctx, b.Addr, topic, len(want))) })
		t.Run(codec+"/sarama", func(t *testing.T) {
			checkConsumed(t, want, consumeSarama(t, ctx, []string{b.Addr}, topic, len(want)))
		})
		t.Run(codec+"/kafka-go", func(t *testing.T) { checkConsumed(t, want, consumeKafkaGo(t, ctx, b.Addr, topic, len(want))) })
	}
}
