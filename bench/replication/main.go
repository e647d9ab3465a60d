// Command replication measures what replication costs (issue 12), on
// samsa and on Apache Kafka 4.4 side by side: acks=all produce and consume
// throughput, the brokers' CPU seconds per GB (summed over the nodes), and
// end-to-end latency at a fixed rate, with samsa-load, on three local
// nodes with replication factor 3 (min.insync.replicas=2) and with
// replication factor 1, and samsa on one node.
//
// Every case runs on a fresh cluster: samsa as three combined-mode
// processes (one Raft quorum, configured by the KAFKA_* variables of a
// three-node apache/kafka compose file), Kafka as three combined-mode
// JVMs started by compat-tests/kafka-ref/kafka-ref.sh. The cases of a
// round alternate samsa and Kafka, and the order reverses every round. It
// prints a markdown table of medians and min-max over the rounds, the
// ratios samsa/Kafka of the medians, the machine and its load average
// before and after. bench/replication.sh builds the binaries and runs it.
// Not part of CI.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/bench/internal/benchutil"
)

type config struct {
	samsaBin, loadBin, kafkaRef, work string
	rounds                            int
	records, size                     int
	partitions                        int
	e2eRate                           int
	e2eDuration                       time.Duration
	kafka, single                     bool
}

func main() {
	var c config
	flag.StringVar(&c.samsaBin, "samsa", "", "samsa binary")
	flag.StringVar(&c.loadBin, "load", "", "samsa-load binary")
	flag.StringVar(&c.kafkaRef, "kafka-ref", "compat-tests/kafka-ref/kafka-ref.sh", "kafka-ref.sh, which starts the Kafka clusters")
	flag.BoolVar(&c.kafka, "kafka", true, "also measure Apache Kafka 4.4 (three nodes, through -kafka-ref)")
	flag.BoolVar(&c.single, "single", true, "also measure samsa on one node (RF=1)")
	flag.StringVar(&c.work, "work", "", "directory for the nodes' data (default: a new temporary one)")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds")
	flag.IntVar(&c.records, "records", 200000, "records produced by the throughput load")
	flag.IntVar(&c.size, "size", 1024, "record value size in bytes")
	flag.IntVar(&c.partitions, "partitions", 6, "partitions of each test topic")
	flag.IntVar(&c.e2eRate, "e2e-rate", 1000, "records per second of the end-to-end latency load")
	flag.DurationVar(&c.e2eDuration, "e2e-duration", 20*time.Second, "how long the end-to-end latency load sends")
	flag.Parse()
	if c.samsaBin == "" || c.loadBin == "" {
		fmt.Fprintln(os.Stderr, "replication: -samsa and -load are required (bench/replication.sh sets them)")
		os.Exit(2)
	}
	if c.work == "" {
		dir, err := os.MkdirTemp("", "samsa-bench-replication-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "replication:", err)
			os.Exit(1)
		}
		defer os.RemoveAll(dir)
		c.work = dir
	}
	start := time.Now()
	before := benchutil.LoadAvg()
	all := map[string][]map[string]float64{}
	for round := range c.rounds {
		for _, s := range roundOrder(c, round) {
			m, err := runCase(c, s, round)
			if err != nil {
				fmt.Fprintln(os.Stderr, "replication:", err)
				os.Exit(1)
			}
			all[s.key()] = append(all[s.key()], m)
		}
	}
	printTable(c, all, [2]string{before, benchutil.LoadAvg()}, time.Since(start))
}

// setup is one measured configuration: a broker, a cluster size and the
// test topic's replication factor.
type setup struct {
	broker    string // "samsa" or "kafka"
	nodes, rf int
}

func (s setup) key() string { return fmt.Sprintf("%s-%dnodes-rf%d", s.broker, s.nodes, s.rf) }

func (s setup) label() string {
	name := "samsa"
	if s.broker == "kafka" {
		name = "Kafka"
	}
	nodes := "3 nodes"
	if s.nodes == 1 {
		nodes = "1 node"
	}
	return fmt.Sprintf("%s, %s, RF=%d", name, nodes, s.rf)
}

// minISR is the min.insync.replicas of a setup's cluster: 2 with
// replication factor 3, as production clusters run; 1 otherwise (an
// acks=all produce to a topic with fewer replicas than that is refused).
func (s setup) minISR() int { return min(s.rf, 2) }

// allSetups are the configurations in the table's order.
func allSetups(c config) []setup {
	var out []setup
	if c.single {
		out = append(out, setup{"samsa", 1, 1})
	}
	for _, rf := range []int{1, 3} {
		out = append(out, setup{"samsa", 3, rf})
		if c.kafka {
			out = append(out, setup{"kafka", 3, rf})
		}
	}
	return out
}

// roundOrder is the order of the setups in a round: samsa and Kafka
// alternate, and every other round runs the list backwards, so that
// neither broker always goes first on a machine whose load drifts.
func roundOrder(c config, round int) []setup {
	out := allSetups(c)
	if round%2 == 1 {
		slices.Reverse(out)
	}
	return out
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// runCase starts a fresh cluster for s, measures it and stops it.
func runCase(c config, s setup, round int) (map[string]float64, error) {
	dir := filepath.Join(c.work, fmt.Sprintf("round%d-%s", round, s.key()))
	start := startSamsa
	if s.broker == "kafka" {
		start = startKafka
	}
	cl, err := start(c, s, dir)
	if err != nil {
		// A cluster that does not form is reported, not measured: one
		// more try on fresh directories, the failed one's logs kept for
		// a look.
		kept, _ := os.MkdirTemp("", "samsa-bench-replication-failed-")
		if kept != "" {
			os.Rename(dir, filepath.Join(kept, filepath.Base(dir)))
		}
		logf("round %d, %s: %v; logs moved to %s; starting a fresh cluster", round+1, s.label(), err, kept)
		if cl, err = start(c, s, dir+"-retry"); err != nil {
			return nil, err
		}
	}
	m, err := measure(c, cl, s.rf)
	if stopErr := cl.stop(); stopErr != nil {
		logf("round %d, %s: stop: %v", round+1, s.label(), stopErr)
	}
	if err != nil {
		return nil, fmt.Errorf("round %d, %s: %w", round+1, s.label(), err)
	}
	logf("round %d, %s: %v", round+1, s.label(), m)
	os.RemoveAll(dir)
	return m, nil
}

// measure runs the throughput and the end-to-end loads against a topic
// with replication factor rf, with the CPU of every node of the cluster
// counted.
func measure(c config, cl *cluster, rf int) (map[string]float64, error) {
	var pids []string
	for _, pid := range cl.pids {
		pids = append(pids, strconv.Itoa(pid))
	}
	common := []string{"-brokers", cl.bootstrap(), "-partitions", strconv.Itoa(c.partitions), "-acks", "all",
		"-replication-factor", strconv.Itoa(rf), "-baseline=false", "-json", "-size", strconv.Itoa(c.size),
		"-broker-pid", strings.Join(pids, ",")}
	// Warm-up, not measured.
	if _, err := samsaLoad(c, append(common, "-records", strconv.Itoa(c.records/10))...); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	res, err := samsaLoad(c, append(common, "-records", strconv.Itoa(c.records))...)
	if err != nil {
		return nil, err
	}
	m := map[string]float64{
		"produce_mbps": res["produce"].MBps, "consume_mbps": res["consume"].MBps,
		"produce_cpu_s_per_gb": res["produce"].BrokerCPUSecPerGB, "consume_cpu_s_per_gb": res["consume"].BrokerCPUSecPerGB,
	}
	res, err = samsaLoad(c, append(common, "-mode", "e2e", "-e2e-rate", strconv.Itoa(c.e2eRate), "-e2e-duration", c.e2eDuration.String())...)
	if err != nil {
		return nil, err
	}
	m["e2e_p50_ms"], m["e2e_p99_ms"], m["e2e_p999_ms"] = res["e2e"].P50ms, res["e2e"].P99ms, res["e2e"].P999ms
	return m, nil
}

type loadResult struct {
	Phase             string  `json:"phase"`
	MBps              float64 `json:"mbps"`
	P50ms             float64 `json:"p50_ms"`
	P99ms             float64 `json:"p99_ms"`
	P999ms            float64 `json:"p999_ms"`
	BrokerCPUSecPerGB float64 `json:"broker_cpu_s_per_gb"`
}

// samsaLoad runs samsa-load with args (which include -json) and returns its
// results by phase.
func samsaLoad(c config, args ...string) (map[string]loadResult, error) {
	return benchutil.LoadPhases[loadResult](c.loadBin, args...)
}

// cluster is the running nodes of one case.
type cluster struct {
	addrs []string
	// pids are the nodes' processes, whose CPU time is measured.
	pids []int
	stop func() error
}

func (cl *cluster) bootstrap() string { return strings.Join(cl.addrs, ",") }

// samsaProcs are the samsa processes of a cluster.
type samsaProcs struct {
	procs []*exec.Cmd
	exits []chan error
}

// startSamsa starts s.nodes combined-mode nodes under dir, configured by
// the environment a KRaft compose file gives apache/kafka, and waits until
// every one answers ApiVersions and the Metadata lists them all.
func startSamsa(c config, s setup, dir string) (*cluster, error) {
	n := s.nodes
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	client, ctrl := ports[:n], ports[n:]
	var voters []string
	for i := range n {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ctrl[i]))
	}
	sp := &samsaProcs{}
	cl := &cluster{stop: sp.stop}
	for i := range n {
		id := i + 1
		data := filepath.Join(dir, fmt.Sprintf("node%d", id))
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, err
		}
		listener := fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", client[i])
		rf := strconv.Itoa(min(n, 3))
		env := []string{
			"KAFKA_NODE_ID=" + strconv.Itoa(id),
			"KAFKA_PROCESS_ROLES=broker,controller",
			"KAFKA_LISTENERS=" + listener + fmt.Sprintf(",CONTROLLER://127.0.0.1:%d", ctrl[i]),
			"KAFKA_ADVERTISED_LISTENERS=" + listener,
			"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
			"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
			"KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT",
			"KAFKA_CONTROLLER_QUORUM_VOTERS=" + strings.Join(voters, ","),
			"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0",
			"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=" + rf,
			"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=" + rf,
			"KAFKA_MIN_INSYNC_REPLICAS=" + strconv.Itoa(s.minISR()),
			"KAFKA_LOG_DIRS=" + filepath.Join(data, "logs"),
			"CLUSTER_ID=4L6g3nShT-eMCtK--X86sw",
		}
		logFile, err := os.Create(filepath.Join(data, "samsa.log"))
		if err != nil {
			cl.stop()
			return nil, err
		}
		cmd := exec.Command(c.samsaBin)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			logFile.Close()
			cl.stop()
			return nil, err
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait(); logFile.Close() }()
		cl.addrs = append(cl.addrs, fmt.Sprintf("127.0.0.1:%d", client[i]))
		cl.pids = append(cl.pids, cmd.Process.Pid)
		sp.procs = append(sp.procs, cmd)
		sp.exits = append(sp.exits, exited)
	}
	deadline := time.Now().Add(90 * time.Second)
	for _, addr := range cl.addrs {
		for !benchutil.APIVersionsOK(addr) {
			if time.Now().After(deadline) {
				cl.stop()
				return nil, fmt.Errorf("%d nodes: %s did not answer ApiVersions within 90 s (logs in %s)", n, addr, dir)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := waitBrokers(cl.bootstrap(), n, deadline); err != nil {
		cl.stop()
		return nil, fmt.Errorf("%d nodes: %w (logs in %s)", n, err, dir)
	}
	return cl, nil
}

// waitBrokers polls Metadata until it lists n brokers (registered and
// unfenced), so that a topic with replication factor n can be created.
func waitBrokers(bootstrap string, n int, deadline time.Time) error {
	kc, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		return err
	}
	defer kc.Close()
	return waitBrokersWith(kc, bootstrap, n, deadline)
}

// waitBrokersWith is waitBrokers with a client of the caller's. Each poll
// sends a Metadata request: kadm's BrokerMetadata answered from the
// client's broker list, which franz-go refreshes only in its metadata
// loop (metadata.max.age, 5 min), so a client whose first answer came
// from a node that had not yet applied the last broker's unfencing kept
// reporting 2 of 3 brokers until the 90 s deadline while every node
// listed 3 (issue 13 item 4: 2 of 7 starts).
func waitBrokersWith(kc *kgo.Client, bootstrap string, n int, deadline time.Time) error {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		m, err := req.RequestWith(ctx, kc)
		cancel()
		if err == nil && len(m.Brokers) == n {
			return nil
		}
		if time.Now().After(deadline) {
			got := 0
			if err == nil {
				got = len(m.Brokers)
			}
			return fmt.Errorf("metadata lists %d of %d brokers (%v); by node: %s", got, n, err, brokersByNode(bootstrap))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// brokersByNode asks each node of bootstrap for the brokers its Metadata
// lists, for a cluster that does not form.
func brokersByNode(bootstrap string) string {
	var out []string
	for _, addr := range strings.Split(bootstrap, ",") {
		kc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", addr, err))
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		m, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, kc)
		cancel()
		kc.Close()
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", addr, err))
			continue
		}
		var ids []int32
		for _, b := range m.Brokers {
			ids = append(ids, b.NodeID)
		}
		out = append(out, fmt.Sprintf("%s: %v", addr, ids))
	}
	return strings.Join(out, "; ")
}

// startKafka starts s.nodes Kafka nodes under dir with kafka-ref.sh
// (combined mode, a static quorum; internal topics with replication
// factor 3 on three nodes) with min.insync.replicas of s, and waits until
// the Metadata lists them all.
func startKafka(c config, s setup, dir string) (*cluster, error) {
	cmd := exec.Command(c.kafkaRef, "start", dir, "--nodes", strconv.Itoa(s.nodes))
	cmd.Env = append(os.Environ(), fmt.Sprintf("KAFKA_REF_OVERRIDES=min.insync.replicas=%d", s.minISR()))
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kafka-ref.sh start: %v\n%s", err, out)
	}
	cl := &cluster{stop: func() error {
		if out, err := exec.Command(c.kafkaRef, "stop", dir).CombinedOutput(); err != nil {
			return fmt.Errorf("kafka-ref.sh stop: %v\n%s", err, out)
		}
		return nil
	}}
	boot, err := os.ReadFile(filepath.Join(dir, "bootstrap"))
	if err == nil {
		cl.addrs = strings.Split(strings.TrimSpace(string(boot)), ",")
		var pids []byte
		pids, err = os.ReadFile(filepath.Join(dir, "pids"))
		for _, f := range strings.Fields(string(pids)) {
			pid, perr := strconv.Atoi(f)
			if perr != nil {
				err = fmt.Errorf("%s/pids: %w", dir, perr)
				break
			}
			cl.pids = append(cl.pids, pid)
		}
	}
	if err == nil && len(cl.pids) != s.nodes {
		err = fmt.Errorf("%s/pids lists %d processes, want %d", dir, len(cl.pids), s.nodes)
	}
	if err == nil {
		err = waitBrokers(cl.bootstrap(), s.nodes, time.Now().Add(90*time.Second))
	}
	if err != nil {
		cl.stop()
		return nil, err
	}
	return cl, nil
}

// stop sends SIGTERM to every node and waits up to 30 s each, then kills.
func (sp *samsaProcs) stop() error {
	for _, p := range sp.procs {
		p.Process.Signal(syscall.SIGTERM)
	}
	var first error
	for i, p := range sp.procs {
		select {
		case <-sp.exits[i]:
		case <-time.After(30 * time.Second):
			p.Process.Kill()
			<-sp.exits[i]
			if first == nil {
				first = fmt.Errorf("node %d did not stop within 30 s; killed", i+1)
			}
		}
	}
	return first
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// figures are the table's columns: key, heading, and whether more is better.
var figures = []struct {
	key, heading string
	higher       bool
}{
	{"produce_mbps", "produce, acks=all (MB/s)", true},
	{"consume_mbps", "consume (MB/s)", true},
	{"produce_cpu_s_per_gb", "CPU per GB produced, all nodes (s/GB)", false},
	{"consume_cpu_s_per_gb", "CPU per GB consumed, all nodes (s/GB)", false},
	{"e2e_p50_ms", "e2e p50 (ms)", false},
	{"e2e_p99_ms", "e2e p99 (ms)", false},
	{"e2e_p999_ms", "e2e p99.9 (ms)", false},
}

func printTable(c config, all map[string][]map[string]float64, load [2]string, took time.Duration) {
	w := os.Stdout
	fmt.Fprintf(w, "\n%d rounds; %d partitions; %d x %d B produced, then consumed; e2e at %d records/s for %s; %s.\n",
		c.rounds, c.partitions, c.records, c.size, c.e2eRate, c.e2eDuration, took.Round(time.Second))
	fmt.Fprintf(w, "Machine: %d cores (%s), %s/%s; load average %s before, %s after.\n\n",
		runtime.NumCPU(), benchutil.CPUModel(), runtime.GOOS, runtime.GOARCH, load[0], load[1])
	fmt.Fprint(w, "| setup |")
	for _, f := range figures {
		fmt.Fprintf(w, " %s |", f.heading)
	}
	fmt.Fprint(w, "\n| --- |")
	for range figures {
		fmt.Fprint(w, " --- |")
	}
	fmt.Fprintln(w)
	for _, s := range allSetups(c) {
		runs := all[s.key()]
		fmt.Fprintf(w, "| %s |", s.label())
		for _, f := range figures {
			v := benchutil.Column(runs, f.key)
			fmt.Fprintf(w, " %s (%s-%s) |", benchutil.Num(benchutil.Median(v)), benchutil.Num(slices.Min(v)), benchutil.Num(slices.Max(v)))
		}
		fmt.Fprintln(w)
	}
	if !c.kafka {
		return
	}
	// Ratios of the medians: samsa/Kafka at each replication factor, and
	// what replication factor 3 costs each broker (RF=3 / RF=1).
	ratio := func(a, b setup, key string) string {
		x, y := benchutil.Median(benchutil.Column(all[a.key()], key)), benchutil.Median(benchutil.Column(all[b.key()], key))
		if y == 0 {
			return "-"
		}
		return benchutil.Num(x/y) + "x"
	}
	s1, k1, s3, k3 := setup{"samsa", 3, 1}, setup{"kafka", 3, 1}, setup{"samsa", 3, 3}, setup{"kafka", 3, 3}
	fmt.Fprintln(w, "\n| figure (ratio of medians) | samsa/Kafka, RF=1 | samsa/Kafka, RF=3 | samsa RF=3/RF=1 | Kafka RF=3/RF=1 |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- |")
	for _, f := range figures {
		better := "lower is better"
		if f.higher {
			better = "higher is better"
		}
		fmt.Fprintf(w, "| %s, %s | %s | %s | %s | %s |\n", f.heading, better,
			ratio(s1, k1, f.key), ratio(s3, k3, f.key), ratio(s3, s1, f.key), ratio(k3, k1, f.key))
	}
}
