package main

import (
	"sync"
	"sync/atomic"
)

// failures counts the failures of concurrent operations and keeps the
// first error. An atomic.Value would not do: its CompareAndSwap panics
// when a later error has another concrete type than the stored one (a
// kerr.Error, then a context error), even where the swap would fail.
type failures struct {
	n     atomic.Int64
	mu    sync.Mutex
	first error
}

// add counts err and keeps it if it is the first.
func (f *failures) add(err error) {
	f.n.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first == nil {
		f.first = err
	}
}

// count is the number of failures added.
func (f *failures) count() int64 { return f.n.Load() }

// err is the first error added, nil before any.
func (f *failures) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.first
}
