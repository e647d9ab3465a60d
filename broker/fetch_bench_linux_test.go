package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkNodeFetchLarge: 10 MiB fetches of one partition (64 KiB
// batches), from the page cache, answered with sendfile over a socket with
// Kafka's send buffer (socket.send.buffer.bytes 102400), the shape of a
// consumer catching up (franz-go asks 10 MiB per partition). Besides
// ns/op and allocations it reports the process's CPU time and voluntary
// context switches per fetch (broker and the reading client together;
// cpuMeter): the send's wake-ups, which the load of a shared machine does
// not blur.
//
//	go test ./broker -run '^$' -bench NodeFetchLarge -benchtime 200x
func BenchmarkNodeFetchLarge(b *testing.B) {
	addr, id := benchNode(b)
	pc := dialBench(b, addr, benchProduceRequest(id, 1), 9)
	const batches = 12 << 4 // 12 MiB of 64 KiB batches
	for range batches {
		pc.roundTrip()
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch, req.MaxWaitMillis = -1, 10<<20, -1, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "bench", id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 10<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c := dialBench(b, addr, req, 13)
	c.buf = make([]byte, 12<<20)
	n := len(c.roundTrip())
	if n < 9<<20 {
		b.Fatalf("fetch answered %d bytes", n)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	cpu := startCPUMeter()
	b.ResetTimer()
	for range b.N {
		c.roundTrip()
	}
	b.StopTimer()
	cpu.report(b)
}
