package sharecoord

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/storage/vfs"
)

// TestPersisterLocal: a Persister on the node leading every state
// partition. While the state topic does not exist it asks for it
// (CreateTopic) and retries; then calls go to the local coordinator, none
// over the wire. A summary of a share-partition initialized at state
// epoch 0 with no start offset, never read by a leader, is "not
// initialized", as a remote answer would read.
func TestPersisterLocal(t *testing.T) {
	ls := testLogs(t, vfs.NewMem(), 3, false)
	defer closeLogs(t, ls)
	c := startCoordinator(t, ls)
	defer c.Close()
	var created atomic.Int32
	p, err := NewPersister(RouterOptions{
		Local:  c,
		NodeID: 7,
		Leaders: func() []int32 {
			if created.Load() == 0 {
				return nil
			}
			return []int32{7, 7, 7}
		},
		CreateTopic: func(context.Context) error { created.Add(1); return nil },
		Send: func(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
			t.Errorf("sent %s to broker %d", kmsg.NameForKey(req.Key()), broker)
			return nil, errors.New("no network here")
		},
		RetryBackoff: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	k := testKey("g", 0)
	wantErr(t, "Initialize", p.Initialize(ctx, k, 0, -1), nil)
	if created.Load() != 1 {
		t.Fatalf("CreateTopic called %d times, want 1", created.Load())
	}
	if _, ok, err := p.ReadSummary(ctx, k); ok || err != nil {
		t.Fatalf("ReadSummary of a share-partition with nothing yet: ok %v err %v", ok, err)
	}
	if _, ok, err := p.Read(ctx, k, 1); !ok || err != nil {
		t.Fatalf("Read: ok %v err %v", ok, err)
	}
	if st, ok, err := p.ReadSummary(ctx, k); !ok || err != nil || st.LeaderEpoch != 1 {
		t.Fatalf("ReadSummary after a leader read: %+v %v %v", st, ok, err)
	}
	// Not retriable: answered at once.
	wantErr(t, "stale Write", p.Write(ctx, k, share.State{LeaderEpoch: 0}), kerr.FencedLeaderEpoch)

	// A partition with no leader is retried until the context ends, then
	// reported as COORDINATOR_NOT_AVAILABLE.
	q, err := NewPersister(RouterOptions{Local: c, NodeID: 7, Leaders: func() []int32 { return []int32{-1, -1, -1} },
		Send: func(context.Context, int32, kmsg.Request) (kmsg.Response, error) { return nil, errors.New("unused") }, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	err = q.Delete(short, k)
	if !errors.Is(err, kerr.CoordinatorNotAvailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Delete with no leader: %v, want COORDINATOR_NOT_AVAILABLE after the deadline", err)
	}
}
