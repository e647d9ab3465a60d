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
	// quotaBatch bounds produce batches and fetched bytes per partition:
	// a request is accepted before its client is throttled, so a client
	// runs about half a request per 11 s ahead of its quota (1 MiB
	// batches: about 5%).
	quotaBatch = 256 << 10
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

// steadyRate returns the client's rate in its steady state, and the
// span it was measured over.
//
// A client that sends as fast as it may moves in steps: its first burst
// spends the credit of a new client (10 s of quota), and each time the
// sample that holds a burst expires, 11 s later, it sends the bytes it
// frees at once (Kafka 4.4 does the same, at about 10/11 of the quota:
// run with SAMSA_QUOTA_KAFKA=1). So the rate is measured from the end of
// the first burst to the end of the last one, at the same height of a
// step; with fewer than two bursts, from the first throttle to the end.
func (q *quotaTimeline) steadyRate() (rate float64, span time.Duration, bursts int, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	// One point per acknowledgement time (a batch's records come
	// together).
	var pts []quotaPoint
	for _, p := range q.points {
		if n := len(pts); n > 0 && pts[n-1].at == p.at {
			pts[n-1] = p
		} else {
			pts = append(pts, p)
		}
	}
	// A point is in a burst when at least 4 MB came in the 1.5 s before
	// it (between bursts the client moves at most the quota's pace). A
	// burst ends at its last point reached at more than twice the
	// quota's pace.
	before := func(t time.Duration) int64 {
		var b int64
		for _, p := range pts {
			if p.at > t {
				break
			}
			b = p.bytes
		}
		return b
	}
	in := make([]bool, len(pts))
	for i, p := range pts {
		in[i] = p.bytes-before(p.at-1500*time.Millisecond) >= 4e6
	}
	var ends []quotaPoint
	for i := 0; i < len(pts); i++ {
		if !in[i] {
			continue
		}
		j := i
		for j+1 < len(pts) && in[j+1] {
			j++
		}
		k := j
		for k > i && float64(pts[k].bytes-pts[k-1].bytes)/(pts[k].at-pts[k-1].at).Seconds() < 2*quotaRate {
			k--
		}
		ends = append(ends, pts[k])
		i = j
	}
	var a, b quotaPoint
	if len(ends) >= 2 {
		a, b = ends[0], ends[len(ends)-1]
	} else {
		first := -1
		for i, p := range pts {
			if p.throttled > 0 {
				first = i
				break
			}
		}
		if first < 0 {
			return 0, 0, len(ends), false
		}
		a, b = pts[first], pts[len(pts)-1]
	}
	if b.at <= a.at {
		return 0, 0, len(ends), false
	}
	return float64(b.bytes-a.bytes) / (b.at - a.at).Seconds(), b.at - a.at, len(ends), true
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
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(quotaBatch))
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

	alts := []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: ptrTo("quota-producer")}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quotaRate}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: ptrTo("quota-consumer")}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: quotaRate}}},
	}
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
			kgo.WithHooks(prod), kgo.MaxBufferedRecords(500), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.ProducerBatchMaxBytes(quotaBatch))
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
			kgo.WithHooks(cons), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(quotaBatch))
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
		if f := os.Getenv("SAMSA_QUOTA_DUMP"); f != "" {
			var sb strings.Builder
			for _, p := range c.tl.points {
				fmt.Fprintf(&sb, "%.3f %d %d\n", p.at.Seconds(), p.bytes, p.throttled)
			}
			os.WriteFile(f+"."+name+"."+c.what, []byte(sb.String()), 0o644)
		}
		rate, span, bursts, ok := c.tl.steadyRate()
		t.Logf("%s %s: %.3f MB/s over %v of steady state (%d bursts); %d throttles reported, %v in all; %.1f MB in %v; timeline (s:MB/throttles):%s",
			name, c.what, rate/1e6, span.Round(time.Millisecond), bursts, c.tl.throttles, c.tl.throttled.Round(time.Millisecond),
			float64(c.tl.bytes)/1e6, quotaRun, c.tl.summary())
		switch {
		case !ok:
			t.Errorf("%s %s: no steady state measured", name, c.what)
		case name != "samsa":
			// Kafka's figures are for comparison only.
		case c.tl.throttles == 0:
			t.Errorf("%s %s: the client never reported a throttle", name, c.what)
		case span < 10*time.Second:
			t.Errorf("%s %s: steady state of %v, want at least 10s", name, c.what, span)
		case rate < 0.9*quotaRate || rate > 1.1*quotaRate:
			t.Errorf("%s %s: %.3f MB/s, want %.1f MB/s within 10%%", name, c.what, rate/1e6, quotaRate/1e6)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestClientQuotaKafkaConfigs sets, describes and deletes client quotas
// with Kafka's kafka-configs tool (users, clients, their defaults and the
// user/client-id pair), and checks an invalid value is refused.
func TestClientQuotaKafkaConfigs(t *testing.T) {
	t.Parallel()
	kafkaref.Require(t)
	b := harness.Start(t, harness.Options{})
	run := func(wantOK bool, args ...string) string {
		t.Helper()
		cmd := kafkaref.Tool(t, "kafka-configs", append([]string{"--bootstrap-server", b.Addr}, args...)...)
		out, err := cmd.CombinedOutput()
		if (err == nil) != wantOK {
			t.Fatalf("kafka-configs %s: err %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(true, "--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")
	run(true, "--alter", "--entity-type", "clients", "--entity-default", "--add-config", "request_percentage=50.5")
	run(true, "--alter", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app", "--add-config", "controller_mutation_rate=10")
	run(true, "--alter", "--entity-type", "users", "--entity-default", "--add-config", "producer_byte_rate=4096")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--entity-type", "users", "--entity-name", "alice"}, []string{"Quota configs for user-principal 'alice' are", "producer_byte_rate=1048576.0", "consumer_byte_rate=2097152.0"}},
		{[]string{"--entity-type", "clients", "--entity-default"}, []string{"Quota configs for the default client-id are request_percentage=50.5"}},
		{[]string{"--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app"}, []string{"Quota configs for user-principal 'alice', client-id 'app' are controller_mutation_rate=10.0"}},
		{[]string{"--entity-type", "users", "--entity-default"}, []string{"Quota configs for the default user-principal are producer_byte_rate=4096.0"}},
		{[]string{"--entity-type", "users"}, []string{"user-principal 'alice'", "the default user-principal"}},
	} {
		out := run(true, append([]string{"--describe"}, c.args...)...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("describe %v: output lacks %q:\n%s", c.args, w, out)
			}
		}
	}
	run(true, "--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "producer_byte_rate")
	if out := run(true, "--describe", "--entity-type", "users", "--entity-name", "alice"); strings.Contains(out, "producer_byte_rate") || !strings.Contains(out, "consumer_byte_rate=2097152.0") {
		t.Errorf("after --delete-config producer_byte_rate:\n%s", out)
	}
	if out := run(false, "--alter", "--entity-type", "users", "--entity-name", "bob", "--add-config", "producer_byte_rate=1.5"); !strings.Contains(out, "producer_byte_rate cannot be a fractional value") {
		t.Errorf("fractional producer_byte_rate:\n%s", out)
	}
}

// TestClientQuotaJavaProducer: Kafka's Java producer (kafka-producer-perf-test)
// held to 1 MB/s reports the broker's throttle in its own metrics
// (produce-throttle-time-max), after its first 10 s of credit.
func TestClientQuotaJavaProducer(t *testing.T) {
	t.Parallel()
	kafkaref.Require(t)
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 3*time.Minute)
	_, adm := newAdmin(t, b.Addr)
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "quota-java"); err != nil || r.Err != nil {
		t.Fatalf("CreateTopic: %v / %v", err, r.Err)
	}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: ptrTo("quota-java")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quotaRate}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("AlterClientQuotas: %v %+v", err, res)
	}
	// 16 MB: the 10 MB of a new client's credit, then about 6 s held
	// to the quota.
	start := time.Now()
	out, err := kafkaref.Tool(t, "kafka-producer-perf-test", "--topic", "quota-java", "--num-records", "1600", "--record-size", "10000",
		"--throughput", "-1", "--print-metrics", "--producer-props", "bootstrap.servers="+b.Addr, "client.id=quota-java",
		"compression.type=none", "batch.size=262144", "linger.ms=5").CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-producer-perf-test: %v\n%s", err, out)
	}
	took := time.Since(start)
	var summary, throttleAvg, throttleMax string
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.Contains(line, "records sent"):
			summary = strings.TrimSpace(line)
		case strings.HasPrefix(line, "producer-metrics:produce-throttle-time-avg:"):
			throttleAvg = strings.TrimSpace(line[strings.LastIndex(line, ":")+1:])
		case strings.HasPrefix(line, "producer-metrics:produce-throttle-time-max:"):
			throttleMax = strings.TrimSpace(line[strings.LastIndex(line, ":")+1:])
		}
	}
	t.Logf("Java producer, 16 MB at 1 MB/s: %s; produce-throttle-time-avg %s ms, max %s ms; %v with the JVM's start", summary, throttleAvg, throttleMax, took.Round(time.Millisecond))
	if throttleMax == "" || strings.HasPrefix(throttleMax, "0.0") || strings.HasPrefix(throttleMax, "NaN") {
		t.Errorf("the Java producer reported no throttle (produce-throttle-time-max %q)\n%s", throttleMax, out)
	}
	if took < 5*time.Second {
		t.Errorf("16 MB went out in %v against a 1 MB/s quota", took)
	}
}
