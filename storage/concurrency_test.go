package storage

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// TestConcurrentAppendReadRetention runs readers, a long-poll waiter and
// retention against a writer; run with -race. Readers must only ever see
// intact batches, or ErrOffsetOutOfRange for offsets retention removed.
func TestConcurrentAppendReadRetention(t *testing.T) {
	clock := newClock()
	cfg := smallConfig()
	cfg.RetentionBytes = 20_000
	cfg.RetentionMs = -1
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", cfg, clock)
	defer l.Close()
	const appends = 2000
	var done atomic.Bool
	finished := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	report := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	wg.Add(1)
	go func() { // writer
		defer wg.Done()
		defer close(finished)
		defer done.Store(true)
		for i := 0; i < appends; i++ {
			if _, err := l.Append(testBatch(1+i%4, 1000, 30)); err != nil {
				report(err)
				return
			}
			l.SetHighWatermark(l.LogEndOffset())
		}
	}()
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() { // readers
			defer wg.Done()
			var next int64
			for !done.Load() || next < l.HighWatermark() {
				// Take the wait channel before reading the high watermark,
				// so an advance between the two is not missed.
				wait := l.Wait()
				hw := l.HighWatermark()
				if next >= hw {
					select {
					case <-wait:
					case <-finished:
					}
					continue
				}
				b, err := l.Read(next, 4096, hw, true)
				if errors.Is(err, ErrOffsetOutOfRange) {
					next = l.LogStartOffset()
					continue
				}
				if err != nil {
					report(err)
					return
				}
				for len(b) > 0 {
					h, err := parseBatchHeader(b)
					if err != nil || batchCRC(b[:h.TotalSize()]) != h.CRC || h.LastOffset() < next {
						report(errors.New("bad batch read"))
						return
					}
					next = h.LastOffset() + 1
					b = b[h.TotalSize():]
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // retention and timestamp lookups
		defer wg.Done()
		for !done.Load() {
			if _, err := l.EnforceRetention(clock.now()); err != nil {
				report(err)
				return
			}
			l.OffsetForTimestamp(1000)
			l.MaxTimestamp()
			l.Size()
		}
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if l.LogStartOffset() == 0 {
		t.Fatal("retention never ran")
	}
	readAll(t, l, l.LogStartOffset())
}
