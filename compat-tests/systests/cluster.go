package systests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/childproc"
	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// Cluster is a cluster of combined broker+controller processes whose nodes
// can be shut down (SIGTERM), killed (SIGKILL) and started again. Node i
// (0-based) has node id i+1. The methods that take t call t.Fatal and must
// run on the test's goroutine.
type Cluster interface {
	// Name is "samsa" or "kafka".
	Name() string
	Bootstrap() string
	Addrs() []string
	// Running reports whether node i's process is up.
	Running(i int) bool
	// Stop shuts node i down with SIGTERM and waits for it to exit.
	Stop(t testing.TB, i int)
	// Kill sends SIGKILL to node i and waits for it to exit.
	Kill(t testing.TB, i int)
	// Start starts node i again and waits until it answers ApiVersions.
	Start(t testing.TB, i int)
}

// SessionEnv are the broker liveness settings the scenarios run with: the
// system tests wait out Kafka's 18 s broker session after a hard kill; the
// scenarios here wait for the fencing itself, with a shorter session.
var SessionEnv = map[string]string{
	"broker.session.timeout.ms":    "4000",
	"broker.heartbeat.interval.ms": "500",
}

// samsaCluster is a samsa cluster from harness.StartCluster.
type samsaCluster struct{ c *harness.Cluster }

// StartSamsa starts n samsa nodes (harness.ClusterEnv) with SessionEnv and
// settings (Kafka names).
func StartSamsa(t testing.TB, n int, settings map[string]string) Cluster {
	t.Helper()
	return startSamsa(t, n, settings, nil, nil)
}

// StartSamsaNodes is StartSamsa with more settings of node id (1-based),
// nodeSettings(id), such as broker.rack.
func StartSamsaNodes(t testing.TB, n int, settings map[string]string, nodeSettings func(id int) map[string]string) Cluster {
	t.Helper()
	return startSamsa(t, n, settings, nodeSettings, nil)
}

// startSamsa is StartSamsaNodes with more listeners of node id (1-based),
// when listeners is not nil.
func startSamsa(t testing.TB, n int, settings map[string]string, nodeSettings func(id int) map[string]string, listeners func(id int) string) Cluster {
	t.Helper()
	toEnv := func(ms ...map[string]string) []string {
		var env []string
		for _, m := range ms {
			for k, v := range m {
				env = append(env, envKey(k)+"="+v)
			}
		}
		return env
	}
	o := harness.ClusterOptions{Env: toEnv(SessionEnv, settings), ListenersExtra: listeners}
	if nodeSettings != nil {
		o.NodeEnv = func(id int) []string { return toEnv(nodeSettings(id)) }
	}
	c := harness.StartCluster(t, n, o)
	for i, b := range c.Brokers {
		keepOnFailure(t, fmt.Sprintf("node%d.log", i+1), func() []byte { return []byte(b.Output()) })
	}
	return &samsaCluster{c}
}

func (s *samsaCluster) Name() string      { return "samsa" }
func (s *samsaCluster) Bootstrap() string { return strings.Join(s.c.Addrs(), ",") }
func (s *samsaCluster) Addrs() []string   { return s.c.Addrs() }
func (s *samsaCluster) Running(i int) bool {
	pid := s.c.Brokers[i].PID()
	// The harness reaps its processes: once exited, signal 0 fails.
	return pid != 0 && syscall.Kill(pid, 0) == nil
}

func (s *samsaCluster) Stop(t testing.TB, i int)  { t.Helper(); s.c.Brokers[i].Stop(t) }
func (s *samsaCluster) Kill(t testing.TB, i int)  { t.Helper(); s.c.Brokers[i].Kill(t) }
func (s *samsaCluster) Start(t testing.TB, i int) { t.Helper(); s.c.Brokers[i].Restart(t) }

// kafkaCluster is Kafka 4.4 from kafkaref.Start, whose nodes this package
// restarts itself with the command line, directory and environment that
// kafka-ref.sh gave them, keeping DIR/pids current so that kafka-ref.sh
// stop ends the restarted processes too.
type kafkaCluster struct {
	c     *kafkaref.Cluster
	mu    sync.Mutex
	nodes []*kafkaNode
}

type kafkaNode struct {
	pid    int
	args   []string
	env    []string
	cwd    string
	exited chan struct{} // nil for the process kafka-ref.sh started
}

// StartKafka starts n Kafka 4.4 nodes with kafka-ref.sh, SessionEnv and
// settings.
func StartKafka(t testing.TB, n int, settings map[string]string) Cluster {
	t.Helper()
	return startKafka(t, n, settings, nil, false)
}

// StartKafkaNodes is StartKafka with more settings of node id (1-based),
// nodeSettings(id), such as broker.rack.
func StartKafkaNodes(t testing.TB, n int, settings map[string]string, nodeSettings func(id int) map[string]string) Cluster {
	t.Helper()
	return startKafka(t, n, settings, nodeSettings, false)
}

// startKafka is StartKafkaNodes, with a listener named SSL on each node
// when ssl.
func startKafka(t testing.TB, n int, settings map[string]string, nodeSettings func(id int) map[string]string, ssl bool) *kafkaCluster {
	t.Helper()
	var over []string
	for _, m := range []map[string]string{SessionEnv, settings} {
		for k, v := range m {
			over = append(over, k+"="+v)
		}
	}
	o := kafkaref.Options{Nodes: n, Overrides: over, SSL: ssl}
	if nodeSettings != nil {
		o.NodeOverrides = func(id int) []string {
			var lines []string
			for k, v := range nodeSettings(id) {
				lines = append(lines, k+"="+v)
			}
			return lines
		}
	}
	kc := &kafkaCluster{c: kafkaref.Start(t, o)}
	for _, pid := range kc.c.Pids() {
		nd := &kafkaNode{pid: pid}
		var err error
		if nd.args, err = procStrings(pid, "cmdline"); err == nil {
			nd.env, err = procStrings(pid, "environ")
		}
		if err == nil {
			nd.cwd, err = os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		}
		if err != nil {
			t.Fatalf("systests: reading Kafka node pid %d: %v", pid, err)
		}
		kc.nodes = append(kc.nodes, nd)
	}
	return kc
}

func procStrings(pid int, file string) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), nil
}

func (k *kafkaCluster) Name() string      { return "kafka" }
func (k *kafkaCluster) Bootstrap() string { return k.c.Bootstrap() }
func (k *kafkaCluster) Addrs() []string   { return k.c.Addrs() }

func (k *kafkaCluster) node(i int) *kafkaNode {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.nodes[i]
}

func (k *kafkaCluster) Running(i int) bool {
	nd := k.node(i)
	if nd.exited != nil {
		select {
		case <-nd.exited:
			return false
		default:
			return true
		}
	}
	// Started by kafka-ref.sh: not our child; it is reaped by init.
	return syscall.Kill(nd.pid, 0) == nil
}

func (k *kafkaCluster) signalAndWait(t testing.TB, i int, sig syscall.Signal) {
	t.Helper()
	nd := k.node(i)
	if !k.Running(i) {
		t.Fatalf("systests: kafka node %d is not running", i+1)
	}
	if err := syscall.Kill(nd.pid, sig); err != nil {
		t.Fatalf("systests: signal %v to kafka node %d (pid %d): %v", sig, i+1, nd.pid, err)
	}
	if !Poll(60*time.Second, func() bool { return !k.Running(i) }) {
		_ = syscall.Kill(nd.pid, syscall.SIGKILL)
		t.Fatalf("systests: kafka node %d did not exit within 60 s of %v", i+1, sig)
	}
}

func (k *kafkaCluster) Stop(t testing.TB, i int) { t.Helper(); k.signalAndWait(t, i, syscall.SIGTERM) }
func (k *kafkaCluster) Kill(t testing.TB, i int) { t.Helper(); k.signalAndWait(t, i, syscall.SIGKILL) }

func (k *kafkaCluster) Start(t testing.TB, i int) {
	t.Helper()
	old := k.node(i)
	if k.Running(i) {
		t.Fatalf("systests: kafka node %d started while running", i+1)
	}
	cmd := exec.Command(old.args[0], old.args[1:]...)
	cmd.Env, cmd.Dir = old.env, old.cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := os.OpenFile(filepath.Join(k.c.Dir(), fmt.Sprintf("node%d", i+1), "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := childproc.Start(cmd); err != nil {
		out.Close()
		t.Fatalf("systests: restarting kafka node %d: %v", i+1, err)
	}
	nd := &kafkaNode{pid: cmd.Process.Pid, args: old.args, env: old.env, cwd: old.cwd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(nd.exited)
	}()
	k.mu.Lock()
	k.nodes[i] = nd
	var pids []string
	for _, n := range k.nodes {
		pids = append(pids, strconv.Itoa(n.pid))
	}
	k.mu.Unlock()
	// kafka-ref.sh stop reads DIR/pids: keep it naming the live processes.
	if err := os.WriteFile(filepath.Join(k.c.Dir(), "pids"), []byte(strings.Join(pids, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Normally kafka-ref.sh stop ends it; this is the backstop.
		_ = syscall.Kill(nd.pid, syscall.SIGKILL)
		<-nd.exited
	})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	addr := k.c.Addrs()[i]
	if !Poll(120*time.Second, func() bool { return harness.Probe(ctx, addr) == nil }) {
		t.Fatalf("systests: restarted kafka node %d does not answer on %s", i+1, addr)
	}
}

// client returns a franz-go client on the addresses of the running nodes.
func client(c Cluster) (*kgo.Client, error) {
	var live []string
	for i, a := range c.Addrs() {
		if c.Running(i) {
			live = append(live, a)
		}
	}
	return kgo.NewClient(kgo.SeedBrokers(live...), kgo.RequestRetries(2))
}

// Metadata asks the running nodes for the metadata of topics (all when nil).
func Metadata(ctx context.Context, c Cluster, topics ...string) (*kmsg.MetadataResponse, error) {
	cl, err := client(c)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	if topics != nil {
		for _, tp := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(tp)
			req.Topics = append(req.Topics, rt)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return req.RequestWith(rctx, cl)
}

// Leader returns the node index leading partition p of topic, polling for
// up to d until a running node leads it.
func Leader(t testing.TB, c Cluster, topic string, p int32, d time.Duration) int {
	t.Helper()
	found := -1
	var last string
	ok := Poll(d, func() bool {
		m, err := Metadata(context.Background(), c, topic)
		if err != nil {
			last = err.Error()
			return false
		}
		for _, tp := range m.Topics {
			for _, pp := range tp.Partitions {
				if pp.Partition == p && pp.ErrorCode == 0 && pp.Leader > 0 && int(pp.Leader) <= len(c.Addrs()) && c.Running(int(pp.Leader)-1) {
					found = int(pp.Leader) - 1
					return true
				}
			}
		}
		last = fmt.Sprintf("no running leader for %s-%d", topic, p)
		return false
	})
	if !ok {
		t.Fatalf("systests: %s: %s within %v", c.Name(), last, d)
	}
	return found
}

// ActiveController returns the node index of the metadata quorum's leader
// (DescribeQuorum, what kafka-metadata-quorum describes), polling for up to
// d until it is a running node.
func ActiveController(t testing.TB, c Cluster, d time.Duration) int {
	t.Helper()
	found := -1
	var last string
	ok := Poll(d, func() bool {
		cl, err := client(c)
		if err != nil {
			last = err.Error()
			return false
		}
		defer cl.Close()
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rp := kmsg.NewDescribeQuorumRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			last = err.Error()
			return false
		}
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			last = fmt.Sprintf("DescribeQuorum error %d", resp.ErrorCode)
			return false
		}
		id := int(resp.Topics[0].Partitions[0].LeaderID)
		if id < 1 || id > len(c.Addrs()) || !c.Running(id-1) {
			last = fmt.Sprintf("quorum leader %d is not a running node", id)
			return false
		}
		found = id - 1
		return true
	})
	if !ok {
		t.Fatalf("systests: %s: %s within %v", c.Name(), last, d)
	}
	return found
}

// WaitFenced waits until no running node lists node i among the brokers
// (the controller fenced it after broker.session.timeout.ms), the
// condition the system tests wait 18 s + 5 s for after a hard kill.
func WaitFenced(t testing.TB, c Cluster, i int, d time.Duration) {
	t.Helper()
	if !Poll(d, func() bool {
		m, err := Metadata(context.Background(), c, "__no_such_topic_probe__")
		if err != nil {
			return false
		}
		for _, b := range m.Brokers {
			if int(b.NodeID) == i+1 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("systests: %s: node %d still listed as a broker %v after it died", c.Name(), i+1, d)
	}
}

// WaitNoUnderReplicated waits until every partition of every topic has all
// its replicas in sync (await_no_under_replicated_partitions), and every
// node is a live broker.
func WaitNoUnderReplicated(t testing.TB, c Cluster, d time.Duration) {
	t.Helper()
	var last string
	if !Poll(d, func() bool {
		cl, err := client(c)
		if err != nil {
			last = err.Error()
			return false
		}
		defer cl.Close()
		req := kmsg.NewPtrMetadataRequest() // Topics nil: all topics
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		m, err := req.RequestWith(ctx, cl)
		if err != nil {
			last = err.Error()
			return false
		}
		if len(m.Brokers) != len(c.Addrs()) {
			last = fmt.Sprintf("%d of %d brokers live", len(m.Brokers), len(c.Addrs()))
			return false
		}
		var under bytes.Buffer
		for _, tp := range m.Topics {
			for _, p := range tp.Partitions {
				if len(p.ISR) < len(p.Replicas) || p.Leader < 0 {
					fmt.Fprintf(&under, " %s-%d isr=%v replicas=%v", *tp.Topic, p.Partition, p.ISR, p.Replicas)
				}
			}
		}
		last = "under-replicated:" + under.String()
		return under.Len() == 0
	}) {
		t.Fatalf("systests: %s: %s after %v", c.Name(), last, d)
	}
}

// CreateTopic creates topic with partitions, replication factor and
// configs through the running nodes and waits until every partition has a
// leader.
func CreateTopic(t testing.TB, c Cluster, topic string, partitions, rf int, configs map[string]string) {
	t.Helper()
	cl, err := client(c)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, int32(partitions), int16(rf)
	for k, v := range configs {
		rc := kmsg.NewCreateTopicsRequestTopicConfig()
		rc.Name, rc.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, rc)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("systests: CreateTopics %s: %v", topic, err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("systests: CreateTopics %s: error code %d", topic, code)
	}
	for p := range int32(partitions) {
		Leader(t, c, topic, p, 60*time.Second)
	}
}

// PartitionStates describes each partition of topic for a failure message:
// leader, replicas, ISR and log end offset (the high watermark, from the
// leader's ListOffsets), as the running nodes report them.
func PartitionStates(c Cluster, topic string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := Metadata(ctx, c, topic)
	if err != nil {
		return "metadata: " + err.Error()
	}
	cl, err := client(c)
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	var b strings.Builder
	for _, tp := range m.Topics {
		for _, p := range tp.Partitions {
			fmt.Fprintf(&b, "%s-%d leader=%d replicas=%v isr=%v", topic, p.Partition, p.Leader, p.Replicas, p.ISR)
			if err != nil {
				fmt.Fprintf(&b, " end=?(%v)", err)
			} else if o, ok := ends.Lookup(topic, p.Partition); ok {
				fmt.Fprintf(&b, " end=%d", o.Offset)
				if o.Err != nil {
					fmt.Fprintf(&b, "(%v)", o.Err)
				}
			}
			b.WriteString("; ")
		}
	}
	return b.String()
}

// SetTopicConfig sets a topic configuration (IncrementalAlterConfigs SET,
// what kafka-configs --alter --add-config sends) through the running nodes.
func SetTopicConfig(t testing.TB, c Cluster, topic, key, value string) {
	t.Helper()
	adm, ctx, done := admin(t, c)
	defer done()
	res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: kmsg.StringPtr(value)}}, topic)
	if err == nil {
		for _, r := range res {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		t.Fatalf("systests: %s: setting %s=%s on %s: %v", c.Name(), key, value, topic, err)
	}
}

// ISR returns the node indexes (0-based) of partition p's ISR, in the
// order Metadata lists them.
func ISR(t testing.TB, c Cluster, topic string, p int32) []int {
	t.Helper()
	m, err := Metadata(context.Background(), c, topic)
	if err != nil {
		t.Fatalf("systests: %s: metadata: %v", c.Name(), err)
	}
	for _, tp := range m.Topics {
		for _, pp := range tp.Partitions {
			if pp.Partition == p {
				var out []int
				for _, id := range pp.ISR {
					out = append(out, int(id)-1)
				}
				return out
			}
		}
	}
	t.Fatalf("systests: %s: no partition %s-%d", c.Name(), topic, p)
	return nil
}

// admin returns an admin client on the running nodes and a context of 60 s;
// done closes both.
func admin(t testing.TB, c Cluster) (*kadm.Client, context.Context, func()) {
	t.Helper()
	cl, err := client(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	return kadm.NewClient(cl), ctx, func() { cancel(); cl.Close() }
}

// WaitGroupConverged waits until the KIP-848 consumer group has converged:
// every member owns its target assignment at the group's assignment epoch
// (ConsumerGroupDescribe, what kafka-consumer-groups --describe --members
// shows). A server-side range assignor is not sticky, so a group whose
// members joined one by one moves partitions once more after the last
// join, at the next heartbeat of their owners.
func WaitGroupConverged(t testing.TB, c Cluster, group string, members int, d time.Duration) {
	t.Helper()
	var last string
	if !Poll(d, func() bool {
		last = groupConverged(c, group, members)
		return last == ""
	}) {
		t.Fatalf("systests: %s: group %s did not converge within %v: %s", c.Name(), group, d, last)
	}
}

// groupConverged returns "" when the group has converged, else why not.
func groupConverged(c Cluster, group string, members int) string {
	cl, err := client(c)
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{group}
	fr, err := fc.RequestWith(ctx, cl)
	if err != nil || len(fr.Coordinators) != 1 || fr.Coordinators[0].ErrorCode != 0 {
		return fmt.Sprintf("FindCoordinator: %v %+v", err, fr)
	}
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl.Broker(int(fr.Coordinators[0].NodeID)))
	if err != nil {
		return err.Error()
	}
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return fmt.Sprintf("ConsumerGroupDescribe: %+v", resp.Groups)
	}
	g := resp.Groups[0]
	if g.State != "Stable" || len(g.Members) != members {
		return fmt.Sprintf("state %s with %d members", g.State, len(g.Members))
	}
	flat := func(a kmsg.Assignment) string {
		var s []string
		for _, tp := range a.TopicPartitions {
			for _, p := range tp.Partitions {
				s = append(s, fmt.Sprintf("%x-%d", tp.TopicID, p))
			}
		}
		slices.Sort(s)
		return strings.Join(s, ",")
	}
	for _, m := range g.Members {
		if a, ta := flat(m.Assignment), flat(m.TargetAssignment); a != ta || m.MemberEpoch != g.AssignmentEpoch {
			return fmt.Sprintf("member %s at epoch %d owns [%s], target [%s] at epoch %d", m.MemberID, m.MemberEpoch, a, ta, g.AssignmentEpoch)
		}
	}
	return ""
}
