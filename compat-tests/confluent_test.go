package compattests

import (
	"context"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// TestConfluent drives the broker with confluent-kafka-go (librdkafka): AdminClient for
// topics, configs and offsets, a Producer per codec, a Consumer with manual assignment.
func TestConfluent(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 2*time.Minute)
	_, adm := newAdmin(t, b.Addr)
	topic := "confluent-records"

	admin, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": b.Addr})
	if err != nil {
		t.Fatalf("kafka.NewAdminClient: %v", err)
	}
	t.Cleanup(admin.Close)
	results, err := admin.CreateTopics(ctx, []kafka.TopicSpecification{{
		Topic: topic, NumPartitions: numPartitions, ReplicationFactor: 1,
	}}, kafka.SetAdminOperationTimeout(30*time.Second))
	if err != nil {
		t.Fatalf("confluent CreateTopics: %v", err)
	}
	for _, r := range results {
		if r.Error.Code() != kafka.ErrNoError {
			t.Fatalf("confluent CreateTopics %s: %v", r.Topic, r.Error)
		}
	}
	waitTopicReady(t, ctx, adm, topic, numPartitions)

	want := genRecords(4, "confluent", recordsPerCodec*len(codecs), time.Now().Add(-time.Hour))
	for i, codec := range codecs {
		produceConfluent(t, ctx, b.Addr, topic, codec, want[i*recordsPerCodec:(i+1)*recordsPerCodec])
	}
	checkConsumed(t, want, consumeConfluent(t, ctx, b.Addr, topic, len(want)))
	checkOffsetsKadm(t, ctx, adm, topic, want)

	t.Run("list offsets by timestamp", func(t *testing.T) {
		wantBy := byPartition(want)
		list := func(p int32, spec kafka.OffsetSpec) kafka.ListOffsetsResultInfo {
			t.Helper()
			res, err := admin.ListOffsets(ctx, map[kafka.TopicPartition]kafka.OffsetSpec{
				{Topic: &topic, Partition: p}: spec,
			})
			if err != nil {
				t.Fatalf("confluent ListOffsets(%d, %v): %v", p, spec, err)
			}
			for tp, info := range res.ResultInfos {
				if tp.Partition == p && tp.Topic != nil && *tp.Topic == topic {
					return info
				}
			}
			t.Fatalf("confluent ListOffsets(%d, %v): no result for the partition: %+v", p, spec, res)
			return kafka.ListOffsetsResultInfo{}
		}
		for p := int32(0); p < numPartitions; p++ {
			if info := list(p, kafka.EarliestOffsetSpec); info.Error.Code() != kafka.ErrNoError || info.Offset != 0 {
				t.Errorf("confluent ListOffsets(%d, earliest) = %+v, want 0", p, info)
			}
			if info := list(p, kafka.LatestOffsetSpec); info.Error.Code() != kafka.ErrNoError || int64(info.Offset) != int64(len(wantBy[p])) {
				t.Errorf("confluent ListOffsets(%d, latest) = %+v, want %d", p, info, len(wantBy[p]))
			}
		}
		for _, q := range timeQueries(want) {
			info := list(q.Partition, kafka.NewOffsetSpecForTimestamp(q.Millis))
			if info.Error.Code() != kafka.ErrNoError || int64(info.Offset) != q.Want {
				t.Errorf("confluent ListOffsets(%d, ts=%d) = %+v, want %d", q.Partition, q.Millis, info, q.Want)
			}
		}
	})

	t.Run("alter and describe config", func(t *testing.T) {
		res, err := admin.IncrementalAlterConfigs(ctx, []kafka.ConfigResource{{
			Type: kafka.ResourceTopic,
			Name: topic,
			Config: []kafka.ConfigEntry{
				{Name: "retention.ms", Value: "9000000", IncrementalOperation: kafka.AlterConfigOpTypeSet},
				{Name: "segment.bytes", Value: "2097152", IncrementalOperation: kafka.AlterConfigOpTypeSet},
			},
		}})
		if err != nil {
			t.Fatalf("confluent IncrementalAlterConfigs: %v", err)
		}
		for _, r := range res {
			if r.Error.Code() != kafka.ErrNoError {
				t.Fatalf("confluent IncrementalAlterConfigs %s: %v", r.Name, r.Error)
			}
		}
		described, err := admin.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
		if err != nil {
			t.Fatalf("confluent DescribeConfigs: %v", err)
		}
		if len(described) != 1 || described[0].Error.Code() != kafka.ErrNoError {
			t.Fatalf("confluent DescribeConfigs: %+v", described)
		}
		cfg := described[0].Config
		for name, value := range map[string]string{"retention.ms": "9000000", "segment.bytes": "2097152"} {
			if e, ok := cfg[name]; !ok || e.Value != value || e.Source != kafka.ConfigSourceDynamicTopic {
				t.Errorf("confluent DescribeConfigs %s = %+v (found %v), want %s from DYNAMIC_TOPIC_CONFIG", name, e, ok, value)
			}
		}
		if e, ok := cfg["compression.type"]; !ok || e.Value != "producer" || e.Source == kafka.ConfigSourceDynamicTopic {
			t.Errorf("confluent DescribeConfigs compression.type = %+v (found %v), want default producer", e, ok)
		}
	})

	t.Run("delete topic", func(t *testing.T) {
		res, err := admin.DeleteTopics(ctx, []string{topic}, kafka.SetAdminOperationTimeout(30*time.Second))
		if err != nil {
			t.Fatalf("confluent DeleteTopics: %v", err)
		}
		for _, r := range res {
			if r.Error.Code() != kafka.ErrNoError {
				t.Fatalf("confluent DeleteTopics %s: %v", r.Topic, r.Error)
			}
		}
		waitTopicGone(t, ctx, adm, topic)
	})
}

func produceConfluent(t *testing.T, ctx context.Context, addr, topic, codec string, recs []testRecord) {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": addr,
		"acks":              "all",
		"compression.type":  codec,
		"linger.ms":         5,
	})
	if err != nil {
		t.Fatalf("kafka.NewProducer: %v", err)
	}
	defer p.Close()
	deliveries := make(chan kafka.Event, len(recs))
	for _, r := range recs {
		err := p.Produce(&kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: r.Partition},
			Key:            r.Key,
			Value:          r.Value,
			Timestamp:      r.Timestamp,
			Headers:        []kafka.Header{{Key: headerKey, Value: r.Header}},
		}, deliveries)
		if err != nil {
			t.Fatalf("confluent Produce with %s: %v", codec, err)
		}
	}
	for acked := 0; acked < len(recs); acked++ {
		select {
		case e := <-deliveries:
			m, ok := e.(*kafka.Message)
			if !ok {
				t.Fatalf("confluent produce with %s: unexpected event %v", codec, e)
			}
			if m.TopicPartition.Error != nil {
				t.Fatalf("confluent produce with %s: %v", codec, m.TopicPartition.Error)
			}
		case <-ctx.Done():
			t.Fatalf("confluent produce with %s: %d of %d acknowledged before the deadline", codec, acked, len(recs))
		}
	}
}

func consumeConfluent(t *testing.T, ctx context.Context, addr, topic string, n int) map[int32][]gotRecord {
	t.Helper()
	// librdkafka insists on a group.id even for manual assignment; nothing is committed.
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":        addr,
		"group.id":                 "samsa-compat-unused",
		"enable.auto.commit":       false,
		"enable.auto.offset.store": false,
		"go.logs.channel.enable":   true,
	})
	if err != nil {
		t.Fatalf("kafka.NewConsumer: %v", err)
	}
	// librdkafka reports responses it cannot parse only as PROTOERR log lines (and then
	// retries), so a protocol deviation would otherwise go unnoticed.
	logsDone := make(chan struct{})
	var protoErrors []string
	go func() {
		defer close(logsDone)
		for e := range c.Logs() {
			if e.Tag == "PROTOERR" {
				protoErrors = append(protoErrors, e.Message)
			}
		}
	}()
	defer func() {
		c.Close()
		<-logsDone
		for i, m := range protoErrors {
			if i == 5 {
				t.Errorf("... %d protocol errors in all", len(protoErrors))
				break
			}
			t.Errorf("librdkafka protocol error while consuming: %s", m)
		}
	}()
	var assignment []kafka.TopicPartition
	for p := int32(0); p < numPartitions; p++ {
		assignment = append(assignment, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: 0})
	}
	if err := c.Assign(assignment); err != nil {
		t.Fatalf("confluent Assign: %v", err)
	}
	got := make(map[int32][]gotRecord)
	for total := 0; total < n; {
		if ctx.Err() != nil {
			t.Fatalf("confluent consume: got %d of %d records before the deadline", total, n)
		}
		switch e := c.Poll(200).(type) {
		case *kafka.Message:
			if e.TopicPartition.Error != nil {
				t.Errorf("confluent consume: %v", e.TopicPartition.Error)
				continue
			}
			total++
			headers := make(map[string][]byte)
			for _, h := range e.Headers {
				headers[h.Key] = h.Value
			}
			p := e.TopicPartition.Partition
			got[p] = append(got[p], gotRecord{
				Partition: p, Offset: int64(e.TopicPartition.Offset), Key: e.Key, Value: e.Value,
				Timestamp: e.Timestamp, Headers: headers,
			})
		case kafka.Error:
			// Without consumer-group support the group coordinator lookup fails; that is
			// not a data-path error.
			t.Logf("confluent consumer error event: %v", e)
		}
	}
	return got
}
