package wire

import (
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkProduceReadCheck reads Produce requests like franz-go's under
// bench/compare's -procs 2 (6 partitions of one batch of 600-1,000 x 1 KiB
// records, 3.6-6 MiB per request) from a loopback TCP socket and checks
// their batches as the broker does: /after reads the whole request and
// then validates each partition (the handler's ValidateProduce, CRC and
// record walk on bytes read megabytes earlier); /as-read advances a
// ProduceScan after each read (the connection reader's) and then
// validates with what it established. thread-cpu-ns/op is the reading
// thread's CPU time per request (user and system: the socket read's copy
// included), which the machine's load moves less than ns/op. The reading
// buffers cycle through 64 MiB, as a broker's pooled request buffers do
// between requests.
func BenchmarkProduceReadCheck(b *testing.B) {
	var frames [][]byte
	for i := range 8 {
		req := kmsg.NewPtrProduceRequest()
		req.Version = 9
		req.Acks, req.TimeoutMillis = -1, 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "bench"
		for p := range 6 {
			recs := make([]Record, 600+(i*137+p*61)%401)
			for j := range recs {
				recs[j] = Record{Value: make([]byte, 1024)}
				recs[j].Value[j%1024] = byte(j)
			}
			batch, err := EncodeBatch(BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: 1_700_000_000_000, Records: recs})
			if err != nil {
				b.Fatal(err)
			}
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = int32(p), batch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		frames = append(frames, produceFrame(req, "bench"))
	}
	for _, mode := range []string{"after", "as-read", "as-read-128k"} {
		b.Run(mode, func(b *testing.B) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			done := make(chan struct{})
			go func() {
				defer close(done)
				c, err := net.Dial("tcp", l.Addr().String())
				if err != nil {
					return
				}
				defer c.Close()
				for i := range b.N {
					if _, err := c.Write(frames[i%len(frames)]); err != nil {
						return
					}
				}
			}()
			c, err := l.Accept()
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ring := make([]byte, 64<<20)
			off := 0
			var s ProduceScan
			total := 0
			b.ResetTimer()
			t0 := threadCPU()
			for i := range b.N {
				n := len(frames[i%len(frames)])
				total += n
				if off+n > len(ring) {
					off = 0
				}
				buf := ring[off : off+n]
				off += n
				s.Reset()
				for got := 0; got < n; {
					end := n
					if mode == "as-read-128k" {
						end = min(n, got+128<<10)
					}
					m, err := c.Read(buf[got:end])
					if err != nil && err != io.EOF {
						b.Fatal(err)
					}
					got += m
					if mode != "after" {
						s.Advance(buf[:got])
					}
				}
				_, req, err := ParseRequest(buf)
				if err != nil {
					b.Fatal(err)
				}
				for _, rp := range req.(*kmsg.ProduceRequest).Topics[0].Partitions {
					crcOK, walked := Prechecked(buf, s.Checked, rp.Records)
					if mode != "after" && !walked {
						b.Fatal("not prechecked")
					}
					if _, err := ValidateProduce(rp.Records, ValidateOptions{ProduceVersion: 9, DeepValidate: true, CRCChecked: crcOK, RecordsChecked: walked}); err != nil {
						b.Fatal(err)
					}
				}
			}
			cpu := threadCPU() - t0
			b.StopTimer()
			b.SetBytes(int64(total / b.N))
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "thread-cpu-ns/op")
			c.Close()
			<-done
		})
	}
}

func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
