// Command samsa-load measures produce and consume throughput of a Kafka
// broker (samsa or any other) with franz-go, next to the machine's own
// limits measured in the same run: loopback TCP bandwidth and sequential
// disk writes with fsync.
//
//	samsa-load -brokers 127.0.0.1:9092 -records 500000 -size 1024 -partitions 6 -acks all
//
// It creates a fresh topic, produces -records records of -size bytes with
// the given acks, then consumes them all back by direct partition
// assignment, and prints MB/s and records/s for each phase.
//
// With -transactional it then does the same again into a second fresh topic with a
// transactional producer, -txn-records records per transaction (begin, produce,
// commit), and consumes that topic back at read_committed, so the two produce lines
// compare plain and transactional produce with the same records, size and partitions.
//
// With -mode e2e it measures end-to-end latency instead: a producer (acks as given,
// no linger) sends -e2e-rate records per second for -e2e-duration into a fresh topic,
// each value carrying its send time, and a consumer in the same process reads them;
// it prints p50, p99, p99.9 and max of receive time minus send time, leaving out the
// first -e2e-warmup.
//
// With -procs N (N > 1) the produce and consume phases, and -mode e2e, run in N
// producer and N consumer processes of this binary (at most one consumer per
// partition), so that the load generator's own CPU is not the limit; e2e
// latency then compares the wall clocks of two processes (same machine). See
// procs.go.
//
// With -broker-pid PID (a broker on this machine) each result also gives the
// broker's CPU seconds used in the phase, per GB moved (produced, consumed, or
// both for e2e), and its peak RSS.
//
// With -json every result is also printed as one JSON object per line (bench/compare
// reads these).
//
// Against a TLS or SASL listener, give the client properties Kafka's tools take
// (security.protocol, ssl.truststore.location, ssl.keystore.location, sasl.mechanism,
// sasl.jaas.config; PEM stores only) in a file with -command-config, or one by one
// with -X name=value (which win over the file):
//
//	samsa-load -brokers 127.0.0.1:9093 -X security.protocol=SSL -X ssl.truststore.location=ca.pem
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/cmd/internal/clientsec"
	"github.com/samsa-broker/samsa/config"
)

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap servers, comma-separated")
	records := flag.Int("records", 300000, "records to produce")
	size := flag.Int("size", 1024, "value size in bytes")
	partitions := flag.Int("partitions", 6, "partitions of the test topic")
	acks := flag.String("acks", "all", "acks: all, leader or none")
	flag.IntVar(&replicationFactor, "replication-factor", 1, "replication factor of the test topic (3 on a three-node cluster: acks=all then waits for every in-sync replica)")
	codec := flag.String("compression", "none", "none, gzip, snappy, lz4, zstd")
	baseline := flag.Bool("baseline", true, "also measure loopback TCP and disk write bandwidth")
	diskDir := flag.String("disk-dir", os.TempDir(), "where to measure sequential disk writes")
	transactional := flag.Bool("transactional", false, "also measure transactional produce (acks=all) and read_committed consume")
	txnRecords := flag.Int("txn-records", 1000, "records per transaction with -transactional")
	mode := flag.String("mode", "throughput", "throughput (produce, then consume) or e2e (latency at a fixed rate)")
	e2eRate := flag.Int("e2e-rate", 1000, "records per second with -mode e2e")
	e2eDuration := flag.Duration("e2e-duration", 30*time.Second, "how long to send with -mode e2e")
	e2eWarmup := flag.Duration("e2e-warmup", 2*time.Second, "records sent in this first part of -mode e2e are not counted")
	flag.IntVar(&e2eGOGC, "e2e-gogc", 400, "with -mode e2e: the load tool's GOGC (garbage collection target percent; a GOGC environment variable wins); see e2e_split.go")
	flag.BoolVar(&e2eSplitOn, "e2e-split", false, "with -mode e2e (one process): also split each record's latency into produce ack, broker-to-consumer and the consumer's hand-off, and report the load tool's own scheduling latency and GC (e2e_split.go)")
	jsonOut := flag.Bool("json", false, "also print each result as a JSON line")
	commandConfig := flag.String("command-config", "", "Kafka client properties file (security.protocol, ssl.*, sasl.*)")
	props := map[string]string{}
	flag.Func("X", "client property name=value (security.protocol, ssl.*, sasl.*); repeatable, wins over -command-config", func(kv string) error {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("want name=value, got %q", kv)
		}
		props[strings.TrimSpace(k)] = v
		return nil
	})
	procs := flag.Int("procs", 1, "producer and consumer processes (1: both in this process)")
	consume := flag.String("consume", "kgo", "how the consumer processes of -procs read: kgo (franz-go's consumer), raw (plain Fetch requests; batch CRCs, record counts and offsets checked, nothing decoded into records; uncompressed only; phase consume-raw), or kgo,raw (both, one after the other, on the same records); none: produce only (for profiling the produce path)")
	var brokerPIDs []int
	flag.Func("broker-pid", "pid of the broker (same machine), for its CPU per GB and RSS; several comma-separated (a cluster's nodes) are summed", func(v string) (err error) {
		brokerPIDs, err = parsePIDs(v)
		return err
	})
	consumeRepeat := flag.Int("consume-repeat", 1, "with -procs: consume the produced topic this many times, each with fresh consumer processes (one result line each)")
	var so shapeOptions
	shapes := flag.String("shapes", "all", "with -mode shapes: which, comma-separated ("+strings.Join(allShapes, ", ")+", or all); see shapes.go")
	flag.DurationVar(&so.duration, "shape-duration", 10*time.Second, "with -mode shapes: how long each shape runs")
	flag.IntVar(&so.partitions, "shape-partitions", 2000, "with -mode shapes: partitions of the parts-* shapes' topic")
	flag.IntVar(&so.clients, "shape-clients", 8, "with -mode shapes: client connections of parts-produce, metadata, listoffsets, commits and txn")
	flag.IntVar(&so.conns, "shape-conns", 200, "with -mode shapes: client connections of small-conns")
	flag.IntVar(&so.buffered, "shape-buffered", 200, "with -mode shapes: records a producer of parts-produce buffers (so a request carries at most this many partitions' batches)")
	flag.IntVar(&so.members, "shape-members", 50, "with -mode shapes: group members of join")
	childRole := flag.String("child", "", "internal: run as a child process of -procs (producer, consumer, e2e-producer, e2e-consumer)")
	childTopic := flag.String("topic", "", "internal: the child's topic")
	childParts := flag.String("child-partitions", "", "internal: the child consumer's partitions (P or P:END_OFFSET, comma-separated)")
	childOut := flag.String("child-out", "", "internal: the e2e child consumer's latency file")
	flag.Parse()
	emitJSON = *jsonOut
	if err := setSecurity(*commandConfig, props); err != nil {
		fmt.Fprintln(os.Stderr, "samsa-load:", err)
		os.Exit(2)
	}
	// Child processes of -procs get the same security options.
	if *commandConfig != "" {
		securityArgs = append(securityArgs, "-command-config", *commandConfig)
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		securityArgs = append(securityArgs, "-X", k+"="+props[k])
	}
	brokerPid = brokerPIDs
	o := options{brokers: *brokers, records: *records, size: *size, partitions: *partitions, acks: *acks, codec: *codec,
		procs: *procs, rate: *e2eRate, duration: *e2eDuration, warmup: *e2eWarmup, brokerPID: brokerPIDs, consume: *consume, consumeRepeat: *consumeRepeat}
	for _, m := range strings.Split(*consume, ",") {
		if m != "kgo" && m != "raw" && (m != "none" || *consume != "none") {
			fmt.Fprintln(os.Stderr, "samsa-load: -consume takes kgo, raw, both (kgo,raw) or none")
			os.Exit(2)
		}
	}
	if *childRole != "" {
		if strings.HasPrefix(*childRole, "e2e-") {
			setE2EGOGC()
		}
		child(*childRole, o, *childTopic, *childParts, *childOut)
		return
	}
	if *procs > 1 {
		if *size < 8 {
			fmt.Fprintln(os.Stderr, "samsa-load: -size must be at least 8")
			os.Exit(2)
		}
		run := runProcs
		if *mode == "e2e" {
			run = e2eProcs
		}
		if err := run(o); err != nil {
			fmt.Fprintln(os.Stderr, "samsa-load:", err)
			os.Exit(1)
		}
		return
	}

	if *mode == "e2e" {
		setE2EGOGC()
		if err := e2e(*brokers, *e2eRate, *size, *partitions, *acks, *codec, *e2eDuration, *e2eWarmup); err != nil {
			fmt.Fprintln(os.Stderr, "samsa-load: e2e:", err)
			os.Exit(1)
		}
		return
	}
	if *mode == "shapes" {
		so.brokers, so.acks, so.size, so.shapes = *brokers, *acks, *size, strings.Split(*shapes, ",")
		if err := runShapes(so); err != nil {
			fmt.Fprintln(os.Stderr, "samsa-load:", err)
			os.Exit(1)
		}
		return
	}
	if *mode != "throughput" {
		fmt.Fprintln(os.Stderr, "samsa-load: -mode must be throughput, e2e or shapes")
		os.Exit(2)
	}
	if err := run(*brokers, *records, *size, *partitions, *acks, *codec, 0); err != nil {
		fmt.Fprintln(os.Stderr, "samsa-load:", err)
		os.Exit(1)
	}
	if *transactional {
		if *txnRecords < 1 {
			fmt.Fprintln(os.Stderr, "samsa-load: -txn-records must be at least 1")
			os.Exit(2)
		}
		if err := run(*brokers, *records, *size, *partitions, "all", *codec, *txnRecords); err != nil {
			fmt.Fprintln(os.Stderr, "samsa-load: transactional:", err)
			os.Exit(1)
		}
	}
	if *baseline {
		if mbps, err := loopbackMBps(256 << 20); err == nil {
			fmt.Printf("baseline loopback TCP: %.1f MB/s\n", mbps)
		}
		if mbps, err := diskMBps(*diskDir, 256<<20); err == nil {
			fmt.Printf("baseline sequential disk write (+fsync): %.1f MB/s\n", mbps)
		}
	}
}

// run creates a topic, produces n records of size bytes to it and consumes them back.
// With perTxn > 0 the producer is transactional (a transactional id unique to the
// run) and commits a transaction every perTxn records; the consumer then reads at
// read_committed.
func run(brokers string, n, size, partitions int, acks, codec string, perTxn int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	opts := append(seed(brokers), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	if perTxn > 0 {
		opts = append(opts, kgo.TransactionalID(fmt.Sprintf("samsa-load-%d", time.Now().UnixNano())))
	}
	switch acks {
	case "all":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "leader":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "none":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return fmt.Errorf("unknown acks %q", acks)
	}
	switch codec {
	case "none":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	case "gzip":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	case "snappy":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	case "lz4":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	case "zstd":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	default:
		return fmt.Errorf("unknown compression %q", codec)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topic := fmt.Sprintf("samsa-load-%d", time.Now().UnixNano())
	if _, err := adm.CreateTopic(ctx, int32(partitions), int16(replicationFactor), nil, topic); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	defer adm.DeleteTopics(context.Background(), topic)

	value := make([]byte, size)
	rand.Read(value)
	var fails failures
	var wg sync.WaitGroup
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			fails.add(err)
		}
		wg.Done()
	}
	stat := watchBroker(brokerPid)
	txns := 0
	// flushTime and endTime add up the time spent waiting for each
	// transaction's records to be acknowledged and for EndTxn.
	var flushTime, endTime time.Duration
	start := time.Now()
	if perTxn == 0 {
		for i := 0; i < n; i++ {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, promise)
		}
		wg.Wait()
	} else {
		for sent := 0; sent < n; sent += perTxn {
			if err := cl.BeginTransaction(); err != nil {
				return fmt.Errorf("begin transaction: %w", err)
			}
			for i := sent; i < min(sent+perTxn, n); i++ {
				wg.Add(1)
				cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, promise)
			}
			// EndTransaction does not flush: records still buffered when it
			// runs would be sent after the commit, at the epoch the commit
			// bumped to (transaction version 2), and so open a transaction
			// of their own that nobody commits.
			t0 := time.Now()
			if err := cl.Flush(ctx); err != nil {
				return fmt.Errorf("flush transaction %d: %w", txns, err)
			}
			t1 := time.Now()
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				return fmt.Errorf("commit transaction %d: %w", txns, err)
			}
			flushTime += t1.Sub(t0)
			endTime += time.Since(t1)
			wg.Wait()
			txns++
		}
	}
	el := time.Since(start)
	if f := fails.count(); f > 0 {
		return fmt.Errorf("%d produce errors, first: %v", f, fails.err())
	}
	mb := float64(n*size) / 1e6
	mode := "produce"
	if perTxn > 0 {
		mode = fmt.Sprintf("produce (transactional, %d records/txn, %d txns, per txn: %.2f ms waiting for acks, %.2f ms in EndTxn)",
			perTxn, txns, float64(flushTime.Microseconds())/1000/float64(txns), float64(endTime.Microseconds())/1000/float64(txns))
	}
	phase := "produce"
	if perTxn > 0 {
		phase = "produce-transactional"
	}
	res := result{Phase: phase, Records: n, Size: size, Seconds: el.Seconds(), MBps: mb / el.Seconds(), RecordsPerSec: float64(n) / el.Seconds()}
	stat.stop(&res, int64(n*size))
	fmt.Printf("%s: %d records x %d B, %d partitions, acks=%s, compression=%s: %.1f MB/s, %.0f records/s (%.2fs)%s\n",
		mode, n, size, partitions, acks, codec, mb/el.Seconds(), float64(n)/el.Seconds(), el.Seconds(), res.brokerText())
	printJSON(res)

	offsets := make(map[int32]kgo.Offset, partitions)
	for p := 0; p < partitions; p++ {
		offsets[int32(p)] = kgo.NewOffset().AtStart()
	}
	isolation, consumeMode := kgo.ReadUncommitted(), "consume"
	if perTxn > 0 {
		isolation, consumeMode = kgo.ReadCommitted(), "consume (read_committed)"
	}
	cons, err := kgo.NewClient(append(seed(brokers), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxBytes(50<<20), kgo.FetchMaxPartitionBytes(10<<20), kgo.FetchIsolationLevel(isolation))...)
	if err != nil {
		return err
	}
	defer cons.Close()
	got := 0
	stat = watchBroker(brokerPid)
	start = time.Now()
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("consume: %d of %d records: %w", got, n, err)
		}
		fs.EachError(func(t string, p int32, err error) { fails.add(err) })
		if e := fails.err(); e != nil {
			return fmt.Errorf("consume: %v", e)
		}
		got += fs.NumRecords()
	}
	el = time.Since(start)
	phase = "consume"
	if perTxn > 0 {
		phase = "consume-read-committed"
	}
	res = result{Phase: phase, Records: got, Size: size, Seconds: el.Seconds(), MBps: mb / el.Seconds(), RecordsPerSec: float64(got) / el.Seconds()}
	stat.stop(&res, int64(n*size))
	fmt.Printf("%s: %d records: %.1f MB/s, %.0f records/s (%.2fs)%s\n", consumeMode, got, mb/el.Seconds(), float64(got)/el.Seconds(), el.Seconds(), res.brokerText())
	printJSON(res)
	return nil
}

// security are the TLS and SASL options of every client, set from
// -command-config and -X in main before any client is made;
// securityArgs are the same as flags, for the children of -procs.
var (
	security     []kgo.Opt
	securityArgs []string
)

// setSecurity reads the client properties of path (if any) with props
// over them.
func setSecurity(path string, props map[string]string) error {
	all := map[string]string{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("-command-config: %w", err)
		}
		if all, err = config.ParseClientProperties(string(data)); err != nil {
			return fmt.Errorf("-command-config %s: %w", path, err)
		}
	}
	maps.Copy(all, props)
	opts, err := clientsec.Options(all)
	if err != nil {
		return err
	}
	security = opts
	return nil
}

// seed returns the options every client starts with: the brokers and
// the security options.
func seed(brokers string) []kgo.Opt {
	return append(slices.Clone(security), kgo.SeedBrokers(strings.Split(brokers, ",")...))
}

// emitJSON and brokerPid are set from -json and -broker-pid in main
// before any phase runs.
var (
	emitJSON  bool
	brokerPid []int
	// replicationFactor is -replication-factor, for every test topic.
	replicationFactor int
	// e2eSplitOn is -e2e-split; e2eGOGC is -e2e-gogc.
	e2eSplitOn bool
	e2eGOGC    int
)

// result is one measured phase, printed as a JSON line with -json.
type result struct {
	Phase         string  `json:"phase"`
	Records       int     `json:"records"`
	Size          int     `json:"size"`
	Seconds       float64 `json:"seconds"`
	MBps          float64 `json:"mbps,omitempty"`
	RecordsPerSec float64 `json:"records_per_sec,omitempty"`
	Rate          int     `json:"rate,omitempty"`
	P50ms         float64 `json:"p50_ms,omitempty"`
	P99ms         float64 `json:"p99_ms,omitempty"`
	P999ms        float64 `json:"p999_ms,omitempty"`
	MaxMs         float64 `json:"max_ms,omitempty"`
	// Procs is the number of producer (or consumer) processes with -procs.
	Procs int `json:"procs,omitempty"`
	// The broker's CPU time in the phase, per GB moved, and its peak
	// RSS, with -broker-pid.
	BrokerCPUSeconds  float64 `json:"broker_cpu_s,omitempty"`
	BrokerCPUSecPerGB float64 `json:"broker_cpu_s_per_gb,omitempty"`
	BrokerPeakRSSMB   float64 `json:"broker_peak_rss_mb,omitempty"`
	// BrokerMinFltPerGB is the broker's minor page faults per GB moved.
	BrokerMinFltPerGB float64 `json:"broker_minflt_per_gb,omitempty"`
	// BrokerVCSwPerGB and BrokerNVCSwPerGB are the broker threads'
	// voluntary (blocking, so a wake-up) and involuntary context switches
	// per GB moved.
	BrokerVCSwPerGB  float64 `json:"broker_vcsw_per_gb,omitempty"`
	BrokerNVCSwPerGB float64 `json:"broker_nvcsw_per_gb,omitempty"`
	// The consumer processes' own CPU time, per GB consumed, the Fetch
	// responses they read (count, per GB, mean size) and their Metadata
	// responses, with -procs (clientstat.go).
	ClientCPUSeconds  float64 `json:"client_cpu_s,omitempty"`
	ClientCPUSecPerGB float64 `json:"client_cpu_s_per_gb,omitempty"`
	// ClientMinFltPerGB is the consumer processes' minor page faults
	// per GB consumed.
	ClientMinFltPerGB float64 `json:"client_minflt_per_gb,omitempty"`
	// ClientGCsPerGB is the consumer processes' Go garbage collections
	// per GB consumed, ClientAllocPerByte the bytes their Go heaps
	// allocated per byte consumed.
	ClientGCsPerGB     float64 `json:"client_gcs_per_gb,omitempty"`
	ClientAllocPerByte float64 `json:"client_alloc_per_byte,omitempty"`
	// The consumer processes' voluntary and involuntary context switches
	// and read system calls per GB consumed.
	ClientVCSwPerGB  float64 `json:"client_vcsw_per_gb,omitempty"`
	ClientNVCSwPerGB float64 `json:"client_nvcsw_per_gb,omitempty"`
	ClientReadsPerGB float64 `json:"client_reads_per_gb,omitempty"`
	// BatchesPerGB and AvgBatchKB are the whole record batches the
	// consumers decoded per GB consumed and their mean size;
	// NonBatchMBPerGB the response bytes that were not whole batches
	// (framing, and partial batches read and dropped), MB per GB.
	BatchesPerGB      float64 `json:"batches_per_gb,omitempty"`
	AvgBatchKB        float64 `json:"avg_batch_kb,omitempty"`
	NonBatchMBPerGB   float64 `json:"non_batch_mb_per_gb,omitempty"`
	FetchResponses    int64   `json:"fetch_responses,omitempty"`
	FetchesPerGB      float64 `json:"fetches_per_gb,omitempty"`
	AvgFetchKB        float64 `json:"avg_fetch_kb,omitempty"`
	MetadataResponses int64   `json:"metadata_responses,omitempty"`
	// FetchInFlightShare is the share of the consumers' time a fetch was
	// in flight (request written to response read), summed over them.
	FetchInFlightShare float64 `json:"fetch_in_flight_share,omitempty"`
}

// clientText is the client-side part of a consume line ("" when not measured).
func (r result) clientText() string {
	if r.FetchResponses == 0 && r.ClientCPUSeconds == 0 {
		return ""
	}
	return fmt.Sprintf(", clients: %.2f CPU s (%.3f s/GB, %.0f minor page faults and %.0f GCs per GB, %.2f bytes allocated per byte), %d fetch responses (%.0f per GB, mean %.0f KiB), %.0f batches per GB (mean %.0f KiB; %.1f MB per GB of responses not whole batches), %d metadata responses, a fetch in flight %.0f%% of the time",
		r.ClientCPUSeconds, r.ClientCPUSecPerGB, r.ClientMinFltPerGB, r.ClientGCsPerGB, r.ClientAllocPerByte, r.FetchResponses, r.FetchesPerGB, r.AvgFetchKB,
		r.BatchesPerGB, r.AvgBatchKB, r.NonBatchMBPerGB, r.MetadataResponses, 100*r.FetchInFlightShare)
}

func printJSON(r result) {
	if !emitJSON {
		return
	}
	b, _ := json.Marshal(r)
	fmt.Printf("%s\n", b)
}

// e2e sends rate records per second for d into a fresh topic and measures, for each,
// the time from just before Produce to the consumer's PollFetches returning it. Sender
// and receiver share the process's monotonic clock: the value's first 8 bytes are
// nanoseconds since base.
//
// The batches are compressed with codec (-compression, none by default),
// as in the other modes and in -procs e2e: this mode used franz-go's
// default, snappy, which shrank the mostly zero 1 KiB values to a few dozen
// bytes on the wire, so "1 KiB records" moved far fewer bytes than the
// name says.
func e2e(brokers string, rate, size, partitions int, acks, codec string, d, warmup time.Duration) error {
	if rate < 1 || size < 8 {
		return fmt.Errorf("-e2e-rate must be >= 1 and -size >= 8")
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+2*time.Minute)
	defer cancel()
	compression, err := compressionOpt(codec)
	if err != nil {
		return err
	}
	// No linger: franz-go lingers 10 ms by default since v1.20, which
	// would be most of what this measures.
	opts := append(seed(brokers), kgo.ProducerLinger(0), compression)
	switch acks {
	case "all":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "leader":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	default:
		return fmt.Errorf("acks %q: e2e takes all or leader", acks)
	}
	prod, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer prod.Close()
	adm := kadm.NewClient(prod)
	topic := fmt.Sprintf("samsa-load-e2e-%d", time.Now().UnixNano())
	if _, err := adm.CreateTopic(ctx, int32(partitions), int16(replicationFactor), nil, topic); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	defer adm.DeleteTopics(context.Background(), topic)
	offsets := make(map[int32]kgo.Offset, partitions)
	for p := 0; p < partitions; p++ {
		offsets[int32(p)] = kgo.NewOffset().AtStart()
	}
	n := int(d.Seconds() * float64(rate))
	skip := int(warmup.Seconds() * float64(rate))
	var split *e2eSplit
	consOpts := append(seed(brokers), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if e2eSplitOn {
		split = newE2ESplit(time.Now(), n)
		consOpts = append(consOpts, kgo.WithHooks(split))
	}
	cons, err := kgo.NewClient(consOpts...)
	if err != nil {
		return err
	}
	defer cons.Close()

	stat := watchBroker(brokerPid)
	base := time.Now()
	if split != nil {
		// The hooks read split.base on franz-go's goroutines: it is
		// the base, fixed before they start.
		base = split.base
	}
	var fails failures
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		sleep, done := precisePacing()
		defer done()
		interval := time.Second / time.Duration(rate)
		for i := 0; i < n; i++ {
			if wait := time.Duration(i)*interval - time.Since(base); wait > 0 {
				sleep(wait) // pacing the sender, not waiting for a condition
			}
			v := make([]byte, size)
			binary.BigEndian.PutUint64(v, uint64(time.Since(base)))
			binary.BigEndian.PutUint64(v[len(v)-8:], uint64(i))
			prod.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(r *kgo.Record, err error) {
				if split != nil {
					split.ack(recordIndex(r.Value))
				}
				if err != nil {
					fails.add(err)
				}
			})
		}
	}()
	lat := make([]time.Duration, 0, n)
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		now := time.Since(base)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("consumed %d of %d records: %w", got, n, err)
		}
		if f := fails.count(); f > 0 {
			return fmt.Errorf("%d produce errors, first: %v", f, fails.err())
		}
		fs.EachError(func(t string, p int32, err error) { fails.add(err) })
		if e := fails.err(); e != nil {
			return fmt.Errorf("fetch: %v", e)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			if split != nil {
				split.poll(recordIndex(r.Value), time.Duration(binary.BigEndian.Uint64(r.Value)), now)
			}
			if int(binary.BigEndian.Uint64(r.Value[len(r.Value)-8:])) >= skip {
				lat = append(lat, now-time.Duration(binary.BigEndian.Uint64(r.Value)))
			}
		})
	}
	<-sent
	if split != nil {
		if err := prod.Flush(ctx); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
	}
	if len(lat) == 0 {
		return fmt.Errorf("no records after the warm-up")
	}
	slices.Sort(lat)
	pct := func(q float64) float64 {
		i := int(q * float64(len(lat)))
		if i >= len(lat) {
			i = len(lat) - 1
		}
		return float64(lat[i].Microseconds()) / 1000
	}
	r := result{Phase: "e2e", Records: len(lat), Size: size, Seconds: d.Seconds(), Rate: rate,
		P50ms: pct(0.50), P99ms: pct(0.99), P999ms: pct(0.999), MaxMs: float64(lat[len(lat)-1].Microseconds()) / 1000}
	stat.stop(&r, 2*int64(n*size)) // each byte in and out
	fmt.Printf("e2e: %d records/s x %d B, %d partitions, acks=%s, %d measured: p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms%s\n",
		rate, size, partitions, acks, len(lat), r.P50ms, r.P99ms, r.P999ms, r.MaxMs, r.brokerText())
	printJSON(r)
	if split != nil {
		split.report(skip, time.Second/time.Duration(rate))
	}
	return nil
}

// loopbackMBps pushes total bytes through one loopback TCP connection.
func loopbackMBps(total int) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, err = io.Copy(io.Discard, c)
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 1<<20)
	start := time.Now()
	for sent := 0; sent < total; sent += len(buf) {
		if _, err := c.Write(buf); err != nil {
			return 0, err
		}
	}
	c.Close()
	if err := <-done; err != nil {
		return 0, err
	}
	return float64(total) / 1e6 / time.Since(start).Seconds(), nil
}

// diskMBps writes total bytes sequentially and fsyncs once at the end.
func diskMBps(dir string, total int) (float64, error) {
	p := filepath.Join(dir, fmt.Sprintf("samsa-load-disk-%d", time.Now().UnixNano()))
	f, err := os.Create(p)
	if err != nil {
		return 0, err
	}
	defer os.Remove(p)
	defer f.Close()
	buf := make([]byte, 1<<20)
	start := time.Now()
	for w := 0; w < total; w += len(buf) {
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	return float64(total) / 1e6 / time.Since(start).Seconds(), nil
}
