package broker

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/handlers"
	"github.com/samsa-broker/samsa/wire"
)

// TestResponseSizeHintFitsFetch: a fetch response, at every version we
// serve, encodes within the capacity responseSizeHint gives, so encoding
// never grows the buffer (each growth copies every record byte again).
func TestResponseSizeHintFitsFetch(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	for ti := range 3 {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = strings.Repeat("t", 200+ti)
		for p := range 4 {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = int32(p)
			rp.RecordBatches = make([]byte, 1000*p)
			for a := range p {
				at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				at.ProducerID, at.FirstOffset = int64(a), int64(a)
				rp.AbortedTransactions = append(rp.AbortedTransactions, at)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for v := int16(4); v <= 18; v++ {
		hint := responseSizeHint(resp)
		out := wire.AppendResponse(make([]byte, 0, hint), wire.RequestHeader{APIKey: int16(kmsg.Fetch), APIVersion: v}, resp)
		if len(out) > hint {
			t.Errorf("v%d: encoded %d bytes, hint %d", v, len(out), hint)
		}
	}
	if responseSizeHint(kmsg.NewPtrMetadataResponse()) != 0 {
		t.Error("hint for a metadata response")
	}
}

// TestAnnouncedSizeIsNotReserved: issue 11 item 3, a size prefix alone
// made the broker allocate the announced size (30 connections announcing
// 100 MiB - 1 took RSS from 11 MB to 3.1 GB, and it stayed there). Bodies
// are now read in chunks as their bytes arrive.
func TestAnnouncedSizeIsNotReserved(t *testing.T) {
	n := startTestNode(t, t.TempDir(), "queued.max.request.bytes=-1")
	defer closeTestNode(t, n)
	const conns, size = 30, 100<<20 - 1
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for range conns {
		c := dialRaw(t, n.Addrs()[0].String())
		var hdr [12]byte
		binary.BigEndian.PutUint32(hdr[:], size)
		binary.BigEndian.PutUint16(hdr[4:], uint16(kmsg.Produce))
		if _, err := c.nc.Write(hdr[:]); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for n.srv.budget.used() < conns*size {
		if time.Now().After(deadline) {
			t.Fatalf("budget holds %d bytes, want %d", n.srv.budget.used(), conns*size)
		}
		runtime.Gosched()
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 32<<20 {
		t.Fatalf("heap grew by %d bytes for %d announced bodies", grew, conns)
	}
}

// TestByteBudget: queued.max.request.bytes admits while anything is left
// (one request larger than the budget still passes, as Kafka's pool) and
// makes readers wait once it is used up, until a release.
func TestByteBudget(t *testing.T) {
	b := newByteBudget(100)
	never := make(chan struct{})
	if !b.acquire(never, 150) {
		t.Fatal("first request not admitted")
	}
	got := make(chan bool)
	go func() { got <- b.acquire(never, 10) }()
	select {
	case <-got:
		t.Fatal("admitted with the budget used up")
	default:
	}
	b.release(150)
	if !<-got || b.used() != 10 {
		t.Fatalf("used %d after release", b.used())
	}
	stop := make(chan struct{})
	b.acquire(never, 200)
	go func() { got <- b.acquire(stop, 1) }()
	close(stop)
	if <-got {
		t.Fatal("acquire returned true after stop")
	}
	if unbounded := newByteBudget(-1); !unbounded.acquire(never, 1<<40) || !unbounded.acquire(never, 1<<40) {
		t.Fatal("unbounded budget refused")
	}
}

// validApiVersionsRequest is an ApiVersions request whose v3+ client
// software name and version pass Kafka's pattern (empty ones are
// INVALID_REQUEST, as from Kafka).
func validApiVersionsRequest() *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-test", "1.0"
	return req
}

func apiVersionsOK(t *testing.T, c *rawClient) {
	t.Helper()
	resp, err := c.roundTrip(validApiVersionsRequest(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
		t.Fatalf("ApiVersions error %d", code)
	}
}

// TestMaxConnectionsPerIP: issue 11 item 3, connections per address were
// unlimited. Over max.connections.per.ip a new connection is closed at once
// (Kafka's TooManyConnectionsException); closing one makes room again.
func TestMaxConnectionsPerIP(t *testing.T) {
	n := startTestNode(t, t.TempDir(), "max.connections.per.ip=2")
	defer closeTestNode(t, n)
	addr := n.Addrs()[0].String()
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	apiVersionsOK(t, a)
	apiVersionsOK(t, b)
	if c := dialRaw(t, addr); !c.closedByPeer() {
		t.Fatal("third connection from 127.0.0.1 was not closed")
	}
	a.nc.Close()
	deadline := time.Now().Add(20 * time.Second)
	for n.srv.ConnectionCount() > 1 {
		if time.Now().After(deadline) {
			t.Fatal("closed connection still counted")
		}
		runtime.Gosched()
	}
	apiVersionsOK(t, dialRaw(t, addr))
}

// TestMaxConnectionsPerIPOverride: max.connections.per.ip=0 with an
// override for 127.0.0.1 allows exactly the override.
func TestMaxConnectionsPerIPOverride(t *testing.T) {
	n := startTestNode(t, t.TempDir(), "max.connections.per.ip=0", "max.connections.per.ip.overrides=127.0.0.1:1")
	defer closeTestNode(t, n)
	addr := n.Addrs()[0].String()
	apiVersionsOK(t, dialRaw(t, addr))
	if c := dialRaw(t, addr); !c.closedByPeer() {
		t.Fatal("second connection from 127.0.0.1 was not closed")
	}
}

// TestMaxConnectionsWaits: at max.connections the broker stops accepting
// (as Kafka's acceptor); a waiting connection is served once another
// closes, and the count never exceeds the limit.
func TestMaxConnectionsWaits(t *testing.T) {
	n := startTestNode(t, t.TempDir(), "max.connections=1")
	defer closeTestNode(t, n)
	addr := n.Addrs()[0].String()
	a := dialRaw(t, addr)
	apiVersionsOK(t, a)
	b := dialRaw(t, addr) // completes in the listen backlog
	req := validApiVersionsRequest()
	corr := b.send(req, 3)
	if c := n.srv.ConnectionCount(); c != 1 {
		t.Fatalf("%d connections with max.connections=1", c)
	}
	a.nc.Close()
	if _, err := b.readResponse(req, corr); err != nil {
		t.Fatalf("waiting connection not served: %v", err)
	}
}

// TestIdleConnectionClosed: issue 11 item 3, connections.max.idle.ms was
// not implemented; a silent connection, and one that announced a body and
// stopped sending it (holding queued.max.request.bytes), are closed.
func TestIdleConnectionClosed(t *testing.T) {
	n := startTestNode(t, t.TempDir(), "connections.max.idle.ms=300")
	defer closeTestNode(t, n)
	addr := n.Addrs()[0].String()
	silent := dialRaw(t, addr)
	apiVersionsOK(t, silent)
	stalled := dialRaw(t, addr)
	if _, err := stalled.nc.Write([]byte{0, 0, 1, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if !silent.closedByPeer() || !stalled.closedByPeer() {
		t.Fatal("idle connection not closed")
	}
	deadline := time.Now().Add(20 * time.Second)
	for n.srv.budget.used() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("budget still holds %d bytes", n.srv.budget.used())
		}
		runtime.Gosched()
	}
}

// TestHandlerPanicClosesOnlyThatConnection: issue 11 item 6, a panic in a
// handler took the process down. Now it closes that connection, is
// counted (samsa_server_request_panics_total), and every other connection
// keeps working.
func TestHandlerPanicClosesOnlyThatConnection(t *testing.T) {
	n := startTestNode(t, t.TempDir(), "samsa.http.listener=127.0.0.1:0")
	defer closeTestNode(t, n)
	e := n.srv.table[int16(kmsg.DescribeCluster)]
	e.Handle = func(*handlers.Deps, *handlers.Request) (kmsg.Response, error) { panic("test: handler bug") }
	n.srv.table[e.Key] = e // before any connection exists: no race
	addr := n.Addrs()[0].String()
	other := dialRaw(t, addr)
	apiVersionsOK(t, other)
	bad := dialRaw(t, addr)
	bad.send(kmsg.NewPtrDescribeClusterRequest(), 0)
	if !bad.closedByPeer() {
		t.Fatal("connection of the panicking request stayed open")
	}
	if got := n.srv.PanicCount(); got != 1 {
		t.Fatalf("PanicCount %d, want 1", got)
	}
	if v, ok := scrapeMetrics(t, "http://"+n.HTTPAddr().String()).sum("samsa_server_request_panics_total"); !ok || v != 1 {
		t.Fatalf("samsa_server_request_panics_total %v (found %v), want 1", v, ok)
	}
	apiVersionsOK(t, other)
}

// TestAcceptBackoff: issue 11 item 5, the accept loop retried at once on
// EMFILE and logged "accept failed" 6.3 million times in 3 minutes. The
// delay doubles from 5ms to 1s, and the log lets one line a second through.
func TestAcceptBackoff(t *testing.T) {
	var d time.Duration
	var got []time.Duration
	for range 10 {
		d = nextAcceptDelay(d)
		got = append(got, d)
	}
	want := []time.Duration{5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("delays %v", got)
		}
	}
	var r rateLimited
	t0 := time.Unix(1000, 0)
	if ok, _ := r.allow(t0); !ok {
		t.Fatal("first line suppressed")
	}
	for i := range 1000 {
		if ok, _ := r.allow(t0.Add(time.Duration(i) * time.Millisecond)); ok {
			t.Fatal("second line within a second logged")
		}
	}
	if ok, n := r.allow(t0.Add(time.Second)); !ok || n != 1000 {
		t.Fatalf("after a second: ok %v suppressed %d", ok, n)
	}
}

// TestFetchMaxBytesCapsResponse: issue 11 item 4, max_bytes = 2^31-1
// returned every byte up to the high watermark (190 MB in one response).
// fetch.max.bytes caps it, as Kafka.
func TestFetchMaxBytesCapsResponse(t *testing.T) {
	n := startTestNode(t, t.TempDir(), "fetch.max.bytes=65536")
	defer closeTestNode(t, n)
	addr := n.Addrs()[0].String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("big"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "big"); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 16<<10)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 1<<31-1, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "big"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1<<31 - 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := dialRaw(t, addr).roundTrip(req, 12)
	if err != nil {
		t.Fatal(err)
	}
	got := len(resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches)
	if got == 0 || got > 65536 {
		t.Fatalf("fetch returned %d record bytes with fetch.max.bytes=65536", got)
	}
}

// TestSlowReaderBackpressure: issue 11 item 4, a client that sends fetches
// and does not read piled up their responses in the broker. Now no request
// runs while more than maxQueuedResponseBytes wait for the socket, so the
// queue stays within that plus one response; every response still arrives,
// in order, once the client reads.
func TestSlowReaderBackpressure(t *testing.T) {
	n := startTestNode(t, t.TempDir())
	defer closeTestNode(t, n)
	addr := n.Addrs()[0].String()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("slow"),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "slow"); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 900<<10)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	const fetches, maxBytes = 60, 1 << 20
	// A small receive buffer, set before connecting (which turns off
	// autotuning up to tcp_rmem's 32 MiB), so the socket cannot absorb
	// what the broker would otherwise queue.
	dialer := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10) })
	}}
	nc, err := dialer.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &rawClient{t: t, nc: nc, fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID("slow"))}
	var reqs []*kmsg.FetchRequest
	var corrs []int32
	for range fetches {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes = -1, maxBytes
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "slow"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = maxBytes
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		reqs = append(reqs, req)
		corrs = append(corrs, c.send(req, 12))
	}
	var sc *conn
	for sc == nil {
		n.srv.mu.Lock()
		for x := range n.srv.mu.conns {
			if x.nc.RemoteAddr().String() == c.nc.LocalAddr().String() {
				sc = x
			}
		}
		n.srv.mu.Unlock()
	}
	queued := func() int {
		sc.queued.Lock()
		defer sc.queued.Unlock()
		return sc.queued.bytes
	}
	deadline := time.Now().Add(30 * time.Second)
	highest := 0
	for highest <= maxQueuedResponseBytes {
		if time.Now().After(deadline) {
			t.Fatalf("queued response bytes never passed %d (highest %d)", maxQueuedResponseBytes, highest)
		}
		q := queued()
		highest = max(highest, q)
		if q > maxQueuedResponseBytes+maxBytes+4096 {
			t.Fatalf("%d response bytes queued for a reader that does not read", q)
		}
		runtime.Gosched()
	}
	for i := range fetches {
		if _, err := c.readResponse(reqs[i], corrs[i]); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
	}
}
