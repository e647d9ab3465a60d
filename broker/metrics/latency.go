package metrics

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// latency is a histogram of request times over the last few minutes, for
// the quantiles of Kafka's RequestMetrics (TotalTimeMs, ...), whose Yammer
// reservoirs also favour recent minutes. Observing is a few atomic adds:
// the values go into log-spaced buckets (four per power of two, so a
// quantile is off by at most about 10% after interpolation) of the slot of
// the current minute; a scrape sums the slots of the last windowMinutes
// minutes. A slot is cleared when its minute comes round again; adds that
// race with that clear may be lost or kept, which a quantile tolerates.
//
// prometheus.Summary was the first choice: it cost about 300 ns a request
// per summary (a mutex, time.Now and stream compression).
type latency struct {
	count atomic.Uint64 // every observation since start, for _count
	slots [windowMinutes + 1]latencySlot
}

type latencySlot struct {
	minute atomic.Int64 // Unix minute the counts belong to
	counts [numBuckets]atomic.Uint64
}

const (
	windowMinutes = 5
	// numBuckets covers 0 µs to about 38 hours; longer goes in the last.
	numBuckets  = 8 + (maxExponent-4)*4 + 4
	maxExponent = 38
)

// bucketOf maps microseconds to a bucket: exact below 8, then four
// buckets per power of two.
func bucketOf(us uint64) int {
	if us < 8 {
		return int(us)
	}
	e := bits.Len64(us)
	if e > maxExponent {
		return numBuckets - 1
	}
	return 8 + (e-4)*4 + int((us>>(e-3))&3)
}

// bucketBounds is the range [lo, lo+width) of microseconds of bucket i.
func bucketBounds(i int) (lo, width float64) {
	if i < 8 {
		return float64(i), 1
	}
	k := i - 8
	e, m := k/4+4, k%4
	return float64(uint64(4+m) << (e - 3)), float64(uint64(1) << (e - 3))
}

// observe adds one duration at time now.
func (l *latency) observe(d time.Duration, now int64) {
	l.count.Add(1)
	us := uint64(max(d, 0) / time.Microsecond)
	minute := now / int64(time.Minute)
	s := &l.slots[minute%int64(len(l.slots))]
	if old := s.minute.Load(); old != minute && s.minute.CompareAndSwap(old, minute) {
		for i := range s.counts {
			s.counts[i].Store(0)
		}
	}
	s.counts[bucketOf(us)].Add(1)
}

// quantiles returns the value in milliseconds of each q in qs (ascending)
// over the window ending at now, and false when the window is empty.
func (l *latency) quantiles(now int64, qs []float64) ([]float64, bool) {
	var sum [numBuckets]uint64
	var total uint64
	minute := now / int64(time.Minute)
	for i := range l.slots {
		s := &l.slots[i]
		if m := s.minute.Load(); m > minute || m < minute-windowMinutes {
			continue
		}
		for b := range s.counts {
			n := s.counts[b].Load()
			sum[b] += n
			total += n
		}
	}
	if total == 0 {
		return nil, false
	}
	out := make([]float64, len(qs))
	b, below := 0, uint64(0) // below: observations in buckets before b
	for i, q := range qs {
		rank := q * float64(total)
		for b < numBuckets-1 && float64(below+sum[b]) < rank {
			below += sum[b]
			b++
		}
		lo, width := bucketBounds(b)
		frac := 0.0
		if sum[b] > 0 {
			frac = min(max((rank-float64(below))/float64(sum[b]), 0), 1)
		}
		out[i] = (lo + frac*width) / 1000
	}
	return out, true
}
