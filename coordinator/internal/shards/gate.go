package shards

import (
	"context"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Gate is how callers hand a shard goroutine work (Call), and what they
// are told while the shard does not serve. A shard keeps one (NewGate);
// its Run marks the load's end with Loaded or LoadFailed, receives the
// work from Work, calls Unload as it shuts down and Close when it returns.
type Gate struct {
	work    chan func()
	done    chan struct{} // closed when the shard's Run returns
	loaded  atomic.Bool
	loadErr atomic.Pointer[error]
}

// NewGate returns the Gate of a shard that has not loaded yet.
func NewGate() *Gate {
	return &Gate{work: make(chan func()), done: make(chan struct{})}
}

// Work is where the shard goroutine receives the closures Call hands it.
func (g *Gate) Work() <-chan func() { return g.work }

// Done is closed by Close, when the shard's Run returns.
func (g *Gate) Done() <-chan struct{} { return g.done }

// Close marks the shard stopped; its Run calls it once, as it returns.
func (g *Gate) Close() { close(g.done) }

// Loaded marks the shard's load done: it serves.
func (g *Gate) Loaded() { g.loaded.Store(true) }

// LoadFailed records that the shard's load failed with err: it does not
// serve.
func (g *Gate) LoadFailed(err error) { g.loadErr.Store(&err) }

// Unload marks the shard no longer serving, as it shuts down.
func (g *Gate) Unload() { g.loaded.Store(false) }

// NotServingCode is the error code for work sent to a shard that is not
// serving: still loading, failed to load, or stopped (0: serving).
func (g *Gate) NotServingCode() int16 {
	select {
	case <-g.done:
		return kerr.NotCoordinator.Code
	default:
	}
	if g.loadErr.Load() != nil {
		// As Kafka's CoordinatorRuntime for a coordinator whose load
		// failed (state FAILED, until a later leader epoch loads it).
		return kerr.NotCoordinator.Code
	}
	if !g.loaded.Load() {
		return kerr.CoordinatorLoadInProgress.Code
	}
	return 0
}

// Call runs fn on the shard goroutine and waits for it; it returns 0 once
// fn ran. Otherwise it returns NotServingCode's code, NOT_COORDINATOR when
// the shard stops before taking fn, COORDINATOR_NOT_AVAILABLE when ctx
// ends first, or UNKNOWN_SERVER_ERROR when fn panicked (the shard goroutine
// recovers and logs it).
func (g *Gate) Call(ctx context.Context, fn func()) int16 {
	if code := g.NotServingCode(); code != 0 {
		return code
	}
	ran := make(chan struct{})
	completed := false // read after <-ran: close happens after the write
	select {
	case g.work <- func() { defer close(ran); fn(); completed = true }:
	case <-g.done:
		return kerr.NotCoordinator.Code
	case <-ctx.Done():
		return kerr.CoordinatorNotAvailable.Code
	}
	<-ran
	if !completed {
		return kerr.UnknownServerError.Code
	}
	return 0
}
