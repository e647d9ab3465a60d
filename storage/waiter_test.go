package storage

import (
	"fmt"
	"slices"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// TestWaiterFiresOnlyForWatchedLogs: a Waiter watching logs a and b is
// signalled by an append to a and by a high watermark move of b, and
// names only those; an append to the unwatched log c signals nothing; a
// change between Changes and Watch fires at once; Unwatch stops it; each
// key is reported once however often its log changed.
func TestWaiterFiresOnlyForWatchedLogs(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	logs := make([]*Log, 3)
	for i := range logs {
		logs[i] = openTestLog(t, fsys, fmt.Sprintf("/w-%d", i), smallConfig(), clock)
		defer logs[i].Close()
	}
	a, b, c := logs[0], logs[1], logs[2]
	signalled := func(w *Waiter) bool {
		select {
		case <-w.C():
			return true
		default:
			return false
		}
	}

	w := NewWaiter()
	sinceA, sinceB := a.Changes(), b.Changes()
	mustAppend(t, b, testBatch(1, 0, 10)) // before Watch: must not be missed
	a.Watch(w, 0, sinceA)
	b.Watch(w, 1, sinceB)
	if !signalled(w) {
		t.Fatal("a change between Changes and Watch did not fire")
	}
	if got := w.Fired(nil); !slices.Equal(got, []int{1}) {
		t.Fatalf("fired %v, want [1]", got)
	}

	mustAppend(t, c, testBatch(1, 0, 10))
	if signalled(w) {
		t.Fatal("an append to an unwatched log fired")
	}
	mustAppend(t, a, testBatch(1, 0, 10))
	mustAppend(t, a, testBatch(1, 0, 10))
	b.SetHighWatermark(1)
	if !signalled(w) {
		t.Fatal("appends to a watched log did not fire")
	}
	if got := w.Fired(nil); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("fired %v, want [0 1] (each once, in order)", got)
	}

	b.Unwatch(w)
	mustAppend(t, b, testBatch(1, 0, 10))
	if signalled(w) || len(w.Fired(nil)) != 0 {
		t.Fatal("an unwatched log fired")
	}
	a.Unwatch(w)
}

// BenchmarkAppendWithIdleWaiters: appends to one log while many long
// polls watch other logs (and a few watch this one). The cost of an append
// does not depend on the idle watchers of other logs.
func BenchmarkAppendWithIdleWaiters(b *testing.B) {
	for _, idle := range []int{0, 1000, 10000} {
		b.Run(fmt.Sprintf("idle=%d", idle), func(b *testing.B) {
			fsys := vfs.NewMem()
			clock := newClock()
			target := openTestLog(b, fsys, "/target", DefaultLogConfig(), clock)
			defer target.Close()
			others := make([]*Log, 10)
			for i := range others {
				others[i] = openTestLog(b, fsys, fmt.Sprintf("/other-%d", i), DefaultLogConfig(), clock)
				defer others[i].Close()
			}
			for i := range idle {
				w := NewWaiter()
				l := others[i%len(others)]
				l.Watch(w, i, l.Changes())
			}
			batch := testBatch(1, 0, 100)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := target.Append(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
