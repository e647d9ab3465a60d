package shards

import (
	"context"
	"errors"
	"testing"
	"time"
)

// testShard is a Shard whose load ends when loaded is closed.
type testShard struct {
	partition int32
	loaded    chan struct{}
	ready     chan struct{}
	done      chan struct{}
	started   chan struct{}
}

func newTestShard(p int32) *testShard {
	return &testShard{partition: p, loaded: make(chan struct{}), ready: make(chan struct{}), done: make(chan struct{}), started: make(chan struct{})}
}

func (t *testShard) Run(ctx context.Context) {
	defer close(t.done)
	close(t.started)
	select {
	case <-t.loaded:
		close(t.ready)
	case <-ctx.Done():
		return
	}
	<-ctx.Done()
}

func (t *testShard) Ready() <-chan struct{} { return t.ready }
func (t *testShard) Done() <-chan struct{}  { return t.done }

// waitClosed fails the test unless ch is closed within a generous bound
// (the machine may be loaded).
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("%s: not closed", what)
	}
}

// TestSetLifecycle: a partition loads once, is found while loaded, waits
// for its load, and stops on Unload and Close; nothing loads after Close.
func TestSetLifecycle(t *testing.T) {
	set := New[*testShard]()
	made := map[int32]*testShard{}
	load := func(p int32) bool {
		return set.Load(p, func() *testShard {
			if made[p] != nil {
				t.Fatalf("partition %d made twice while loaded", p)
			}
			made[p] = newTestShard(p)
			return made[p]
		})
	}
	for _, p := range []int32{3, 1, 3} {
		if !load(p) {
			t.Fatalf("load %d refused", p)
		}
	}
	if got := set.List(); len(got) != 2 || got[0].partition != 1 || got[1].partition != 3 {
		t.Fatalf("List: %v", got)
	}
	if s, ok := set.Get(3); !ok || s != made[3] {
		t.Fatalf("Get(3): %v %v", s, ok)
	}
	if _, ok := set.Get(2); ok {
		t.Fatal("Get(2) of a partition never loaded")
	}

	// WaitLoaded waits for every load: with one still reading, it
	// returns only at its context's end.
	close(made[1].loaded)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	waitClosed(t, made[3].started, "shard 3 started")
	if err := set.WaitLoaded(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitLoaded with a load in progress: %v", err)
	}
	close(made[3].loaded)
	if err := set.WaitLoaded(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Unload stops the shard before it returns; a new load makes a new
	// shard.
	set.Unload(3)
	select {
	case <-made[3].done:
	default:
		t.Fatal("Unload returned before the shard stopped")
	}
	if _, ok := set.Get(3); ok {
		t.Fatal("Get(3) after Unload")
	}
	set.Unload(3) // not loaded: nothing
	old := made[3]
	delete(made, 3)
	if !load(3) || made[3] == old {
		t.Fatal("reload of 3 did not make a new shard")
	}

	// Close stops the shards and the set's other goroutines.
	bgDone := make(chan struct{})
	set.Go(func(ctx context.Context) {
		defer close(bgDone)
		<-ctx.Done()
	})
	set.Close()
	for p, s := range made {
		select {
		case <-s.done:
		default:
			t.Fatalf("shard %d still running after Close", p)
		}
	}
	select {
	case <-bgDone:
	default:
		t.Fatal("Go's goroutine still running after Close")
	}
	if load(5) {
		t.Fatal("load after Close accepted")
	}
	if got := set.List(); len(got) != 0 {
		t.Fatalf("List after Close: %v", got)
	}
	if err := set.WaitLoaded(context.Background()); err != nil {
		t.Fatal(err)
	}
}
