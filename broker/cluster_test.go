package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/txn"
)

// freePorts returns n loopback ports that were free a moment ago (the
// voter list must name the controller ports before the nodes start), from
// below the ephemeral range (harness.FreePorts): a node a test restarts
// binds its ports again, and a port the kernel picked for "127.0.0.1:0"
// may be taken meanwhile by any outgoing connection.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	return harness.FreePorts(t, n)
}

// testCluster is n combined-mode nodes in this process, configured as the
// three-node apache/kafka KRaft example is (node.id, process.roles,
// controller.quorum.voters, listeners with a CONTROLLER listener).
type testCluster struct {
	t     *testing.T
	dirs  []string
	args  [][]string
	nodes []*Node
}

func startTestCluster(t *testing.T, n int, overrides ...string) *testCluster {
	t.Helper()
	c := newTestCluster(t, n, overrides...)
	c.startAll()
	return c
}

// newTestCluster configures the nodes of startTestCluster (c.dirs is each
// node's log.dirs, c.args the rest) without starting them.
func newTestCluster(t *testing.T, n int, overrides ...string) *testCluster {
	t.Helper()
	ports := freePorts(t, n)
	var voters []string
	for i, p := range ports {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, p))
	}
	c := &testCluster{t: t, nodes: make([]*Node, n)}
	for i := range n {
		args := []string{
			"--override", "node.id=" + fmt.Sprint(i+1),
			"--override", "process.roles=broker,controller",
			"--override", "controller.quorum.voters=" + strings.Join(voters, ","),
			"--override", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:%d", ports[i]),
			"--override", "controller.listener.names=CONTROLLER",
			"--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"--override", "controller.quorum.election.timeout.ms=500",
			"--override", "broker.heartbeat.interval.ms=200",
			"--override", "broker.session.timeout.ms=2000",
			"--override", "group.initial.rebalance.delay.ms=0",
			"--override", "offsets.topic.num.partitions=6",
			"--override", "transaction.state.log.num.partitions=3",
			// Racks a, b, a, ...: Metadata shows them, and placement
			// alternates racks (the order stays 1, 2, 3).
			"--override", fmt.Sprintf("broker.rack=rack-%c", 'a'+i%2),
		}
		for _, o := range overrides {
			args = append(args, "--override", o)
		}
		c.dirs = append(c.dirs, t.TempDir())
		c.args = append(c.args, args)
	}
	return c
}

// startAll starts every node of c, stopping them at the end of the test.
func (c *testCluster) startAll() {
	t, n := c.t, len(c.nodes)
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { c.nodes[i], errs[i] = c.startNode(i) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
}

func (c *testCluster) startNode(i int) (*Node, error) {
	args := append(append([]string(nil), c.args[i]...), "--override", "log.dirs="+c.dirs[i])
	cfg, err := config.Load(args, nil)
	if err != nil {
		return nil, err
	}
	var w io.Writer = io.Discard
	if testing.Verbose() {
		w = &prefixWriter{t: c.t, prefix: fmt.Sprintf("node %d: ", i+1)}
	}
	return StartNode(cfg, slog.New(slog.NewTextHandler(w, nil)))
}

// prefixWriter sends log lines to t.Log (with -v).
type prefixWriter struct {
	t      *testing.T
	prefix string
}

func (w *prefixWriter) Write(b []byte) (int, error) {
	w.t.Log(w.prefix + strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// stop closes node i (a clean shutdown) if it runs.
func (c *testCluster) stop(i int) {
	if c.nodes[i] == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.nodes[i].Close(ctx); err != nil {
		c.t.Errorf("closing node %d: %v", i+1, err)
	}
	c.nodes[i] = nil
}

func (c *testCluster) addr(i int) string { return c.nodes[i].Addrs()[0].String() }

// activeController returns the index of the node that is the active
// controller, polling until one is (or the deadline passes).
func (c *testCluster) activeController(deadline time.Duration) int {
	c.t.Helper()
	if !poll(deadline, func() bool {
		for _, n := range c.nodes {
			if n != nil && n.quorum.Leading() {
				return true
			}
		}
		return false
	}) {
		c.t.Fatalf("no active controller after %v", deadline)
	}
	for i, n := range c.nodes {
		if n != nil && n.quorum.Leading() {
			return i
		}
	}
	c.t.Fatal("the active controller went away")
	return -1
}

// poll calls cond every 20 ms until it holds or d passes.
func poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-t.C
	}
}

func newClusterAdmin(t *testing.T, seeds ...string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// TestThreeNodeCluster: three nodes given the voter list of a three-node
// KRaft compose file form one cluster: every node lists the three brokers,
// a topic created through any node (forwarded to the active controller) is
// placed over the three and seen by all, the internal topics get
// replication factor 3 once three brokers are registered, and records
// produced through one node's bootstrap are read through another's. When
// the active controller stops, another node takes the role within seconds,
// the stopped broker is fenced and leads nothing, and admin requests work
// through the survivors.
func TestThreeNodeCluster(t *testing.T) {
	c := startTestCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	for i := range c.nodes {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr(i)))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		var brokers []kmsg.MetadataResponseBroker
		if !poll(10*time.Second, func() bool {
			// A direct request: kadm's BrokerMetadata answers from the
			// client's metadata cache.
			m, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			if err != nil {
				return false
			}
			brokers = m.Brokers
			return len(m.Brokers) == 3
		}) {
			for j, n := range c.nodes {
				t.Logf("node %d image brokers %+v leader %d", j+1, n.ctrl.Image().Brokers, n.quorum.LeaderID())
			}
			t.Fatalf("node %d lists brokers %v, want 3", i+1, brokers)
		}
		for _, b := range brokers {
			if want := fmt.Sprintf("rack-%c", 'a'+(b.NodeID-1)%2); b.Rack == nil || *b.Rack != want {
				t.Fatalf("node %d lists broker %d with rack %v, want %s", i+1, b.NodeID, b.Rack, want)
			}
		}
	}

	leader := c.activeController(10 * time.Second)
	follower := (leader + 1) % 3
	adm := newClusterAdmin(t, c.addr(follower))
	// kadm sends CreateTopics to the controller id of Metadata; a raw
	// request to the follower exercises the forwarding.
	resp, err := adm.CreateTopic(ctx, 6, 3, nil, "spread")
	if err != nil || resp.Err != nil {
		t.Fatalf("CreateTopic: %v / %v", err, resp.Err)
	}
	for i := range c.nodes {
		if !poll(5*time.Second, func() bool {
			tp := c.nodes[i].ctrl.Image().Topics["spread"]
			return tp != nil && len(tp.Partitions) == 6
		}) {
			t.Fatalf("node %d does not see topic spread", i+1)
		}
	}
	leaders := map[int32]int{}
	for _, p := range c.nodes[follower].ctrl.Image().Topics["spread"].Partitions {
		if len(p.Replicas) != 3 || len(p.ISR) != 3 {
			t.Fatalf("partition %d: replicas %v isr %v", p.Partition, p.Replicas, p.ISR)
		}
		leaders[p.Leader]++
	}
	if len(leaders) != 3 {
		t.Fatalf("leaders %v: want the 6 partitions led by all 3 brokers", leaders)
	}
	if !poll(10*time.Second, func() bool {
		tp := c.nodes[follower].ctrl.Image().Topics[coordinator.OffsetsTopic]
		return tp != nil && len(tp.Partitions[0].Replicas) == 3
	}) {
		t.Fatalf("%s not created with replication factor 3", coordinator.OffsetsTopic)
	}
	// As in Kafka, __transaction_state gets min.insync.replicas from
	// transaction.state.log.min.isr (2 by default).
	if !poll(10*time.Second, func() bool {
		tp := c.nodes[follower].ctrl.Image().Topics[txn.TransactionStateTopic]
		return tp != nil && len(tp.Partitions[0].Replicas) == 3 && tp.Configs["min.insync.replicas"] == "2"
	}) {
		tp := c.nodes[follower].ctrl.Image().Topics[txn.TransactionStateTopic]
		t.Fatalf("%s not created with replication factor 3 and min.insync.replicas 2: %+v", txn.TransactionStateTopic, tp)
	}

	// A raw CreateTopics sent to a node that is not the active controller
	// is forwarded.
	raw, err := kgo.NewClient(kgo.SeedBrokers(c.addr(follower)))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "forwarded", 2, 1
	ct.Topics = append(ct.Topics, rt)
	fresp, err := raw.Broker(follower+1).Request(ctx, ct)
	if err != nil {
		t.Fatalf("CreateTopics to node %d: %v", follower+1, err)
	}
	if code := fresp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("forwarded CreateTopics: %v", kerr.ErrorForCode(code))
	}

	// Records through one node's bootstrap, read through another's.
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.addr(0)), kgo.DefaultProduceTopic("forwarded"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 100 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.addr(2)), kgo.ConsumeTopics("forwarded"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	for got < 100 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 100: %v", got, err)
		}
		got += fs.NumRecords()
	}

	// The active controller stops: another takes over, the stopped broker
	// leads nothing, admin requests work.
	stopped := leader
	start := time.Now()
	c.stop(stopped)
	next := c.activeController(15 * time.Second)
	t.Logf("controller moved from node %d to node %d in %v", stopped+1, next+1, time.Since(start))
	survivor := newClusterAdmin(t, c.addr((stopped+1)%3), c.addr((stopped+2)%3))
	if !poll(20*time.Second, func() bool {
		img := c.nodes[next].ctrl.Image()
		if b, ok := img.Brokers[int32(stopped+1)]; !ok || !b.Fenced {
			return false
		}
		for _, tp := range img.Topics {
			for _, p := range tp.Partitions {
				if p.Leader == int32(stopped+1) {
					return false
				}
			}
		}
		return true
	}) {
		t.Fatalf("broker %d not fenced or still leading after its shutdown", stopped+1)
	}
	// Placement counts fenced brokers as Kafka's does (they get replicas
	// only when the unfenced are too few), so the create succeeds at once.
	r2, err := survivor.CreateTopic(ctx, 3, 2, nil, "after-failover")
	if err != nil || r2.Err != nil {
		t.Fatalf("CreateTopic after failover: %v / %v", err, r2.Err)
	}
}
