package compattests

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// elrState is one partition as DescribeTopicPartitions shows it.
type elrState struct {
	leader, epoch int32
	isr, elr, lke []int32
}

func (s elrState) String() string {
	return fmt.Sprintf("leader=%d epoch=%d isr=%v elr=%v lastKnownElr=%v", s.leader, s.epoch, s.isr, s.elr, s.lke)
}

// describeELR asks broker addr for partition 0 of topic with
// DescribeTopicPartitions (what kafka-topics --describe uses).
func describeELR(ctx context.Context, addr, topic string) (elrState, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		return elrState{}, err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = 10
	req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: topic}}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return elrState{}, err
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 1 {
		return elrState{}, fmt.Errorf("describe %s: %+v", topic, resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	return elrState{p.LeaderID, p.LeaderEpoch, p.ISR, p.EligibleLeaderReplicas, p.LastKnownELR}, nil
}

// TestEligibleLeaderReplicaElected is KIP-966 on three real brokers (and
// a controller of its own, so the quorum survives): with RF=3 and
// min.insync.replicas=2, the two followers stop, then the leader, all
// cleanly. The follower that stopped last left the ISR while the ISR was
// below min.insync.replicas, so it holds every acknowledged record: it is
// in the ELR. The first follower comes back and is not elected (it is not
// eligible; DescribeTopicPartitions through it shows no leader, an empty
// ISR, the ELR and the last known leader); it stops again, and the last
// follower comes back alone and is elected without an unclean election
// (its ISR is itself and the old leader stays eligible; Kafka before 4.1
// would keep the partition offline until the old leader returned). Every
// acknowledged record is then read back, in order, once the others are
// back.
func TestEligibleLeaderReplicaElected(t *testing.T) {
	t.Parallel()
	c := harness.StartSplitCluster(t, 1, 3, harness.ClusterOptions{Env: []string{
		"KAFKA_BROKER_SESSION_TIMEOUT_MS=6000", "KAFKA_BROKER_HEARTBEAT_INTERVAL_MS=500",
	}})
	ctx := testContext(t, 3*time.Minute)
	brokers := c.Addrs()[1:]
	const topic = "elr"
	if !pollUntil(60*time.Second, func() bool {
		m, err := rawMetadata(ctx, brokers[0])
		return err == nil && len(m.Brokers) == 3
	}) {
		t.Fatal("the 3 brokers are not registered")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err != nil || r.Err != nil {
		t.Fatalf("CreateTopic: %v / %v", err, r.Err)
	}
	waitTopicEverywhere(t, ctx, brokers, topic, 1)
	var acked []string
	produce := func(prefix string, n int) {
		t.Helper()
		for i := range n {
			v := fmt.Sprintf("%s-%d", prefix, i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
			acked = append(acked, v)
		}
	}
	node := func(id int32) *harness.Broker { return c.Brokers[id-1] }
	// state polls the partition until cond holds, asking a running broker.
	var last elrState
	state := func(what string, cond func(s elrState) bool, ask ...int32) elrState {
		t.Helper()
		if !pollUntil(60*time.Second, func() bool {
			for _, id := range ask {
				s, err := describeELR(ctx, node(id).Addr, topic)
				if err == nil {
					last = s
					return cond(s)
				}
			}
			return false
		}) {
			t.Fatalf("%s: last seen %v", what, last)
		}
		return last
	}
	s := state("a leader with the full ISR", func(s elrState) bool { return s.leader >= 2 && len(s.isr) == 3 }, 2, 3, 4)
	leader := s.leader
	var followers []int32
	for _, id := range []int32{2, 3, 4} {
		if id != leader {
			followers = append(followers, id)
		}
	}
	f1, f2 := followers[0], followers[1]
	produce("full", 30)

	node(f1).Stop(t)
	state("the ISR without the first follower, no ELR", func(s elrState) bool {
		return slices.Equal(s.isr, []int32{leader, f2}) || slices.Equal(s.isr, []int32{f2, leader})
	}, leader)
	if len(last.elr) != 0 {
		t.Fatalf("ELR with the ISR at min.insync.replicas: %v", last)
	}
	produce("two", 30) // acknowledged by the leader and f2

	node(f2).Stop(t)
	state("f2 eligible", func(s elrState) bool { return slices.Equal(s.isr, []int32{leader}) && slices.Equal(s.elr, []int32{f2}) }, leader)

	node(leader).Stop(t)
	// Every broker is down now. The first follower comes back: it is
	// neither in the ISR nor eligible, so the partition stays without a
	// leader (unclean.leader.election.enable is off).
	node(f1).Restart(t)
	down := state("no leader, the old leader and f2 eligible", func(s elrState) bool {
		return s.leader == -1 && len(s.isr) == 0 && slices.Equal(s.elr, []int32{min(leader, f2), max(leader, f2)}) && slices.Equal(s.lke, []int32{leader})
	}, f1)

	// f1 stops again, so that nobody but f2 can join the ISR while the
	// election is checked. f2 comes back after its clean shutdown: elected
	// from the ELR.
	node(f1).Stop(t)
	node(f2).Restart(t)
	up := state("f2 elected from the ELR", func(s elrState) bool { return s.leader == f2 }, f2)
	if !slices.Equal(up.isr, []int32{f2}) || !slices.Equal(up.elr, []int32{leader}) || len(up.lke) != 0 || up.epoch <= down.epoch {
		// An unclean election would have cleared the ELR.
		t.Fatalf("after the election: %v (before: %v)", up, down)
	}

	// The old leader and f1 come back and catch up from f2: the ISR
	// reaches min.insync.replicas again and the ELR is cleared.
	node(leader).Restart(t)
	node(f1).Restart(t)
	state("the ISR back at min.insync.replicas, no ELR", func(s elrState) bool { return len(s.isr) >= 2 && len(s.elr) == 0 }, f2, f1, leader)
	produce("after", 10)

	consumer, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var got []string
	for len(got) < len(acked) {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fs := consumer.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil || pctx.Err() != nil && fs.NumRecords() == 0 {
			t.Fatalf("read %d of %d acknowledged records", len(got), len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, acked) {
		t.Fatalf("read back %d records, acknowledged %d; first difference at %d", len(got), len(acked), firstDiff(got, acked))
	}
	t.Logf("%d acknowledged records read back; election: %v -> %v", len(acked), down, up)
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
