package broker

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	sharepart "github.com/samsa-broker/samsa/broker/share"
	sharestate "github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/storage"
)

// readCounter is a share state store that counts reads.
type readCounter struct {
	mu    sync.Mutex
	reads int
}

func (p *readCounter) Initialize(context.Context, sharestate.Key, int32, int64) error { return nil }
func (p *readCounter) Read(context.Context, sharestate.Key, int32) (sharestate.State, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reads++
	return sharestate.State{StartOffset: 0}, true, nil
}
func (p *readCounter) Write(context.Context, sharestate.Key, sharestate.State) error { return nil }
func (p *readCounter) Delete(context.Context, sharestate.Key) error                  { return nil }
func (p *readCounter) ReadSummary(context.Context, sharestate.Key) (sharestate.State, bool, error) {
	return sharestate.State{}, false, nil
}
func (p *readCounter) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reads
}

// TestReconcileSharePartitions: a share-partition stays loaded while this
// node leads its partition at the same epoch, and is dropped (its state
// read again when next served) once the image says otherwise.
func TestReconcileSharePartitions(t *testing.T) {
	n := startTestNode(t, t.TempDir())
	defer closeTestNode(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addrs()[0].String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	created, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "sq")
	if err != nil || created.Err != nil {
		t.Fatal(err, created.Err)
	}
	var rp interface{ Log() *storage.Log }
	for rp == nil {
		if p, ok := n.replicas.Partition(storage.TopicPartition{Topic: "sq"}); ok && p.State().LeaderEpoch >= 0 {
			rp = p
		} else if ctx.Err() != nil {
			t.Fatal("partition not hosted")
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	p := &readCounter{}
	m := newSharePartitions(n.cfg, p, nil, slog.New(slog.DiscardHandler))
	defer m.Close()
	img := n.ctrl.Image()
	id := img.Topics["sq"].ID
	tg := sharepart.Target{Key: sharestate.Key{Group: "g", TopicID: id, Partition: 0}, Log: rp.Log(), LeaderEpoch: img.Topics["sq"].Partitions[0].LeaderEpoch}
	fetch := func() {
		if res := m.Fetch(ctx, tg, sharepart.FetchRequest{Member: "a", MaxBytes: 1000}); res.Code != 0 {
			t.Fatalf("fetch: %d", res.Code)
		}
	}
	fetch()
	reconcileSharePartitions(m, img, n.replicas)
	fetch()
	if p.count() != 1 {
		t.Fatalf("%d reads while leading at the same epoch, want 1", p.count())
	}
	// An image without the topic: dropped.
	img2 := *img
	img2.TopicsByID = nil
	reconcileSharePartitions(m, &img2, n.replicas)
	fetch()
	if p.count() != 2 {
		t.Fatalf("%d reads after the partition left, want 2", p.count())
	}
}
