package broker

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

	"github.com/samsa-broker/samsa/wire"
)

// Benchmarks of the produce and fetch paths of a whole in-process node
// over loopback TCP, with allocation counts (the client side reuses its
// buffers and allocates nothing per operation, so allocs/op are the
// broker's). Run:
//
//	go test ./broker -run '^$' -bench 'Node(Fetch|Produce)' -benchtime 2s

const benchBatchRecords = 64 // 64 x 1 KiB records per produced batch

// benchNode starts a node with topic "bench" (1 partition) and returns the
// address and the topic id.
func benchNode(b *testing.B, overrides ...string) (string, [16]byte) {
	b.Helper()
	n := startTestNode(b, b.TempDir(), overrides...)
	b.Cleanup(func() { closeTestNode(b, n) })
	addr := n.Addrs()[0].String()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "bench")
	if err != nil || resp.Err != nil {
		b.Fatal(err, resp.Err)
	}
	return addr, resp.ID
}

// benchConn sends one pre-encoded request again and again and reads the
// responses into a reused buffer.
type benchConn struct {
	b   *testing.B
	nc  net.Conn
	req []byte
	buf []byte
}

func dialBench(b *testing.B, addr string, req kmsg.Request, v int16) *benchConn {
	b.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	cid := "bench"
	req.SetVersion(v)
	frame := wire.AppendRequest(nil, wire.RequestHeader{APIKey: req.Key(), APIVersion: v, CorrelationID: 1, ClientID: &cid}, req)
	return &benchConn{b: b, nc: nc, req: frame, buf: make([]byte, 4<<20)}
}

// roundTrip sends the request and returns the response body (valid until
// the next call).
func (c *benchConn) roundTrip() []byte {
	if _, err := c.nc.Write(c.req); err != nil {
		c.b.Fatal(err)
	}
	if _, err := io.ReadFull(c.nc, c.buf[:4]); err != nil {
		c.b.Fatal(err)
	}
	n := int(binary.BigEndian.Uint32(c.buf))
	if n > len(c.buf) {
		c.b.Fatalf("response of %d bytes", n)
	}
	if _, err := io.ReadFull(c.nc, c.buf[:n]); err != nil {
		c.b.Fatal(err)
	}
	return c.buf[:n]
}

func benchProduceRequest(id [16]byte, acks int16) *kmsg.ProduceRequest {
	recs := make([]wire.Record, benchBatchRecords)
	for i := range recs {
		recs[i] = wire.Record{Value: make([]byte, 1024)}
	}
	batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(), Records: recs})
	if err != nil {
		panic(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "bench", id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// BenchmarkNodeProduce: one connection producing 64 KiB batches (64 x
// 1 KiB records) with acks=all to one partition.
func BenchmarkNodeProduce(b *testing.B) {
	addr, id := benchNode(b)
	req := benchProduceRequest(id, -1)
	c := dialBench(b, addr, req, 9)
	b.SetBytes(int64(len(req.Topics[0].Partitions[0].Records)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c.roundTrip()
	}
}

// BenchmarkNodeProduceFsync: as BenchmarkNodeProduce with
// log.flush.interval.messages=1 (fsync before each acknowledgement) and 4
// connections at once, whose fsyncs the group commit shares.
func BenchmarkNodeProduceFsync(b *testing.B) {
	addr, id := benchNode(b, "log.flush.interval.messages=1")
	req := benchProduceRequest(id, -1)
	b.SetBytes(int64(len(req.Topics[0].Partitions[0].Records)))
	b.SetParallelism(2) // 2 x GOMAXPROCS connections
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := dialBench(b, addr, benchProduceRequest(id, -1), 9)
		for pb.Next() {
			c.roundTrip()
		}
	})
}

// BenchmarkNodeFetch: 1 MiB fetches of one partition, from the page
// cache, answered with sendfile.
func BenchmarkNodeFetch(b *testing.B) {
	addr, id := benchNode(b)
	// 16 MiB of data; each fetch reads 1 MiB of it from the page cache.
	pc := dialBench(b, addr, benchProduceRequest(id, 1), 9)
	const batches = 256
	for range batches {
		pc.roundTrip()
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch, req.MaxWaitMillis = -1, 1<<20, -1, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "bench", id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c := dialBench(b, addr, req, 13)
	n := len(c.roundTrip())
	if n < 1<<19 {
		b.Fatalf("fetch answered %d bytes", n)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c.roundTrip()
	}
}
