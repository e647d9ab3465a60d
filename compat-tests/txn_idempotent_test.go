// This file checks that an idempotent producer whose produce responses are lost with
// the connection leaves no duplicate behind: a TCP proxy between franz-go and the broker
// forwards some produce requests, lets the broker answer them (so the batch is in the
// log), then cuts the connection instead of passing the response on. The client resends
// the same batch with the same producer id, epoch and sequence on a new connection, and
// the broker must answer it as a duplicate instead of appending it again.

package compattests

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// dropProxy is a frame-aware TCP proxy. Every dropEvery-th produce request it forwards
// (counted over all connections, up to maxDrops times) has its response swallowed: when
// the broker's answer with that correlation id arrives, both connections are closed.
type dropProxy struct {
	ln        net.Listener
	target    string
	dropEvery int64
	maxDrops  int64

	produces atomic.Int64 // produce requests forwarded
	drops    atomic.Int64 // responses swallowed

	wg sync.WaitGroup
}

func startDropProxy(t *testing.T, target string, dropEvery, maxDrops int64) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &dropProxy{ln: ln, target: target, dropEvery: dropEvery, maxDrops: maxDrops}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *dropProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(client, server)
	}
}

// readFrame reads one size-prefixed Kafka frame, prefix included.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 256<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	frame := make([]byte, 4+n)
	copy(frame, size[:])
	if _, err := io.ReadFull(r, frame[4:]); err != nil {
		return nil, err
	}
	return frame, nil
}

// serve pumps frames both ways for one client connection. Requests carry
// key(int16) version(int16) correlation(int32) after the size; responses start with
// the correlation id.
func (p *dropProxy) serve(client, server net.Conn) {
	defer p.wg.Done()
	var doomed sync.Map // correlation id -> struct{}
	closeBoth := func() {
		client.Close()
		server.Close()
	}
	var inner sync.WaitGroup
	inner.Add(1)
	go func() {
		defer inner.Done()
		defer closeBoth()
		for {
			frame, err := readFrame(client)
			if err != nil || len(frame) < 12 {
				return
			}
			if int16(binary.BigEndian.Uint16(frame[4:6])) == int16(kmsg.Produce) {
				n := p.produces.Add(1)
				if n%p.dropEvery == 0 && p.drops.Load() < p.maxDrops {
					doomed.Store(int32(binary.BigEndian.Uint32(frame[8:12])), struct{}{})
				}
			}
			if _, err := server.Write(frame); err != nil {
				return
			}
		}
	}()
	func() {
		defer closeBoth()
		for {
			frame, err := readFrame(server)
			if err != nil || len(frame) < 8 {
				return
			}
			if _, ok := doomed.Load(int32(binary.BigEndian.Uint32(frame[4:8]))); ok {
				if p.drops.Add(1) <= p.maxDrops {
					return // the broker has answered; the client never hears it
				}
			}
			if _, err := client.Write(frame); err != nil {
				return
			}
		}
	}()
	inner.Wait()
}

// TestIdempotentRetryOverDroppedConnection produces numbered records per partition with
// franz-go's default idempotent producer through a dropProxy, then reads every partition
// back directly from the broker: each record must be there exactly once, in order.
func TestIdempotentRetryOverDroppedConnection(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 90*time.Second)
	_, adm := newAdmin(t, b.Addr)
	const topic, partitions, perPartition = "idempotent-dropped-responses", 3, 1000
	createTopicKadm(t, ctx, adm, topic, partitions, nil)

	proxy := startDropProxy(t, b.Addr, 5, 6)
	var d net.Dialer
	producer, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr),
		// Every connection, whatever address metadata advertises, goes through the proxy.
		kgo.Dialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, proxy.ln.Addr().String())
		}),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Millisecond),
		kgo.MaxBufferedRecords(30),
		kgo.RetryTimeout(30*time.Second),
	)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer producer.Close()

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for seq := 0; seq < perPartition; seq++ {
		for p := int32(0); p < partitions; p++ {
			wg.Add(1)
			r := &kgo.Record{Partition: p, Key: []byte(strconv.Itoa(int(p))), Value: []byte(strconv.Itoa(seq))}
			producer.Produce(ctx, r, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce through the proxy: %v", firstErr)
	}
	drops := proxy.drops.Load()
	t.Logf("%d produce requests through the proxy, %d responses dropped with the connection", proxy.produces.Load(), min(drops, proxy.maxDrops))
	if drops < 3 {
		t.Fatalf("only %d produce responses were dropped; the test did not exercise retries", drops)
	}

	got := consumeAll(t, ctx, b.Addr, adm, topic)
	for p := int32(0); p < partitions; p++ {
		recs := got[p]
		if len(recs) != perPartition {
			t.Errorf("partition %d holds %d records, want %d (duplicates or losses)", p, len(recs), perPartition)
		}
		for i, r := range recs {
			if seq, err := strconv.Atoi(string(r.Value)); err != nil || seq != i {
				t.Errorf("partition %d: record %d (offset %d) holds %q, want %d", p, i, r.Offset, r.Value, i)
				break
			}
		}
	}
}
