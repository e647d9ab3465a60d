package compattests

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// TestReplicatedAcksAllSurvivesLeaderKill: on three processes, a topic with
// RF=3 and min.insync.replicas=2 takes acks=all records from franz-go
// (idempotent); the partition's leader is killed with SIGKILL and the
// producer goes on through the survivors. Every acknowledged record is
// read back from the survivors exactly once and in order (anomalies
// checked: lost, duplicated, reordered).
func TestReplicatedAcksAllSurvivesLeaderKill(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t, 3, harness.ClusterOptions{Env: []string{
		"KAFKA_BROKER_SESSION_TIMEOUT_MS=3000", "KAFKA_BROKER_HEARTBEAT_INTERVAL_MS=500",
	}})
	ctx := testContext(t, 3*time.Minute)
	const topic = "replicated"
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000), kgo.RecordDeliveryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	r, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err != nil || r.Err != nil {
		t.Fatalf("CreateTopic: %v / %v", err, r.Err)
	}
	var acked []int
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
			acked = append(acked, i)
		}
	}
	produce(0, 200)
	m, err := rawMetadata(ctx, c.Brokers[0].Addr, topic)
	if err != nil || len(m.Topics) != 1 {
		t.Fatalf("metadata: %v", err)
	}
	leader := int(m.Topics[0].Partitions[0].Leader) - 1
	c.Brokers[leader].Kill(t)
	start := time.Now()
	produce(200, 400)
	t.Logf("killed leader node %d; 200 more acks=all records in %v", leader+1, time.Since(start).Round(time.Millisecond))

	var live []string
	for i, b := range c.Brokers {
		if i != leader {
			live = append(live, b.Addr)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(live...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []int
	for len(got) < len(acked) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("lost: read %d of %d acknowledged records", len(got), len(acked))
		}
		fs.EachRecord(func(rec *kgo.Record) {
			v, _ := strconv.Atoi(string(rec.Value))
			got = append(got, v)
		})
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("record %d holds %d: %s", i, v, fmt.Sprint(got[max(0, i-3):min(len(got), i+3)]))
		}
	}
}
