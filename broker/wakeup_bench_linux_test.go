package broker

import (
	"bytes"
	"encoding/binary"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkNodeProduceToFetch: the low-rate end-to-end path of one record.
// Each iteration parks a long-poll fetch at the log end (min_bytes 1), then
// produces one 100-byte record with acks=1 on a second connection and reads
// both answers: the produce's, and the fetch's, which the append wakes. So
// ns/op is what a record costs from the producer's send to the consumer's
// receipt when nothing batches (the e2e latency at 10k records/s), and
// allocs/op the broker's allocations on that path (the clients reuse
// pre-encoded frames).
//
//	go test ./broker -run '^$' -bench NodeProduceToFetch -benchtime 5000x
func BenchmarkNodeProduceToFetch(b *testing.B) {
	addr, id := benchNode(b)
	preq := benchProduceRequest(id, 1)
	preq.Topics[0].Partitions[0].Records = benchSmallBatch()
	pc := dialBench(b, addr, preq, 9)

	// The fetch frame is encoded once with a marker fetch offset, which
	// each iteration overwrites with the offset to wait at.
	const marker = 0x5a5a5a5a5a5a5a5a
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.MinBytes, req.SessionEpoch, req.MaxWaitMillis = -1, 1<<20, 1, -1, 30000
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "bench", id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = marker, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	fc := dialBench(b, addr, req, 13)
	var m [8]byte
	binary.BigEndian.PutUint64(m[:], marker)
	at := bytes.Index(fc.req, m[:])
	if at < 0 {
		b.Fatal("fetch offset not found in the encoded request")
	}

	b.ReportAllocs()
	cpu := startCPUMeter()
	b.ResetTimer()
	for i := range b.N {
		binary.BigEndian.PutUint64(fc.req[at:], uint64(i))
		if _, err := fc.nc.Write(fc.req); err != nil {
			b.Fatal(err)
		}
		// Whether the fetch parks before the append or finds the record
		// at once, it answers with the record: both are the path.
		pc.roundTrip()
		resp := fc.readResponse()
		if len(resp) < 100 {
			b.Fatalf("fetch %d answered %d bytes", i, len(resp))
		}
	}
	b.StopTimer()
	cpu.report(b)
}

// cpuMeter measures the CPU time (user and system) and the voluntary
// context switches (a thread blocking: a goroutine hand-off that parked or
// woke an OS thread) of the whole test process, broker and benchmark
// client together: on a machine shared with other work, CPU per operation
// varies far less than wall time per operation, and voluntary switches
// count wake-ups, not preemption by the other work, so they are the
// figures that show what a change saved.
type cpuMeter struct {
	start time.Duration
	nvcsw int64
}

func startCPUMeter() cpuMeter {
	cpu, nvcsw := processUsage()
	return cpuMeter{start: cpu, nvcsw: nvcsw}
}

// report adds cpu-ns/op and vcsw/op to b's results.
func (m cpuMeter) report(b *testing.B) {
	cpu, nvcsw := processUsage()
	b.ReportMetric(float64(cpu-m.start)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(nvcsw-m.nvcsw)/float64(b.N), "vcsw/op")
}

func processUsage() (time.Duration, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), int64(ru.Nvcsw)
}

// readResponse reads one response (after the caller wrote the request).
func (c *benchConn) readResponse() []byte {
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
