package storage

import "sync"

// Waiter waits for changes of many logs at once and says which of them
// changed, so that a long-poll fetch over many partitions (Kafka's
// DelayedFetch, watched by every partition it reads) costs each append
// only the waiters of that partition, and costs a woken waiter only the
// partitions that changed: no channel per partition to select over, no
// re-read of every partition per wake-up.
//
// A Waiter watches a log under a key of its caller's choosing (a fetch
// uses the partition's index in the request). A change is what a consumer
// can see: a high watermark move, a truncation or the log's close. An
// append alone is not one: consumers read up to the high watermark, so the
// batches an append adds become readable only when the high watermark
// passes them, and that move fires the Waiter (SetHighWatermark). Firing
// on the append as well used to cost a long poll two wake-ups per record
// where the high watermark follows each append at once (one in-sync
// replica): the first found nothing new to read and went back to wait.
// Those who wait for the log end offset (followers' fetches, served by the
// replica layer) use Wait's channel, which every append closes.
//
//	w := storage.NewWaiter()
//	since := l.Changes() // before reading, like taking Wait's channel
//	... read l ...
//	l.Watch(w, 0, since)
//	defer l.Unwatch(w)
//	<-w.C()
//	keys := w.Fired(nil) // [0]
type Waiter struct {
	ch chan struct{} // capacity 1: a signal is pending
	mu struct {
		sync.Mutex
		fired  []int  // keys fired since the last Fired, each once
		queued []bool // queued[key]: key is in fired (keys are small)
	}
}

// NewWaiter returns a Waiter watching nothing.
func NewWaiter() *Waiter { return &Waiter{ch: make(chan struct{}, 1)} }

// C receives once some watched log changed since the last Fired call (or
// since watching began).
func (w *Waiter) C() <-chan struct{} { return w.ch }

// Fired appends to dst the keys of the logs that changed since the last
// call, each once, in the order they changed, and forgets them.
func (w *Waiter) Fired(dst []int) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range w.mu.fired {
		w.mu.queued[k] = false
	}
	dst = append(dst, w.mu.fired...)
	w.mu.fired = w.mu.fired[:0]
	return dst
}

// fire records a change of the log watched under key.
// Lock order: Log.mu, then Waiter.mu.
func (w *Waiter) fire(key int) {
	w.mu.Lock()
	if key >= len(w.mu.queued) {
		w.mu.queued = append(w.mu.queued, make([]bool, key+1-len(w.mu.queued))...)
	}
	if !w.mu.queued[key] {
		w.mu.queued[key] = true
		w.mu.fired = append(w.mu.fired, key)
	}
	w.mu.Unlock()
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// Changes returns the log's count of the changes a Waiter fires on: take
// it before reading, then pass it to Watch, and a change in between is
// not missed.
func (l *Log) Changes() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.changes
}

// Watch makes w fire with key at every change of l until Unwatch, and at
// once if l changed since the count since (Changes) or is closed. Keys
// are small non-negative integers (indexes).
func (l *Log) Watch(w *Waiter, key int, since uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || l.mu.changes != since {
		w.fire(key)
		if l.mu.closed {
			return
		}
	}
	if l.mu.watchers == nil {
		l.mu.watchers = make(map[*Waiter]int)
	}
	l.mu.watchers[w] = key
}

// Unwatch stops l from firing w.
func (l *Log) Unwatch(w *Waiter) {
	l.mu.Lock()
	delete(l.mu.watchers, w)
	l.mu.Unlock()
}

// Extend appends next to s when next continues s in the same segment file
// (the batches appended while a long poll waited), taking over next's pin,
// and reports whether it did; otherwise both are left as they were.
func (s *FileSlice) Extend(next *FileSlice) bool {
	if next.Length == 0 || s.seg == nil || next.seg != s.seg || next.Offset != s.Offset+s.Length {
		return false
	}
	s.Length += next.Length
	s.LastOffset = next.LastOffset
	s.dropCache() // it held the old range only
	next.Release()
	return true
}
