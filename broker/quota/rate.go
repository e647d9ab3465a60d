package quota

import (
	"slices"
	"time"
)

// Rate is a rate measured over samples windows of window each, in the
// shape of Kafka's sampled Rate stat: a value goes into the current
// sample, a new sample starts once the current one is window old (the
// oldest slot is reused), and a sample stops counting once it started
// samples×window ago. Not safe for concurrent use.
//
// Where it departs from Kafka's Rate, on purpose: Kafka divides by the
// time since the oldest sample still kept, stretched to samples-1 windows
// (so 10 to 11 s with the defaults, jumping back by a window each time a
// whole window passes), while the bytes it counts may be up to samples
// windows old, and its throttle, (rate - quota) / quota × that span,
// assumes no sample expires meanwhile. A client that sends as fast as it
// may then moves in irregular steps around its quota (compat-tests/
// quota_test.go measured Kafka 4.4 at 0.86 to 1.10 of the quota over 36 s,
// depending on batch size and where the steps fall). Here the span is the
// whole samples×window once the client has been active that long (a new
// client is counted as having samples-1 idle windows behind it, which
// gives the same first burst as Kafka), and ThrottleTime is the exact
// time until the rate is back within the quota, samples expiring during
// the wait included, so such a client is held to its quota (measured at
// 1.015 and 1.016 of it).
type Rate struct {
	window  time.Duration
	samples []sample
	current int
	// first is when the client's current activity began: the first
	// record into an empty rate.
	first time.Time
}

type sample struct {
	start time.Time
	value float64
	used  bool
}

// NewRate returns an empty rate of n samples of window each (n >= 2).
func NewRate(window time.Duration, n int) *Rate {
	return &Rate{window: window, samples: make([]sample, max(n, 2))}
}

func (r *Rate) span() time.Duration { return time.Duration(len(r.samples)) * r.window }

// Record adds v at now.
func (r *Rate) Record(v float64, now time.Time) {
	r.purge(now)
	s := &r.samples[r.current]
	switch {
	case !s.used:
		*s = sample{start: now, used: true}
	case now.Sub(s.start) >= r.window:
		r.current = (r.current + 1) % len(r.samples)
		s = &r.samples[r.current]
		*s = sample{start: now, used: true}
	}
	if r.first.IsZero() {
		r.first = now
	}
	s.value += v
}

// purge forgets the samples that started samples×window ago or more,
// and the activity's start once none is left.
func (r *Rate) purge(now time.Time) {
	any := false
	for i := range r.samples {
		s := &r.samples[i]
		if s.used && now.Sub(s.start) >= r.span() {
			*s = sample{}
		}
		any = any || s.used
	}
	if !any {
		r.first = time.Time{}
	}
}

// windowAt is the span the rate is measured over at t (no purge): the
// whole samples×window, or for a client active for less than one
// window, samples-1 windows plus its activity so far.
func (r *Rate) windowAt(t time.Time) time.Duration {
	if r.first.IsZero() {
		return r.span() - r.window
	}
	return min(t.Sub(r.first)+r.span()-r.window, r.span())
}

// Window returns the span the rate is measured over at now.
func (r *Rate) Window(now time.Time) time.Duration {
	r.purge(now)
	return max(r.windowAt(now), time.Millisecond)
}

func (r *Rate) total() float64 {
	total := 0.0
	for _, s := range r.samples {
		if s.used {
			total += s.value
		}
	}
	return total
}

// Sum returns the total of the samples still counted at now.
func (r *Rate) Sum(now time.Time) float64 {
	r.purge(now)
	return r.total()
}

// Measure returns the rate per second at now.
func (r *Rate) Measure(now time.Time) float64 {
	w := r.Window(now)
	return r.total() / w.Seconds()
}

// ThrottleTime returns how long a client over bound at now must wait
// until its rate is back within bound if it records nothing meanwhile:
// the samples that expire during the wait count, and the span may grow.
// 0 when the rate is within the bound.
func (r *Rate) ThrottleTime(bound float64, now time.Time) time.Duration {
	r.purge(now)
	remaining := r.total()
	if bound <= 0 || remaining <= bound*r.windowAt(now).Seconds() {
		return 0
	}
	var used []sample
	for _, s := range r.samples {
		if s.used {
			used = append(used, s)
		}
	}
	slices.SortFunc(used, func(a, b sample) int { return a.start.Compare(b.start) })
	from := now
	for _, s := range used {
		expiry := s.start.Add(r.span())
		// need is the span over which what is left is exactly the
		// bound; the span grows with time up to samples×window.
		need := time.Duration(remaining / bound * float64(time.Second))
		if need <= r.span() {
			at := r.first.Add(need - (r.span() - r.window))
			if at.Before(from) {
				at = from
			}
			if at.Before(expiry) {
				return roundMillis(at.Sub(now))
			}
		}
		remaining -= s.value
		from = expiry
		if remaining <= 0 {
			break
		}
	}
	return roundMillis(from.Sub(now))
}

// roundMillis rounds d to whole milliseconds (throttle_time_ms), up.
func roundMillis(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}
