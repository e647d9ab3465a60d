// Command compare runs the same load against samsa and Apache Kafka 4.4 in turn, on the
// same machine, alternating the order each round, and prints a markdown table of
// medians, min-max and the ratio samsa/Kafka per figure. bench/compare.sh builds it and
// the binaries it drives; run that instead.
//
// Each round starts each broker fresh (one node, empty data directory, equivalent
// settings: num.partitions=1, internal topics with replication factor 1, no initial
// rebalance delay, the default flush policy of both: no fsync by count or time), then:
//
//   - start-up time: process start to the first answered ApiVersions request;
//   - resident memory (VmRSS) after -settle idle, and its peak sampled every 100 ms
//     during the loads below;
//   - a short unmeasured warm-up produce (JIT for Kafka, page cache for both);
//   - samsa-load: produce 1 KiB and 100 B records to 6 partitions with acks=all,
//     then consume them back;
//   - kafka-producer-perf-test (the Java producer, its defaults, acks=all) with the
//     same records, and kafka-consumer-perf-test reading the 1 KiB topic;
//   - samsa-load with -procs N (N producer and N consumer processes, so that one
//     client process's CPU is not the limit): produce and consume 1 KiB records,
//     with the broker's CPU seconds per GB of each; the records are consumed
//     by franz-go's consumer and again by samsa-load's raw fetch loop
//     (-consume raw), with the consumer processes' CPU seconds per GB;
//   - samsa-load -mode e2e: end-to-end latency at a fixed rate, and again at two
//     higher rates (-e2e-rate-high, -e2e-rate-top).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/bench/internal/benchutil"
	"github.com/samsa-broker/samsa/compat-tests/harness/testcerts"
)

type config struct {
	samsaBin, loadBin, kafkaRef, work string
	// ssl: also measure samsa-load over each broker's SSL listener, with
	// the PEM keystore and CA below (made per run in work).
	ssl                   bool
	keystore, caFile      string
	rounds                int
	records1k, records100 int
	e2eRate               int
	e2eDuration           time.Duration
	// procs and recordsProcs: the extra samsa-load run with that many
	// producer and consumer processes (procs < 2 leaves it out).
	procs, recordsProcs int
	// e2eRateHigh and e2eRateTop are the rates of the second and third
	// e2e runs (0 leaves one out).
	e2eRateHigh, e2eRateTop int
	settle                  time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.samsaBin, "samsa", "", "samsa binary")
	flag.StringVar(&c.loadBin, "load", "", "samsa-load binary")
	flag.StringVar(&c.kafkaRef, "kafka-ref", "compat-tests/kafka-ref/kafka-ref.sh", "kafka-ref.sh")
	flag.StringVar(&c.work, "work", "", "scratch directory for data (default: a new temp dir)")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds; each runs both brokers, alternating which goes first")
	flag.IntVar(&c.records1k, "records-1k", 200000, "records of 1 KiB per produce run")
	flag.IntVar(&c.records100, "records-100", 1000000, "records of 100 B per produce run")
	flag.IntVar(&c.e2eRate, "e2e-rate", 1000, "records per second of the end-to-end latency run")
	flag.DurationVar(&c.e2eDuration, "e2e-duration", 20*time.Second, "duration of the end-to-end latency run")
	flag.DurationVar(&c.settle, "settle", 10*time.Second, "idle time after start-up before the idle RSS sample")
	flag.IntVar(&c.procs, "procs", 2, "client processes each way of the extra samsa-load 1 KiB run (below 2: no such run)")
	flag.IntVar(&c.recordsProcs, "records-procs", 1000000, "records of 1 KiB of the -procs run")
	flag.IntVar(&c.e2eRateHigh, "e2e-rate-high", 10000, "records per second of a second end-to-end latency run (0: none)")
	flag.IntVar(&c.e2eRateTop, "e2e-rate-top", 50000, "records per second of a third end-to-end latency run (0: none)")
	flag.BoolVar(&c.ssl, "ssl", true, "also measure samsa-load produce and consume 1 KiB over an SSL listener")
	flag.Parse()
	if c.samsaBin == "" || c.loadBin == "" {
		fmt.Fprintln(os.Stderr, "compare: -samsa and -load are required (use bench/compare.sh)")
		os.Exit(2)
	}
	if c.work == "" {
		d, err := os.MkdirTemp("", "samsa-compare-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
		defer os.RemoveAll(d)
		c.work = d
	}
	if c.ssl {
		if err := writeTLSFiles(&c); err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
	}
	all := map[string][]map[string]float64{}
	load := [2]string{benchutil.LoadAvg(), ""}
	began := time.Now()
	for r := 0; r < c.rounds; r++ {
		order := []string{"samsa", "kafka"}
		if r%2 == 1 {
			order = []string{"kafka", "samsa"}
		}
		for _, b := range order {
			logf("round %d/%d: %s", r+1, c.rounds, b)
			m, err := runBroker(c, b, r)
			if err != nil {
				fmt.Fprintf(os.Stderr, "compare: round %d, %s: %v\n", r+1, b, err)
				os.Exit(1)
			}
			all[b] = append(all[b], m)
		}
	}
	load[1] = benchutil.LoadAvg()
	printTable(c, all, load, time.Since(began))
}

// writeTLSFiles makes a throwaway CA and a server certificate for
// 127.0.0.1 and writes the brokers' PEM keystore and the clients' CA file.
func writeTLSFiles(c *config) error {
	ca := testcerts.NewCA("samsa bench CA")
	srv := ca.Server("localhost", "127.0.0.1")
	c.keystore, c.caFile = filepath.Join(c.work, "server-keystore.pem"), filepath.Join(c.work, "ca.pem")
	if err := os.WriteFile(c.keystore, append(append([]byte{}, srv.CertPEM...), srv.KeyPEM...), 0o600); err != nil {
		return err
	}
	return os.WriteFile(c.caFile, ca.CertPEM, 0o600)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "compare %s: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// broker is one running broker under test.
type broker struct {
	addr    string
	sslAddr string // "" without -ssl
	pid     int
	startup time.Duration
	stop    func() error
}

func runBroker(c config, name string, round int) (map[string]float64, error) {
	dir := filepath.Join(c.work, fmt.Sprintf("%s-%d", name, round))
	defer os.RemoveAll(dir)
	var b *broker
	var err error
	if name == "samsa" {
		b, err = startSamsa(c, dir)
	} else {
		b, err = startKafka(c, dir)
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := b.stop(); err != nil {
			logf("%s stop: %v", name, err)
		}
	}()
	m := map[string]float64{"startup_s": b.startup.Seconds()}
	time.Sleep(c.settle) // the idle period being measured
	m["rss_idle_mib"] = rssMiB(b.pid)

	peak := newPeakSampler(b.pid)
	defer peak.stop()

	// Warm-up, not measured.
	if _, err := samsaLoad(c, b.addr, "-records", strconv.Itoa(c.records1k/10), "-size", "1024"); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	for _, size := range []int{1024, 100} {
		n, tag := c.records1k, "1k"
		if size == 100 {
			n, tag = c.records100, "100"
		}
		res, err := samsaLoad(c, b.addr, "-records", strconv.Itoa(n), "-size", strconv.Itoa(size))
		if err != nil {
			return nil, err
		}
		m["load_produce_"+tag+"_mbps"] = res["produce"].MBps
		m["load_produce_"+tag+"_rps"] = res["produce"].RecordsPerSec
		m["load_consume_"+tag+"_mbps"] = res["consume"].MBps
		m["load_consume_"+tag+"_rps"] = res["consume"].RecordsPerSec

		topic := fmt.Sprintf("perf-%s-%d", tag, time.Now().UnixNano())
		if err := createTopic(b.addr, topic, 6); err != nil {
			return nil, err
		}
		rps, mbps, err := producerPerf(c, b.addr, topic, n, size)
		if err != nil {
			return nil, err
		}
		m["perf_produce_"+tag+"_mbps"], m["perf_produce_"+tag+"_rps"] = mbps, rps
		if size == 1024 {
			rps, mbps, err := consumerPerf(c, b.addr, topic, n)
			if err != nil {
				return nil, err
			}
			m["perf_consume_"+tag+"_mbps"], m["perf_consume_"+tag+"_rps"] = mbps, rps
		}
		if err := deleteTopic(b.addr, topic); err != nil {
			return nil, err
		}
	}
	if c.procs > 1 {
		// Several client processes each way, so that the client's CPU is
		// not what is measured; with the broker's CPU per GB moved.
		// The records are consumed twice: by franz-go's consumer, then
		// by samsa-load's raw fetch loop (-consume raw: batch CRCs and
		// record counts checked, no record decoding), which leaves the
		// broker more of the two cores.
		res, err := samsaLoad(c, b.addr, "-records", strconv.Itoa(c.recordsProcs), "-size", "1024",
			"-procs", strconv.Itoa(c.procs), "-broker-pid", strconv.Itoa(b.pid), "-consume", "kgo,raw")
		if err != nil {
			return nil, fmt.Errorf("-procs %d: %w", c.procs, err)
		}
		m["procs_produce_1k_mbps"] = res["produce"].MBps
		m["procs_consume_1k_mbps"] = res["consume"].MBps
		m["procs_produce_cpu_s_per_gb"] = res["produce"].BrokerCPUSecPerGB
		m["procs_consume_cpu_s_per_gb"] = res["consume"].BrokerCPUSecPerGB
		m["procs_consume_client_cpu_s_per_gb"] = res["consume"].ClientCPUSecPerGB
		m["procs_consume_client_gcs_per_gb"] = res["consume"].ClientGCsPerGB
		m["procs_consume_client_minflt_per_gb"] = res["consume"].ClientMinFltPerGB
		m["procs_consume_raw_1k_mbps"] = res["consume-raw"].MBps
		m["procs_consume_raw_cpu_s_per_gb"] = res["consume-raw"].BrokerCPUSecPerGB
		m["procs_consume_raw_client_cpu_s_per_gb"] = res["consume-raw"].ClientCPUSecPerGB
		m["procs_consume_raw_vcsw_per_gb"] = res["consume-raw"].BrokerVCSwPerGB
	}
	if c.ssl {
		// The same 1 KiB load over TLS (TLS 1.3, the clients' and brokers'
		// default), next to the plaintext figures above.
		res, err := samsaLoad(c, b.sslAddr, "-records", strconv.Itoa(c.records1k), "-size", "1024",
			"-X", "security.protocol=SSL", "-X", "ssl.truststore.location="+c.caFile)
		if err != nil {
			return nil, fmt.Errorf("SSL: %w", err)
		}
		m["load_produce_1k_ssl_mbps"] = res["produce"].MBps
		m["load_consume_1k_ssl_mbps"] = res["consume"].MBps
	}
	// The end-to-end latency at the base rate, then at the high and top
	// rates when they are set, as <prefix>_p50_ms, _p99_ms, _p999_ms.
	for i, e := range []struct {
		prefix string
		rate   int
	}{{"e2e", c.e2eRate}, {"e2e_high", c.e2eRateHigh}, {"e2e_top", c.e2eRateTop}} {
		if i > 0 && e.rate <= 0 {
			continue
		}
		res, err := samsaLoad(c, b.addr, "-mode", "e2e", "-size", "1024",
			"-e2e-rate", strconv.Itoa(e.rate), "-e2e-duration", c.e2eDuration.String())
		if err != nil {
			return nil, err
		}
		m[e.prefix+"_p50_ms"], m[e.prefix+"_p99_ms"], m[e.prefix+"_p999_ms"] = res["e2e"].P50ms, res["e2e"].P99ms, res["e2e"].P999ms
	}
	m["rss_load_mib"] = peak.stop()
	logf("%s: %v", name, m)
	return m, nil
}

// startSamsa runs the samsa binary with the comparison settings and waits until it
// answers ApiVersions, polling every 5 ms.
func startSamsa(c config, dir string) (*broker, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	l := "PLAINTEXT://" + addr
	var sslAddr string
	var tlsArgs []string
	if c.ssl {
		sport, err := freePort()
		if err != nil {
			return nil, err
		}
		sslAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(sport))
		l += ",SSL://" + sslAddr
		tlsArgs = []string{"--override", "listener.name.ssl.ssl.keystore.type=PEM", "--override", "listener.name.ssl.ssl.keystore.location=" + c.keystore}
	}
	args := tlsArgs
	for _, kv := range []string{"listeners=" + l, "advertised.listeners=" + l, "log.dirs=" + filepath.Join(dir, "data"), "node.id=1",
		"num.partitions=1", "auto.create.topics.enable=true", "offsets.topic.replication.factor=1",
		"transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
		"group.initial.rebalance.delay.ms=0"} {
		args = append(args, "--override", kv)
	}
	logFile, err := os.Create(filepath.Join(dir, "samsa.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(c.samsaBin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logFile.Close() }()
	stop := func() error {
		select {
		case err := <-exited:
			return fmt.Errorf("samsa had exited: %v", err)
		default:
		}
		cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			return err
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("samsa did not stop in 30s; killed")
		}
	}
	deadline := t0.Add(60 * time.Second)
	for !benchutil.APIVersionsOK(addr) {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("samsa exited during start-up: %v (log %s)", err, logFile.Name())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("samsa did not answer ApiVersions within 60s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return &broker{addr: addr, sslAddr: sslAddr, pid: cmd.Process.Pid, startup: time.Since(t0), stop: stop}, nil
}

// startKafka starts one Kafka node through kafka-ref.sh; the script records when it
// launched the JVM and when the node first answered ApiVersions (polled every 50 ms).
func startKafka(c config, dir string) (*broker, error) {
	cmd := exec.Command(c.kafkaRef, "start", dir)
	if c.ssl {
		cmd.Env = append(os.Environ(), "KAFKA_REF_SSL=1",
			"KAFKA_REF_OVERRIDES=listener.name.ssl.ssl.keystore.type=PEM\nlistener.name.ssl.ssl.keystore.location="+c.keystore)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("kafka-ref.sh start: %v\n%s", err, out)
	}
	stop := func() error {
		out, err := exec.Command(c.kafkaRef, "stop", dir).CombinedOutput()
		if err != nil {
			return fmt.Errorf("kafka-ref.sh stop: %v\n%s", err, out)
		}
		return nil
	}
	read := func(name string) (int64, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	launched, err1 := read("node1/launched-at")
	answered, err2 := read("node1/answered-at")
	pid, err3 := read("pids")
	if err := firstErr(err1, err2, err3); err != nil {
		stop()
		return nil, err
	}
	addr, err := os.ReadFile(filepath.Join(dir, "bootstrap"))
	if err != nil {
		stop()
		return nil, err
	}
	var sslAddr []byte
	if c.ssl {
		if sslAddr, err = os.ReadFile(filepath.Join(dir, "ssl-bootstrap")); err != nil {
			stop()
			return nil, err
		}
	}
	return &broker{addr: strings.TrimSpace(string(addr)), sslAddr: strings.TrimSpace(string(sslAddr)), pid: int(pid), startup: time.Duration(answered - launched), stop: stop}, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// rssMiB reads VmRSS of pid in MiB (0 if unreadable).
func rssMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

type peakSampler struct {
	once sync.Once
	done chan struct{}
	wg   sync.WaitGroup
	max  float64
}

func newPeakSampler(pid int) *peakSampler {
	p := &peakSampler{done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			p.max = max(p.max, rssMiB(pid))
			select {
			case <-p.done:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// stop ends sampling and returns the peak RSS in MiB.
func (p *peakSampler) stop() float64 {
	p.once.Do(func() { close(p.done); p.wg.Wait() })
	return p.max
}

type loadResult struct {
	Phase         string  `json:"phase"`
	MBps          float64 `json:"mbps"`
	RecordsPerSec float64 `json:"records_per_sec"`
	P50ms         float64 `json:"p50_ms"`
	P99ms         float64 `json:"p99_ms"`
	P999ms        float64 `json:"p999_ms"`
	// BrokerCPUSecPerGB is the broker's CPU seconds per GB moved (with
	// -broker-pid).
	BrokerCPUSecPerGB float64 `json:"broker_cpu_s_per_gb"`
	// ClientCPUSecPerGB is the consumer processes' CPU seconds per GB
	// consumed (-procs).
	ClientCPUSecPerGB float64 `json:"client_cpu_s_per_gb"`
	// ClientGCsPerGB and ClientMinFltPerGB are the consumer processes'
	// garbage collections and minor page faults per GB consumed (-procs):
	// how often franz-go's ~30 MB response buffers come from fresh memory
	// (bench/README.md, "Consumers' CPU per GB (stop 32)").
	ClientGCsPerGB    float64 `json:"client_gcs_per_gb"`
	ClientMinFltPerGB float64 `json:"client_minflt_per_gb"`
	// BrokerVCSwPerGB is the broker threads' voluntary context switches
	// (blocking: wake-ups) per GB moved (with -broker-pid).
	BrokerVCSwPerGB float64 `json:"broker_vcsw_per_gb"`
}

// samsaLoad runs samsa-load with -json and returns its results by phase.
func samsaLoad(c config, addr string, args ...string) (map[string]loadResult, error) {
	args = append([]string{"-brokers", addr, "-partitions", "6", "-acks", "all", "-baseline=false", "-json"}, args...)
	return benchutil.LoadPhases[loadResult](c.loadBin, args...)
}

func admin(addr string) (*kadm.Client, func(), error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

func createTopic(addr, topic string, partitions int32) error {
	adm, done, err := admin(addr)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = r.Err
	}
	return err
}

func deleteTopic(addr, topic string) error {
	adm, done, err := admin(addr)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = adm.DeleteTopics(ctx, topic)
	return err
}

// perfLine matches the summary line of kafka-producer-perf-test.
var perfLine = regexp.MustCompile(`(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\)`)

func producerPerf(c config, addr, topic string, n, size int) (rps, mbps float64, err error) {
	out, err := exec.Command(c.kafkaRef, "tool", "kafka-producer-perf-test", "--topic", topic,
		"--num-records", strconv.Itoa(n), "--record-size", strconv.Itoa(size), "--throughput", "-1",
		"--producer-props", "bootstrap.servers="+addr, "acks=all").CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("kafka-producer-perf-test: %v\n%s", err, out)
	}
	ms := perfLine.FindAllStringSubmatch(string(out), -1)
	if len(ms) == 0 {
		return 0, 0, fmt.Errorf("kafka-producer-perf-test: no summary in\n%s", out)
	}
	last := ms[len(ms)-1]
	if last[1] != strconv.Itoa(n) {
		return 0, 0, fmt.Errorf("kafka-producer-perf-test: %s records sent, want %d\n%s", last[1], n, out)
	}
	rps, _ = strconv.ParseFloat(last[2], 64)
	mbps, _ = strconv.ParseFloat(last[3], 64)
	// The tool's MB is 2^20 bytes; samsa-load's is 10^6.
	return rps, mbps * (1 << 20) / 1e6, nil
}

// consumerPerf runs kafka-consumer-perf-test and returns its fetch rates (which leave
// out the group join).
func consumerPerf(c config, addr, topic string, n int) (rps, mbps float64, err error) {
	out, err := exec.Command(c.kafkaRef, "tool", "kafka-consumer-perf-test", "--bootstrap-server", addr,
		"--topic", topic, "--messages", strconv.Itoa(n), "--timeout", "60000").Output()
	if err != nil {
		return 0, 0, fmt.Errorf("kafka-consumer-perf-test: %v\n%s", err, out)
	}
	var header, values []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, ",")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if slices.Contains(f, "fetch.MB.sec") {
			header = f
		} else if header != nil && len(f) == len(header) {
			values = f
		}
	}
	if values == nil {
		return 0, 0, fmt.Errorf("kafka-consumer-perf-test: no result in\n%s", out)
	}
	get := func(name string) float64 {
		i := slices.Index(header, name)
		v, _ := strconv.ParseFloat(values[i], 64)
		return v
	}
	if got := get("data.consumed.in.nMsg"); int(got) < n {
		return 0, 0, fmt.Errorf("kafka-consumer-perf-test: consumed %v of %d\n%s", got, n, out)
	}
	return get("fetch.nMsg.sec"), get("fetch.MB.sec") * (1 << 20) / 1e6, nil
}

type figure struct {
	key, label   string
	higherBetter bool
}

func printTable(c config, all map[string][]map[string]float64, load [2]string, took time.Duration) {
	figs := []figure{
		{"startup_s", "start-up to first ApiVersions answer (s)", false},
		{"rss_idle_mib", fmt.Sprintf("RSS idle, %s after start (MiB)", c.settle), false},
		{"rss_load_mib", "RSS peak under the loads below (MiB)", false},
		{"load_produce_1k_mbps", fmt.Sprintf("samsa-load produce %d x 1 KiB, acks=all (MB/s)", c.records1k), true},
		{"load_consume_1k_mbps", "samsa-load consume 1 KiB (MB/s)", true},
		{"load_produce_1k_ssl_mbps", fmt.Sprintf("samsa-load produce %d x 1 KiB over SSL, acks=all (MB/s)", c.records1k), true},
		{"load_consume_1k_ssl_mbps", "samsa-load consume 1 KiB over SSL (MB/s)", true},
		{"load_produce_100_rps", fmt.Sprintf("samsa-load produce %d x 100 B, acks=all (records/s)", c.records100), true},
		{"load_consume_100_rps", "samsa-load consume 100 B (records/s)", true},
		{"procs_produce_1k_mbps", fmt.Sprintf("samsa-load -procs %d produce %d x 1 KiB, acks=all (MB/s)", c.procs, c.recordsProcs), true},
		{"procs_consume_1k_mbps", fmt.Sprintf("samsa-load -procs %d consume 1 KiB (MB/s)", c.procs), true},
		{"procs_produce_cpu_s_per_gb", "broker CPU per GB produced, -procs run (s/GB)", false},
		{"procs_consume_cpu_s_per_gb", "broker CPU per GB consumed, -procs run (s/GB)", false},
		{"procs_consume_client_cpu_s_per_gb", "consumer processes' CPU per GB consumed, -procs run (s/GB)", false},
		{"procs_consume_client_gcs_per_gb", "consumer processes' garbage collections per GB consumed, -procs run", false},
		{"procs_consume_client_minflt_per_gb", "consumer processes' minor page faults per GB consumed, -procs run", false},
		{"procs_consume_raw_1k_mbps", fmt.Sprintf("samsa-load -procs %d -consume raw, 1 KiB (MB/s)", c.procs), true},
		{"procs_consume_raw_cpu_s_per_gb", "broker CPU per GB consumed, -consume raw (s/GB)", false},
		{"procs_consume_raw_client_cpu_s_per_gb", "consumer processes' CPU per GB consumed, -consume raw (s/GB)", false},
		{"procs_consume_raw_vcsw_per_gb", "broker threads' voluntary context switches per GB consumed, -consume raw", false},
		{"perf_produce_1k_mbps", "kafka-producer-perf-test 1 KiB, acks=all (MB/s)", true},
		{"perf_produce_100_rps", "kafka-producer-perf-test 100 B, acks=all (records/s)", true},
		{"perf_consume_1k_mbps", "kafka-consumer-perf-test 1 KiB (MB/s)", true},
		{"e2e_p50_ms", fmt.Sprintf("end-to-end latency p50 at %d x 1 KiB/s, acks=all (ms)", c.e2eRate), false},
		{"e2e_p99_ms", "end-to-end latency p99 (ms)", false},
		{"e2e_p999_ms", "end-to-end latency p99.9 (ms)", false},
		{"e2e_high_p50_ms", fmt.Sprintf("end-to-end latency p50 at %d x 1 KiB/s, acks=all (ms)", c.e2eRateHigh), false},
		{"e2e_high_p99_ms", fmt.Sprintf("end-to-end latency p99 at %d/s (ms)", c.e2eRateHigh), false},
		{"e2e_high_p999_ms", fmt.Sprintf("end-to-end latency p99.9 at %d/s (ms)", c.e2eRateHigh), false},
		{"e2e_top_p50_ms", fmt.Sprintf("end-to-end latency p50 at %d x 1 KiB/s, acks=all (ms)", c.e2eRateTop), false},
		{"e2e_top_p99_ms", fmt.Sprintf("end-to-end latency p99 at %d/s (ms)", c.e2eRateTop), false},
		{"e2e_top_p999_ms", fmt.Sprintf("end-to-end latency p99.9 at %d/s (ms)", c.e2eRateTop), false},
	}
	w := os.Stdout
	fmt.Fprintf(w, "\n%d rounds, alternating order; 6 partitions, one node each; %s.\n", c.rounds, took.Round(time.Second))
	fmt.Fprintf(w, "Machine: %d cores (%s), %s/%s; load average %s before, %s after.\n\n",
		runtime.NumCPU(), benchutil.CPUModel(), runtime.GOOS, runtime.GOARCH, load[0], load[1])
	fmt.Fprintln(w, "| figure | samsa median (min-max) | Kafka 4.4 median (min-max) | samsa/Kafka |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, f := range figs {
		if !measured(all, f.key) {
			continue // a run left out (-ssl=false, -procs 1, -e2e-rate-high 0, -e2e-rate-top 0)
		}
		s, k := benchutil.Column(all["samsa"], f.key), benchutil.Column(all["kafka"], f.key)
		ratio := "-"
		if benchutil.Median(k) != 0 {
			better := "lower is better"
			if f.higherBetter {
				better = "higher is better"
			}
			ratio = fmt.Sprintf("%s (%s)", benchutil.Num(benchutil.Median(s)/benchutil.Median(k)), better)
		}
		fmt.Fprintf(w, "| %s | %s (%s-%s) | %s (%s-%s) | %s |\n", f.label,
			benchutil.Num(benchutil.Median(s)), benchutil.Num(slices.Min(s)), benchutil.Num(slices.Max(s)), benchutil.Num(benchutil.Median(k)), benchutil.Num(slices.Min(k)), benchutil.Num(slices.Max(k)), ratio)
	}
}

// measured reports whether some run of either broker has the figure key.
func measured(all map[string][]map[string]float64, key string) bool {
	for _, runs := range all {
		for _, r := range runs {
			if _, ok := r[key]; ok {
				return true
			}
		}
	}
	return false
}
