package compattests

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// kgoCodecs maps compression.type names to franz-go codecs.
var kgoCodecs = map[string]kgo.CompressionCodec{
	"none":   kgo.NoCompression(),
	"gzip":   kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(),
	"lz4":    kgo.Lz4Compression(),
	"zstd":   kgo.ZstdCompression(),
}

// TestFranzGo drives the broker with franz-go (kgo for data, kadm for admin): create,
// produce with every codec, consume by partition and offset, alter and describe configs,
// list offsets by timestamp, delete.
func TestFranzGo(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 2*time.Minute)
	_, adm := newAdmin(t, b.Addr)
	const topic = "franz-go-records"

	created, err := adm.CreateTopic(ctx, numPartitions, 1, nil, topic)
	if err != nil || created.Err != nil {
		t.Fatalf("kadm CreateTopic: %v / %v", err, created.Err)
	}
	if created.ID == (kadm.TopicID{}) {
		t.Errorf("kadm CreateTopic returned a zero topic ID")
	}
	waitTopicReady(t, ctx, adm, topic, numPartitions)

	want := genRecords(1, "franz", recordsPerCodec*len(codecs), time.Now().Add(-time.Hour))
	for i, codec := range codecs {
		produceKgo(t, ctx, b.Addr, topic, codec, want[i*recordsPerCodec:(i+1)*recordsPerCodec])
	}

	checkConsumed(t, want, consumeKgo(t, ctx, b.Addr, topic, len(want)))
	checkOffsetsKadm(t, ctx, adm, topic, want)

	t.Run("list offsets by timestamp", func(t *testing.T) {
		for _, q := range timeQueries(want) {
			got, err := adm.ListOffsetsAfterMilli(ctx, q.Millis, topic)
			if err != nil {
				t.Fatalf("kadm ListOffsetsAfterMilli: %v", err)
			}
			o, ok := got.Lookup(topic, q.Partition)
			if !ok || o.Err != nil || o.Offset != q.Want {
				t.Errorf("ListOffsets(%s/%d, ts=%d) = %+v (found %v), want offset %d", topic, q.Partition, q.Millis, o, ok, q.Want)
			}
		}
	})

	t.Run("list offsets max timestamp", func(t *testing.T) {
		// ListOffsets v7+ with timestamp -3 (MAX_TIMESTAMP) returns the offset of the
		// record with the largest timestamp: the last one in each partition here.
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = 7
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = 0
		rp.Timestamp = -3
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		cl := kadmClient(t, b.Addr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ListOffsets v7 max timestamp: %v", err)
		}
		wantBy := byPartition(want)
		last := wantBy[0][len(wantBy[0])-1]
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("ListOffsets v7 max timestamp: malformed response %+v", resp)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.Offset != int64(len(wantBy[0])-1) || p.Timestamp != last.Timestamp.UnixMilli() {
			t.Errorf("ListOffsets max timestamp = code %d offset %d ts %d, want offset %d ts %d",
				p.ErrorCode, p.Offset, p.Timestamp, len(wantBy[0])-1, last.Timestamp.UnixMilli())
		}
	})

	t.Run("alter and describe config", func(t *testing.T) {
		resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("3600000")},
			{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("delete")},
		}, topic)
		if err == nil {
			_, err = resps.On(topic, nil)
		}
		if err != nil {
			t.Fatalf("kadm AlterTopicConfigs: %v", err)
		}
		for _, r := range resps {
			if r.Err != nil {
				t.Fatalf("kadm AlterTopicConfigs %s: %v (%s)", r.Name, r.Err, r.ErrMessage)
			}
		}
		c, ok := configOf(t, ctx, adm, topic, "retention.ms")
		if !ok || c.MaybeValue() != "3600000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("retention.ms described as %+v (found %v), want 3600000 from DYNAMIC_TOPIC_CONFIG", c, ok)
		}
		// A config never set on the topic is still described, with its default.
		c, ok = configOf(t, ctx, adm, topic, "segment.bytes")
		if !ok || c.MaybeValue() != "1073741824" || c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("segment.bytes described as %+v (found %v), want default 1073741824", c, ok)
		}
		// Deleting the override restores the default.
		resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, topic)
		if err == nil {
			_, err = resps.On(topic, nil)
		}
		if err != nil {
			t.Fatalf("kadm AlterTopicConfigs delete: %v", err)
		}
		c, ok = configOf(t, ctx, adm, topic, "retention.ms")
		if !ok || c.MaybeValue() != "604800000" || c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("retention.ms after delete described as %+v (found %v), want default 604800000", c, ok)
		}
	})

	t.Run("delete topic", func(t *testing.T) {
		resps, err := adm.DeleteTopics(ctx, topic)
		if err != nil {
			t.Fatalf("kadm DeleteTopics: %v", err)
		}
		if r, err := resps.On(topic, nil); err != nil || r.Err != nil {
			t.Fatalf("kadm DeleteTopics: %v / %v", err, r.Err)
		}
		waitTopicGone(t, ctx, adm, topic)
	})
}

// kadmClient returns a plain kgo client for raw kmsg requests, closed at cleanup.
func kadmClient(t testing.TB, addr string) *kgo.Client {
	cl, _ := newAdmin(t, addr)
	return cl
}

// produceKgo produces recs with acks=all and the given codec, each record to its own
// partition, and fails the test unless every record is acknowledged.
func produceKgo(t *testing.T, ctx context.Context, addr, topic, codec string, recs []testRecord) {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgoCodecs[codec]),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = &kgo.Record{
			Key:       r.Key,
			Value:     r.Value,
			Partition: r.Partition,
			Timestamp: r.Timestamp,
			Headers:   []kgo.RecordHeader{{Key: headerKey, Value: r.Header}},
		}
	}
	if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		t.Fatalf("kgo produce with %s: %v", codec, err)
	}
}

// consumeKgo reads n records from offset 0 of every partition of topic by direct
// partition assignment (no group).
func consumeKgo(t *testing.T, ctx context.Context, addr, topic string, n int) map[int32][]gotRecord {
	t.Helper()
	parts := make(map[int32]kgo.Offset)
	for p := int32(0); p < numPartitions; p++ {
		parts[p] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()
	got := make(map[int32][]gotRecord)
	total := 0
	for total < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("kgo consume: got %d of %d records before the deadline", total, n)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Errorf("kgo fetch %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			total++
			headers := make(map[string][]byte)
			for _, h := range r.Headers {
				headers[h.Key] = h.Value
			}
			got[r.Partition] = append(got[r.Partition], gotRecord{
				Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value,
				Timestamp: r.Timestamp, Headers: headers,
			})
		})
	}
	return got
}

// rawRequest sends req at a non-flexible version on a fresh TCP connection (request
// header v1, response header v0) and decodes the response. It exists to see bytes that
// clients normalise, such as null versus empty.
func rawRequest(t *testing.T, ctx context.Context, addr string, req kmsg.Request, version int16) kmsg.Response {
	t.Helper()
	req.SetVersion(version)
	if req.IsFlexible() {
		t.Fatalf("rawRequest handles non-flexible versions only")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	const correlation = 42
	clientID := "samsa-raw"
	msg := binary.BigEndian.AppendUint32(nil, 0) // size, filled below
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.Key()))
	msg = binary.BigEndian.AppendUint16(msg, uint16(version))
	msg = binary.BigEndian.AppendUint32(msg, correlation)
	msg = binary.BigEndian.AppendUint16(msg, uint16(len(clientID)))
	msg = append(msg, clientID...)
	msg = req.AppendTo(msg)
	binary.BigEndian.PutUint32(msg, uint32(len(msg)-4))
	if _, err := conn.Write(msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		t.Fatalf("read response size: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		t.Fatalf("read response: %v", err)
	}
	if got := binary.BigEndian.Uint32(body); got != correlation {
		t.Fatalf("response correlation id %d, want %d", got, correlation)
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	if err := resp.ReadFrom(body[4:]); err != nil {
		t.Fatalf("decode %T v%d: %v", resp, version, err)
	}
	return resp
}

// TestFetchEmptyPartitionHasEmptyNotNullRecords is a regression test: samsa answered
// Fetch v11 for a partition without new data with records = null (length -1). Kafka
// sends an empty record set (length 0), and librdkafka rejects null with "Protocol
// parse failure for Fetch v11 ... invalid MessageSetSize -1" (seen with the system
// librdkafka under confluent-kafka-python).
func TestFetchEmptyPartitionHasEmptyNotNullRecords(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 30*time.Second)
	_, adm := newAdmin(t, b.Addr)
	const topic = "fetch-empty"
	createTopicKadm(t, ctx, adm, topic, 1, nil)

	for _, version := range []int16{4, 11} {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 10
		req.MaxBytes = 1 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = 0
		rp.FetchOffset = 0
		rp.PartitionMaxBytes = 1 << 20
		rp.LogStartOffset = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := rawRequest(t, ctx, b.Addr, req, version).(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("Fetch v%d: malformed response %+v", version, resp)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.HighWatermark != 0 {
			t.Errorf("Fetch v%d: error code %d, high watermark %d; want 0, 0", version, p.ErrorCode, p.HighWatermark)
		}
		if p.RecordBatches == nil {
			t.Errorf("Fetch v%d of an empty partition: records are null (size -1), want an empty record set (size 0)", version)
		}
	}
}
