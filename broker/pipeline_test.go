package broker

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// TestLongPollDoesNotBlockLaterRequests: issue 15, requests on one
// connection ran one at a time, so a long-poll Fetch held up everything
// sent after it on the same connection until its max wait passed. Here a
// Fetch waiting up to 60 s for an empty partition is followed, on the same
// connection, by a Metadata and a Produce to that partition: the produce
// now runs while the fetch waits, its append wakes the fetch, and the three
// responses come back in request order, the fetch carrying the produced
// record, long before the fetch's max wait. (Responses stay in request
// order, as every Kafka client requires, so the Metadata answer itself
// leaves after the fetch's: what no longer waits is its handling and the
// Produce that ends the long poll.)
func TestLongPollDoesNotBlockLaterRequests(t *testing.T) {
	n := startTestNode(t, t.TempDir())
	defer closeTestNode(t, n)
	addr := n.Addrs()[0].String()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "pipelined"); err != nil {
		t.Fatal(err)
	}

	c := dialRaw(t, addr)
	const maxWait = 60 * time.Second
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.MaxBytes, fetch.MinBytes, fetch.MaxWaitMillis = -1, 1<<20, 1, int32(maxWait/time.Millisecond)
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "pipelined"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)

	meta := kmsg.NewPtrMetadataRequest()

	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = 1, 30000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "pipelined"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = testBatch(t, 3)
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)

	start := time.Now()
	fc := c.send(fetch, 12)
	mc := c.send(meta, 12)
	pc := c.send(produce, 9)

	fr, err := c.readResponse(fetch, fc)
	if err != nil {
		t.Fatalf("fetch response (first in order): %v", err)
	}
	took := time.Since(start)
	fp0 := fr.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if fp0.ErrorCode != 0 || len(fp0.RecordBatches) == 0 {
		t.Fatalf("fetch: error %d, %d record bytes; want the produced batch", fp0.ErrorCode, len(fp0.RecordBatches))
	}
	if took >= maxWait/2 {
		t.Fatalf("fetch answered after %v: the produce behind it waited for the long poll", took)
	}
	mr, err := c.readResponse(meta, mc)
	if err != nil {
		t.Fatalf("metadata response (second): %v", err)
	}
	if len(mr.(*kmsg.MetadataResponse).Brokers) != 1 {
		t.Fatalf("metadata: %+v", mr)
	}
	pr, err := c.readResponse(produce, pc)
	if err != nil {
		t.Fatalf("produce response (third): %v", err)
	}
	if p := pr.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("produce: error %d base offset %d", p.ErrorCode, p.BaseOffset)
	}
	t.Logf("fetch answered after %v with the record produced behind it", took)
}

// TestPipelinedSASLRunsInOrder: with pipelining, nothing sent after an
// unauthenticated request may run ahead of authentication. A client that
// sends SaslHandshake, a failing SaslAuthenticate and a Metadata without
// waiting gets the first two answers and then the connection closes: the
// Metadata is never answered. With the right password the same three are
// answered in order.
func TestPipelinedSASLRunsInOrder(t *testing.T) {
	s := startSecureNode(t)
	send := func(password string) (*rawClient, [3]int32, [3]kmsg.Request) {
		c := dialRaw(t, s.saslPlaintext)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = "PLAIN"
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SASLAuthBytes = []byte("\x00alice\x00" + password)
		meta := kmsg.NewPtrMetadataRequest()
		reqs := [3]kmsg.Request{hs, auth, meta}
		var corrs [3]int32
		corrs[0] = c.send(hs, 1)
		corrs[1] = c.send(auth, 2)
		corrs[2] = c.send(meta, 12)
		return c, corrs, reqs
	}

	c, corrs, reqs := send("wrong")
	if r, err := c.readResponse(reqs[0], corrs[0]); err != nil || r.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
		t.Fatalf("handshake: %v %+v", err, r)
	}
	if r, err := c.readResponse(reqs[1], corrs[1]); err != nil || r.(*kmsg.SASLAuthenticateResponse).ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("authenticate with a wrong password: %v %+v", err, r)
	}
	if r, err := c.readResponse(reqs[2], corrs[2]); err == nil {
		t.Fatalf("metadata pipelined behind a failed authentication was answered: %+v", r)
	}

	c, corrs, reqs = send("alice-secret")
	for i := range reqs {
		r, err := c.readResponse(reqs[i], corrs[i])
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if e, ok := r.(*kmsg.SASLAuthenticateResponse); ok && e.ErrorCode != 0 {
			t.Fatalf("authenticate: %+v", e)
		}
	}
}

// testBatch is one record batch of n small records, offsets from 0.
func testBatch(t *testing.T, n int) []byte {
	t.Helper()
	recs := make([]wire.Record, n)
	for i := range recs {
		recs[i] = wire.Record{Value: []byte("pipelined")}
	}
	batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(), Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

// TestLongPollGathersAppends: a long poll over two partitions whose
// min_bytes takes three appends is woken by each, extends the woken
// partition's range by the new batch, and answers once the third lands
// with every batch, whole and in offset order, long before its max wait.
// The appends come pipelined behind the fetch on the same connection.
func TestLongPollGathersAppends(t *testing.T) {
	n := startTestNode(t, t.TempDir())
	defer closeTestNode(t, n)
	addr := n.Addrs()[0].String()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "gather"); err != nil {
		t.Fatal(err)
	}
	batch := testBatch(t, 2)
	c := dialRaw(t, addr)
	const maxWait = 60 * time.Second
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.MaxBytes, fetch.MaxWaitMillis = -1, 1<<20, int32(maxWait/time.Millisecond)
	fetch.MinBytes = int32(3 * len(batch))
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "gather"
	for p := range int32(2) {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
	}
	fetch.Topics = append(fetch.Topics, ft)
	start := time.Now()
	fc := c.send(fetch, 12)
	var produces []int32
	for _, p := range []int32{1, 0, 1} {
		produce := kmsg.NewPtrProduceRequest()
		produce.Acks, produce.TimeoutMillis = 1, 30000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = "gather"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition, pp.Records = p, testBatch(t, 2)
		pt.Partitions = append(pt.Partitions, pp)
		produce.Topics = append(produce.Topics, pt)
		produces = append(produces, c.send(produce, 9))
	}
	fr, err := c.readResponse(fetch, fc)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= maxWait/2 {
		t.Fatalf("fetch answered after %v", took)
	}
	wantBatches := map[int32][]int64{0: {0}, 1: {0, 2}} // base offsets per partition
	for _, p := range fr.(*kmsg.FetchResponse).Topics[0].Partitions {
		var bases []int64
		for recs := p.RecordBatches; len(recs) > 0; {
			h, err := wire.ParseBatchHeader(recs)
			if err != nil || h.TotalSize() > len(recs) {
				t.Fatalf("partition %d: bad or partial batch at %d: %v", p.Partition, len(p.RecordBatches)-len(recs), err)
			}
			bases = append(bases, h.BaseOffset)
			recs = recs[h.TotalSize():]
		}
		if p.ErrorCode != 0 || !slices.Equal(bases, wantBatches[p.Partition]) {
			t.Fatalf("partition %d: error %d, batches at %v, want %v", p.Partition, p.ErrorCode, bases, wantBatches[p.Partition])
		}
	}
	for _, corr := range produces {
		if _, err := c.readFrame(); err != nil {
			t.Fatalf("produce %d: %v", corr, err)
		}
	}
	// Every response written is off the connection's queue again (a
	// response whose size was counted after its buffer went back to a
	// pool left its bytes queued forever, and the connection stalled
	// once 4 MiB had piled up).
	sc := serverConnOf(t, n, c)
	deadline := time.Now().Add(30 * time.Second)
	for {
		sc.queued.Lock()
		q := sc.queued.bytes
		sc.queued.Unlock()
		if q == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d response bytes still queued after every response was read", q)
		}
		runtime.Gosched()
	}
}

// serverConnOf returns the broker's side of the raw client's connection.
func serverConnOf(t *testing.T, n *Node, c *rawClient) *conn {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n.srv.mu.Lock()
		for x := range n.srv.mu.conns {
			if x.nc.RemoteAddr().String() == c.nc.LocalAddr().String() {
				n.srv.mu.Unlock()
				return x
			}
		}
		n.srv.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("no server connection for the client")
		}
		runtime.Gosched()
	}
}

// TestMuteDelaysReading: the quota hook. A response carrying a throttle
// mutes the connection's reader from when it is written: waitUnmuted
// blocks until the throttle time passed (a later, shorter mute does not
// shorten it), returns at once when not muted, and gives up when the
// server stops. Runs on synctest's fake clock.
func TestMuteDelaysReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &conn{}
		done := make(chan struct{})
		if !c.waitUnmuted(done) {
			t.Fatal("an unmuted connection waited")
		}
		c.afterResponse(&outgoing{throttle: time.Second})
		c.muteFor(10 * time.Millisecond) // does not shorten the second
		start := time.Now()
		returned := make(chan bool, 1)
		go func() { returned <- c.waitUnmuted(done) }()
		synctest.Wait()
		select {
		case <-returned:
			t.Fatal("the reader did not wait for the throttle")
		default:
		}
		if ok := <-returned; !ok || time.Since(start) != time.Second {
			t.Fatalf("waitUnmuted returned %v after %v, want true after 1s", ok, time.Since(start))
		}
		c.muteFor(time.Hour)
		go func() { returned <- c.waitUnmuted(done) }()
		synctest.Wait()
		close(done)
		if <-returned {
			t.Fatal("waitUnmuted reported unmuted after the server stopped")
		}
	})
}
