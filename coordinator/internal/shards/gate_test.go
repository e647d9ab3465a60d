package shards

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestGateCodes walks a Gate through a shard's life: the code a caller
// gets while the shard loads, serves, has a closure panic, stops taking
// work, fails its load and is closed.
func TestGateCodes(t *testing.T) {
	g := NewGate()
	ctx := t.Context()
	noop := func() {}
	if code := g.Call(ctx, noop); code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("loading: code %d, want COORDINATOR_LOAD_IN_PROGRESS", code)
	}
	g.Loaded()

	// A serving goroutine that recovers a panicking closure, as a
	// shard's guard does.
	stop := make(chan struct{})
	served := make(chan struct{})
	go func() {
		defer close(served)
		for {
			select {
			case fn := <-g.Work():
				func() {
					defer func() { _ = recover() }()
					fn()
				}()
			case <-stop:
				return
			}
		}
	}()
	ran := false
	if code := g.Call(ctx, func() { ran = true }); code != 0 || !ran {
		t.Fatalf("serving: code %d, ran %v; want 0 and the closure run", code, ran)
	}
	if code := g.Call(ctx, func() { panic("boom") }); code != kerr.UnknownServerError.Code {
		t.Fatalf("panicking closure: code %d, want UNKNOWN_SERVER_ERROR", code)
	}
	close(stop)
	<-served

	// Nobody takes the work: the caller's context decides.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if code := g.Call(cctx, noop); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("no taker, context ended: code %d, want COORDINATOR_NOT_AVAILABLE", code)
	}

	g.Unload()
	if code := g.NotServingCode(); code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("unloaded: code %d, want COORDINATOR_LOAD_IN_PROGRESS", code)
	}
	g.LoadFailed(errors.New("shards test: load failed"))
	if code := g.Call(ctx, noop); code != kerr.NotCoordinator.Code {
		t.Fatalf("load failed: code %d, want NOT_COORDINATOR", code)
	}
	g.Close()
	select {
	case <-g.Done():
	default:
		t.Fatal("Done not closed by Close")
	}
	closed := NewGate()
	closed.Loaded()
	closed.Close()
	if code := closed.Call(ctx, noop); code != kerr.NotCoordinator.Code {
		t.Fatalf("closed: code %d, want NOT_COORDINATOR", code)
	}
}
