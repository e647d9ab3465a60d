package replica

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// benchCluster starts the three-node cluster of the cluster tests in real
// time (no synctest bubble: the fetchers and waits run on the machine's
// clock, as in the broker), its logs in files as a broker's, and waits
// until the ISR holds all three nodes.
func benchCluster(b *testing.B) *cluster {
	b.Helper()
	c := startCluster(b, 2, b.TempDir(), func(int32) *slog.Logger { return slog.New(slog.DiscardHandler) })
	// The followers' first fetches may come before the leader applied
	// the image (UNKNOWN_TOPIC_ID, a backoff of replica.fetch.backoff.ms
	// by default): poll until the ISR is full, with a deadline.
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for len(c.image().ISR) != 3 || len(c.part(1).State().ISR) != 3 {
		if time.Now().After(deadline) {
			b.Fatalf("ISR not full after 60 s: image %v", c.image().ISR)
		}
		<-tick.C
	}
	return c
}

// benchBatch encodes a batch of n records of size bytes.
func benchBatch(b *testing.B, n, size int) []byte {
	b.Helper()
	recs := make([]wire.Record, n)
	value := make([]byte, size)
	for i := range recs {
		recs[i] = wire.Record{Value: value}
	}
	batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(), Records: recs})
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

// commitOne appends batch on the leader with acks=-1 and waits until the
// high watermark passes it, as an acks=all produce does.
func commitOne(leader *Partition, batch []byte) error {
	buf := slices.Clone(batch)
	info, epoch, code, err := leader.AppendAsLeader(-1, func(l *storage.Log, e int32) (storage.AppendInfo, error) {
		wire.SetPartitionLeaderEpoch(buf, e)
		return l.Append(buf)
	})
	if err != nil || code != 0 {
		return fmt.Errorf("append: code %d, %v", code, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if code := leader.WaitForHighWatermark(ctx, epoch, info.LastOffset+1); code != 0 {
		return fmt.Errorf("wait for the high watermark: code %d", code)
	}
	return nil
}

// BenchmarkAcksAllCommit is one acks=all produce at a time (a batch of
// one 1 KiB record) on a three-node cluster with min.insync.replicas 2:
// ns/op is the commit latency (leader append, both followers' fetch round
// trips, high watermark), fetches/op the follower fetches it took.
func BenchmarkAcksAllCommit(b *testing.B) {
	c := benchCluster(b)
	leader := c.part(1)
	batch := benchBatch(b, 1, 1024)
	b.ReportAllocs()
	start := c.net.fetches.Load()
	b.ResetTimer()
	for range b.N {
		if err := commitOne(leader, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(c.net.fetches.Load()-start)/float64(b.N), "fetches/op")
}

// BenchmarkAcksAllPipelined is four producers each with one acks=all
// batch of 16 x 1 KiB in flight at a time, as a client with several
// requests in flight: MB/s is the replicated throughput, fetches/op the
// follower fetches per batch.
func BenchmarkAcksAllPipelined(b *testing.B) {
	c := benchCluster(b)
	leader := c.part(1)
	batch := benchBatch(b, 16, 1024)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	start := c.net.fetches.Load()
	b.ResetTimer()
	const producers = 4
	var wg sync.WaitGroup
	for w := range producers {
		wg.Go(func() {
			for i := w; i < b.N; i += producers {
				if err := commitOne(leader, batch); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(c.net.fetches.Load()-start)/float64(b.N), "fetches/op")
}
