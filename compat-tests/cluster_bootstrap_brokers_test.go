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
	ports := harness.FreePorts(t, 6)
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	ctrls := []string{addr(0), addr(1), addr(2)}
	common := []string{
		"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0",
		"CLUSTER_ID=4L6g3nShT-eMCtK--X86sw",
	}
	controller := func(id int, bootstrap []string) harness.EnvNode {
		return harness.EnvNode{Addr: ctrls[id-1], Env: append(slices.Clone(common),
			fmt.Sprintf("KAFKA_NODE_ID=%d", id), "KAFKA_PROCESS_ROLES=controller",
			"KAFKA_LISTENERS=CONTROLLER://"+ctrls[id-1],
			"KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS="+strings.Join(bootstrap, ","))}
	}
	broker := func(id int) harness.EnvNode {
		l := "PLAINTEXT://" + addr(id-1)
		return harness.EnvNode{Addr: addr(id - 1), Env: append(slices.Clone(common),
			fmt.Sprintf("KAFKA_NODE_ID=%d", id), "KAFKA_PROCESS_ROLES=broker",
			"KAFKA_LISTENERS="+l, "KAFKA_ADVERTISED_LISTENERS="+l, "KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT",
			"KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS="+strings.Join(ctrls, ","))}
	}
	ctx := testContext(t, 5*time.Minute)

	harness.StartEnvNodes(t, []harness.EnvNode{controller(1, ctrls[:1])})
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
	if !pollUntil(60*time.Second, func() bool { return slices.Equal(controllerVoters(ctx, ctrls...), []int32{1, 2, 3}) }) {
		t.Fatalf("the controllers' quorum never showed voters 1-3: %v", controllerVoters(ctx, ctrls...))
	}

	brokers := harness.StartEnvNodes(t, []harness.EnvNode{broker(4), broker(5), broker(6)}).Brokers
	want := []int32{4, 5, 6}
	oneCluster := func(what string) {
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
	consumeAll := func(through string) {
		t.Helper()
		ccl, err := kgo.NewClient(kgo.SeedBrokers(through), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
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
				t.Fatalf("consumed %d of %d records through %s", len(seen), n, through)
			}
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		}
	}
	consumeAll(brokers[2].Addr)

	brokers[1].Stop(t)
	brokers[1].Restart(t)
	oneCluster("after restarting broker 5")
	consumeAll(brokers[1].Addr)
}

// controllerVoters asks the controller listeners for the quorum's voters
// (DescribeQuorum v0, raw: kgo looks for the controller among the
// brokers of Metadata, which a controller listener does not list) and
// returns the active controller's answer, in id order; nil when none
// answers.
func controllerVoters(ctx context.Context, addrs ...string) []int32 {
	for _, addr := range addrs {
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrDescribeQuorumResponse()
		if err := rawRoundTrip(ctx, addr, req, resp); err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 ||
			resp.Topics[0].Partitions[0].ErrorCode != 0 {
			continue
		}
		var ids []int32
		for _, v := range resp.Topics[0].Partitions[0].CurrentVoters {
			ids = append(ids, v.ReplicaID)
		}
		slices.Sort(ids)
		return ids
	}
	return nil
}
