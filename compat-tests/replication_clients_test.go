// This file runs issue 12's kill tests with clients other than franz-go: three samsa
// processes, a topic with RF=3 and min.insync.replicas=2, and a client producing with
// acks=all (idempotent where the client can be) while the leader of partition 0 is first
// SIGKILLed (then restarted) and later SIGSTOPped past broker.session.timeout.ms (then
// continued). Afterwards every partition is read to its end with franz-go and the
// anomalies of docs/DURABILITY.md are looked for: an acknowledged record lost, a record
// stored twice, an acknowledged offset holding another record, a partition whose records
// are out of send order. Each client sends one record at a time and waits for its answer,
// so send order is the value's sequence number. The client runs behind syncProducer; the
// faults and the checks are shared (runClientFaults).

package compattests

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// syncProducer sends one record and waits for the broker's answer: the partition and
// offset it was stored at (offset -1 when the client does not report it), or the error
// the client gave up with.
type syncProducer interface {
	send(ctx context.Context, key, value string) (partition int32, offset int64, err error)
	close()
}

// faultClient describes one client for runClientFaults.
type faultClient struct {
	// idempotent: the client produces with enable.idempotence, so no record may be
	// stored twice and a failed send is not retried by the test (its outcome is
	// unknown). A client without idempotence gets each failed send retried by the
	// test, and only such retried values may be stored twice.
	idempotent bool
	// open starts a producer against the bootstrap addresses; the client's request
	// timeout must be short (a few seconds) so that a paused leader costs seconds.
	open func(t *testing.T, addrs []string, topic string) syncProducer
}

// faultRecords is how many records each client test sends: a third before the kill,
// a third across the kill and restart, a third across the pause.
const faultRecords = 300

// clientFaultEnv makes failure detection fast, as the fault test bed does.
var clientFaultEnv = []string{
	"KAFKA_BROKER_SESSION_TIMEOUT_MS=3000", "KAFKA_BROKER_HEARTBEAT_INTERVAL_MS=500",
	"KAFKA_REPLICA_LAG_TIME_MAX_MS=6000", "KAFKA_AUTO_LEADER_REBALANCE_ENABLE=false",
}

type ackedRecord struct {
	seq       int
	partition int32
	offset    int64
}

// runClientFaults is the shared kill test: see the file comment.
func runClientFaults(t *testing.T, name string, fc faultClient) {
	c := harness.StartCluster(t, 3, harness.ClusterOptions{Env: clientFaultEnv})
	ctx := testContext(t, 4*time.Minute)
	topic := name + "-faults"
	cl, adm := newAdmin(t, c.Addrs()[0], kgo.SeedBrokers(c.Addrs()...))
	defer cl.Close()
	const partitions = 3
	if r, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic); err != nil || r.Err != nil {
		t.Fatalf("CreateTopic %s: %v / %v", topic, err, r.Err)
	}
	waitFullISR(t, ctx, c, topic, partitions)

	p := fc.open(t, c.Addrs(), topic)
	var (
		acked   []ackedRecord
		retried = map[int]bool{}
		failed  = map[int]bool{}
	)
	send := func(seq int) {
		t.Helper()
		key, value := fmt.Sprintf("k%d", seq%7), faultValue(seq)
		for attempt := 0; ; attempt++ {
			part, off, err := p.send(ctx, key, value)
			if err == nil {
				acked = append(acked, ackedRecord{seq: seq, partition: part, offset: off})
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: send %d: %v", name, seq, err)
			}
			if fc.idempotent {
				t.Logf("%s: send %d failed, outcome unknown: %v", name, seq, err)
				failed[seq] = true
				return
			}
			retried[seq] = true
			if attempt == 0 || attempt%20 == 0 {
				t.Logf("%s: send %d failed (attempt %d), retrying: %v", name, seq, attempt+1, err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}

	third := faultRecords / 3
	for seq := range third {
		send(seq)
	}
	killed := leaderIndex(t, ctx, c, topic, -1)
	c.Brokers[killed].Kill(t)
	start := time.Now()
	for seq := third; seq < third+third/2; seq++ {
		send(seq)
	}
	t.Logf("%s: SIGKILL of node %d (leader of partition 0); %d records in %v", name, killed+1, third/2, time.Since(start).Round(time.Millisecond))
	c.Brokers[killed].Restart(t)
	for seq := third + third/2; seq < 2*third; seq++ {
		send(seq)
	}
	waitFullISR(t, ctx, c, topic, partitions)

	paused := leaderIndex(t, ctx, c, topic, -1)
	c.Brokers[paused].Pause(t)
	resumed := make(chan struct{})
	go func() {
		// Hold the pause until the others fenced the node and moved partition 0
		// away, and at least past the session timeout, then continue it.
		defer close(resumed)
		deadline := time.Now().Add(60 * time.Second)
		minHold := time.Now().Add(4500 * time.Millisecond)
		for time.Now().Before(deadline) {
			if time.Now().After(minHold) && leaderIndex(t, ctx, c, topic, paused) != paused {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
		c.Brokers[paused].Resume(t)
	}()
	start = time.Now()
	for seq := 2 * third; seq < faultRecords; seq++ {
		send(seq)
	}
	<-resumed
	t.Logf("%s: SIGSTOP of node %d (leader of partition 0) until fenced; %d records in %v", name, paused+1, faultRecords-2*third, time.Since(start).Round(time.Millisecond))
	p.close()
	waitFullISR(t, ctx, c, topic, partitions)

	log := readAll(t, ctx, c.Addrs(), adm, topic)
	checkClientFaults(t, name, acked, log, retried, failed)
}

func faultValue(seq int) string { return fmt.Sprintf("v-%06d", seq) }

// leaderIndex returns the index in c.Brokers of partition 0's leader, asking the nodes
// other than skip (-1: any).
func leaderIndex(t *testing.T, ctx context.Context, c *harness.Cluster, topic string, skip int) int {
	t.Helper()
	found := -1
	if !pollUntil(60*time.Second, func() bool {
		for i, b := range c.Brokers {
			if i == skip {
				continue
			}
			m, err := rawMetadata(ctx, b.Addr, topic)
			if err == nil && len(m.Topics) == 1 && len(m.Topics[0].Partitions) > 0 {
				for _, p := range m.Topics[0].Partitions {
					if p.Partition == 0 && p.Leader >= 1 {
						found = int(p.Leader) - 1
						return true
					}
				}
			}
		}
		return false
	}) {
		t.Fatalf("%s-0 has no leader", topic)
	}
	return found
}

// waitFullISR waits until every partition of topic has a leader and all three nodes in
// its ISR, as every node answers.
func waitFullISR(t *testing.T, ctx context.Context, c *harness.Cluster, topic string, partitions int) {
	t.Helper()
	if !pollUntil(90*time.Second, func() bool {
		for _, b := range c.Brokers {
			m, err := rawMetadata(ctx, b.Addr, topic)
			if err != nil || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != partitions {
				return false
			}
			for _, p := range m.Topics[0].Partitions {
				if p.Leader < 1 || len(p.ISR) != 3 {
					return false
				}
			}
		}
		return true
	}) {
		t.Fatalf("%s: the partitions did not get a leader and a full ISR within 90 s", topic)
	}
}

// storedRecord is one record of the final log.
type storedRecord struct {
	value  string
	offset int64
}

// readAll reads every partition of topic from its start to its high watermark.
func readAll(t *testing.T, ctx context.Context, addrs []string, adm *kadm.Client, topic string) map[int32][]storedRecord {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	cons, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	out := map[int32][]storedRecord{}
	done := func() bool {
		for p, end := range want {
			if n := len(out[p]); n == 0 && end > 0 || n > 0 && out[p][n-1].offset+1 < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s back: %v (ends %v)", topic, ctx.Err(), want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], storedRecord{value: string(r.Value), offset: r.Offset})
		})
	}
	return out
}

// checkClientFaults reports the anomalies of the final log against what the client saw
// acknowledged.
func checkClientFaults(t *testing.T, name string, acked []ackedRecord, log map[int32][]storedRecord, retried, failed map[int]bool) {
	t.Helper()
	type where struct {
		partition int32
		offset    int64
	}
	at := map[string][]where{}
	stored := 0
	for p, recs := range log {
		last := -1
		for _, r := range recs {
			stored++
			at[r.value] = append(at[r.value], where{p, r.offset})
			seq, err := strconv.Atoi(strings.TrimPrefix(r.value, "v-"))
			if err != nil {
				t.Errorf("%s: partition %d offset %d holds %q, not a record of this test", name, p, r.offset, r.value)
				continue
			}
			if seq < last && !retried[seq] && !retried[last] {
				t.Errorf("reordered: %s partition %d offset %d holds %d after %d", name, p, r.offset, seq, last)
			}
			last = max(last, seq)
		}
	}
	var lost, dup, moved []string
	for _, a := range acked {
		v := faultValue(a.seq)
		ws := at[v]
		switch {
		case len(ws) == 0:
			lost = append(lost, v)
		case len(ws) > 1 && retried[a.seq]:
			// A client without idempotence retried this one: a second copy is
			// the client's, not the broker's.
		case len(ws) > 1:
			dup = append(dup, fmt.Sprintf("%s at %v", v, ws))
		}
		if len(ws) > 0 && a.offset >= 0 && !slices.Contains(ws, where{a.partition, a.offset}) {
			moved = append(moved, fmt.Sprintf("%s acknowledged at %d/%d, stored at %v", v, a.partition, a.offset, ws))
		}
	}
	for seq := range failed {
		if ws := at[faultValue(seq)]; len(ws) > 1 {
			dup = append(dup, fmt.Sprintf("%s (send failed) at %v", faultValue(seq), ws))
		}
	}
	t.Logf("%s: %d acknowledged, %d failed sends, %d retried by the test; %d records stored; %d lost, %d duplicated, %d at another offset",
		name, len(acked), len(failed), len(retried), stored, len(lost), len(dup), len(moved))
	if len(lost) > 0 {
		t.Errorf("lost: %s: %d acknowledged records are not in the log: %v", name, len(lost), head(lost))
	}
	if len(dup) > 0 {
		t.Errorf("duplicated: %s: %v", name, head(dup))
	}
	if len(moved) > 0 {
		t.Errorf("inconsistent-offset: %s: %v", name, head(moved))
	}
}

// TestSaramaLeaderFaults: IBM/sarama's SyncProducer, idempotent (Producer.Idempotent,
// one request in flight, WaitForAll), through a SIGKILL and a SIGSTOP of the leader.
func TestSaramaLeaderFaults(t *testing.T) {
	t.Parallel()
	runClientFaults(t, "sarama", faultClient{idempotent: true, open: openSaramaFaultProducer})
}

// TestKafkaGoLeaderFaults: segmentio/kafka-go's Writer (acks=all, no idempotence: the
// client has none), through a SIGKILL and a SIGSTOP of the leader.
func TestKafkaGoLeaderFaults(t *testing.T) {
	t.Parallel()
	runClientFaults(t, "kafkago", faultClient{open: openKafkaGoFaultProducer})
}

// TestConfluentLeaderFaults: confluent-kafka-go (librdkafka) with enable.idempotence and
// acks=all, through a SIGKILL and a SIGSTOP of the leader.
func TestConfluentLeaderFaults(t *testing.T) {
	t.Parallel()
	runClientFaults(t, "confluent", faultClient{idempotent: true, open: openConfluentFaultProducer})
}

// TestJavaLeaderFaults: the Java client (kafka-clients 4.4.0, samsa.compat.FaultProducer)
// with enable.idempotence and acks=all, through a SIGKILL and a SIGSTOP of the leader.
func TestJavaLeaderFaults(t *testing.T) {
	t.Parallel()
	cp := javaClasspath(t)
	runClientFaults(t, "java", faultClient{idempotent: true, open: func(t *testing.T, addrs []string, topic string) syncProducer {
		return openJavaFaultProducer(t, cp, addrs, topic)
	}})
}
