package main

import (
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestFailuresMixedTypes: errors of different concrete types added from
// several goroutines are all counted, the first is kept, and nothing
// panics (atomic.Value's CompareAndSwap, used before, panicked on the
// second type).
func TestFailuresMixedTypes(t *testing.T) {
	var f failures
	if f.count() != 0 || f.err() != nil {
		t.Fatalf("empty: %d %v", f.count(), f.err())
	}
	f.add(kerr.NotLeaderForPartition)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if i%2 == 0 {
				f.add(context.DeadlineExceeded)
			} else {
				f.add(kerr.RequestTimedOut)
			}
		})
	}
	wg.Wait()
	if f.count() != 9 || f.err() != kerr.NotLeaderForPartition {
		t.Fatalf("count %d, first %v", f.count(), f.err())
	}
}
