package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Multi-process load (-procs N): the parent creates the topic and starts N
// producer and N consumer processes of this same binary (-child ROLE), so
// that one client process's CPU is not what limits the figures. The
// children talk to the parent over stdin/stdout, one line per message:
//
//	child  -> parent   "ready"                 connected, waiting
//	parent -> child    "go UNIXNANO"           start now; UNIXNANO is the common start
//	parent -> child    "end P:OFF,P:OFF"       (e2e consumers) stop once these offsets are read
//	child  -> parent   {"start":..,"end":..}   its result, as one JSON line, then it exits
//
// Throughput is all bytes over the span from the first child's start to
// the last one's end. End-to-end latency compares wall clocks of two
// processes on the same machine (CLOCK_REALTIME): each value starts with
// its send time in Unix nanoseconds; consumers write every latency (in
// microseconds, uint32 little endian) to a file the parent merges.

// options are the flags a run needs.
type options struct {
	brokers       string
	records, size int
	partitions    int
	acks, codec   string
	procs         int
	rate          int
	duration      time.Duration
	warmup        time.Duration
	brokerPID     []int
	// consume is how consumer processes of -procs read: "kgo" (franz-go's
	// consumer), "raw" (plain Fetch requests, rawconsume.go) or "none"
	// (produce only).
	consume string
	// consumeRepeat is how many times -procs consumes the topic
	// (-consume-repeat), each time with fresh consumer processes.
	consumeRepeat int
}

// childResult is what a child reports.
type childResult struct {
	Start   int64  `json:"start"` // Unix nanoseconds
	End     int64  `json:"end"`
	Records int64  `json:"records"`
	Bytes   int64  `json:"bytes"`
	Err     string `json:"err,omitempty"`
	// A consumer's own CPU time in the phase (nanoseconds) and minor
	// page faults, the Fetch responses it read and their bytes, and its
	// Metadata responses (clientstat.go).
	CPUNanos   int64 `json:"cpu_ns,omitempty"`
	MinFlt     int64 `json:"minflt,omitempty"`
	Fetches    int64 `json:"fetches,omitempty"`
	FetchBytes int64 `json:"fetch_bytes,omitempty"`
	Metadata   int64 `json:"metadata,omitempty"`
	FetchNanos int64 `json:"fetch_ns,omitempty"`
	// The whole batches it decoded and their bytes, its garbage
	// collections and the bytes its Go heap allocated (clientstat.go).
	Batches    int64 `json:"batches,omitempty"`
	BatchBytes int64 `json:"batch_bytes,omitempty"`
	GCs        int64 `json:"gcs,omitempty"`
	Alloc      int64 `json:"alloc,omitempty"`
	// Its voluntary and involuntary context switches and read system calls.
	VCSw  int64 `json:"vcsw,omitempty"`
	NVCSw int64 `json:"nvcsw,omitempty"`
	Reads int64 `json:"reads,omitempty"`
}

// childProc is one started child.
type childProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *strings.Builder
}

func startChild(args ...string) (*childProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &childProc{cmd: cmd, in: in, out: bufio.NewScanner(out), stderr: &stderr}, nil
}

// expect reads the child's next line.
func (c *childProc) expect() (string, error) {
	if c.out.Scan() {
		return c.out.Text(), nil
	}
	c.cmd.Wait()
	return "", fmt.Errorf("child %v exited: %s", c.cmd.Args[1:3], strings.TrimSpace(c.stderr.String()))
}

func (c *childProc) send(line string) error {
	_, err := io.WriteString(c.in, line+"\n")
	return err
}

// result reads the child's result line and waits for it to exit.
func (c *childProc) result() (childResult, error) {
	line, err := c.expect()
	if err != nil {
		return childResult{}, err
	}
	var r childResult
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return r, fmt.Errorf("child result %q: %w", line, err)
	}
	c.in.Close()
	c.cmd.Wait()
	if r.Err != "" {
		return r, errors.New(r.Err)
	}
	return r, nil
}

func (c *childProc) kill() {
	c.cmd.Process.Kill()
	c.cmd.Wait()
}

// startAll starts one child per args and waits until each is ready.
func startAll(argss [][]string) ([]*childProc, error) {
	var cs []*childProc
	for _, args := range argss {
		c, err := startChild(args...)
		if err != nil {
			killAll(cs)
			return nil, err
		}
		cs = append(cs, c)
	}
	for _, c := range cs {
		if line, err := c.expect(); err != nil || line != "ready" {
			killAll(cs)
			return nil, fmt.Errorf("child not ready: %q %v", line, err)
		}
	}
	return cs, nil
}

func killAll(cs []*childProc) {
	for _, c := range cs {
		c.kill()
	}
}

// results collects every child's result.
func results(cs []*childProc) ([]childResult, error) {
	var rs []childResult
	var errs []error
	for _, c := range cs {
		r, err := c.result()
		if err != nil {
			errs = append(errs, err)
		}
		rs = append(rs, r)
	}
	return rs, errors.Join(errs...)
}

// runPhase starts a child process per argss, tells them all to go at once
// and measures the phase from the first child's start to the last one's
// end, with the broker's CPU over it; who names the children in an error
// of theirs. It also returns the children's results and the bytes moved.
func runPhase(o options, argss [][]string, phase string, procs int, who string) (result, []childResult, int64, error) {
	cs, err := startAll(argss)
	if err != nil {
		return result{}, nil, 0, err
	}
	stat := watchBroker(o.brokerPID)
	for _, c := range cs {
		c.send("go 0")
	}
	rs, err := results(cs)
	if err != nil {
		return result{}, nil, 0, fmt.Errorf("%s: %w", who, err)
	}
	el, recs, bytes := span(rs)
	r := result{Phase: phase, Records: int(recs), Size: o.size, Seconds: el.Seconds(), MBps: float64(bytes) / 1e6 / el.Seconds(), RecordsPerSec: float64(recs) / el.Seconds(), Procs: procs}
	stat.stop(&r, bytes)
	return r, rs, bytes, nil
}

// span returns the wall time from the first start to the last end, and
// the records and bytes of all.
func span(rs []childResult) (time.Duration, int64, int64) {
	var first, last, recs, bytes int64
	for i, r := range rs {
		if i == 0 || r.Start < first {
			first = r.Start
		}
		last = max(last, r.End)
		recs += r.Records
		bytes += r.Bytes
	}
	return time.Duration(last - first), recs, bytes
}

func (o options) commonArgs() []string {
	args := []string{"-brokers", o.brokers, "-size", strconv.Itoa(o.size), "-acks", o.acks, "-compression", o.codec}
	return append(args, securityArgs...)
}

// partitionsOf returns the partitions child i of n consumes.
func partitionsOf(i, n, partitions int) []int32 {
	var ps []int32
	for p := i; p < partitions; p += n {
		ps = append(ps, int32(p))
	}
	return ps
}

// runProcs is the throughput mode with -procs: produce o.records into a
// fresh topic from o.procs processes, then consume them all back with
// o.procs processes, each reading a share of the partitions.
func runProcs(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	adm, done, topic, err := freshTopic(ctx, o, "samsa-load")
	if err != nil {
		return err
	}
	defer done()
	consumers := min(o.procs, o.partitions)

	var argss [][]string
	for i := range o.procs {
		n := o.records / o.procs
		if i < o.records%o.procs {
			n++
		}
		argss = append(argss, append(o.commonArgs(), "-child", "producer", "-topic", topic, "-records", strconv.Itoa(n)))
	}
	r, _, _, err := runPhase(o, argss, "produce", o.procs, "producers")
	if err != nil {
		return err
	}
	fmt.Printf("produce: %d records x %d B, %d partitions, acks=%s, compression=%s, %d producer processes: %.1f MB/s, %.0f records/s (%.2fs)%s\n",
		r.Records, o.size, o.partitions, o.acks, o.codec, o.procs, r.MBps, r.RecordsPerSec, r.Seconds, r.brokerText())
	printJSON(r)

	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	// Each mode of -consume (kgo, raw) reads the whole topic, each
	// -consume-repeat times with fresh consumer processes: more consume
	// samples per produce.
	for _, mode := range strings.Split(o.consume, ",") {
		if mode == "none" {
			break // -consume none: produce only
		}
		if err := consumeProcs(ctx, o, topic, mode, consumers, ends); err != nil {
			return err
		}
	}
	return nil
}

// consumeProcs reads topic up to ends with consumers processes reading
// as mode (kgo or raw), o.consumeRepeat times, and prints a result for
// each: phase "consume" for kgo, "consume-raw" for raw.
func consumeProcs(ctx context.Context, o options, topic, mode string, consumers int, ends kadm.ListedOffsets) error {
	phase := "consume"
	if mode == "raw" {
		phase = "consume-raw"
	}
	for range max(o.consumeRepeat, 1) {
		var argss [][]string
		for i := range consumers {
			var targets []string
			for _, p := range partitionsOf(i, consumers, o.partitions) {
				lo, _ := ends.Lookup(topic, p)
				targets = append(targets, fmt.Sprintf("%d:%d", p, lo.Offset))
			}
			argss = append(argss, append(o.commonArgs(), "-child", "consumer", "-consume", mode, "-topic", topic, "-child-partitions", strings.Join(targets, ",")))
		}
		r, rs, bytes, err := runPhase(o, argss, phase, consumers, "consumers")
		if err != nil {
			return err
		}
		clientTotals(&r, rs, bytes)
		fmt.Printf("%s: %d records, %d consumer processes: %.1f MB/s, %.0f records/s (%.2fs)%s%s\n",
			phase, r.Records, consumers, r.MBps, r.RecordsPerSec, r.Seconds, r.brokerText(), r.clientText())
		printJSON(r)
	}
	return nil
}

// e2eProcs is the e2e mode with -procs: o.procs producers send o.rate
// records per second in all for o.duration, o.procs consumers read them,
// and the latencies of all are merged.
func e2eProcs(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.duration+5*time.Minute)
	defer cancel()
	adm, done, topic, err := freshTopic(ctx, o, "samsa-load-e2e")
	if err != nil {
		return err
	}
	defer done()
	dir, err := os.MkdirTemp("", "samsa-load-e2e-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	consumers := min(o.procs, o.partitions)
	var argss [][]string
	for i := range o.procs {
		rate := o.rate / o.procs
		if i < o.rate%o.procs {
			rate++
		}
		argss = append(argss, append(o.commonArgs(), "-child", "e2e-producer", "-topic", topic,
			"-e2e-rate", strconv.Itoa(rate), "-e2e-duration", o.duration.String()))
	}
	var outs []string
	for i := range consumers {
		var ps []string
		for _, p := range partitionsOf(i, consumers, o.partitions) {
			ps = append(ps, strconv.Itoa(int(p)))
		}
		out := filepath.Join(dir, fmt.Sprintf("lat-%d", i))
		outs = append(outs, out)
		argss = append(argss, append(o.commonArgs(), "-child", "e2e-consumer", "-topic", topic,
			"-child-partitions", strings.Join(ps, ","), "-child-out", out, "-e2e-warmup", o.warmup.String()))
	}
	cs, err := startAll(argss)
	if err != nil {
		return err
	}
	prods, conss := cs[:o.procs], cs[o.procs:]
	stat := watchBroker(o.brokerPID)
	// Start a little ahead so that every child sees the same start.
	start := time.Now().Add(50 * time.Millisecond).UnixNano()
	for _, c := range cs {
		c.send(fmt.Sprintf("go %d", start))
	}
	prs, err := results(prods)
	if err != nil {
		killAll(conss)
		return fmt.Errorf("producers: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		killAll(conss)
		return fmt.Errorf("list end offsets: %w", err)
	}
	for i, c := range conss {
		var targets []string
		for _, p := range partitionsOf(i, consumers, o.partitions) {
			lo, _ := ends.Lookup(topic, p)
			targets = append(targets, fmt.Sprintf("%d:%d", p, lo.Offset))
		}
		c.send("end " + strings.Join(targets, ","))
	}
	if _, err := results(conss); err != nil {
		return fmt.Errorf("consumers: %w", err)
	}
	_, sent, bytes := span(prs)
	var lat []uint32
	for _, out := range outs {
		b, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		for i := 0; i+4 <= len(b); i += 4 {
			lat = append(lat, binary.LittleEndian.Uint32(b[i:]))
		}
	}
	if len(lat) == 0 {
		return fmt.Errorf("no records after the warm-up")
	}
	slices.Sort(lat)
	pct := func(q float64) float64 {
		return float64(lat[min(int(q*float64(len(lat))), len(lat)-1)]) / 1000
	}
	r := result{Phase: "e2e", Records: len(lat), Size: o.size, Seconds: o.duration.Seconds(), Rate: o.rate, Procs: o.procs,
		P50ms: pct(0.50), P99ms: pct(0.99), P999ms: pct(0.999), MaxMs: float64(lat[len(lat)-1]) / 1000}
	stat.stop(&r, 2*bytes) // each byte in and out
	fmt.Printf("e2e: %d records/s x %d B, %d partitions, acks=%s, %d producer and %d consumer processes, %d sent, %d measured: p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms%s\n",
		o.rate, o.size, o.partitions, o.acks, o.procs, consumers, sent, len(lat), r.P50ms, r.P99ms, r.P999ms, r.MaxMs, r.brokerText())
	printJSON(r)
	return nil
}

// freshTopic creates a topic named prefix-NANOS; done deletes it and
// closes the admin client.
func freshTopic(ctx context.Context, o options, prefix string) (*kadm.Client, func(), string, error) {
	cl, err := kgo.NewClient(seed(o.brokers)...)
	if err != nil {
		return nil, nil, "", err
	}
	adm := kadm.NewClient(cl)
	topic := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	if _, err := adm.CreateTopic(ctx, int32(o.partitions), int16(replicationFactor), nil, topic); err != nil {
		cl.Close()
		return nil, nil, "", fmt.Errorf("create topic: %w", err)
	}
	return adm, func() { adm.DeleteTopics(context.Background(), topic); cl.Close() }, topic, nil
}

// producerOpts are the kgo options of a producer with o's acks and codec.
func producerOpts(o options) ([]kgo.Opt, error) {
	opts := seed(o.brokers)
	switch o.acks {
	case "all":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "leader":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "none":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("unknown acks %q", o.acks)
	}
	c, err := compressionOpt(o.codec)
	if err != nil {
		return nil, err
	}
	return append(opts, c), nil
}

// compressionOpt is the producer option of -compression codec.
func compressionOpt(codec string) (kgo.Opt, error) {
	codecs := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}
	c, ok := codecs[codec]
	if !ok {
		return nil, fmt.Errorf("unknown compression %q", codec)
	}
	return kgo.ProducerBatchCompression(c), nil
}

// child runs one child role; every failure is reported in its result.
func child(role string, o options, topic, parts, out string) {
	res, err := runChild(role, o, topic, parts, out)
	if err != nil {
		res.Err = err.Error()
	}
	b, _ := json.Marshal(res)
	fmt.Printf("%s\n", b)
}

func runChild(role string, o options, topic, parts, out string) (childResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	in := bufio.NewScanner(os.Stdin)
	var opts, consumerOpts []kgo.Opt
	var counter wireCounter
	var err error
	switch role {
	case "producer":
		opts, err = producerOpts(o)
		opts = append(opts, kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	case "e2e-producer":
		opts, err = producerOpts(o)
		opts = append(opts, kgo.ProducerLinger(0))
	case "consumer", "e2e-consumer":
		offsets := map[int32]kgo.Offset{}
		for _, f := range strings.Split(parts, ",") {
			p, _, _ := strings.Cut(f, ":")
			n, perr := strconv.Atoi(p)
			if perr != nil {
				return childResult{}, fmt.Errorf("-child-partitions %q", parts)
			}
			offsets[int32(n)] = kgo.NewOffset().AtStart()
		}
		opts = append(seed(o.brokers), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
		if role == "consumer" {
			// The consuming client is made once the parent says go: a
			// franz-go consumer starts fetching as soon as it exists, and
			// its first response (about 28 MB per consumer, 5% of a 1 GB
			// run with two) would otherwise arrive before the measured
			// span: 34 responses were counted in the phase, now 36. This
			// client only connects (and is what -consume raw fetches with).
			consumerOpts = append(opts, kgo.FetchMaxBytes(50<<20), kgo.FetchMaxPartitionBytes(10<<20), kgo.WithHooks(&counter))
			opts = append(seed(o.brokers), kgo.WithHooks(&counter))
		}
	default:
		return childResult{}, fmt.Errorf("unknown -child %q", role)
	}
	if err != nil {
		return childResult{}, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return childResult{}, err
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return childResult{}, err
	}
	fmt.Println("ready")
	if !in.Scan() {
		return childResult{}, fmt.Errorf("no go from the parent")
	}
	startNs, _ := strconv.ParseInt(strings.TrimPrefix(in.Text(), "go "), 10, 64)
	if startNs > 0 {
		if wait := time.Until(time.Unix(0, startNs)); wait > 0 {
			time.Sleep(wait) // a common start time, not a condition
		}
	}
	switch role {
	case "producer":
		return produceChild(ctx, cl, o, topic)
	case "e2e-producer":
		return e2eProduceChild(ctx, cl, o, topic)
	case "consumer":
		targets, err := parseTargets(parts)
		if err != nil {
			return childResult{}, err
		}
		u0 := selfUsage()
		gc0, alloc0 := goUsage()
		w0 := counter.snapshot()
		var res childResult
		if o.consume == "raw" {
			res, err = rawConsumeChild(ctx, cl, topic, targets)
		} else {
			start := time.Now().UnixNano()
			var cons *kgo.Client
			if cons, err = kgo.NewClient(consumerOpts...); err != nil {
				return childResult{}, err
			}
			res, err = consumeChild(ctx, cons, targets, nil, nil, 0)
			res.Start = start
			cons.Close()
		}
		w1 := counter.snapshot()
		gc1, alloc1 := goUsage()
		u1 := selfUsage()
		res.GCs, res.Alloc = gc1-gc0, alloc1-alloc0
		if o.consume != "raw" {
			res.Batches, res.BatchBytes = w1.batches-w0.batches, w1.batchBytes-w0.batchBytes
		}
		res.CPUNanos, res.MinFlt = int64(u1.cpu-u0.cpu), u1.minflt-u0.minflt
		res.VCSw, res.NVCSw, res.Reads = u1.vcsw-u0.vcsw, u1.nvcsw-u0.nvcsw, u1.reads-u0.reads
		res.Fetches, res.FetchBytes, res.Metadata = w1.fetches-w0.fetches, w1.fetchBytes-w0.fetchBytes, w1.metadata-w0.metadata
		res.FetchNanos = w1.fetchNanos - w0.fetchNanos
		return res, err
	default:
		f, err := os.Create(out)
		if err != nil {
			return childResult{}, err
		}
		defer f.Close()
		w := bufio.NewWriter(f)
		defer w.Flush()
		// The end offsets come once the producers are done.
		ends := make(chan map[int32]int64, 1)
		go func() {
			if in.Scan() {
				t, err := parseTargets(strings.TrimPrefix(in.Text(), "end "))
				if err == nil {
					ends <- t
				}
			}
			close(ends)
		}()
		return consumeChild(ctx, cl, nil, ends, w, time.Unix(0, startNs).Add(o.warmup).UnixNano())
	}
}

// parseTargets parses "P:OFF,P:OFF".
func parseTargets(s string) (map[int32]int64, error) {
	t := map[int32]int64{}
	for _, f := range strings.Split(s, ",") {
		p, off, ok := strings.Cut(f, ":")
		pn, err1 := strconv.Atoi(p)
		on, err2 := strconv.ParseInt(off, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad partition target %q", f)
		}
		t[int32(pn)] = on
	}
	return t, nil
}

func produceChild(ctx context.Context, cl *kgo.Client, o options, topic string) (childResult, error) {
	value := make([]byte, o.size)
	rand.Read(value)
	var fails failures
	var wg sync.WaitGroup
	res := childResult{Start: time.Now().UnixNano()}
	for range o.records {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				fails.add(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	res.End = time.Now().UnixNano()
	if fails.count() > 0 {
		return res, fmt.Errorf("%d produce errors, first: %v", fails.count(), fails.err())
	}
	res.Records, res.Bytes = int64(o.records), int64(o.records*o.size)
	return res, nil
}

func e2eProduceChild(ctx context.Context, cl *kgo.Client, o options, topic string) (childResult, error) {
	var fails failures
	var wg sync.WaitGroup
	n := int(o.duration.Seconds() * float64(o.rate))
	interval := time.Second / time.Duration(max(o.rate, 1))
	res := childResult{Start: time.Now().UnixNano()}
	base := time.Now()
	sleep, done := precisePacing()
	defer done()
	for i := range n {
		if wait := time.Duration(i)*interval - time.Since(base); wait > 0 {
			sleep(wait) // pacing the sender, not waiting for a condition
		}
		v := make([]byte, o.size)
		binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				fails.add(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	res.End = time.Now().UnixNano()
	if fails.count() > 0 {
		return res, fmt.Errorf("%d produce errors, first: %v", fails.count(), fails.err())
	}
	res.Records, res.Bytes = int64(n), int64(n*o.size)
	return res, nil
}

// consumeChild reads until every partition reached its target offset
// (given at once, or later on ends). With lat set it writes the latency
// of each record sent at or after countFrom (Unix nanoseconds).
func consumeChild(ctx context.Context, cl *kgo.Client, targets map[int32]int64, ends <-chan map[int32]int64, lat *bufio.Writer, countFrom int64) (childResult, error) {
	res := childResult{Start: time.Now().UnixNano()}
	next := map[int32]int64{}
	reached := func() bool {
		if targets == nil {
			return false
		}
		for p, end := range targets {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	var buf [4]byte
	for !reached() {
		if ends != nil && targets == nil {
			select {
			case t, ok := <-ends:
				if !ok {
					return res, fmt.Errorf("no end offsets from the parent")
				}
				targets = t
				continue
			default:
			}
		}
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		now := time.Now().UnixNano()
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("consumed %d records: %w", res.Records, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				ferr = err
			}
		})
		if ferr != nil {
			return res, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			res.Records++
			res.Bytes += int64(len(r.Value))
			next[r.Partition] = r.Offset + 1
			if lat != nil && len(r.Value) >= 8 {
				if sent := int64(binary.BigEndian.Uint64(r.Value)); sent >= countFrom {
					binary.LittleEndian.PutUint32(buf[:], uint32(min((now-sent)/1000, 1<<32-1)))
					lat.Write(buf[:])
				}
			}
		})
	}
	res.End = time.Now().UnixNano()
	return res, nil
}
