package compattests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// TestBootstrapServersOnlyBrokers (KIP-853, issue 13 item 1): a dynamic
// quorum of three controllers (controller 1 started with only itself in
// controller.quorum.bootstrap.servers, a quorum of one; controllers 2 and
// 3 with all three, joining it, added with AddRaftVoter), and three
// broker-only nodes configured with controller.quorum.bootstrap.servers
// alone, as Kafka 4.x allows. The brokers register through the bootstrap
// servers, follow the metadata log as observers, and clients see one
// cluster from each of them: the same brokers and the same topic, whose
// records produced through one are consumed through another. A broker
// restarted finds the controllers again the same way.
func TestBootstrapServersOnlyBrokers(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 5*time.Minute)
	dq := startDynamicQuorum(t, ctx, 6)
	broker := func(id int) harness.EnvNode { return dq.broker(id, dq.ctrls) }

	brokers := harness.StartEnvNodes(t, []harness.EnvNode{broker(4), broker(5), broker(6)}).Brokers
	want := []int32{4, 5, 6}
	oneCluster := func(what string) {
		t.Helper()
		waitListBrokers(t, ctx, what, brokers, want)
		waitQuorum(t, ctx, brokers[0].Addr, what+": three voters and the brokers as observers", func(v quorumView) bool {
			return len(v.voters) == 3 && slices.Equal(v.observers, want)
		})
	}
	oneCluster("after start")

	const topic = "bootstrap-brokers"
	_, adm := newAdmin(t, brokers[0].Addr)
	if !pollUntil(90*time.Second, func() bool {
		_, err := adm.CreateTopic(ctx, 3, 3, nil, topic)
		return err == nil || errors.Is(err, kerr.TopicAlreadyExists)
	}) {
		t.Fatal("the topic could not be created")
	}
	waitTopicReady(t, ctx, adm, topic, 3)
	pcl, err := kgo.NewClient(kgo.SeedBrokers(brokers[1].Addr), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	const n = 30
	for i := range n {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	consumeValues(t, ctx, brokers[2].Addr, topic, n)

	brokers[1].Stop(t)
	brokers[1].Restart(t)
	oneCluster("after restarting broker 5")
	consumeValues(t, ctx, brokers[1].Addr, topic, n)
}

// waitListBrokers polls each of brokers until its Metadata lists the
// brokers want (sorted ids) and no other, failing the test after 90 s.
func waitListBrokers(t *testing.T, ctx context.Context, what string, brokers []*harness.Broker, want []int32) {
	t.Helper()
	for _, b := range brokers {
		var got []int32
		if !pollUntil(90*time.Second, func() bool {
			m, err := rawMetadata(ctx, b.Addr)
			if err != nil {
				return false
			}
			got = got[:0]
			for _, mb := range m.Brokers {
				got = append(got, mb.NodeID)
			}
			slices.Sort(got)
			return slices.Equal(got, want)
		}) {
			t.Fatalf("%s: broker at %s lists brokers %v, want %v", what, b.Addr, got, want)
		}
	}
}

// consumeValues consumes topic from the start through the broker at addr
// until it has seen the n values "0" to "n-1" (as the tests produce them),
// failing the test after 90 s.
func consumeValues(t *testing.T, ctx context.Context, addr, topic string, n int) {
	t.Helper()
	ccl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer ccl.Close()
	seen := map[string]bool{}
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for len(seen) < n {
		fs := ccl.PollFetches(cctx)
		if cctx.Err() != nil {
			t.Fatalf("consumed %d of %d records through %s", len(seen), n, addr)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
}

// TestBootstrapBrokersFollowVoterChanges (KIP-853): broker-only nodes 4
// and 5 know only controller F, a voter that is not the active controller
// (controller.quorum.bootstrap.servers=F). They must find the active
// controller through F to register, as Kafka's brokers learn the leader
// from their bootstrap server's answer. F is then removed from the voters
// (RemoveRaftVoter) and stopped: the brokers, which learned the voters
// from the quorum itself, keep heartbeating to the active controller (they
// stay unfenced for more than broker.session.timeout.ms), DescribeQuorum
// through them shows the two voters left, a topic created through one of
// them is written through the other and read back, as with Kafka 4.4,
// whose observers learn the voters from the metadata log (VotersRecord).
// A broker restarted with its bootstrap server gone finds the quorum from
// the voters it kept (Kafka's broker would wait for its bootstrap server).
func TestBootstrapBrokersFollowVoterChanges(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 6*time.Minute)
	dq := startDynamicQuorum(t, ctx, 5, "KAFKA_BROKER_SESSION_TIMEOUT_MS=4000", "KAFKA_BROKER_HEARTBEAT_INTERVAL_MS=500")
	var q *kmsg.DescribeQuorumResponseTopicPartition
	if !pollUntil(60*time.Second, func() bool {
		q = controllerQuorum(ctx, dq.ctrls...)
		return q != nil && q.LeaderID >= 1 && len(q.CurrentVoters) == 3
	}) {
		t.Fatal("no controller answered DescribeQuorum with a leader and three voters")
	}
	f := int32(1)
	if q.LeaderID == f {
		f = 2
	}
	var dirF [16]byte
	var rest []string
	for _, v := range q.CurrentVoters {
		if v.ReplicaID == f {
			dirF = v.ReplicaDirectoryID
		}
	}
	for i, a := range dq.ctrls {
		if int32(i+1) != f {
			rest = append(rest, a)
		}
	}
	t.Logf("active controller %d; the brokers know only controller %d", q.LeaderID, f)
	onlyF := []string{dq.ctrls[f-1]}
	brokers := harness.StartEnvNodes(t, []harness.EnvNode{dq.broker(4, onlyF), dq.broker(5, onlyF)}).Brokers
	want := []int32{4, 5}
	waitListBrokers(t, ctx, "after start", brokers, want)

	changeQuorum(t, ctx, rest[0], fmt.Sprintf("remove controller %d", f), &kmsg.RemoveRaftVoterRequest{VoterID: f, VoterDirectoryID: dirF}, func() bool {
		return len(controllerVoters(ctx, rest...)) == 2 && !slices.Contains(controllerVoters(ctx, rest...), f)
	})
	dq.nodes[f-1].Stop(t)
	for _, b := range brokers {
		waitQuorum(t, ctx, b.Addr, "two voters through broker "+b.Addr, func(v quorumView) bool {
			_, hasF := v.voters[f]
			return len(v.voters) == 2 && !hasF && v.leader != f
		})
	}
	// Three session timeouts without controller F: a broker that could
	// not reach the active controller would be fenced.
	held := time.Now()
	for time.Since(held) < 12*time.Second {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(time.Second):
		}
	}
	const topic = "after-voter-change"
	_, adm := newAdmin(t, brokers[0].Addr)
	if !pollUntil(90*time.Second, func() bool {
		_, err := adm.CreateTopic(ctx, 2, 2, nil, topic)
		return err == nil || errors.Is(err, kerr.TopicAlreadyExists)
	}) {
		t.Fatalf("the topic could not be created after controller %d left", f)
	}
	waitTopicReady(t, ctx, adm, topic, 2)
	waitListBrokers(t, ctx, "without controller F", brokers, want)
	produceAndRead := func(through, from string, n int) {
		t.Helper()
		pcl, err := kgo.NewClient(kgo.SeedBrokers(through), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			t.Fatal(err)
		}
		defer pcl.Close()
		for i := range n {
			if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatalf("produce %d through %s: %v", i, through, err)
			}
		}
		consumeValues(t, ctx, from, topic, n)
	}
	produceAndRead(brokers[1].Addr, brokers[0].Addr, 20)

	brokers[1].Stop(t)
	brokers[1].Restart(t)
	waitListBrokers(t, ctx, "after restarting broker 5", brokers, want)
	produceAndRead(brokers[0].Addr, brokers[1].Addr, 20)
}

// dynamicQuorum is a dynamic quorum of three controller-only processes
// (KIP-853): controller 1 started with only itself in
// controller.quorum.bootstrap.servers (a quorum of one), controllers 2
// and 3 with all three, joining it and added with AddRaftVoter.
type dynamicQuorum struct {
	ports  []int
	ctrls  []string
	common []string
	nodes  []*harness.Broker // controllers 1, 2, 3
}

func (dq *dynamicQuorum) addr(i int) string { return fmt.Sprintf("127.0.0.1:%d", dq.ports[i]) }

// broker is a broker-only node configured with
// controller.quorum.bootstrap.servers alone (bootstrap), as Kafka 4.x
// allows.
func (dq *dynamicQuorum) broker(id int, bootstrap []string) harness.EnvNode {
	l := "PLAINTEXT://" + dq.addr(id-1)
	return harness.EnvNode{Addr: dq.addr(id - 1), Env: append(slices.Clone(dq.common),
		fmt.Sprintf("KAFKA_NODE_ID=%d", id), "KAFKA_PROCESS_ROLES=broker",
		"KAFKA_LISTENERS="+l, "KAFKA_ADVERTISED_LISTENERS="+l, "KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT",
		"KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS="+strings.Join(bootstrap, ","))}
}

// startDynamicQuorum starts the three controllers on the first three of
// nodes free ports (the others are for brokers) and waits until their
// quorum has the three voters.
func startDynamicQuorum(t *testing.T, ctx context.Context, nodes int, extraEnv ...string) *dynamicQuorum {
	t.Helper()
	dq := &dynamicQuorum{ports: harness.FreePorts(t, nodes)}
	dq.ctrls = []string{dq.addr(0), dq.addr(1), dq.addr(2)}
	dq.common = append([]string{
		"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0",
		"CLUSTER_ID=4L6g3nShT-eMCtK--X86sw",
	}, extraEnv...)
	ctrls := dq.ctrls
	controller := func(id int, bootstrap []string) harness.EnvNode {
		return harness.EnvNode{Addr: ctrls[id-1], Env: append(slices.Clone(dq.common),
			fmt.Sprintf("KAFKA_NODE_ID=%d", id), "KAFKA_PROCESS_ROLES=controller",
			"KAFKA_LISTENERS=CONTROLLER://"+ctrls[id-1],
			"KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS="+strings.Join(bootstrap, ","))}
	}
	dq.nodes = harness.StartEnvNodes(t, []harness.EnvNode{controller(1, ctrls[:1])}).Brokers
	joining := []*harness.Broker{harness.LaunchEnvNode(t, 2, controller(2, ctrls)), harness.LaunchEnvNode(t, 3, controller(3, ctrls))}
	for i, c := range joining {
		id := int32(i + 2)
		var dir [16]byte
		if !pollUntil(60*time.Second, func() bool {
			b, err := os.ReadFile(filepath.Join(c.Dir, "meta.properties"))
			if err != nil || !strings.Contains(string(b), "directory.id=") {
				return false
			}
			dir, _ = directoryID(t, c.Dir)
			return true
		}) {
			t.Fatalf("controller %d wrote no meta.properties with a directory.id", id)
		}
		req := &kmsg.AddRaftVoterRequest{VoterID: id, VoterDirectoryID: dir, TimeoutMillis: 30000,
			Listeners: []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: uint16(portOf(t, c.Addr))}}}
		changeQuorum(t, ctx, ctrls[0], fmt.Sprintf("add controller %d", id), req, func() bool {
			return slices.Contains(controllerVoters(ctx, ctrls...), id)
		})
		c.WaitReady(t)
	}
	dq.nodes = append(dq.nodes, joining...)
	if !pollUntil(60*time.Second, func() bool { return slices.Equal(controllerVoters(ctx, ctrls...), []int32{1, 2, 3}) }) {
		t.Fatalf("the controllers' quorum never showed voters 1-3: %v", controllerVoters(ctx, ctrls...))
	}
	return dq
}

// controllerVoters asks the controller listeners for the quorum's voters
// (DescribeQuorum v2, raw: kgo looks for the controller among the
// brokers of Metadata, which a controller listener does not list) and
// returns the active controller's answer, in id order; nil when none
// answers.
func controllerVoters(ctx context.Context, addrs ...string) []int32 {
	var ids []int32
	for id := range controllerVoterDirs(ctx, addrs...) {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// controllerVoterDirs is controllerVoters with each voter's directory id.
func controllerVoterDirs(ctx context.Context, addrs ...string) map[int32][16]byte {
	p := controllerQuorum(ctx, addrs...)
	if p == nil {
		return nil
	}
	out := map[int32][16]byte{}
	for _, v := range p.CurrentVoters {
		out[v.ReplicaID] = v.ReplicaDirectoryID
	}
	return out
}

// controllerQuorum is the metadata partition of the first answer of the
// controller listeners to DescribeQuorum v2; nil when none answers.
func controllerQuorum(ctx context.Context, addrs ...string) *kmsg.DescribeQuorumResponseTopicPartition {
	for _, addr := range addrs {
		req := kmsg.NewPtrDescribeQuorumRequest()
		req.Version = 2 // directory ids
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrDescribeQuorumResponse()
		if err := rawRoundTripVersion(ctx, addr, req, resp); err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 ||
			resp.Topics[0].Partitions[0].ErrorCode != 0 {
			continue
		}
		return &resp.Topics[0].Partitions[0]
	}
	return nil
}
