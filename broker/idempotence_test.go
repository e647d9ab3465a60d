package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// rawProduce sends one batch of count records from producer pid/epoch starting
// at sequence seq to topic partition 0 and returns the partition's answer.
func rawProduce(t *testing.T, ctx context.Context, cl *kgo.Client, n *Node, topic string, pid int64, epoch int16, seq int32, count int) (int16, int64) {
	t.Helper()
	spec := wire.BatchSpec{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, BaseTimestamp: time.Now().UnixMilli()}
	for i := 0; i < count; i++ {
		spec.Records = append(spec.Records, wire.Record{Value: []byte(fmt.Sprintf("seq-%d", int(seq)+i))})
	}
	batch, err := wire.EncodeBatch(spec)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rt.TopicID = n.Controller().Image().Topics[topic].ID // produce v13 names topics by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset
}

func initProducerID(t *testing.T, ctx context.Context, cl *kgo.Client) int64 {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil || resp.ProducerEpoch != 0 {
		t.Fatalf("InitProducerId: %v, epoch %d", err, resp.ProducerEpoch)
	}
	return resp.ProducerID
}

// consumeAll reads partition 0 of topic from the start up to want records.
func consumeAll(t *testing.T, ctx context.Context, addr, topic string, want int) []*kgo.Record {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []*kgo.Record
	for len(out) < want {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("timed out after %d of %d records", len(out), want)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("partition %d: %v", p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// TestIdempotentProduceAcrossRestart: franz-go (idempotent by default)
// produces before and after a restart; raw produce requests check that a
// retried batch gets its original offset without a second copy, also after
// a restart (state rebuilt from the log), and that a gap is refused.
func TestIdempotentProduceAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	n := startTestNode(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "idem"

	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addrs()[0].String()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produce := func(cl *kgo.Client, from, to int) {
		t.Helper()
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, &kgo.Record{Value: []byte(fmt.Sprintf("kgo-%d", i))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(cl, 0, 50)

	pid := initProducerID(t, ctx, cl)
	if code, off := rawProduce(t, ctx, cl, n, topic, pid, 0, 0, 3); code != 0 || off != 50 {
		t.Fatalf("first batch: code %d offset %d, want 0 at 50", code, off)
	}
	if code, off := rawProduce(t, ctx, cl, n, topic, pid, 0, 0, 3); code != 0 || off != 50 {
		t.Fatalf("retried batch: code %d offset %d, want success at the original 50", code, off)
	}
	if code, _ := rawProduce(t, ctx, cl, n, topic, pid, 0, 5, 1); code != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap: code %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", code)
	}
	if code, off := rawProduce(t, ctx, cl, n, topic, pid, 0, 3, 2); code != 0 || off != 53 {
		t.Fatalf("next batch: code %d offset %d, want 0 at 53", code, off)
	}
	cl.Close()
	closeTestNode(t, n)

	n = startTestNode(t, dir)
	defer closeTestNode(t, n)
	addr := n.Addrs()[0].String()
	cl, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if code, off := rawProduce(t, ctx, cl, n, topic, pid, 0, 3, 2); code != 0 || off != 53 {
		t.Fatalf("retry after restart: code %d offset %d, want success at the original 53", code, off)
	}
	if code, off := rawProduce(t, ctx, cl, n, topic, pid, 0, 0, 3); code != 0 || off != 50 {
		t.Fatalf("older retry after restart: code %d offset %d, want success at 50", code, off)
	}
	if code, _ := rawProduce(t, ctx, cl, n, topic, pid, 0, 9, 1); code != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap after restart: code %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", code)
	}
	if pid2 := initProducerID(t, ctx, cl); pid2 <= pid {
		t.Fatalf("producer id %d after restart, not above %d", pid2, pid)
	}
	produce(cl, 50, 100)

	l, ok := n.logs.Log(storage.TopicPartition{Topic: topic, Partition: 0})
	if !ok {
		t.Fatal("no log")
	}
	const total = 100 + 5
	if leo := l.LogEndOffset(); leo != total {
		t.Fatalf("log end offset %d, want %d (a duplicate was appended)", leo, total)
	}
	seen := map[string]bool{}
	for _, r := range consumeAll(t, ctx, addr, topic, total) {
		v := string(r.Value)
		if seen[v] {
			t.Fatalf("duplicate record %q at offset %d", v, r.Offset)
		}
		seen[v] = true
		if r.ProducerID < 0 {
			t.Fatalf("record %q at offset %d has no producer id: the client did not produce idempotently", v, r.Offset)
		}
	}
	if len(seen) != total {
		t.Fatalf("%d distinct records, want %d", len(seen), total)
	}
}
