package main

import (
	"slices"
	"testing"
	"time"
)

// TestPrecisePacingSleepsAtLeastAsked: the pacer's sleep never returns
// before its duration, signals (the runtime's preemption interrupts a
// nanosleep with EINTR) included, and done can be called after.
func TestPrecisePacingSleepsAtLeastAsked(t *testing.T) {
	sleep, done := precisePacing()
	defer done()
	for _, d := range []time.Duration{0, 50 * time.Microsecond, 2 * time.Millisecond} {
		start := time.Now()
		sleep(d)
		if took := time.Since(start); took < d {
			t.Fatalf("sleep(%v) returned after %v", d, took)
		}
	}
}

// BenchmarkPacerSleep100us: how long a 100 us pause of the e2e sender
// lasts with time.Sleep and with precisePacing (the gap between records
// at 10,000 records/s). It reports the median and p99 of what each pause
// took, in microseconds (no assertions: the machine's load moves them).
// On the 2-core machine of stop 24 (load about 40) time.Sleep took
// 1,090 us at the median, precisePacing 125 us: see pacer_linux.go.
//
//	go test ./cmd/samsa-load -run '^$' -bench Pacer -benchtime 3000x
func BenchmarkPacerSleep100us(b *testing.B) {
	run := func(b *testing.B, sleep func(time.Duration)) {
		took := make([]time.Duration, 0, b.N)
		for range b.N {
			start := time.Now()
			sleep(100 * time.Microsecond)
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-us")
		b.ReportMetric(float64(took[min(len(took)*99/100, len(took)-1)].Microseconds()), "p99-us")
	}
	b.Run("time.Sleep", func(b *testing.B) { run(b, time.Sleep) })
	b.Run("precisePacing", func(b *testing.B) {
		sleep, done := precisePacing()
		defer done()
		run(b, sleep)
	})
}
