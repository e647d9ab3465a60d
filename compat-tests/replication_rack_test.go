package compattests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// rackSelector is the replica.selector.class of TestFetchFromClosestReplica.
const rackSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// startRackCluster starts three combined-mode nodes with broker.rack
// r<id> and replica.selector.class RackAwareReplicaSelector, configured
// as a three-node apache/kafka compose file would be.
func startRackCluster(t *testing.T) *harness.Cluster {
	t.Helper()
	ports := harness.FreePorts(t, 6)
	clientPorts, ctrlPorts := ports[:3], ports[3:]
	var nodes []harness.EnvNode
	for id := 1; id <= 3; id++ {
		env := append(harness.ClusterEnv(id, clientPorts, ctrlPorts),
			"KAFKA_BROKER_RACK=r"+strconv.Itoa(id),
			"KAFKA_REPLICA_SELECTOR_CLASS="+rackSelector,
			// Kafka's defaults otherwise (session 9 s, lag 30 s): a
			// loaded machine must not fence node 2 or drop it from
			// an ISR while the consumers read from it; the paused
			// node 2 leaves the ISRs when it is fenced.
		)
		nodes = append(nodes, harness.EnvNode{Env: env, Addr: fmt.Sprintf("127.0.0.1:%d", clientPorts[id-1])})
	}
	return harness.StartEnvNodes(t, nodes)
}

// createAssignedPartitions creates topic with one partition per entry of
// replicas (the first replica is the preferred leader), with configs.
func createAssignedPartitions(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, replicas [][]int32, configs map[string]string) {
	t.Helper()
	req := harness.AssignedTopicRequest(topic, replicas, configs)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics %s: %v / %+v", topic, err, resp)
	}
}

// rackFetch is one consumer Fetch of partition of topic at offset, sent to
// broker id with the client's rack.
type rackFetch struct {
	topic     string
	topicID   [16]byte
	partition int32
	offset    int64
	rack      string
}

// send sends f to broker id through cl (at the highest version both
// know, unless cl caps it) and returns the partition's answer.
func (f rackFetch) send(ctx context.Context, cl *kgo.Client, id int32) (kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxBytes = 1 << 20
	req.Rack = f.rack
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = f.topic, f.topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = f.partition
	rp.FetchOffset = f.offset
	rp.PartitionMaxBytes = 1 << 20
	rp.CurrentLeaderEpoch = -1
	rp.LastFetchedEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	kresp, err := cl.Broker(int(id)).Request(rctx, req)
	if err != nil {
		return kmsg.FetchResponseTopicPartition{}, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kmsg.FetchResponseTopicPartition{}, fmt.Errorf("fetch: error %d, %d topics in the response", resp.ErrorCode, len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0], nil
}

// recordCount is the number of records in a fetch answer.
func recordCount(topic string, p *kmsg.FetchResponseTopicPartition) int {
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: topic, Partition: p.Partition}, p, kgo.DefaultDecompressor(), nil)
	return len(fp.Records)
}

// servedBy counts, per broker, the record batches a consumer read
// (kgo.HookFetchBatchRead: the broker that answered the fetch).
type servedBy struct {
	mu      sync.Mutex
	batches map[int32]int
}

func (s *servedBy) OnFetchBatchRead(meta kgo.BrokerMetadata, _ string, _ int32, _ kgo.FetchBatchMetrics) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches[meta.NodeID]++
}

func (s *servedBy) snapshot() map[int32]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int32]int{}
	for k, v := range s.batches {
		out[k] = v
	}
	return out
}

// TestFetchFromClosestReplica (KIP-392): three nodes in racks r1, r2, r3
// with replica.selector.class RackAwareReplicaSelector and a topic of
// three RF=3 partitions none of which node 2 leads. Records produced with
// acks=all are consumed by a franz-go consumer with kgo.Rack("r2") exactly
// once and in order per partition, every batch read from node 2 (the
// client's HookFetchBatchRead names the broker that answered). Raw fetches
// check the protocol: the leader answers a consumer in r2 (r3) with
// PreferredReadReplica 2 (3) and no records, and one in its own rack or
// with no rack with records; the follower serves Fetch v11+ up to its high
// watermark, answers OFFSET_OUT_OF_RANGE above its log end and
// NOT_LEADER_OR_FOLLOWER to Fetch v10 and to ListOffsets (leader only).
// The Java consumer with client.rack=r2 receives its records from node 2
// too (javaRackConsumer; skipped without java). Then node 2 is paused (SIGSTOP) until it left every ISR: the leaders
// stop sending consumers in r2 to it, and a new consumer in r2 reads both
// rounds of records (the second produced meanwhile) from the leaders
// only; once node 2 is back in the ISRs the first consumer reads the
// second round too, every record exactly once.
func TestFetchFromClosestReplica(t *testing.T) {
	t.Parallel()
	c := startRackCluster(t)
	ctx := testContext(t, 3*time.Minute)
	const topic, perPartition = "rack-aware", 500
	assignment := [][]int32{{1, 2, 3}, {3, 2, 1}, {1, 3, 2}}

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(100), kgo.RecordDeliveryTimeout(90*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createAssignedPartitions(ctx, t, cl, topic, assignment, map[string]string{"min.insync.replicas": "2"})
	waitFullISR(t, ctx, c, topic, len(assignment))
	m, err := rawMetadata(ctx, c.Brokers[0].Addr, topic)
	if err != nil || len(m.Topics) != 1 {
		t.Fatalf("metadata: %v", err)
	}
	leaders := map[int32]int32{}
	for _, p := range m.Topics[0].Partitions {
		leaders[p.Partition] = p.Leader
		if p.Leader == 2 {
			t.Fatalf("partition %d is led by node 2 (assignment %v): the test needs node 2 a follower everywhere", p.Partition, assignment)
		}
	}
	racks := map[int32]string{}
	for _, b := range m.Brokers {
		if b.Rack != nil {
			racks[b.NodeID] = *b.Rack
		}
	}
	if racks[1] != "r1" || racks[2] != "r2" || racks[3] != "r3" {
		t.Fatalf("Metadata racks %v, want 1:r1 2:r2 3:r3", racks)
	}

	// Produce with acks=all: when the last is acknowledged, every
	// replica in the ISR (all three) has every record.
	produceRound(ctx, t, cl, topic, len(assignment), 0, perPartition)

	// The protocol, partition 0 (leader 1).
	p0 := rackFetch{topic: topic, topicID: m.Topics[0].TopicID, partition: 0}
	leader0 := leaders[0]
	for _, tc := range []struct {
		rack      string
		preferred int32
	}{{"r2", 2}, {"r3", 3}, {"r" + strconv.Itoa(int(leader0)), -1}, {"", -1}, {"r9", -1}} {
		f := p0
		f.rack = tc.rack
		got, err := f.send(ctx, cl, leader0)
		if err != nil {
			t.Fatalf("fetch from leader %d, rack %q: %v", leader0, tc.rack, err)
		}
		n := recordCount(topic, &got)
		switch {
		case got.ErrorCode != 0 || got.PreferredReadReplica != tc.preferred:
			t.Fatalf("leader, rack %q: error %d, preferred read replica %d; want 0, %d", tc.rack, got.ErrorCode, got.PreferredReadReplica, tc.preferred)
		case tc.preferred >= 0 && (n != 0 || got.HighWatermark != perPartition):
			t.Fatalf("leader, rack %q: redirected with %d records and high watermark %d; want 0 and %d", tc.rack, n, got.HighWatermark, perPartition)
		case tc.preferred < 0 && n == 0:
			t.Fatalf("leader, rack %q: not redirected and no records", tc.rack)
		}
	}
	// The follower in r2: its high watermark follows the leader's one
	// fetch later; it serves up to it.
	f := p0
	f.rack = "r2"
	var fr kmsg.FetchResponseTopicPartition
	if !pollUntil(30*time.Second, func() bool {
		fr, err = f.send(ctx, cl, 2)
		return err == nil && fr.ErrorCode == 0 && fr.HighWatermark == perPartition
	}) {
		t.Fatalf("follower 2: %v, error %d, high watermark %d; want %d", err, fr.ErrorCode, fr.HighWatermark, perPartition)
	}
	if n := recordCount(topic, &fr); n == 0 || fr.PreferredReadReplica != -1 {
		t.Fatalf("follower 2 served %d records, preferred read replica %d", n, fr.PreferredReadReplica)
	}
	f.offset = perPartition + 1
	if got, err := f.send(ctx, cl, 2); err != nil || got.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("follower 2 above its log end: %v, error %d; want OFFSET_OUT_OF_RANGE", err, got.ErrorCode)
	}
	f.offset = perPartition
	if got, err := f.send(ctx, cl, 2); err != nil || got.ErrorCode != 0 || recordCount(topic, &got) != 0 {
		t.Fatalf("follower 2 at its high watermark: %v, error %d", err, got.ErrorCode)
	}
	v10 := kversion.Stable()
	v10.SetMaxKeyVersion(1, 10)
	old, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.MaxVersions(v10), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if got, err := p0.send(ctx, old, 2); err != nil || got.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("follower 2, Fetch v10: %v, error %d; want NOT_LEADER_OR_FOLLOWER", err, got.ErrorCode)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	if kresp, err := cl.Broker(2).Request(ctx, lo); err != nil {
		t.Fatalf("ListOffsets at follower 2: %v", err)
	} else if code := kresp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("ListOffsets at follower 2: error %d, want NOT_LEADER_OR_FOLLOWER", code)
	}

	// A franz-go consumer in r2 reads everything from node 2.
	served := &servedBy{batches: map[int32]int{}}
	cons := newRackConsumer(t, c.Addrs(), topic, served)
	got := map[int32][]string{}
	consumeUntil(ctx, t, cons, got, len(assignment)*perPartition, served)
	checkRounds(t, got, len(assignment), perPartition)
	by := served.snapshot()
	if by[2] == 0 || len(by) != 1 {
		t.Fatalf("record batches by broker %v: want every one from node 2 (rack r2)", by)
	}
	t.Logf("%d records read in %d batches, all from node 2 (rack r2); leaders %v", len(assignment)*perPartition, by[2], leaders)

	// The Java client with client.rack=r2 (when java is there).
	t.Run("java", func(t *testing.T) { javaRackConsumer(ctx, t, c, cl, assignment) })

	// Node 2 stops (SIGSTOP), is fenced and leaves the ISRs: the leaders no longer
	// send a consumer in r2 to it, and a new one reads every record,
	// a second round produced meanwhile included, from the leaders.
	c.Brokers[1].Pause(t)
	if !pollUntil(60*time.Second, func() bool {
		m, err := rawMetadata(ctx, c.Brokers[0].Addr, topic)
		if err != nil || len(m.Topics) != 1 {
			return false
		}
		for _, p := range m.Topics[0].Partitions {
			if slices.Contains(p.ISR, 2) {
				return false
			}
		}
		return true
	}) {
		c.Brokers[1].Resume(t)
		t.Fatal("node 2 paused: still in an ISR after 60 s (broker.session.timeout.ms is 9 s)")
	}
	paused := true
	defer func() {
		if paused {
			c.Brokers[1].Resume(t)
		}
	}()
	// Each leader applies the ISR change itself (its own AlterPartition,
	// or the image that fenced node 2): ask each until it keeps a
	// consumer in r2.
	for p, leader := range leaders {
		f := rackFetch{topic: topic, topicID: m.Topics[0].TopicID, partition: p, rack: "r2"}
		var fr kmsg.FetchResponseTopicPartition
		var err error
		if !pollUntil(30*time.Second, func() bool {
			fr, err = f.send(ctx, cl, leader)
			return err == nil && fr.ErrorCode == 0 && fr.PreferredReadReplica == -1 && recordCount(topic, &fr) > 0
		}) {
			t.Fatalf("partition %d, leader %d, rack r2, node 2 out of the ISR: %v, error %d, preferred read replica %d; want the records there", p, leader, err, fr.ErrorCode, fr.PreferredReadReplica)
		}
	}
	produceRound(ctx, t, cl, topic, len(assignment), perPartition, 2*perPartition)
	served2 := &servedBy{batches: map[int32]int{}}
	cons2 := newRackConsumer(t, c.Addrs(), topic, served2)
	got2 := map[int32][]string{}
	consumeUntil(ctx, t, cons2, got2, 2*len(assignment)*perPartition, served2)
	checkRounds(t, got2, len(assignment), 2*perPartition)
	if by := served2.snapshot(); by[2] != 0 {
		t.Fatalf("record batches by broker %v: node 2 served a consumer while out of the ISR (paused)", by)
	}

	// Node 2 comes back and catches up: the first consumer reads the
	// second round too, exactly once.
	c.Brokers[1].Resume(t)
	paused = false
	waitFullISR(t, ctx, c, topic, len(assignment))
	consumeUntil(ctx, t, cons, got, 2*len(assignment)*perPartition, served)
	checkRounds(t, got, len(assignment), 2*perPartition)
	t.Logf("after node 2's pause: the new consumer's batches by broker %v, the first consumer's %v", served2.snapshot(), served.snapshot())
}

// javaRackConsumer: the Java consumer (kafka-clients 4.4) with
// client.rack=r2 reads 1 KiB records of its own topic (the assignment of
// TestFetchFromClosestReplica) exactly once and in order, and receives
// them from node 2: its consumer-node-metrics incoming-byte-total is at
// least the records' size from node 2 and a small fraction of it from the
// leaders (metadata, offsets and the redirecting fetch answers).
func javaRackConsumer(ctx context.Context, t *testing.T, c *harness.Cluster, cl *kgo.Client, assignment [][]int32) {
	cp := javaClasspath(t)
	const topic, perPartition, size = "rack-aware-java", 300, 1024
	createAssignedPartitions(ctx, t, cl, topic, assignment, map[string]string{"min.insync.replicas": "2"})
	waitFullISR(t, ctx, c, topic, len(assignment))
	// Incompressible values, each its own: the byte counts compare with
	// their size whatever codec the producer picks.
	rng := rand.New(rand.NewPCG(1, 2))
	var recs []*kgo.Record
	for p := range assignment {
		for i := range perPartition {
			value := make([]byte, size)
			for j := range value {
				value[j] = byte(rng.Uint32())
			}
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Key: fmt.Appendf(nil, "%d-%d", p, i), Value: value})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	jctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(jctx, "java", "-cp", cp, "samsa.compat.RackConsumer", strings.Join(c.Addrs(), ","), topic, "r2", strconv.Itoa(len(recs)))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	stderr := &logWriter{t: t, prefix: "java stderr: "}
	cmd.Stderr = stderr
	out, err := cmd.Output()
	stderr.flush()
	if err != nil {
		t.Fatalf("java RackConsumer: %v\n%s", err, out)
	}
	got := map[int32][]string{}
	nodes := map[string]int64{}
	done := false
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 4 && f[0] == "RECORD":
			p, _ := strconv.Atoi(f[1])
			got[int32(p)] = append(got[int32(p)], f[3])
		case len(f) == 3 && f[0] == "NODE":
			nodes[f[1]], _ = strconv.ParseInt(f[2], 10, 64)
		case len(f) == 2 && f[0] == "DONE":
			done = true
		}
	}
	if !done {
		t.Fatalf("java RackConsumer did not finish:\n%s", out)
	}
	checkRounds(t, got, len(assignment), perPartition)
	records := int64(len(recs) * size)
	if nodes["node-2"] < records {
		t.Fatalf("java consumer received %d bytes from node 2, less than the %d bytes of records; by node: %v", nodes["node-2"], records, nodes)
	}
	for _, n := range []string{"node-1", "node-3"} {
		if nodes[n] > records/10 {
			t.Fatalf("java consumer received %d bytes from leader %s (records: %d bytes, all to come from node 2); by node: %v", nodes[n], n, records, nodes)
		}
	}
	t.Logf("java consumer, client.rack=r2: %d records; bytes received by node %v", len(recs), nodes)
}

// produceRound produces, with acks=all, the records "P-I" for I in
// [from, to) to each of partitions partitions, and waits for every ack.
func produceRound(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, partitions, from, to int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for p := range partitions {
		for i := from; i < to; i++ {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Value: fmt.Appendf(nil, "%d-%d", p, i)}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			})
		}
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("produce: %v", err)
	default:
	}
}

// newRackConsumer is a franz-go consumer of topic from its start in rack
// r2, whose batches served counts by broker; closed at test cleanup.
func newRackConsumer(t *testing.T, addrs []string, topic string, served *servedBy) *kgo.Client {
	t.Helper()
	cons, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Rack("r2"), kgo.WithHooks(served))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Close)
	return cons
}

// consumeUntil polls cons until got (values by partition) holds total
// records.
func consumeUntil(ctx context.Context, t *testing.T, cons *kgo.Client, got map[int32][]string, total int, served *servedBy) {
	t.Helper()
	n := 0
	for _, v := range got {
		n += len(v)
	}
	for n < total {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records; batches by broker %v", n, total, served.snapshot())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("consumer: %s[%d]: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			n++
		})
	}
}

// checkRounds checks that got holds "P-0" to "P-(n-1)" of each partition,
// exactly once and in order (anomalies: lost, duplicated, reordered).
func checkRounds(t *testing.T, got map[int32][]string, partitions, n int) {
	t.Helper()
	for p := range partitions {
		var want []string
		for i := range n {
			want = append(want, fmt.Sprintf("%d-%d", p, i))
		}
		if !slices.Equal(got[int32(p)], want) {
			t.Fatalf("partition %d: read %d records, not the %d acknowledged ones exactly once in order (first %v)", p, len(got[int32(p)]), n, firstValues(got[int32(p)], 5))
		}
	}
}

// firstValues is the first n of s, for a failure message.
func firstValues(s []string, n int) string { return strings.Join(s[:min(n, len(s))], ",") }
