package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// BenchmarkNodeProduceUnderLongPolls: acks=1 produces of one small batch
// to partition 0 of a 100-partition topic while idle long-poll fetches
// wait: "watching" fetches read all 100 partitions (so every append wakes
// them) with a min_bytes no append reaches, "elsewhere" fetches read
// another topic. A woken fetch used to read all its partitions again per
// append; now it reads the one that changed.
//
//	go test ./broker -run '^$' -bench NodeProduceUnderLongPolls -benchtime 2000x
func BenchmarkNodeProduceUnderLongPolls(b *testing.B) {
	for _, tc := range []struct {
		watching, elsewhere int
	}{{0, 0}, {0, 16}, {16, 0}} {
		b.Run(fmt.Sprintf("watching=%d/elsewhere=%d", tc.watching, tc.elsewhere), func(b *testing.B) {
			n := startTestNode(b, b.TempDir())
			b.Cleanup(func() { closeTestNode(b, n) })
			addr := n.Addrs()[0].String()
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			const partitions = 100
			adm := kadm.NewClient(cl)
			resp, err := adm.CreateTopic(ctx, partitions, 1, nil, "watched")
			if err != nil || resp.Err != nil {
				b.Fatal(err, resp.Err)
			}
			if r, err := adm.CreateTopic(ctx, partitions, 1, nil, "quiet"); err != nil || r.Err != nil {
				b.Fatal(err, r.Err)
			}
			longPoll := func(topic string) {
				req := kmsg.NewPtrFetchRequest()
				req.ReplicaID, req.MaxBytes, req.MinBytes, req.MaxWaitMillis = -1, 1<<30, 1<<30, 600000
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic = topic
				for p := range int32(partitions) {
					rp := kmsg.NewFetchRequestTopicPartition()
					rp.Partition, rp.PartitionMaxBytes = p, 1<<20
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
				dialRaw(b, addr).send(req, 12)
			}
			for range tc.watching {
				longPoll("watched")
			}
			for range tc.elsewhere {
				longPoll("quiet")
			}
			req := benchProduceRequest(resp.ID, 1)
			req.Topics[0].Topic = "watched"
			req.Topics[0].Partitions[0].Records = benchSmallBatch()
			c := dialBench(b, addr, req, 9)
			c.roundTrip()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				c.roundTrip()
			}
		})
	}
}

// benchSmallBatch is one batch of one 100-byte record.
func benchSmallBatch() []byte {
	batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(), Records: []wire.Record{{Value: make([]byte, 100)}}})
	if err != nil {
		panic(err)
	}
	return batch
}

// BenchmarkNodeFetchSmall: 16 KiB fetches of 100-byte batches, as a
// consumer at the log end makes them: the records are copied into the
// response (one write) rather than sent with sendfile.
func BenchmarkNodeFetchSmall(b *testing.B) {
	addr, id := benchNode(b)
	preq := benchProduceRequest(id, 1)
	preq.Topics[0].Partitions[0].Records = benchSmallBatch()
	pc := dialBench(b, addr, preq, 9)
	for range 1000 {
		pc.roundTrip()
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch, req.MaxWaitMillis = -1, 16<<10, -1, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "bench", id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 16<<10, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c := dialBench(b, addr, req, 13)
	n := len(c.roundTrip())
	if n < 8<<10 {
		b.Fatalf("fetch answered %d bytes", n)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c.roundTrip()
	}
}
