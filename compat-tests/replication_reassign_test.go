package compattests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// partitionReplicas returns replicas and ISR of topic's partition 0 from
// addr's Metadata.
func partitionReplicas(ctx context.Context, addr, topic string) (replicas, isr []int32) {
	m, err := rawMetadata(ctx, addr, topic)
	if err != nil || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 1 {
		return nil, nil
	}
	p := m.Topics[0].Partitions[0]
	return p.Replicas, p.ISR
}

// TestPartitionReassignment: three combined nodes; a topic on replicas
// [1 2] with acknowledged records is moved to [3 2] (Kafka's
// kafka-reassign-partitions --execute and --verify when Java is there,
// else AlterPartitionReassignments and ListPartitionReassignments).
// Node 3 catches up before it joins the ISR, node 1 is removed after and
// deletes its log; the reassignment list is empty at the end. Node 2 is
// then killed: node 3 leads and every acknowledged record is read back
// from it once and in order (anomaly: lost in the move).
func TestPartitionReassignment(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t, 3, harness.ClusterOptions{Env: []string{
		"KAFKA_BROKER_SESSION_TIMEOUT_MS=3000", "KAFKA_BROKER_HEARTBEAT_INTERVAL_MS=500",
	}})
	ctx := testContext(t, 4*time.Minute)
	const topic = "moving"
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if !pollUntil(30*time.Second, func() bool {
		m, err := rawMetadata(ctx, c.Brokers[0].Addr)
		return err == nil && len(m.Brokers) == 3
	}) {
		t.Fatal("the 3 brokers are not registered and unfenced")
	}
	createAssigned(ctx, t, cl, topic, []int32{1, 2}, nil)
	var acked []string
	produce := func(prefix string, n int) {
		for i := range n {
			v := fmt.Sprintf("%s-%d", prefix, i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
			acked = append(acked, v)
		}
	}
	produce("before", 300)

	java := !testing.Short() && kafkaToolsAvailable()
	if java {
		plan := filepath.Join(t.TempDir(), "plan.json")
		if err := os.WriteFile(plan, fmt.Appendf(nil, `{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[3,2]}]}`, topic), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := kafkaref.Tool(t, "kafka-reassign-partitions", "--bootstrap-server", c.Brokers[1].Addr,
			"--reassignment-json-file", plan, "--execute").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Successfully started partition reassignment") {
			t.Fatalf("kafka-reassign-partitions --execute: %v\n%s", err, out)
		}
		if !pollUntil(60*time.Second, func() bool {
			out, _ = kafkaref.Tool(t, "kafka-reassign-partitions", "--bootstrap-server", c.Brokers[1].Addr,
				"--reassignment-json-file", plan, "--verify").CombinedOutput()
			return strings.Contains(string(out), "Reassignment of partition "+topic+"-0 is completed")
		}) {
			t.Fatalf("kafka-reassign-partitions --verify:\n%s", out)
		}
		// --verify also clears the throttles of every broker through that
		// broker (IncrementalAlterConfigs, not to be forwarded as it is).
		if strings.Contains(string(out), "Error") {
			t.Fatalf("kafka-reassign-partitions --verify:\n%s", out)
		}
		t.Logf("kafka-reassign-partitions --verify: %s", strings.TrimSpace(string(out)))
	} else {
		adm := kadm.NewClient(cl)
		var req kadm.AlterPartitionAssignmentsReq
		req.Assign(topic, 0, []int32{3, 2})
		res, err := adm.AlterPartitionAssignments(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		res.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
			if r.Err != nil {
				t.Fatalf("AlterPartitionAssignments: %v", r.Err)
			}
		})
	}
	if !pollUntil(60*time.Second, func() bool {
		replicas, isr := partitionReplicas(ctx, c.Brokers[0].Addr, topic)
		slices.Sort(isr)
		return slices.Equal(replicas, []int32{3, 2}) && slices.Equal(isr, []int32{2, 3})
	}) {
		replicas, isr := partitionReplicas(ctx, c.Brokers[0].Addr, topic)
		t.Fatalf("after the reassignment: replicas %v ISR %v, want [3 2] and [2 3]", replicas, isr)
	}
	lst, err := kadm.NewClient(cl).ListPartitionReassignments(ctx, nil)
	if err != nil || len(lst) != 0 {
		t.Fatalf("reassignments still listed: %v, %v", lst, err)
	}
	gone := filepath.Join(c.Brokers[0].Dir, topic+"-0")
	if !pollUntil(30*time.Second, func() bool { _, err := os.Stat(gone); return os.IsNotExist(err) }) {
		t.Fatalf("node 1 kept %s after leaving the replicas", gone)
	}
	produce("after", 100)

	c.Brokers[1].Kill(t)
	if !pollUntil(60*time.Second, func() bool {
		m, err := rawMetadata(ctx, c.Brokers[2].Addr, topic)
		return err == nil && len(m.Topics) == 1 && m.Topics[0].Partitions[0].Leader == 3
	}) {
		t.Fatal("node 3 did not take over the moved partition")
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers[2].Addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < len(acked) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("lost: read %d of %d", len(got), len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, acked) {
		t.Fatalf("read back %d records, not the %d acknowledged in order", len(got), len(acked))
	}
}
