package quota

import "time"

// Rate is a rate measured over samples windows of window each, as Kafka's
// sampled Rate stat: a value goes into the current sample, a new sample
// starts once the current one is window old (the oldest is reused), and
// samples older than samples×window no longer count. Not safe for
// concurrent use.
type Rate struct {
	window  time.Duration
	samples []sample
	current int
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

// Record adds v at now.
func (r *Rate) Record(v float64, now time.Time) {
	s := &r.samples[r.current]
	switch {
	case !s.used:
		*s = sample{start: now, used: true}
	case now.Sub(s.start) >= r.window:
		r.current = (r.current + 1) % len(r.samples)
		s = &r.samples[r.current]
		*s = sample{start: now, used: true}
	}
	s.value += v
}

// purge forgets the samples that ended before the measured span.
func (r *Rate) purge(now time.Time) {
	span := time.Duration(len(r.samples)) * r.window
	for i := range r.samples {
		if s := &r.samples[i]; s.used && now.Sub(s.start) >= span {
			*s = sample{}
		}
	}
}

// Window returns the span the rate is measured over at now: from the
// start of the oldest sample, and at least samples-1 whole windows (so
// that a new client is not judged on its first moments), at least 1 ms.
func (r *Rate) Window(now time.Time) time.Duration {
	r.purge(now)
	oldest := now
	for _, s := range r.samples {
		if s.used && s.start.Before(oldest) {
			oldest = s.start
		}
	}
	elapsed := now.Sub(oldest)
	full := int(elapsed / r.window)
	if minFull := len(r.samples) - 1; full < minFull {
		elapsed += time.Duration(minFull-full) * r.window
	}
	return max(elapsed, time.Millisecond)
}

// Measure returns the rate per second at now.
func (r *Rate) Measure(now time.Time) float64 {
	w := r.Window(now)
	total := 0.0
	for _, s := range r.samples {
		if s.used {
			total += s.value
		}
	}
	return total / w.Seconds()
}

// ThrottleTime returns how long a client whose rate at now exceeds bound
// must wait for its rate to come back to bound, as Kafka's
// QuotaUtils.throttleTime: (rate - bound) / bound × Window(now); 0 when
// the rate is within the bound.
func (r *Rate) ThrottleTime(bound float64, now time.Time) time.Duration {
	rate := r.Measure(now)
	if rate <= bound || bound <= 0 {
		return 0
	}
	ms := (rate - bound) / bound * float64(r.Window(now)) / float64(time.Millisecond)
	return time.Duration(ms+0.5) * time.Millisecond
}
