package compattests

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/controller/quorum"
	"github.com/samsa-broker/samsa/wire"
)

// pollUntil calls cond every 50 ms until it holds or d passes.
func pollUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	t := time.NewTicker(50 * time.Millisecond)
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

// rawMetadata asks addr for the cluster's metadata (no topics unless
// given), bypassing the client's metadata cache.
func rawMetadata(ctx context.Context, addr string, topics ...string) (*kmsg.MetadataResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, tp := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(tp)
		req.Topics = append(req.Topics, rt)
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return req.RequestWith(rctx, cl)
}

// activeController polls the live nodes until they agree on a controller
// id that is one of them, and returns its index.
func activeController(t *testing.T, ctx context.Context, c *harness.Cluster, down map[int]bool, d time.Duration) int {
	t.Helper()
	found := -1
	if !pollUntil(d, func() bool {
		ids := map[int32]bool{}
		for i, b := range c.Brokers {
			if down[i] {
				continue
			}
			m, err := rawMetadata(ctx, b.Addr)
			if err != nil {
				return false
			}
			ids[m.ControllerID] = true
		}
		if len(ids) != 1 {
			return false
		}
		for id := range ids {
			found = int(id) - 1
		}
		return found >= 0 && found < len(c.Brokers) && !down[found]
	}) {
		t.Fatalf("the live nodes do not agree on a live controller within %v", d)
	}
	return found
}

// TestClusterOfThreeProcesses starts three samsa processes with the
// environment blocks of the apache/kafka three-node combined-mode compose
// example. They form one cluster: every node lists the three brokers and
// the same controller, a topic created through one node is described the
// same by all, with RF=3 over three leaders. Then, twice, the active
// controller is killed with SIGKILL while admin requests keep coming: a
// new controller takes over (the measured figure is logged), the killed
// broker is fenced after broker.session.timeout.ms and leads nothing,
// topic creation, config changes and deletion work through the survivors,
// and the killed node, restarted, rejoins and is unfenced.
func TestClusterOfThreeProcesses(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t, 3, harness.ClusterOptions{Env: []string{
		"KAFKA_BROKER_SESSION_TIMEOUT_MS=3000", "KAFKA_BROKER_HEARTBEAT_INTERVAL_MS=500",
	}})
	ctx := testContext(t, 4*time.Minute)
	down := map[int]bool{}

	for i, b := range c.Brokers {
		if !pollUntil(15*time.Second, func() bool {
			m, err := rawMetadata(ctx, b.Addr)
			return err == nil && len(m.Brokers) == 3
		}) {
			t.Fatalf("node %d does not list 3 brokers", i+1)
		}
	}
	activeController(t, ctx, c, down, 15*time.Second)

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 6, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "cluster-topic")
	if err != nil || resp.Err != nil {
		t.Fatalf("CreateTopic: %v / %v", err, resp.Err)
	}
	for i, b := range c.Brokers {
		if !pollUntil(10*time.Second, func() bool {
			m, err := rawMetadata(ctx, b.Addr, "cluster-topic")
			if err != nil || len(m.Topics) != 1 || m.Topics[0].ErrorCode != 0 || len(m.Topics[0].Partitions) != 6 {
				return false
			}
			leaders := map[int32]bool{}
			for _, p := range m.Topics[0].Partitions {
				if len(p.Replicas) != 3 {
					return false
				}
				leaders[p.Leader] = true
			}
			return len(leaders) == 3
		}) {
			t.Fatalf("node %d does not describe cluster-topic as 6 partitions, RF 3, over 3 leaders", i+1)
		}
	}

	for round := 1; round <= 2; round++ {
		victim := activeController(t, ctx, c, down, 15*time.Second)
		start := time.Now()
		c.Brokers[victim].Kill(t)
		down[victim] = true
		next := activeController(t, ctx, c, down, 20*time.Second)
		t.Logf("round %d: killed node %d (active controller); node %d took over in %v", round, victim+1, next+1, time.Since(start).Round(time.Millisecond))

		var live []string
		for i, b := range c.Brokers {
			if !down[i] {
				live = append(live, b.Addr)
			}
		}
		scl, err := kgo.NewClient(kgo.SeedBrokers(live...))
		if err != nil {
			t.Fatal(err)
		}
		sadm := kadm.NewClient(scl)
		name := fmt.Sprintf("after-kill-%d", round)
		if !pollUntil(20*time.Second, func() bool {
			r, err := sadm.CreateTopic(ctx, 3, 2, nil, name)
			return err == nil && (r.Err == nil || r.Err.Error() == "TOPIC_ALREADY_EXISTS: Topic with this name already exists.")
		}) {
			t.Fatalf("round %d: CreateTopic through the survivors failed", round)
		}
		alter, err := sadm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("3600000")}}, name)
		if err != nil || alter[0].Err != nil {
			t.Fatalf("round %d: AlterTopicConfigs: %v / %+v", round, err, alter)
		}
		if !pollUntil(15*time.Second, func() bool {
			m, err := rawMetadata(ctx, c.Brokers[next].Addr, "cluster-topic")
			if err != nil || len(m.Topics) != 1 {
				return false
			}
			for _, b := range m.Brokers {
				if int(b.NodeID) == victim+1 {
					return false // still unfenced
				}
			}
			for _, p := range m.Topics[0].Partitions {
				if int(p.Leader) == victim+1 {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("round %d: killed broker %d still listed or leading", round, victim+1)
		}
		del, err := sadm.DeleteTopics(ctx, name)
		if err != nil || del[name].Err != nil {
			t.Fatalf("round %d: DeleteTopics: %v / %+v", round, err, del)
		}
		scl.Close()

		c.Brokers[victim].Restart(t)
		delete(down, victim)
		if !pollUntil(20*time.Second, func() bool {
			m, err := rawMetadata(ctx, c.Brokers[next].Addr)
			return err == nil && len(m.Brokers) == 3
		}) {
			t.Fatalf("round %d: restarted node %d did not rejoin", round, victim+1)
		}
	}
}

// leadingController returns the index of the controller process that is
// the active controller: the one that grants a producer id block (the
// others answer NOT_CONTROLLER).
func leadingController(t *testing.T, ctx context.Context, c *harness.Cluster, down map[int]bool, d time.Duration) int {
	t.Helper()
	found := -1
	if !pollUntil(d, func() bool {
		for i, addr := range c.ControllerAddrs {
			if down[i] {
				continue
			}
			req := kmsg.NewPtrAllocateProducerIDsRequest()
			req.BrokerID, req.BrokerEpoch = 4, -1
			resp := kmsg.NewPtrAllocateProducerIDsResponse()
			// A raw connection: a client would route the request by the
			// metadata, which lists brokers, not controllers.
			if err := rawRoundTrip(ctx, addr, req, resp); err == nil && resp.ErrorCode == 0 {
				found = i
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no controller process is active within %v", d)
	}
	return found
}

// TestClusterSeparateRoles runs the apache/kafka "isolated" layout: three
// controller-only processes (process.roles=controller) and three
// broker-only ones (process.roles=broker, following the metadata log as
// non-voters). Clients see one cluster of three brokers from any of them;
// a topic created through a broker (forwarded to the active controller)
// is spread over the three; records go in through one broker and out
// through another. Then the active controller is killed with SIGKILL: a
// new one takes over and admin requests keep working; then a broker is
// killed: it is fenced and leads nothing.
func TestClusterSeparateRoles(t *testing.T) {
	t.Parallel()
	c := harness.StartSplitCluster(t, 3, 3, harness.ClusterOptions{Env: []string{
		"KAFKA_BROKER_SESSION_TIMEOUT_MS=3000", "KAFKA_BROKER_HEARTBEAT_INTERVAL_MS=500",
	}})
	ctx := testContext(t, 3*time.Minute)
	brokers := c.Addrs()[3:]
	for i, addr := range brokers {
		if !pollUntil(15*time.Second, func() bool {
			m, err := rawMetadata(ctx, addr)
			if err != nil || len(m.Brokers) != 3 {
				return false
			}
			for _, b := range m.Brokers {
				if b.NodeID < 4 {
					return false // a controller listed as a broker
				}
			}
			return true
		}) {
			t.Fatalf("broker %d does not list the 3 brokers", i+4)
		}
	}
	// A broker-only node's client listener does not speak Raft: its
	// metadata log comes over connections it opens to the controllers, so
	// a Raft preamble there (e.g. a fake leader's AppendEntries) is closed.
	for _, addr := range brokers {
		for _, pre := range [][]byte{quorum.Preamble, quorum.ReversePreamble} {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			conn.Write(append(append([]byte{}, pre...), 0, 0, 0, 0))
			conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
			if ne, ok := err.(net.Error); err == nil || ok && ne.Timeout() {
				t.Fatalf("broker %s: Raft preamble %x: read %v, want the connection closed", addr, pre, err)
			}
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("split-topic"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 3, 3, nil, "split-topic")
	if err != nil || resp.Err != nil {
		t.Fatalf("CreateTopic: %v / %v", err, resp.Err)
	}
	waitTopicEverywhere(t, ctx, brokers, "split-topic", 3)
	for i := range 60 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers[2]), kgo.ConsumeTopics("split-topic"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for got := 0; got < 60; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 60", got)
		}
		got += fs.NumRecords()
	}

	down := map[int]bool{}
	victim := leadingController(t, ctx, c, down, 15*time.Second)
	start := time.Now()
	c.Brokers[victim].Kill(t)
	down[victim] = true
	next := leadingController(t, ctx, c, down, 20*time.Second)
	t.Logf("killed controller %d; controller %d took over in %v", victim+1, next+1, time.Since(start).Round(time.Millisecond))
	if !pollUntil(20*time.Second, func() bool {
		r, err := adm.CreateTopic(ctx, 2, 3, nil, "split-after")
		return err == nil && r.Err == nil
	}) {
		t.Fatal("CreateTopic after the controller's death failed")
	}

	c.Brokers[3].Kill(t) // broker 4
	if !pollUntil(20*time.Second, func() bool {
		m, err := rawMetadata(ctx, brokers[1], "split-topic")
		if err != nil || len(m.Brokers) != 2 || len(m.Topics) != 1 {
			return false
		}
		for _, p := range m.Topics[0].Partitions {
			if p.Leader == 4 {
				return false
			}
		}
		return true
	}) {
		t.Fatal("killed broker 4 still listed or leading")
	}
}

// rawRoundTrip sends req (version 0, header v1/v2) to addr on a
// connection of its own and decodes the response into resp.
func rawRoundTrip(ctx context.Context, addr string, req kmsg.Request, resp kmsg.Response) error {
	req.SetVersion(0)
	return rawRoundTripVersion(ctx, addr, req, resp)
}

// rawRoundTripVersion is rawRoundTrip at req's version.
func rawRoundTripVersion(ctx context.Context, addr string, req kmsg.Request, resp kmsg.Response) error {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline, _ := dctx.Deadline()
	conn.SetDeadline(deadline)
	client := "compat-test"
	if _, err := conn.Write(wire.AppendRequest(nil, wire.RequestHeader{APIVersion: req.GetVersion(), CorrelationID: 1, ClientID: &client}, req)); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		return err
	}
	body = body[4:] // correlation id
	if req.IsFlexible() {
		body = body[1:] // no response header tags from samsa
	}
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(body)
}
