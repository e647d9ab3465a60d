package main

// -mode shapes: small loads of one shape each, to compare what a unit of work
// costs the broker (CPU microseconds per record, request, commit, transaction)
// against another broker on the same machine. Each shape runs for
// -shape-duration; with -broker-pid the broker's CPU time over the shape comes
// from /proc/PID/stat. On a shared machine the rates are noisy; the CPU per
// unit much less so.
//
//	parts-produce  -shape-clients producers, linger 0, 100 B records round-robin over
//	               -shape-partitions partitions (acks as -acks says)
//	parts-fetch    one consumer reads those partitions from the start
//	parts-idle     one consumer long-polls the same partitions at their end, no records
//	small-conns    -shape-conns clients, each one synchronous produce of one record at a time
//	               to a 6-partition topic (one request per record)
//	metadata       -shape-clients clients asking Metadata for all topics in a loop
//	listoffsets    -shape-clients clients asking the latest offset of every partition
//	commits        -shape-clients clients committing one offset of their own group in a loop
//	join           -shape-members consumers join one group on the partitioned topic; the
//	               time until every partition is assigned and every member holds some
//	txn            -shape-clients transactional producers, one record per transaction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shapeOptions are the -shape-* flags.
type shapeOptions struct {
	brokers    string
	acks       string
	shapes     []string
	duration   time.Duration
	partitions int
	clients    int
	conns      int
	members    int
	buffered   int
	size       int
}

// shapeResult is one shape's line.
type shapeResult struct {
	Shape            string  `json:"shape"`
	Unit             string  `json:"unit"`
	Ops              int64   `json:"ops"`
	Seconds          float64 `json:"seconds"`
	OpsPerSec        float64 `json:"ops_per_sec"`
	Requests         int64   `json:"requests,omitempty"`
	BrokerCPUSeconds float64 `json:"broker_cpu_s,omitempty"`
	BrokerCPUUsPerOp float64 `json:"broker_cpu_us_per_op,omitempty"`
	BrokerCPUPerSec  float64 `json:"broker_cpu_per_s,omitempty"`
}

// errShapes is returned for a shape that could not run.
var errShapes = errors.New("samsa-load: shapes")

// allShapes is the order -shapes all runs them in; parts-fetch and
// parts-idle read the topic parts-produce wrote.
var allShapes = []string{"parts-produce", "parts-fetch", "parts-idle", "small-conns", "metadata", "listoffsets", "commits", "join", "txn"}

// runShapes runs the shapes o names, in allShapes' order.
func runShapes(o shapeOptions) error {
	want := map[string]bool{}
	for _, s := range o.shapes {
		if s == "all" {
			for _, a := range allShapes {
				want[a] = true
			}
			continue
		}
		if !slices.Contains(allShapes, s) {
			return fmt.Errorf("%w: unknown shape %q (want %s or all)", errShapes, s, strings.Join(allShapes, ", "))
		}
		want[s] = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	admCl, err := kgo.NewClient(seed(o.brokers)...)
	if err != nil {
		return err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	stamp := time.Now().UnixNano()
	partsTopic := fmt.Sprintf("shapes-parts-%d", stamp)
	tc := time.Now()
	smallTopic := fmt.Sprintf("shapes-small-%d", stamp)
	if r, err := adm.CreateTopic(ctx, int32(o.partitions), int16(replicationFactor), nil, partsTopic); err != nil {
		return fmt.Errorf("create %s: %w (%s)", partsTopic, err, r.ErrMessage)
	}
	if r, err := adm.CreateTopic(ctx, 6, int16(replicationFactor), nil, smallTopic); err != nil {
		return fmt.Errorf("create %s: %w (%s)", smallTopic, err, r.ErrMessage)
	}
	fmt.Printf("shapes: CreateTopics answered in %.1fs\n", time.Since(tc).Seconds())
	if err := waitLeaders(ctx, adm, partsTopic, o.partitions); err != nil {
		return err
	}
	fmt.Printf("shapes: every partition has a leader after %.1fs\n", time.Since(tc).Seconds())
	// Kafka answers NOT_LEADER for a while after the metadata names the
	// leaders (it is still creating the logs): one record to every
	// partition first, outside every shape.
	t0 := time.Now()
	if err := warmPartitions(ctx, o.brokers, partsTopic, o.partitions); err != nil {
		return err
	}
	if err := warmPartitions(ctx, o.brokers, smallTopic, 6); err != nil {
		return err
	}
	fmt.Printf("shapes: topics of %d and 6 partitions created and written in %.1fs\n", o.partitions, time.Since(t0).Seconds())
	produced := int64(o.partitions)
	for _, s := range allShapes {
		if !want[s] {
			continue
		}
		var r shapeResult
		var err error
		stat := newShapeStat()
		switch s {
		case "parts-produce":
			r, err = shapeProduce(ctx, o, partsTopic, o.clients, false)
			produced += r.Ops
		case "parts-fetch":
			r, err = shapeFetch(ctx, o, partsTopic, produced)
		case "parts-idle":
			r, err = shapeIdle(ctx, o, partsTopic)
		case "small-conns":
			r, err = shapeProduce(ctx, o, smallTopic, o.conns, true)
		case "metadata":
			r, err = shapeRequests(ctx, o, "request", func() kmsg.Request { return kmsg.NewPtrMetadataRequest() })
		case "listoffsets":
			r, err = shapeRequests(ctx, o, "request", func() kmsg.Request { return listOffsetsAll(partsTopic, o.partitions) })
		case "commits":
			r, err = shapeCommits(ctx, o, smallTopic)
		case "join":
			r, err = shapeJoin(ctx, o, partsTopic)
		case "txn":
			r, err = shapeTxn(ctx, o, smallTopic)
		}
		if err != nil {
			return fmt.Errorf("shape %s: %w", s, err)
		}
		r.Shape = s
		stat.finish(&r)
		r.print()
	}
	return nil
}

// waitLeaders waits until every partition of topic has a leader in the
// metadata (Kafka answers CreateTopics before its leaders are known).
func waitLeaders(ctx context.Context, adm *kadm.Client, topic string, n int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		td, err := adm.ListTopics(ctx, topic)
		if err == nil {
			ok := 0
			for _, p := range td[topic].Partitions {
				if p.Err == nil && p.Leader >= 0 {
					ok++
				}
			}
			if ok == n {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s has no leader for every partition after 2 min", errShapes, topic)
		}
		time.Sleep(200 * time.Millisecond) // polling a remote broker: no condition to wait on
	}
}

// warmPartitions produces one record to each of topic's partitions and
// waits for all of them to be acknowledged.
func warmPartitions(ctx context.Context, brokers, topic string, partitions int) error {
	cl, err := kgo.NewClient(append(seed(brokers), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	rs := make([]*kgo.Record, partitions)
	for p := range rs {
		rs[p] = &kgo.Record{Partition: int32(p), Value: []byte("warm")}
	}
	return cl.ProduceSync(ctx, rs...).FirstErr()
}

// shapeStat is the broker's CPU time over one shape.
type shapeStat struct {
	start time.Time
	cpu0  time.Duration
}

func newShapeStat() *shapeStat {
	s := &shapeStat{start: time.Now()}
	s.cpu0, _ = brokerCPU()
	return s
}

// brokerCPU sums the CPU time of the -broker-pid processes.
func brokerCPU() (time.Duration, error) {
	var sum time.Duration
	for _, pid := range brokerPid {
		c, _, err := procUsage(pid)
		if err != nil {
			return 0, err
		}
		sum += c
	}
	return sum, nil
}

// finish sets r's broker CPU figures. r.Seconds is the measured span (set
// by the shape); the CPU covers the shape's set-up too, which is why shapes
// measure long enough for it not to matter.
func (s *shapeStat) finish(r *shapeResult) {
	if r.Seconds > 0 {
		r.OpsPerSec = float64(r.Ops) / r.Seconds
	}
	if len(brokerPid) == 0 {
		return
	}
	cpu, err := brokerCPU()
	if err != nil {
		return
	}
	r.BrokerCPUSeconds = (cpu - s.cpu0).Seconds()
	if r.Ops > 0 {
		r.BrokerCPUUsPerOp = r.BrokerCPUSeconds * 1e6 / float64(r.Ops)
	}
	if wall := time.Since(s.start).Seconds(); wall > 0 {
		r.BrokerCPUPerSec = r.BrokerCPUSeconds / wall
	}
}

func (r shapeResult) print() {
	line := fmt.Sprintf("shape %-13s %9d %ss in %5.1fs: %10.0f/s", r.Shape, r.Ops, r.Unit, r.Seconds, r.OpsPerSec)
	if r.Requests > 0 {
		line += fmt.Sprintf(", %d requests", r.Requests)
	}
	if len(brokerPid) > 0 {
		line += fmt.Sprintf("; broker %.2f CPU s, %.1f us/%s, %.2f cores", r.BrokerCPUSeconds, r.BrokerCPUUsPerOp, r.Unit, r.BrokerCPUPerSec)
	}
	fmt.Println(line)
	if emitJSON {
		emitShapeJSON(r)
	}
}

// requestCounter counts the requests of one API key the clients wrote.
type requestCounter struct {
	key int16
	n   atomic.Int64
}

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (c *requestCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil && key == c.key {
		c.n.Add(1)
	}
}

func acksOpts(acks string) []kgo.Opt {
	switch acks {
	case "leader":
		return []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}
	case "none":
		return []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}
	}
	return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}
}

// shapeProduce runs clients producers for o.duration. With oneByOne each sends
// one record and waits for it (one request per record); otherwise each
// keeps franz-go's buffer (-shape-buffered records) full with linger 0,
// round-robin over the partitions: small batches of many partitions per
// request.
func shapeProduce(ctx context.Context, o shapeOptions, topic string, clients int, oneByOne bool) (shapeResult, error) {
	counter := &requestCounter{key: 0}
	value := make([]byte, o.size)
	var acked atomic.Int64
	var fails failures
	cls := make([]*kgo.Client, clients)
	for i := range cls {
		opts := append(seed(o.brokers), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(o.buffered),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.WithHooks(counter))
		opts = append(opts, acksOpts(o.acks)...)
		if os.Getenv("SAMSA_LOAD_DEBUG") != "" {
			opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, nil)))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return shapeResult{}, err
		}
		defer cl.Close()
		cls[i] = cl
		// Connect first, so that the measured span has no connection set-up.
		if err := cl.Ping(ctx); err != nil {
			return shapeResult{}, err
		}
	}
	end := time.Now().Add(o.duration)
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, cl := range cls {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				if oneByOne {
					if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
						fails.add(err)
						continue
					}
					acked.Add(1)
					continue
				}
				cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						fails.add(err)
						return
					}
					acked.Add(1)
				})
			}
			cl.Flush(ctx)
		})
	}
	wg.Wait()
	secs := time.Since(t0).Seconds()
	if n := fails.count(); n > 0 {
		return shapeResult{}, fmt.Errorf("%w: %d records failed, first: %v", errShapes, n, fails.err())
	}
	return shapeResult{Unit: "record", Ops: acked.Load(), Seconds: secs, Requests: counter.n.Load()}, nil
}

// shapeFetch consumes want records of topic from the start (all of them if
// o.duration allows).
func shapeFetch(ctx context.Context, o shapeOptions, topic string, want int64) (shapeResult, error) {
	counter := &requestCounter{key: 1}
	cl, err := kgo.NewClient(append(seed(o.brokers), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(counter))...)
	if err != nil {
		return shapeResult{}, err
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return shapeResult{}, err
	}
	pctx, cancel := context.WithTimeout(ctx, 4*o.duration)
	defer cancel()
	t0 := time.Now()
	var got int64
	for got < want && pctx.Err() == nil {
		fs := cl.PollFetches(pctx)
		fs.EachRecord(func(*kgo.Record) { got++ })
	}
	return shapeResult{Unit: "record", Ops: got, Seconds: time.Since(t0).Seconds(), Requests: counter.n.Load()}, nil
}

// shapeIdle has o.clients consumers long-poll every partition of topic at
// its end for o.duration, with the Java client's fetch.max.wait.ms (500 ms):
// the ops are the fetch requests they sent.
func shapeIdle(ctx context.Context, o shapeOptions, topic string) (shapeResult, error) {
	counter := &requestCounter{key: 1}
	pctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var got atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range o.clients {
		cl, err := kgo.NewClient(append(seed(o.brokers), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(500*time.Millisecond),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.WithHooks(counter))...)
		if err != nil {
			return shapeResult{}, err
		}
		defer cl.Close()
		wg.Go(func() {
			for pctx.Err() == nil {
				cl.PollFetches(pctx).EachRecord(func(*kgo.Record) { got.Add(1) })
			}
		})
	}
	wg.Wait()
	if n := got.Load(); n > 0 {
		return shapeResult{}, fmt.Errorf("%w: parts-idle read %d records", errShapes, n)
	}
	return shapeResult{Unit: "fetch", Ops: counter.n.Load(), Seconds: time.Since(t0).Seconds(), Requests: counter.n.Load()}, nil
}

// shapeRequests runs o.clients clients sending the request newReq makes,
// one at a time each, for o.duration.
func shapeRequests(ctx context.Context, o shapeOptions, unit string, newReq func() kmsg.Request) (shapeResult, error) {
	return shapeRequestsEach(ctx, o, unit, func(int) kmsg.Request { return newReq() }, func(kmsg.Response) error { return nil })
}

// listOffsetsAll asks the latest offset of every partition of topic.
func listOffsetsAll(topic string, partitions int) kmsg.Request {
	req := kmsg.NewPtrListOffsetsRequest()
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	for p := range partitions {
		pt := kmsg.NewListOffsetsRequestTopicPartition()
		pt.Partition = int32(p)
		pt.Timestamp = -1
		t.Partitions = append(t.Partitions, pt)
	}
	req.Topics = append(req.Topics, t)
	return req
}

// shapeCommits commits offsets as simple (generation -1) consumers would,
// each client its own group, one partition per commit.
func shapeCommits(ctx context.Context, o shapeOptions, topic string) (shapeResult, error) {
	stamp := time.Now().UnixNano()
	var n atomic.Int64
	adm := kadm.NewClient(mustClient(o.brokers))
	defer adm.Close()
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return shapeResult{}, err
	}
	topicID := td[topic].ID
	return shapeRequestsEach(ctx, o, "commit", func(client int) kmsg.Request {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group = fmt.Sprintf("shapes-commit-%d-%d", stamp, client)
		req.Generation = -1
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic, t.TopicID = topic, topicID // v10 names topics by id
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition = int32(client % 6)
		p.Offset = n.Add(1)
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		return req
	}, func(resp kmsg.Response) error {
		for _, t := range resp.(*kmsg.OffsetCommitResponse).Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return fmt.Errorf("%w: commit error code %d", errShapes, p.ErrorCode)
				}
			}
		}
		return nil
	})
}

// mustClient is a plain client of brokers; a bad option is a bug here.
func mustClient(brokers string) *kgo.Client {
	cl, err := kgo.NewClient(seed(brokers)...)
	if err != nil {
		panic(err)
	}
	return cl
}

// shapeRequestsEach runs o.clients clients, one at a time each for
// o.duration, sending the request newReq makes for the client's index and
// checking every response with check.
func shapeRequestsEach(ctx context.Context, o shapeOptions, unit string, newReq func(client int) kmsg.Request, check func(kmsg.Response) error) (shapeResult, error) {
	var done atomic.Int64
	var fails failures
	cls := make([]*kgo.Client, o.clients)
	for i := range cls {
		cl, err := kgo.NewClient(seed(o.brokers)...)
		if err != nil {
			return shapeResult{}, err
		}
		defer cl.Close()
		cls[i] = cl
		resp, err := cl.Request(ctx, newReq(i))
		if err == nil {
			err = check(resp)
		}
		if err != nil {
			return shapeResult{}, err
		}
	}
	end := time.Now().Add(o.duration)
	t0 := time.Now()
	var wg sync.WaitGroup
	for i, cl := range cls {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				resp, err := cl.Request(ctx, newReq(i))
				if err == nil {
					err = check(resp)
				}
				if err != nil {
					fails.add(err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if fails.count() > 0 {
		return shapeResult{}, fmt.Errorf("%w: %v", errShapes, fails.err())
	}
	return shapeResult{Unit: unit, Ops: done.Load(), Seconds: time.Since(t0).Seconds()}, nil
}

// shapeJoin starts o.members consumers in one group (classic protocol,
// franz-go's default cooperative-sticky balancer) and measures the time
// until every partition is assigned and every member holds at least one.
func shapeJoin(ctx context.Context, o shapeOptions, topic string) (shapeResult, error) {
	group := fmt.Sprintf("shapes-join-%d", time.Now().UnixNano())
	var mu sync.Mutex
	owned := make([]int, o.members)
	changed := make(chan struct{}, 1)
	note := func(i, delta int) {
		mu.Lock()
		owned[i] += delta
		mu.Unlock()
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	cls := make([]*kgo.Client, o.members)
	t0 := time.Now()
	for i := range cls {
		count := func(m map[string][]int32) int {
			n := 0
			for _, ps := range m {
				n += len(ps)
			}
			return n
		}
		cl, err := kgo.NewClient(append(seed(o.brokers), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { note(i, count(m)) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { note(i, -count(m)) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { note(i, -count(m)) }))...)
		if err != nil {
			return shapeResult{}, err
		}
		defer cl.Close()
		cls[i] = cl
		// PollFetches runs the group's join and sync.
		go func() {
			for ctx.Err() == nil && !isClosed(cl) {
				cl.PollFetches(ctx)
			}
		}()
	}
	deadline := time.After(3 * time.Minute)
	for {
		mu.Lock()
		total, all := 0, true
		for _, n := range owned {
			total += n
			all = all && n > 0
		}
		mu.Unlock()
		if all && total == o.partitions {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			return shapeResult{}, fmt.Errorf("%w: join: %d of %d partitions assigned after 3 min", errShapes, total, o.partitions)
		}
	}
	secs := time.Since(t0).Seconds()
	for _, cl := range cls {
		cl.Close()
	}
	return shapeResult{Unit: "member", Ops: int64(o.members), Seconds: secs}, nil
}

// isClosed says whether cl was closed (its context is done).
func isClosed(cl *kgo.Client) bool { return cl.Context().Err() != nil }

// shapeTxn runs o.clients transactional producers, each committing one
// record per transaction, for o.duration.
func shapeTxn(ctx context.Context, o shapeOptions, topic string) (shapeResult, error) {
	stamp := time.Now().UnixNano()
	value := make([]byte, o.size)
	var done atomic.Int64
	var fails failures
	cls := make([]*kgo.Client, o.clients)
	for i := range cls {
		cl, err := kgo.NewClient(append(seed(o.brokers), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0),
			kgo.TransactionalID(fmt.Sprintf("shapes-txn-%d-%d", stamp, i)))...)
		if err != nil {
			return shapeResult{}, err
		}
		defer cl.Close()
		cls[i] = cl
	}
	txn := func(cl *kgo.Client) error {
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			return err
		}
		return cl.EndTransaction(ctx, kgo.TryCommit)
	}
	for _, cl := range cls {
		if err := txn(cl); err != nil { // init the producer id first
			return shapeResult{}, err
		}
	}
	end := time.Now().Add(o.duration)
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, cl := range cls {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				if err := txn(cl); err != nil {
					fails.add(err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if err := fails.err(); err != nil {
		return shapeResult{}, fmt.Errorf("%w: %v", errShapes, err)
	}
	return shapeResult{Unit: "txn", Ops: done.Load(), Seconds: time.Since(t0).Seconds()}, nil
}

func emitShapeJSON(r shapeResult) {
	b, _ := json.Marshal(r)
	fmt.Printf("%s\n", b)
}
