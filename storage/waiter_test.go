package storage

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// TestWaiterFiresOnlyForWatchedLogs: a Waiter watching logs a and b is
// signalled by high watermark moves of a and b, and names only those; a
// high watermark move of the unwatched log c signals nothing; a change
// between Changes and Watch fires at once; Unwatch stops it; each key is
// reported once however often its log changed.
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
	mustAppend(t, b, testBatch(1, 0, 10))
	b.SetHighWatermark(1) // before Watch: must not be missed
	a.Watch(w, 0, sinceA)
	b.Watch(w, 1, sinceB)
	if !signalled(w) {
		t.Fatal("a change between Changes and Watch did not fire")
	}
	if got := w.Fired(nil); !slices.Equal(got, []int{1}) {
		t.Fatalf("fired %v, want [1]", got)
	}

	mustAppend(t, c, testBatch(1, 0, 10))
	c.SetHighWatermark(1)
	if signalled(w) {
		t.Fatal("a change of an unwatched log fired")
	}
	mustAppend(t, a, testBatch(1, 0, 10))
	a.SetHighWatermark(1)
	mustAppend(t, a, testBatch(1, 0, 10))
	a.SetHighWatermark(2)
	mustAppend(t, b, testBatch(1, 0, 10))
	b.SetHighWatermark(2)
	if !signalled(w) {
		t.Fatal("high watermark moves of watched logs did not fire")
	}
	if got := w.Fired(nil); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("fired %v, want [0 1] (each once, in order)", got)
	}

	b.Unwatch(w)
	mustAppend(t, b, testBatch(1, 0, 10))
	b.SetHighWatermark(3)
	if signalled(w) || len(w.Fired(nil)) != 0 {
		t.Fatal("an unwatched log fired")
	}
	a.Unwatch(w)
}

// TestWaiterWakesOnHighWatermarkNotOnAppend: a long poll reads up to the
// high watermark, so an append alone does not fire its Waiter (nothing new
// is readable yet); the high watermark passing the appended batches does,
// once; so do a truncation and the log's close. Regression: every append
// fired the Waiters and the high watermark move right after it fired them
// again, so a long poll at one in-sync replica woke twice per record, the
// first time for nothing. Wait's channel (followers, acks=all produces)
// still closes at every append.
func TestWaiterWakesOnHighWatermarkNotOnAppend(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), "/hw", smallConfig(), newClock())
	defer l.Close()
	signalled := func(w *Waiter) bool {
		select {
		case <-w.C():
			return true
		default:
			return false
		}
	}
	w := NewWaiter()
	l.Watch(w, 7, l.Changes())
	defer l.Unwatch(w)

	waitCh := l.Wait()
	mustAppend(t, l, testBatch(1, 0, 10))
	select {
	case <-waitCh:
	default:
		t.Fatal("an append did not close Wait's channel")
	}
	if signalled(w) {
		t.Fatal("an append below the high watermark fired the Waiter")
	}
	since := l.Changes()
	mustAppend(t, l, testBatch(1, 0, 10))
	if l.Changes() != since {
		t.Fatal("an append counted as a change a Waiter fires on")
	}
	l.SetHighWatermark(2)
	if !signalled(w) {
		t.Fatal("the high watermark passing the appends did not fire")
	}
	if got := w.Fired(nil); !slices.Equal(got, []int{7}) {
		t.Fatalf("fired %v, want [7]", got)
	}
	l.SetHighWatermark(2) // no move
	if signalled(w) {
		t.Fatal("a high watermark that did not move fired")
	}
	if err := l.TruncateTo(1); err != nil {
		t.Fatal(err)
	}
	if !signalled(w) {
		t.Fatal("a truncation did not fire")
	}
	w.Fired(nil)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !signalled(w) {
		t.Fatal("the log's close did not fire")
	}
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

// BenchmarkLongPollWakeupsPerRecord: a long poll parked on a log while
// records are appended one at a time and the high watermark follows each
// at once (one in-sync replica, as replica.Partition.AppendAsLeader does);
// each record waits until the long poll has seen it, as a consumer's next
// fetch parks only after the answer. wakes/op is how often the long
// poll's goroutine woke per record: up to 2 while appends fired Waiters
// (the append, which found nothing below the high watermark, then the
// high watermark), 1 since.
//
//	go test ./storage -run '^$' -bench LongPollWakeups -benchtime 20000x
func BenchmarkLongPollWakeupsPerRecord(b *testing.B) {
	l := openTestLog(b, vfs.NewMem(), "/lp", DefaultLogConfig(), newClock())
	defer l.Close()
	w := NewWaiter()
	l.Watch(w, 0, l.Changes())
	defer l.Unwatch(w)
	var wakes atomic.Int64
	seen := make(chan int64, 1) // each new high watermark the long poll saw
	stop := make(chan struct{})
	polled := make(chan struct{})
	last := l.HighWatermark()
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			case <-w.C():
			}
			wakes.Add(1)
			w.Fired(nil)
			if hw := l.HighWatermark(); hw > last {
				last = hw
				seen <- hw
			}
		}
	}()
	batch := testBatch(1, 0, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		info := mustAppend(b, l, batch)
		l.SetHighWatermark(info.LastOffset + 1)
		for hw := int64(-1); hw < info.LastOffset+1; {
			hw = <-seen
		}
	}
	b.StopTimer()
	close(stop)
	<-polled
	b.ReportMetric(float64(wakes.Load())/float64(b.N), "wakes/op")
}
