package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// BenchmarkNodeProduceMixedSizes: requests like franz-go's under -procs 2
// of bench/compare: 6 partitions of one batch each, 600-1,000 records of
// 1 KiB per batch (3.6-6 MiB per request), 8 different requests in turn,
// acks=all. B/op and allocs/op are the broker's request buffers: a pool
// that misses grows a buffer from 64 KiB for each request (bench/README.md,
// stop 29). cpu-ns/op is the process's CPU (broker and client) per
// request, which the machine's load moves less than ns/op.
func BenchmarkNodeProduceMixedSizes(b *testing.B) {
	n := startTestNode(b, b.TempDir())
	b.Cleanup(func() { closeTestNode(b, n) })
	addr := n.Addrs()[0].String()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 6, 1, nil, "bench")
	if err != nil || resp.Err != nil {
		b.Fatal(err, resp.Err)
	}
	var conns []*benchConn
	total := 0
	for i := range 8 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "bench", resp.ID
		for p := range 6 {
			recs := make([]wire.Record, 600+(i*137+p*61)%401)
			for j := range recs {
				recs[j] = wire.Record{Value: make([]byte, 1024)}
			}
			batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(), Records: recs})
			if err != nil {
				b.Fatal(err)
			}
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = int32(p), batch
			rt.Partitions = append(rt.Partitions, rp)
			total += len(batch)
		}
		req.Topics = append(req.Topics, rt)
		c := dialBench(b, addr, req, 9)
		pr := kmsg.NewPtrProduceResponse()
		pr.SetVersion(9)
		if err := pr.ReadFrom(c.roundTrip()[5:]); err != nil { // correlation id, empty tagged fields
			b.Fatal(err)
		}
		for _, p := range pr.Topics[0].Partitions {
			if p.ErrorCode != 0 {
				b.Fatalf("partition %d: error %d", p.Partition, p.ErrorCode)
			}
		}
		conns = append(conns, c)
	}
	b.SetBytes(int64(total / len(conns)))
	b.ReportAllocs()
	b.ResetTimer()
	m := startCPUMeter()
	for i := range b.N {
		conns[i%len(conns)].roundTrip()
	}
	m.report(b)
}
