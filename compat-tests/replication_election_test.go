package compattests

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// partitionState returns leader and ISR of topic's partition 0 as addr's
// Metadata has them (leader -1 when none).
func partitionState(ctx context.Context, addr, topic string) (int32, []int32) {
	m, err := rawMetadata(ctx, addr, topic)
	if err != nil || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 1 {
		return -2, nil
	}
	p := m.Topics[0].Partitions[0]
	return p.Leader, p.ISR
}

// createAssigned creates topic with one partition on replicas, with configs.
func createAssigned(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, replicas []int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Replicas = replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics %s: %v / %+v", topic, err, resp)
	}
}

// TestLeaderElections: 3 controllers + brokers 4 and 5; topics "clean"
// (unclean.leader.election.enable false, the default) and "unclean" (true),
// each one partition on replicas [4 5]. Broker 5 is paused until it is
// fenced and out of both ISRs, records go to leader 4 with acks=1, then 4
// is killed: both partitions are leaderless. When 5 comes back, "unclean"
// elects it at once (its ISR becomes [5]) and "clean" stays leaderless
// until an UNCLEAN ElectLeaders (Kafka's kafka-leader-election tool when
// Java is there, else the request) makes 5 its leader. Broker 4 restarts,
// truncates the records 5 never had and rejoins the ISRs; a PREFERRED
// election moves "clean" back to 4, a second one is ELECTION_NOT_NEEDED.
// auto.leader.rebalance.enable is off here (TestAutoLeaderRebalance).
func TestLeaderElections(t *testing.T) {
	t.Parallel()
	c := harness.StartSplitCluster(t, 3, 2, harness.ClusterOptions{Env: []string{
		"KAFKA_BROKER_SESSION_TIMEOUT_MS=3000", "KAFKA_BROKER_HEARTBEAT_INTERVAL_MS=500",
		"KAFKA_REPLICA_LAG_TIME_MAX_MS=3000", "KAFKA_AUTO_LEADER_REBALANCE_ENABLE=false",
	}})
	ctx := testContext(t, 4*time.Minute)
	b4, b5 := c.Brokers[3], c.Brokers[4]
	if !pollUntil(30*time.Second, func() bool {
		m, err := rawMetadata(ctx, b4.Addr)
		return err == nil && len(m.Brokers) == 2
	}) {
		t.Fatal("brokers 4 and 5 are not registered")
	}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(b4.Addr, b5.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	createAssigned(ctx, t, admCl, "clean", []int32{4, 5}, nil)
	createAssigned(ctx, t, admCl, "unclean", []int32{4, 5}, map[string]string{"unclean.leader.election.enable": "true"})
	for _, topic := range []string{"clean", "unclean"} {
		if !pollUntil(30*time.Second, func() bool {
			l, isr := partitionState(ctx, b4.Addr, topic)
			return l == 4 && len(isr) == 2
		}) {
			t.Fatalf("%s: no leader 4 with ISR [4 5]", topic)
		}
	}

	b5.Pause(t)
	for _, topic := range []string{"clean", "unclean"} {
		if !pollUntil(60*time.Second, func() bool {
			l, isr := partitionState(ctx, b4.Addr, topic)
			return l == 4 && slices.Equal(isr, []int32{4})
		}) {
			t.Fatalf("%s: ISR did not shrink to [4] with broker 5 paused", topic)
		}
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(b4.Addr), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"clean", "unclean"} {
		for i := range 5 {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "only-on-4-%d", i)}).FirstErr(); err != nil {
				t.Fatalf("produce to %s: %v", topic, err)
			}
		}
	}
	prod.Close()
	b4.Kill(t)
	b5.Resume(t)
	if !pollUntil(60*time.Second, func() bool {
		l, isr := partitionState(ctx, b5.Addr, "unclean")
		return l == 5 && slices.Equal(isr, []int32{5})
	}) {
		l, isr := partitionState(ctx, b5.Addr, "unclean")
		t.Fatalf("unclean.leader.election.enable=true: leader %d ISR %v, want 5 [5]", l, isr)
	}
	// Eligible leader replicas (KIP-966, on by default as in Kafka 4.4):
	// fencing 4, the last ISR member, empties the ISR; 4 stays eligible and
	// is the last known leader.
	if st, err := describeELR(ctx, b5.Addr, "clean"); err != nil || st.leader != -1 || len(st.isr) != 0 ||
		!slices.Equal(st.elr, []int32{4}) || !slices.Equal(st.lke, []int32{4}) {
		t.Fatalf("unclean.leader.election.enable=false: %v (%v), want leader -1, ISR [], ELR [4], last known [4]", st, err)
	}

	// unclean.leader.election.enable turned on at runtime elects nobody
	// before the active controller's next periodic check, every
	// unclean.leader.election.interval.ms (5 minutes by default; Kafka
	// 4.4's electUnclean task): for 5 s the partition stays leaderless.
	adm := kadm.NewClient(admCl)
	setUnclean := func(v *string) {
		t.Helper()
		rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: map[bool]kadm.IncrementalOp{true: kadm.SetConfig, false: kadm.DeleteConfig}[v != nil],
			Name: "unclean.leader.election.enable", Value: v}}, "clean")
		if err == nil {
			err = rs[0].Err
		}
		if err != nil {
			t.Fatalf("set unclean.leader.election.enable of clean to %v: %v", v, err)
		}
	}
	setUnclean(kadm.StringPtr("true"))
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if l, isr := partitionState(ctx, b5.Addr, "clean"); l >= 0 {
			t.Fatalf("unclean.leader.election.enable set at runtime: leader %d ISR %v before the periodic check (unclean.leader.election.interval.ms 300000)", l, isr)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	setUnclean(nil)

	java := !testing.Short() && kafkaToolsAvailable()
	elect := func(typ string, wantOut string) {
		t.Helper()
		if java {
			out, _ := kafkaref.Tool(t, "kafka-leader-election", "--bootstrap-server", b5.Addr,
				"--election-type", typ, "--topic", "clean", "--partition", "0").CombinedOutput()
			if !strings.Contains(string(out), wantOut) {
				t.Fatalf("kafka-leader-election %s: want %q in:\n%s", typ, wantOut, out)
			}
			t.Logf("kafka-leader-election --election-type %s: %s", typ, strings.TrimSpace(string(out)))
			return
		}
		res, err := kadm.NewClient(admCl).ElectLeaders(ctx, map[string]kadm.ElectLeadersHow{"UNCLEAN": kadm.ElectLiveReplica, "PREFERRED": kadm.ElectPreferredReplica}[typ], kadm.TopicsSet{"clean": {0: {}}})
		if err != nil {
			t.Fatalf("ElectLeaders %s: %v", typ, err)
		}
		t.Logf("ElectLeaders %s: %+v", typ, res)
	}
	elect("UNCLEAN", "Successfully completed leader election (UNCLEAN) for partitions clean-0")
	if !pollUntil(10*time.Second, func() bool {
		l, isr := partitionState(ctx, b5.Addr, "clean")
		return l == 5 && slices.Equal(isr, []int32{5})
	}) {
		l, isr := partitionState(ctx, b5.Addr, "clean")
		t.Fatalf("after the unclean election: leader %d ISR %v, want 5 [5]", l, isr)
	}

	b4.Restart(t)
	for _, topic := range []string{"clean", "unclean"} {
		if !pollUntil(60*time.Second, func() bool {
			_, isr := partitionState(ctx, b5.Addr, topic)
			return len(isr) == 2
		}) {
			t.Fatalf("%s: broker 4 did not rejoin the ISR", topic)
		}
	}
	elect("PREFERRED", "Successfully completed leader election (PREFERRED) for partitions clean-0")
	if !pollUntil(10*time.Second, func() bool { l, _ := partitionState(ctx, b4.Addr, "clean"); return l == 4 }) {
		t.Fatal("the preferred election did not move clean-0 to broker 4")
	}
	elect("PREFERRED", "Valid replica already elected for partitions clean-0")

	// The records only 4 had are gone: 5's log won the unclean elections
	// and 4 truncated to it. A new record goes to offset 0 and is the only
	// one read (a 4 that kept its log would have put it at offset 5).
	prod, err = kgo.NewClient(kgo.SeedBrokers(b4.Addr, b5.Addr), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for _, topic := range []string{"clean", "unclean"} {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("after-" + topic)}).FirstErr(); err != nil {
			t.Fatalf("produce to %s after the elections: %v", topic, err)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(b4.Addr, b5.Addr), kgo.ConsumeTopics("clean", "unclean"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < 2 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %v", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%s@%d=%s", r.Topic, r.Offset, r.Value)) })
	}
	slices.Sort(got)
	if want := []string{"clean@0=after-clean", "unclean@0=after-unclean"}; !slices.Equal(got, want) {
		t.Fatalf("after the unclean elections read %v, want %v", got, want)
	}
}

// kafkaToolsAvailable reports whether Kafka's CLI tools can run here
// (kafkaref.Require's check, without skipping the test).
func kafkaToolsAvailable() bool {
	for _, bin := range []string{"java", "mvn", "python3"} {
		if _, err := exec.LookPath(bin); err != nil {
			return false
		}
	}
	return true
}
