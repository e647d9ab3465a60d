package shards

import (
	"context"
	"maps"
	"slices"
	"sync"
)

// Shard is one partition's state machine as a Set runs it.
type Shard interface {
	// Run reads the partition's log, then serves it until ctx is done.
	Run(ctx context.Context)
	// Ready is closed when the load ended, well or not.
	Ready() <-chan struct{}
	// Done is closed when Run returns.
	Done() <-chan struct{}
}

// Set is the running shards of one coordinator, by partition. Its methods
// are safe for concurrent use.
type Set[S Shard] struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu struct {
		sync.RWMutex
		runs   map[int32]*run[S]
		closed bool
	}
}

// run is a running shard and how to stop it.
type run[S Shard] struct {
	shard  S
	cancel context.CancelFunc
}

// New returns a Set with no partition loaded.
func New[S Shard]() *Set[S] {
	s := &Set[S]{}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.runs = map[int32]*run[S]{}
	return s
}

// Load starts the shard newShard returns for partition p, running it in a
// goroutine of its own, unless p is loaded (or loading) already. It
// returns false, starting nothing, once the set is closed.
func (s *Set[S]) Load(p int32, newShard func() S) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return false
	}
	if _, ok := s.mu.runs[p]; ok {
		return true
	}
	ctx, cancel := context.WithCancel(s.ctx)
	sh := newShard()
	s.mu.runs[p] = &run[S]{shard: sh, cancel: cancel}
	s.wg.Go(func() { sh.Run(ctx) })
	return true
}

// Unload stops partition p's shard and waits until its Run returned;
// requests then find no shard for p. It does nothing when p is not loaded.
func (s *Set[S]) Unload(p int32) {
	s.mu.Lock()
	r := s.mu.runs[p]
	delete(s.mu.runs, p)
	s.mu.Unlock()
	if r != nil {
		r.cancel()
		<-r.shard.Done()
	}
}

// Get returns partition p's shard, false when p is not loaded.
func (s *Set[S]) Get(p int32) (S, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.mu.runs[p]
	if !ok {
		var zero S
		return zero, false
	}
	return r.shard, true
}

// List returns the loaded shards in partition order.
func (s *Set[S]) List() []S {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]S, 0, len(s.mu.runs))
	for _, p := range slices.Sorted(maps.Keys(s.mu.runs)) {
		out = append(out, s.mu.runs[p].shard)
	}
	return out
}

// WaitLoaded waits until every shard loaded when it is called has read
// its log (or stopped), or ctx is done.
func (s *Set[S]) WaitLoaded(ctx context.Context) error {
	for _, sh := range s.List() {
		select {
		case <-sh.Ready():
		case <-sh.Done():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Go runs fn in a goroutine of the set (a coordinator's background work
// beside its shards): Close cancels fn's ctx and waits for it to return.
func (s *Set[S]) Go(fn func(ctx context.Context)) {
	s.wg.Go(func() { fn(s.ctx) })
}

// Close stops every shard and goroutine of the set and waits for them to
// return. Load starts nothing after it.
func (s *Set[S]) Close() {
	s.mu.Lock()
	s.mu.closed = true
	s.mu.runs = map[int32]*run[S]{}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}
