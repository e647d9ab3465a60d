package broker

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/handlers"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire"
)

// fileFetchFixture is a fetch response with three topics whose partitions
// carry records of sizes around the varint and int32 boundaries, some in
// memory and some as ranges of one file, plus aborted transactions,
// KIP-951 leaders and broker endpoints (v16+ tagged fields): want is the
// same response with every record set in memory.
func fileFetchFixture(t *testing.T, file vfs.File, data []byte, v int16) (ff *handlers.FileFetch, want *kmsg.FetchResponse) {
	t.Helper()
	sizes := []int{0, 1, 61, 126, 127, 128, 300, 16382, 16383, 16384, 70000}
	build := func() *kmsg.FetchResponse {
		r := kmsg.NewPtrFetchResponse()
		r.Version = v
		r.ThrottleMillis, r.SessionID = 7, 42
		for ti := range 3 {
			ft := kmsg.NewFetchResponseTopic()
			ft.Topic = string(rune('a'+ti)) + "-topic"
			ft.TopicID = [16]byte{byte(ti + 1), 9}
			for pi := range sizes {
				p := kmsg.NewFetchResponseTopicPartition()
				p.Partition, p.HighWatermark, p.LastStableOffset, p.LogStartOffset = int32(pi), 1000, 990, 3
				p.RecordBatches = []byte{}
				if pi%3 == 1 {
					p.AbortedTransactions = append(p.AbortedTransactions, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: 5, FirstOffset: 17})
				}
				if pi%4 == 2 {
					p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 2, 9
				}
				ft.Partitions = append(ft.Partitions, p)
			}
			r.Topics = append(r.Topics, ft)
		}
		if v >= 16 {
			b := kmsg.NewFetchResponseBroker()
			b.NodeID, b.Host, b.Port = 2, "host-2", 9092
			r.Brokers = append(r.Brokers, b)
		}
		return r
	}
	want = build()
	ff = &handlers.FileFetch{FetchResponse: build()}
	off := 0
	for ti := range want.Topics {
		for pi, n := range sizes {
			recs := data[off : off+n]
			want.Topics[ti].Partitions[pi].RecordBatches = recs
			switch {
			case n == 0:
			case (ti+pi)%2 == 0:
				ff.Files = append(ff.Files, handlers.PartitionFile{Topic: ti, Partition: pi, Slice: storage.FileSlice{File: file, Offset: int64(off), Length: int64(n)}})
			default:
				ff.Topics[ti].Partitions[pi].RecordBatches = recs
			}
			off += n
		}
	}
	return ff, want
}

func testFile(t *testing.T, fs vfs.FS, name string, size int) (vfs.File, []byte) {
	t.Helper()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	return f, data
}

// TestEncodeFileFetchMatchesKmsg: for every Fetch version we serve, the
// framing plus the file ranges are byte for byte what kmsg encodes for the
// same response with the records in memory (sizes, varint length prefixes,
// tagged fields after the records).
func TestEncodeFileFetchMatchesKmsg(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/f"); err != nil {
		t.Fatal(err)
	}
	file, data := testFile(t, mem, "/f/seg.log", 400000)
	for v := int16(4); v <= 18; v++ {
		ff, want := fileFetchFixture(t, file, data, v)
		hdr := wire.RequestHeader{APIKey: int16(kmsg.Fetch), APIVersion: v, CorrelationID: 99}
		o, err := encodeFileFetch(hdr, ff)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		var got bytes.Buffer
		if err := writeOutgoing(&bufConn{w: &got}, &o); err != nil {
			t.Fatalf("v%d: write: %v", v, err)
		}
		exp := wire.AppendResponse(nil, hdr, want)
		if !bytes.Equal(got.Bytes(), exp) {
			t.Fatalf("v%d: encoded %d bytes, kmsg %d; differ", v, got.Len(), len(exp))
		}
		// The same response with its ranges copied in (a small fetch).
		inlined := o
		if err := inlineSmall(&inlined, len(data)); err != nil || len(inlined.spans) != 0 || !bytes.Equal(inlined.buf, exp) {
			t.Fatalf("v%d: inlined: %v, %d spans left, equal %v", v, err, len(inlined.spans), bytes.Equal(inlined.buf, exp))
		}
		if o.size() != len(exp) {
			t.Fatalf("v%d: size() = %d, want %d", v, o.size(), len(exp))
		}
		for _, pf := range ff.Files {
			if n := len(ff.Topics[pf.Topic].Partitions[pf.Partition].RecordBatches); n != 0 {
				t.Fatalf("v%d: marker left in the response (%d bytes)", v, n)
			}
		}
	}
}

// bufConn is a net.Conn that is not a *net.TCPConn, for the copy path.
type bufConn struct {
	net.Conn
	w io.Writer
}

func (c *bufConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// TestWriteOutgoingSendfile sends a response with ranges of an OS file over
// loopback TCP (sendfile) and over a wrapped connection (copy path, as
// TLS), after the file was unlinked as retention does to a segment a fetch
// still holds, and checks the bytes that arrive.
func TestWriteOutgoingSendfile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "00000000000000000000.log")
	file, data := testFile(t, vfs.OS, name, 400000)
	defer file.Close()
	if _, ok := file.(vfs.OSFiler); !ok {
		t.Fatal("OS file is not an OSFiler")
	}
	if err := vfs.OS.Remove(name); err != nil {
		t.Fatal(err)
	}
	for _, wrapped := range []bool{false, true} {
		ff, want := fileFetchFixture(t, file, data, 13)
		hdr := wire.RequestHeader{APIKey: int16(kmsg.Fetch), APIVersion: 13, CorrelationID: 5}
		o, err := encodeFileFetch(hdr, ff)
		if err != nil {
			t.Fatal(err)
		}
		exp := wire.AppendResponse(nil, hdr, want)
		nc, got := loopbackCollector(t, 0)
		var w net.Conn = nc
		if wrapped {
			w = &bufConn{Conn: nc, w: nc}
		} else if newRangeSender(nc) == nil && runtime.GOOS == "linux" {
			t.Fatal("no sendfile sender for a *net.TCPConn")
		}
		nc.SetWriteDeadline(time.Now().Add(time.Minute))
		if err := writeOutgoing(w, &o); err != nil {
			t.Fatalf("wrapped=%v: %v", wrapped, err)
		}
		nc.Close()
		b := <-got
		if !bytes.Equal(b, exp) {
			t.Fatalf("wrapped=%v: received %d bytes, want %d; differ", wrapped, len(b), len(exp))
		}
	}
}

// TestWriteOutgoingTruncated: a range past the end of its file fails the
// write (the frame size is already sent, so the connection must close),
// on both paths.
func TestWriteOutgoingTruncated(t *testing.T) {
	file, _ := testFile(t, vfs.OS, filepath.Join(t.TempDir(), "f"), 1000)
	defer file.Close()
	o := outgoing{buf: make([]byte, 8), spans: []fileSpan{{at: 8, slice: storage.FileSlice{File: file, Offset: 500, Length: 1000}}}}
	if err := writeOutgoing(&bufConn{w: io.Discard}, &o); err == nil {
		t.Fatal("copy path: no error for a truncated range")
	}
	nc, got := loopbackCollector(t, 0)
	if err := writeOutgoing(nc, &o); err == nil {
		t.Fatal("sendfile path: no error for a truncated range")
	}
	nc.Close()
	<-got
}

// loopbackCollector listens on a loopback port, dials it, and returns the
// dialled connection and a channel that receives, once that connection
// is closed, every byte the accepted side read (nil if the accept
// failed). rcvBuf > 0 sets the accepted side's socket receive buffer.
// The listener serves one connection; it is closed after the accept, and
// at the end of the test.
func loopbackCollector(t *testing.T, rcvBuf int) (*net.TCPConn, <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		ln.Close()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		if rcvBuf > 0 {
			c.(*net.TCPConn).SetReadBuffer(rcvBuf)
		}
		var b bytes.Buffer
		buf := make([]byte, 32<<10)
		for {
			n, err := c.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		got <- b.Bytes()
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return nc.(*net.TCPConn), got
}
