package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// e2eSplit splits the end-to-end latency of -mode e2e (one process) into
// where each record spent it, for -e2e-split:
//
//	sent      just before Produce (the value's first 8 bytes)
//	acked     the producer's promise ran (the produce response was read)
//	buffered  the consumer decoded the record from a fetch response
//	          (franz-go's OnFetchRecordBuffered hook)
//	polled    PollFetches returned it to the load tool
//
// So sent→acked is the produce round trip, sent→buffered is the broker's
// part (append, high watermark, long-poll wake-up, response write) plus
// both clients' network reads, and buffered→polled is the consumer
// client's hand-off to the polling goroutine: time in the measuring
// process, not in the broker. The report also gives the load tool's own
// scheduling latency and garbage collections (runtime/metrics), since a
// goroutine of the measuring process that runs late adds to every figure.
//
// Times are nanoseconds since the run's base (the monotonic clock), 0
// when not seen. Record i's slots are written by franz-go's goroutines and
// read after the run (atomics, so the race detector agrees).
type e2eSplit struct {
	base     time.Time
	acked    []atomic.Int64
	buffered []atomic.Int64
	sent     []int64
	polled   []int64
	// rt0 is the process's runtime metrics at the start.
	rt0 []metrics.Sample
}

func newE2ESplit(base time.Time, n int) *e2eSplit {
	s := &e2eSplit{base: base, acked: make([]atomic.Int64, n), buffered: make([]atomic.Int64, n),
		sent: make([]int64, n), polled: make([]int64, n)}
	s.rt0 = readRuntime()
	return s
}

// recordIndex is the record's sequence number, in the value's last 8 bytes.
func recordIndex(v []byte) int { return int(binary.BigEndian.Uint64(v[len(v)-8:])) }

// OnFetchRecordBuffered implements kgo.HookFetchRecordBuffered.
func (s *e2eSplit) OnFetchRecordBuffered(r *kgo.Record) {
	if i := recordIndex(r.Value); i >= 0 && i < len(s.buffered) {
		s.buffered[i].Store(int64(time.Since(s.base)))
	}
}

func (s *e2eSplit) ack(i int) {
	if i >= 0 && i < len(s.acked) {
		s.acked[i].Store(int64(time.Since(s.base)))
	}
}

func (s *e2eSplit) poll(i int, sent, now time.Duration) {
	if i >= 0 && i < len(s.sent) {
		s.sent[i], s.polled[i] = int64(sent), int64(now)
	}
}

// setE2EGOGC sets the load tool's garbage collection target for -mode e2e
// to -e2e-gogc unless the environment sets GOGC. At the default target
// (100) the tool, whose live heap is a few MB, collected about ten times a
// second at 10,000 records/s (-e2e-split's count, 69-118 collections in
// 10 s), and each collection takes one of the two processors of a 2-core
// machine for its mark phase: time the measuring process, not the broker,
// adds to the records of that moment. A load tool's memory does not
// matter; its collections are a measurement artefact.
func setE2EGOGC() {
	if _, set := os.LookupEnv("GOGC"); set || e2eGOGC <= 0 {
		return
	}
	debug.SetGCPercent(e2eGOGC)
}

// runtimeNames are the runtime metrics the report gives.
var runtimeNames = []string{
	"/sched/latencies:seconds",          // runnable to running, per goroutine wake-up
	"/gc/cycles/total:gc-cycles",        // collections
	"/sched/pauses/total/gc:seconds",    // stop-the-world pauses of the collector
	"/cpu/classes/gc/total:cpu-seconds", // CPU the collector took
	"/cpu/classes/user:cpu-seconds",     // the program itself, GC left out
}

func readRuntime() []metrics.Sample {
	s := make([]metrics.Sample, len(runtimeNames))
	for i, n := range runtimeNames {
		s[i].Name = n
	}
	metrics.Read(s)
	return s
}

// histQuantile is the upper bound of the bucket holding quantile q of the
// counts of h minus those of h0 (the same histogram read earlier).
func histQuantile(h0, h *metrics.Float64Histogram, q float64) float64 {
	var total uint64
	for i := range h.Counts {
		total += h.Counts[i] - h0.Counts[i]
	}
	if total == 0 {
		return 0
	}
	want := min(uint64(q*float64(total)), total-1)
	var seen uint64
	for i := range h.Counts {
		seen += h.Counts[i] - h0.Counts[i]
		if seen > want {
			return h.Buckets[i+1]
		}
	}
	return h.Buckets[len(h.Buckets)-1]
}

// report prints the split for the records at or after skip, and, for the
// records whose end-to-end latency is at or above the p99, the median of
// each part: which part the tail comes from.
//
// interval is the sender's schedule (record i is due at i*interval after
// the base): the report gives how late the sends were against it, and
// how many left less than a tenth of the interval after the one before
// (sent in a burst rather than paced).
func (s *e2eSplit) report(skip int, interval time.Duration) {
	type rec struct{ e2e, ack, fetch, poll time.Duration }
	var all []rec
	for i := skip; i < len(s.sent); i++ {
		if s.polled[i] == 0 || s.buffered[i].Load() == 0 || s.acked[i].Load() == 0 {
			continue
		}
		sent, b, a := s.sent[i], s.buffered[i].Load(), s.acked[i].Load()
		all = append(all, rec{e2e: time.Duration(s.polled[i] - sent), ack: time.Duration(a - sent),
			fetch: time.Duration(b - sent), poll: time.Duration(s.polled[i] - b)})
	}
	if len(all) == 0 {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	pct := func(get func(rec) time.Duration, rs []rec, q float64) float64 {
		v := make([]time.Duration, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		slices.Sort(v)
		return ms(v[min(int(q*float64(len(v))), len(v)-1)])
	}
	parts := []struct {
		name string
		get  func(rec) time.Duration
	}{
		{"e2e (sent->polled)", func(r rec) time.Duration { return r.e2e }},
		{"produce ack (sent->acked)", func(r rec) time.Duration { return r.ack }},
		{"to consumer (sent->buffered)", func(r rec) time.Duration { return r.fetch }},
		{"consumer hand-off (buffered->polled)", func(r rec) time.Duration { return r.poll }},
	}
	slices.SortFunc(all, func(a, b rec) int { return int(a.e2e - b.e2e) })
	tail := all[min(int(0.99*float64(len(all))), len(all)-1):]
	fmt.Printf("e2e split, %d records (ms):       p50     p99   p99.9   | median over the %d records at or above the e2e p99\n", len(all), len(tail))
	for _, p := range parts {
		fmt.Printf("  %-38s %7.2f %7.2f %7.2f   | %7.2f\n", p.name, pct(p.get, all, 0.5), pct(p.get, all, 0.99), pct(p.get, all, 0.999), pct(p.get, tail, 0.5))
	}
	var late []time.Duration
	bursts := 0
	for i := max(skip, 1); i < len(s.sent); i++ {
		if s.sent[i] == 0 || s.sent[i-1] == 0 {
			continue
		}
		late = append(late, time.Duration(s.sent[i])-time.Duration(i)*interval)
		if time.Duration(s.sent[i]-s.sent[i-1]) < interval/10 {
			bursts++
		}
	}
	if len(late) > 0 {
		slices.Sort(late)
		q := func(f float64) float64 { return ms(late[min(int(f*float64(len(late))), len(late)-1)]) }
		fmt.Printf("  sender: late against its schedule p50 %.3f ms, p99 %.3f ms, max %.3f ms; %.1f%% of sends less than %v after the one before\n",
			q(0.5), q(0.99), q(1), 100*float64(bursts)/float64(len(late)), interval/10)
	}
	rt := readRuntime()
	h0, h := s.rt0[0].Value.Float64Histogram(), rt[0].Value.Float64Histogram()
	gcs := rt[1].Value.Uint64() - s.rt0[1].Value.Uint64()
	p0, p := s.rt0[2].Value.Float64Histogram(), rt[2].Value.Float64Histogram()
	gcCPU := rt[3].Value.Float64() - s.rt0[3].Value.Float64()
	cpu := rt[4].Value.Float64() - s.rt0[4].Value.Float64()
	fmt.Printf("  load tool: goroutine scheduling latency p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms; %d GCs, GC pause p99 %.3f ms, max %.3f ms; GC %.1f%% of its CPU (%.2f s)\n",
		1000*histQuantile(h0, h, 0.5), 1000*histQuantile(h0, h, 0.99), 1000*histQuantile(h0, h, 0.999),
		gcs, 1000*histQuantile(p0, p, 0.99), 1000*histQuantile(p0, p, 1), 100*gcCPU/max(cpu+gcCPU, 1e-9), cpu+gcCPU)
}
