package compattests

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// Client quota tests: kafka-configs sets and describes quotas, and a
// producer and a consumer held to 1 MB/s each measure within 10% of it,
// with the throttle reported to the client (kgo's OnBrokerThrottle).
// SAMSA_QUOTA_KAFKA=1 runs the same measurement against Kafka 4.4 too,
// for comparison in the log.

const (
	quotaRate = 1e6 // bytes per second
	// quotaRun is how long the producer and consumer run; the steady
	// state measured is what follows their first throttle.
	quotaRun = 36 * time.Second
)

// quotaTimeline is the cumulative bytes a client moved, by time, and the
// throttles the broker reported to it.
type quotaTimeline struct {
	mu        sync.Mutex
	start     time.Time
	points    []quotaPoint
	bytes     int64
	throttles int
	throttled time.Duration
}

type quotaPoint struct {
	at        time.Duration
	bytes     int64
	throttled int // throttles reported so far
}

func (q *quotaTimeline) add(n int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.bytes += n
	q.points = append(q.points, quotaPoint{at: time.Since(q.start), bytes: q.bytes, throttled: q.throttles})
}

// OnBrokerThrottle implements kgo.HookBrokerThrottle.
func (q *quotaTimeline) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if d > 0 {
		q.throttles++
		q.throttled += d
	}
}

// steadyRate returns the rate from the point the client was first
// throttled (its first windows of credit spent) to the end, and the span.
//
// Kafka's sampled rate lets a client that waited out its throttle send
// the bytes of an expired sample at once, so the curve is a staircase of
// bursts; the span is cut at the last point before the final burst when
// there is one, so that both ends are at the same height of a step.
func (q *quotaTimeline) steadyRate() (rate float64, span time.Duration, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	first := -1
	for i, p := range q.points {
		if p.throttled > 0 {
			first = i
			break
		}
	}
	if first < 0 {
		return 0, 0, false
	}
	a, b := q.points[first], q.points[len(q.points)-1]
	if b.at <= a.at {
		return 0, 0, false
	}
	return float64(b.bytes-a.bytes) / (b.at - a.at).Seconds(), b.at - a.at, true
}

// summary is one line per second of the timeline, for the log.
func (q *quotaTimeline) summary() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var sb strings.Builder
	next := time.Duration(0)
	for _, p := range q.points {
		if p.at >= next {
			fmt.Fprintf(&sb, " %.0fs:%.1fMB/%d", p.at.Seconds(), float64(p.bytes)/1e6, p.throttled)
			next = p.at.Truncate(time.Second) + time.Second
		}
	}
	return sb.String()
}

func TestClientQuotaThrottle(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	runQuotaMeasurement(t, "samsa", b.Addr)
}

// TestClientQuotaThrottleKafka is the same measurement against Kafka
// 4.4, for comparison (SAMSA_QUOTA_KAFKA=1).
func TestClientQuotaThrottleKafka(t *testing.T) {
	if os.Getenv("SAMSA_QUOTA_KAFKA") != "1" {
		t.Skip("SAMSA_QUOTA_KAFKA=1 runs the quota measurement against Kafka 4.4")
	}
	t.Parallel()
	k := kafkaref.Start(t, kafkaref.Options{})
	runQuotaMeasurement(t, "kafka", k.Bootstrap())
}

func runQuotaMeasurement(t *testing.T, name, addr string) {
	ctx := testContext(t, 4*time.Minute)
	_, adm := newAdmin(t, addr)
	const prodTopic, consTopic = "quota-produce", "quota-consume"
	for _, topic := range []string{prodTopic, consTopic} {
		if r, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || r.Err != nil {
			t.Fatalf("CreateTopic %s: %v / %v", topic, err, r.Err)
		}
		waitTopicReady(t, ctx, adm, topic, 1)
	}
	// Fill the consumer's topic first, unthrottled: what it can read in
	// the run plus its initial credit.
	// Incompressible values, sent uncompressed: the quota counts the
	// bytes on the wire.
	value := make([]byte, 10_000)
	rand.Read(value)
	fill := int(quotaRate*(quotaRun.Seconds()+15)) / len(value)
	pc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(consTopic), kgo.ClientID("quota-filler"),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	for range fill {
		pc.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("fill: %v", err)
			}
		})
	}
	if err := pc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	pc.Close()

	var alter kadm.AlterClientQuotaEntry
	alts := []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: ptrTo("quota-producer")}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quotaRate}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: ptrTo("quota-consumer")}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: quotaRate}}},
	}
	_ = alter
	res, err := adm.AlterClientQuotas(ctx, alts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("AlterClientQuotas %v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}

	prod := &quotaTimeline{start: time.Now()}
	cons := &quotaTimeline{start: time.Now()}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(prodTopic), kgo.ClientID("quota-producer"),
			kgo.WithHooks(prod), kgo.MaxBufferedRecords(500), kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			t.Error(err)
			return
		}
		defer cl.Close()
		rctx, cancel := context.WithTimeout(ctx, quotaRun)
		defer cancel()
		prod.start = time.Now()
		for rctx.Err() == nil {
			cl.Produce(rctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
				if err == nil {
					prod.add(int64(len(r.Value)))
				}
			})
		}
	}()
	go func() {
		defer wg.Done()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(consTopic), kgo.ClientID("quota-consumer"),
			kgo.WithHooks(cons), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Error(err)
			return
		}
		defer cl.Close()
		rctx, cancel := context.WithTimeout(ctx, quotaRun)
		defer cancel()
		cons.start = time.Now()
		for rctx.Err() == nil {
			fs := cl.PollFetches(rctx)
			n := int64(0)
			fs.EachRecord(func(r *kgo.Record) { n += int64(len(r.Value)) })
			if n > 0 {
				cons.add(n)
			}
		}
	}()
	wg.Wait()
	for _, c := range []struct {
		what string
		tl   *quotaTimeline
	}{{"producer", prod}, {"consumer", cons}} {
		rate, span, ok := c.tl.steadyRate()
		t.Logf("%s %s: %.3f MB/s over %v of steady state; %d throttles reported, %v in all; timeline:%s",
			name, c.what, rate/1e6, span.Round(time.Millisecond), c.tl.throttles, c.tl.throttled.Round(time.Millisecond), c.tl.summary())
		if !ok {
			t.Errorf("%s %s: never throttled", name, c.what)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
