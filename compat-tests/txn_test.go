// This file holds the transaction (exactly-once) tests with franz-go that need no
// consumer group, and the helpers the other txn_*_test.go files share:
//
//   - aborted transactions are invisible to read_committed and visible to
//     read_uncommitted (franz-go and confluent-kafka-go consumers), markers take one
//     offset each and never reach a client, and the last stable offset stops a
//     read_committed consumer at an open transaction until it commits;
//   - a second producer with the same transactional id fences the first (zombie
//     fencing) and aborts its open transaction;
//   - the broker aborts a transaction left open past transaction.timeout.ms and fences
//     its producer;
//   - kadm DescribeProducers, DescribeTransactions and ListTransactions report an open
//     transaction and its end;
//   - the confluent-kafka-python consume-transform-produce script.
//
// Kafka's behaviour they encode: KIP-98 (transactions, LSO, markers, fencing), KIP-360
// and KIP-588 (epoch bumps on timeout), KIP-664 (DescribeProducers, ListTransactions,
// DescribeTransactions). Set SAMSA_TXN_DEBUG=1 to keep franz-go debug logs; they are
// printed when a test fails.

package compattests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// sentinelKey marks the last record a test writes to a partition; readers stop at it.
const sentinelKey = "samsa-txn-sentinel"

// Kafka's ListOffsets isolation levels.
const (
	readUncommittedLevel int8 = 0
	readCommittedLevel   int8 = 1
)

// startTxnBroker starts a broker whose internal topics are small and which looks for
// timed-out transactions every second, plus the given overrides.
func startTxnBroker(t *testing.T, extra map[string]string) *harness.Broker {
	t.Helper()
	o := map[string]string{
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
		"transaction.state.log.num.partitions":                        "4",
		"transaction.state.log.replication.factor":                    "1",
		"offsets.topic.num.partitions":                                "4",
		"offsets.topic.replication.factor":                            "1",
		"group.initial.rebalance.delay.ms":                            "0",
	}
	for k, v := range extra {
		o[k] = v
	}
	return harness.Start(t, harness.Options{Overrides: o})
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// txnLogger returns a kgo logger (warnings, or debug with SAMSA_TXN_DEBUG=1) whose
// output is written to the test log only if the test fails (always in debug mode). Call it before creating
// the client, so that the client is closed (a later cleanup) before the log is printed.
func txnLogger(t *testing.T, name string) kgo.Opt {
	t.Helper()
	level := kgo.LogLevelWarn
	debug := os.Getenv("SAMSA_TXN_DEBUG") == "1"
	if debug {
		level = kgo.LogLevelDebug
	}
	buf := &syncBuffer{}
	t.Cleanup(func() {
		if !t.Failed() && !debug {
			return
		}
		out := buf.String()
		const keep = 256 << 10
		if len(out) > keep {
			out = "...\n" + out[len(out)-keep:]
		}
		if out != "" {
			t.Logf("franz-go log of %s:\n%s", name, out)
		}
	})
	return kgo.WithLogger(kgo.BasicLogger(buf, level, func() string { return time.Now().Format("15:04:05.000 ") + name + " " }))
}

// newTxnClient returns a transactional franz-go producer (manual partitioning, 60 s
// transaction timeout unless opts say otherwise), closed at cleanup.
func newTxnClient(t *testing.T, addr, txnID string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		txnLogger(t, txnID),
		kgo.SeedBrokers(addr),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(60 * time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient(%s): %v", txnID, err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// txnRecords returns n records for partition p keyed prefix-p-i.
func txnRecords(topic, prefix string, p int32, n int) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		k := fmt.Sprintf("%s-%d-%d", prefix, p, i)
		recs[i] = &kgo.Record{Topic: topic, Partition: p, Key: []byte(k), Value: []byte("value-of-" + k)}
	}
	return recs
}

// txnKeys returns the keys txnRecords gives partition p.
func txnKeys(prefix string, p int32, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s-%d-%d", prefix, p, i)
	}
	return keys
}

// produceInTxn produces recs synchronously inside the client's open transaction and
// returns the offset each record got.
func produceInTxn(t *testing.T, ctx context.Context, cl *kgo.Client, recs []*kgo.Record) []int64 {
	t.Helper()
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("transactional produce: %v", err)
	}
	offsets := make([]int64, len(res))
	for i, r := range res {
		offsets[i] = r.Record.Offset
	}
	return offsets
}

// runTxn produces recs in one transaction and ends it with commit or abort.
func runTxn(t *testing.T, ctx context.Context, cl *kgo.Client, commit kgo.TransactionEndTry, recs []*kgo.Record) []int64 {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	offsets := produceInTxn(t, ctx, cl, recs)
	if err := cl.EndTransaction(ctx, commit); err != nil {
		t.Fatalf("EndTransaction(commit=%v): %v", commit, err)
	}
	return offsets
}

// writeSentinels writes one non-transactional sentinel record to each partition.
func writeSentinels(t *testing.T, ctx context.Context, addr, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := range partitions {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(sentinelKey)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing sentinels to %s: %v", topic, err)
	}
}

// readUntilSentinels consumes every partition of topic from the start with franz-go at
// the given isolation level until it has seen a sentinel in each, and returns the
// records before the sentinels. A read_committed reader blocked by an open transaction
// fails the test at the deadline of ctx.
func readUntilSentinels(t *testing.T, ctx context.Context, addr, topic string, partitions int32, level kgo.IsolationLevel) map[int32][]*kgo.Record {
	t.Helper()
	offsets := make(map[int32]kgo.Offset, partitions)
	for p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(300*time.Millisecond))
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()
	out := make(map[int32][]*kgo.Record)
	done := make(map[int32]bool)
	for len(done) < int(partitions) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			counts := make(map[int32]int)
			for p, rs := range out {
				counts[p] = len(rs)
			}
			t.Fatalf("reading %s (isolation %v): sentinels seen on %d of %d partitions at the deadline (records so far %v); an open transaction blocks the LSO?", topic, level, len(done), partitions, counts)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Errorf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if done[r.Partition] {
				t.Errorf("%s/%d: record %q at offset %d after the sentinel", topic, r.Partition, r.Key, r.Offset)
				return
			}
			if string(r.Key) == sentinelKey {
				done[r.Partition] = true
				return
			}
			out[r.Partition] = append(out[r.Partition], r)
		})
	}
	return out
}

// recordKeys returns the keys of recs, in order.
func recordKeys(recs []*kgo.Record) []string {
	keys := make([]string, len(recs))
	for i, r := range recs {
		keys[i] = string(r.Key)
	}
	return keys
}

// listOffset asks the partition leader, with a raw ListOffsets for the latest offset at
// the given isolation level, for the high watermark (read_uncommitted) or the last
// stable offset (read_committed).
func listOffset(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, p int32, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = p
	rp.CurrentLeaderEpoch = -1
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ListOffsets(%s/%d, isolation %d): %v", topic, p, isolation, err)
	}
	for _, tr := range resp.Topics {
		for _, pr := range tr.Partitions {
			if tr.Topic == topic && pr.Partition == p {
				if err := kerr.ErrorForCode(pr.ErrorCode); err != nil {
					t.Fatalf("ListOffsets(%s/%d, isolation %d): %v", topic, p, isolation, err)
				}
				return pr.Offset
			}
		}
	}
	t.Fatalf("ListOffsets(%s/%d): partition missing from the response", topic, p)
	return 0
}

// waitStable polls until the last stable offset of every partition equals its high
// watermark (no open transaction), and returns how long that took.
func waitStable(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partitions int32) time.Duration {
	t.Helper()
	start := time.Now()
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		stable := true
		var state []string
		for p := range partitions {
			lso := listOffset(t, ctx, cl, topic, p, readCommittedLevel)
			hwm := listOffset(t, ctx, cl, topic, p, readUncommittedLevel)
			stable = stable && lso == hwm
			state = append(state, fmt.Sprintf("%d: lso %d hwm %d", p, lso, hwm))
		}
		if stable {
			return time.Since(start)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s still has an open transaction at the deadline: %s", topic, strings.Join(state, ", "))
		case <-ticker.C:
		}
	}
}

// isFencingError reports whether err is one of the two errors Kafka uses to tell an
// old producer epoch that it was fenced: PRODUCER_FENCED from the transaction
// coordinator, INVALID_PRODUCER_EPOCH from a partition leader (and from the coordinator
// to clients too old for PRODUCER_FENCED).
func isFencingError(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
}

// confluentReadUntilSentinels consumes every partition of topic from offset 0 with
// librdkafka at isolation.level until it has seen a sentinel in each, and returns the
// keys before the sentinels, per partition.
func confluentReadUntilSentinels(t *testing.T, ctx context.Context, addr, topic string, partitions int32, isolation string) map[int32][]string {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":  addr,
		"group.id":           "samsa-txn-unused-" + isolation,
		"enable.auto.commit": false,
		"isolation.level":    isolation,
	})
	if err != nil {
		t.Fatalf("kafka.NewConsumer: %v", err)
	}
	defer c.Close()
	var assignment []kafka.TopicPartition
	for p := range partitions {
		assignment = append(assignment, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: 0})
	}
	if err := c.Assign(assignment); err != nil {
		t.Fatalf("confluent Assign: %v", err)
	}
	out := make(map[int32][]string)
	done := make(map[int32]bool)
	for len(done) < int(partitions) {
		if ctx.Err() != nil {
			t.Fatalf("confluent %s read of %s: sentinels seen on %d of %d partitions at the deadline", isolation, topic, len(done), partitions)
		}
		switch e := c.Poll(200).(type) {
		case *kafka.Message:
			p := e.TopicPartition.Partition
			if e.TopicPartition.Error != nil {
				t.Errorf("confluent consume %s/%d: %v", topic, p, e.TopicPartition.Error)
				continue
			}
			if done[p] {
				t.Errorf("confluent %s: %s/%d: record %q after the sentinel", isolation, topic, p, e.Key)
				continue
			}
			if string(e.Key) == sentinelKey {
				done[p] = true
				continue
			}
			out[p] = append(out[p], string(e.Key))
		case kafka.Error:
			t.Logf("confluent consumer error event: %v", e)
		}
	}
	return out
}

// TestTxnAbortedInvisible writes, per partition, a committed transaction, an aborted
// one and a committed one, then leaves a fourth open with a non-transactional record
// after it. While it is open, ListOffsets(read_committed) must answer its first offset
// and a read_committed consumer must stop there; after the commit everything committed
// is visible. read_uncommitted sees every data record, aborted ones included, and each
// transaction's end marker takes exactly one offset without reaching the client.
func TestTxnAbortedInvisible(t *testing.T) {
	t.Parallel()
	b := startTxnBroker(t, nil)
	ctx := testContext(t, 90*time.Second)
	cl, adm := newAdmin(t, b.Addr)
	const topic, partitions, n = "txn-aborted", 2, 10
	createTopicKadm(t, ctx, adm, topic, partitions, nil)

	prod := newTxnClient(t, b.Addr, "txn-aborted-producer")
	batch := func(prefix string, count int) []*kgo.Record {
		var recs []*kgo.Record
		for p := range int32(partitions) {
			recs = append(recs, txnRecords(topic, prefix, p, count)...)
		}
		return recs
	}
	runTxn(t, ctx, prod, kgo.TryCommit, batch("committed1", n))
	runTxn(t, ctx, prod, kgo.TryAbort, batch("aborted", n))
	runTxn(t, ctx, prod, kgo.TryCommit, batch("committed2", n))
	if err := prod.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	openOffsets := produceInTxn(t, ctx, prod, batch("open", 5))
	writeSentinels(t, ctx, b.Addr, topic, partitions)

	// Three ended transactions (three markers) before the open one, on each partition.
	wantOpenStart := int64(3*n + 3)
	for p := range int32(partitions) {
		if got := openOffsets[int(p)*5]; got != wantOpenStart {
			t.Errorf("partition %d: open transaction starts at offset %d, want %d (3×%d records and 3 markers before it)", p, got, wantOpenStart, n)
		}
		lso := listOffset(t, ctx, cl, topic, p, readCommittedLevel)
		hwm := listOffset(t, ctx, cl, topic, p, readUncommittedLevel)
		if lso != openOffsets[int(p)*5] {
			t.Errorf("partition %d: ListOffsets(read_committed) = %d while a transaction is open from %d, want %d", p, lso, openOffsets[int(p)*5], openOffsets[int(p)*5])
		}
		if hwm != wantOpenStart+5+1 {
			t.Errorf("partition %d: ListOffsets(read_uncommitted) = %d, want %d (the open records and the sentinel)", p, hwm, wantOpenStart+6)
		}
	}

	// A read_committed consumer gets the two committed transactions and then nothing:
	// neither the open transaction's records nor the sentinel after it.
	offsets := map[int32]kgo.Offset{}
	for p := range int32(partitions) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	rc, err := kgo.NewClient(kgo.SeedBrokers(b.Addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer rc.Close()
	committedSoFar := make(map[int32][]string)
	wantBefore := func(p int32) []string {
		return append(txnKeys("committed1", p, n), txnKeys("committed2", p, n)...)
	}
	collect := func(fs kgo.Fetches) {
		fs.EachError(func(tp string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) { // the end of the quiet period below
				t.Errorf("fetch %s/%d: %v", tp, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { committedSoFar[r.Partition] = append(committedSoFar[r.Partition], string(r.Key)) })
	}
	haveAll := func() bool {
		for p := range int32(partitions) {
			if len(committedSoFar[p]) < 2*n {
				return false
			}
		}
		return true
	}
	for !haveAll() && ctx.Err() == nil {
		collect(rc.PollFetches(ctx))
	}
	// Keep fetching for a while: nothing past the LSO may arrive.
	quiet, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	for quiet.Err() == nil {
		collect(rc.PollFetches(quiet))
	}
	cancel()
	for p := range int32(partitions) {
		if !slices.Equal(committedSoFar[p], wantBefore(p)) {
			t.Errorf("partition %d: read_committed before the commit got %d records %v..., want exactly the %d committed ones", p, len(committedSoFar[p]), head(committedSoFar[p]), 2*n)
		}
	}

	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("EndTransaction(commit) of the open transaction: %v", err)
	}
	for p := range int32(partitions) {
		lso := listOffset(t, ctx, cl, topic, p, readCommittedLevel)
		hwm := listOffset(t, ctx, cl, topic, p, readUncommittedLevel)
		if hwm != wantOpenStart+5+2 || lso != hwm {
			t.Errorf("partition %d after the commit: LSO %d, HWM %d, want both %d", p, lso, hwm, wantOpenStart+7)
		}
	}
	// The same consumer now passes the committed transaction and reaches the sentinel.
	wantAfter := func(p int32) []string {
		return append(append(wantBefore(p), txnKeys("open", p, 5)...), sentinelKey)
	}
	for ctx.Err() == nil {
		done := true
		for p := range int32(partitions) {
			done = done && len(committedSoFar[p]) >= len(wantAfter(p))
		}
		if done {
			break
		}
		collect(rc.PollFetches(ctx))
	}
	for p := range int32(partitions) {
		if !slices.Equal(committedSoFar[p], wantAfter(p)) {
			t.Errorf("partition %d: read_committed after the commit got %v, want %v", p, committedSoFar[p], wantAfter(p))
		}
	}

	// Fresh readers at both isolation levels.
	wantCommitted := func(p int32) []string { return append(wantBefore(p), txnKeys("open", p, 5)...) }
	wantAll := func(p int32) []string {
		return append(append(append(txnKeys("committed1", p, n), txnKeys("aborted", p, n)...), txnKeys("committed2", p, n)...), txnKeys("open", p, 5)...)
	}
	got := readUntilSentinels(t, ctx, b.Addr, topic, partitions, kgo.ReadCommitted())
	for p := range int32(partitions) {
		if k := recordKeys(got[p]); !slices.Equal(k, wantCommitted(p)) {
			t.Errorf("franz-go read_committed partition %d: %d records %v..., want %d", p, len(k), head(k), len(wantCommitted(p)))
		}
	}
	got = readUntilSentinels(t, ctx, b.Addr, topic, partitions, kgo.ReadUncommitted())
	for p := range int32(partitions) {
		k := recordKeys(got[p])
		if !slices.Equal(k, wantAll(p)) {
			t.Errorf("franz-go read_uncommitted partition %d: %d records %v..., want %d including the aborted ones", p, len(k), head(k), len(wantAll(p)))
			continue
		}
		// Data at 0..n-1, marker n, data n+1..2n, marker 2n+1, ...: one offset per marker.
		for i, r := range got[p] {
			want := int64(i + i/n)
			if i >= 3*n {
				want = wantOpenStart + int64(i-3*n)
			}
			if r.Offset != want {
				t.Errorf("read_uncommitted partition %d: record %q at offset %d, want %d", p, r.Key, r.Offset, want)
				break
			}
			if !bytes.Equal(r.Value, []byte("value-of-"+string(r.Key))) {
				t.Errorf("read_uncommitted partition %d: record %q has value %q", p, r.Key, r.Value)
				break
			}
		}
	}
	for _, isolation := range []string{"read_committed", "read_uncommitted"} {
		keys := confluentReadUntilSentinels(t, ctx, b.Addr, topic, partitions, isolation)
		for p := range int32(partitions) {
			want := wantCommitted(p)
			if isolation == "read_uncommitted" {
				want = wantAll(p)
			}
			if !slices.Equal(keys[p], want) {
				t.Errorf("confluent %s partition %d: %d records %v..., want %d", isolation, p, len(keys[p]), head(keys[p]), len(want))
			}
		}
	}
}

// head returns up to the first 6 elements of s, for messages.
func head(s []string) []string {
	return s[:min(len(s), 6)]
}

// TestTxnZombieFenced opens a transaction with producer A, then starts producer B with
// the same transactional id. B's InitProducerId bumps the epoch and aborts A's open
// transaction; B commits. read_committed sees only B's records, read_uncommitted sees
// both. Two ways A can carry on are checked, each on its own topic and id:
//
//   - "produce": A produces again; the partition leader answers INVALID_PRODUCER_EPOCH
//     (franz-go then refuses to send the commit, OPERATION_NOT_ATTEMPTED), and A's
//     abort is only local; the re-initialisation with its old id and epoch that a
//     KIP-360 client would send (sent raw here, after B's commit) is PRODUCER_FENCED
//     and changes nothing;
//   - "commit": A goes straight to EndTxn(commit) with its old epoch; the coordinator
//     answers PRODUCER_FENCED (INVALID_PRODUCER_EPOCH for old EndTxn versions).
func TestTxnZombieFenced(t *testing.T) {
	t.Parallel()
	b := startTxnBroker(t, nil)
	for _, mode := range []string{"produce", "commit"} {
		t.Run(mode, func(t *testing.T) { zombieScenario(t, b, mode) })
	}
}

func zombieScenario(t *testing.T, b *harness.Broker, mode string) {
	ctx := testContext(t, 90*time.Second)
	cl, adm := newAdmin(t, b.Addr)
	const partitions = 2
	topic, txnID := "txn-zombie-"+mode, "txn-zombie-id-"+mode
	createTopicKadm(t, ctx, adm, topic, partitions, nil)

	a := newTxnClient(t, b.Addr, txnID, kgo.RecordRetries(3))
	if err := a.BeginTransaction(); err != nil {
		t.Fatalf("A BeginTransaction: %v", err)
	}
	produceInTxn(t, ctx, a, append(txnRecords(topic, "zombie", 0, 5), txnRecords(topic, "zombie", 1, 5)...))
	dts, err := adm.DescribeTransactions(ctx, txnID)
	if err != nil || dts[txnID].Err != nil {
		t.Fatalf("kadm DescribeTransactions(%s): %v / %v", txnID, err, dts[txnID].Err)
	}
	aID, aEpoch := dts[txnID].ProducerID, dts[txnID].ProducerEpoch

	bcl := newTxnClient(t, b.Addr, txnID)
	if err := bcl.BeginTransaction(); err != nil {
		t.Fatalf("B BeginTransaction: %v", err)
	}
	// B's first produce runs InitProducerId, which fences A.
	produceInTxn(t, ctx, bcl, append(txnRecords(topic, "live", 0, 5), txnRecords(topic, "live", 1, 5)...))

	if mode == "produce" {
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		perr := a.ProduceSync(pctx, txnRecords(topic, "zombie-late", 0, 1)...).FirstErr()
		cancel()
		if perr == nil {
			t.Errorf("fenced producer A could still produce in its transaction")
		} else {
			t.Logf("A's produce after fencing: %v", perr)
			if !isFencingError(perr) {
				t.Errorf("A's produce after fencing failed with %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", perr)
			}
		}
	}
	cerr := a.EndTransaction(ctx, kgo.TryCommit)
	switch {
	case cerr == nil:
		t.Errorf("fenced producer A committed its transaction")
	case mode == "produce" && errors.Is(cerr, kerr.OperationNotAttempted):
		t.Logf("A's commit after the failed produce was not sent (franz-go): %v", cerr)
		aerr := a.EndTransaction(ctx, kgo.TryAbort)
		t.Logf("A's abort after fencing: %v", aerr)
	case !isFencingError(cerr):
		t.Errorf("A's commit after fencing failed with %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", cerr)
	default:
		t.Logf("A's commit after fencing: %v", cerr)
	}
	if err := bcl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("B EndTransaction(commit): %v", err)
	}
	if mode == "produce" {
		// What a KIP-360 client does to recover: InitProducerId with its own id and
		// epoch. A's epoch is no longer current, so Kafka answers PRODUCER_FENCED and
		// leaves the state alone. This is probed after B's commit on purpose: against an
		// Ongoing transaction Kafka checks only the producer id, not the epoch, and
		// fence-aborts the transaction before answering PRODUCER_FENCED on the retry (the
		// Ongoing case of TransactionCoordinator.prepareInitProducerIdTransit), so a
		// zombie's re-init aborts the live producer's open transaction there. samsa does
		// the same.
		before, err := adm.DescribeTransactions(ctx, txnID)
		if err != nil {
			t.Fatalf("kadm DescribeTransactions: %v", err)
		}
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = kmsg.StringPtr(txnID)
		req.TransactionTimeoutMillis = 60000
		req.ProducerID = aID
		req.ProducerEpoch = aEpoch
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("InitProducerId(%s, %d/%d): %v", txnID, aID, aEpoch, err)
		}
		t.Logf("InitProducerId with A's stale id/epoch %d/%d: %v (id %d epoch %d)", aID, aEpoch, kerr.ErrorForCode(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch)
		if err := kerr.ErrorForCode(resp.ErrorCode); !isFencingError(err) {
			t.Errorf("InitProducerId with A's stale id/epoch %d/%d answered %v (id %d epoch %d), want PRODUCER_FENCED", aID, aEpoch, err, resp.ProducerID, resp.ProducerEpoch)
		}
		after, err := adm.DescribeTransactions(ctx, txnID)
		if err != nil {
			t.Fatalf("kadm DescribeTransactions: %v", err)
		}
		bs, as := before[txnID], after[txnID]
		if bs.State != as.State || bs.ProducerID != as.ProducerID || bs.ProducerEpoch != as.ProducerEpoch || fmt.Sprint(bs.Topics.Sorted()) != fmt.Sprint(as.Topics.Sorted()) {
			t.Errorf("a fenced InitProducerId changed the transaction: before %s id %d epoch %d %v, after %s id %d epoch %d %v",
				bs.State, bs.ProducerID, bs.ProducerEpoch, bs.Topics.Sorted(), as.State, as.ProducerID, as.ProducerEpoch, as.Topics.Sorted())
		}
	}
	writeSentinels(t, ctx, b.Addr, topic, partitions)

	got := readUntilSentinels(t, ctx, b.Addr, topic, partitions, kgo.ReadCommitted())
	for p := range int32(partitions) {
		if k := recordKeys(got[p]); !slices.Equal(k, txnKeys("live", p, 5)) {
			t.Errorf("read_committed partition %d: %v, want only B's records %v", p, k, txnKeys("live", p, 5))
		}
	}
	got = readUntilSentinels(t, ctx, b.Addr, topic, partitions, kgo.ReadUncommitted())
	for p := range int32(partitions) {
		k := recordKeys(got[p])
		if !slices.Equal(k, append(txnKeys("zombie", p, 5), txnKeys("live", p, 5)...)) {
			t.Errorf("read_uncommitted partition %d: %v, want A's 5 aborted records then B's 5", p, k)
		}
	}
}

// TestTxnTimeoutAborts leaves a transaction open past its transaction.timeout.ms of 2 s.
// The broker (checking every second) must abort it — not before the timeout — after
// which read_committed passes it and sees none of its records, and the producer's
// commit fails with a fencing error because the abort bumped its epoch.
func TestTxnTimeoutAborts(t *testing.T) {
	t.Parallel()
	b := startTxnBroker(t, nil)
	ctx := testContext(t, 90*time.Second)
	cl, adm := newAdmin(t, b.Addr)
	const topic, partitions = "txn-timeout", 2
	const timeout = 2 * time.Second
	createTopicKadm(t, ctx, adm, topic, partitions, nil)

	prod := newTxnClient(t, b.Addr, "txn-timeout-id", kgo.TransactionTimeout(timeout))
	runTxn(t, ctx, prod, kgo.TryCommit, append(txnRecords(topic, "before", 0, 3), txnRecords(topic, "before", 1, 3)...))
	start := time.Now()
	if err := prod.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	offsets := produceInTxn(t, ctx, prod, append(txnRecords(topic, "timed-out", 0, 4), txnRecords(topic, "timed-out", 1, 4)...))
	if lso := listOffset(t, ctx, cl, topic, 0, readCommittedLevel); lso != offsets[0] {
		t.Errorf("partition 0: LSO %d right after the transaction opened at %d, want %d", lso, offsets[0], offsets[0])
	}
	waitStable(t, ctx, cl, topic, partitions)
	aborted := time.Since(start)
	t.Logf("the broker ended the timed-out transaction %v after it began (timeout %v)", aborted.Round(time.Millisecond), timeout)
	if aborted < timeout {
		t.Errorf("the transaction ended %v after it began, before its %v timeout", aborted, timeout)
	}

	err := prod.EndTransaction(ctx, kgo.TryCommit)
	if err == nil {
		t.Errorf("the producer committed a transaction the broker had aborted on timeout")
	} else {
		t.Logf("commit after the timeout: %v", err)
		if !isFencingError(err) {
			t.Errorf("commit after the timeout failed with %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
		}
	}
	writeSentinels(t, ctx, b.Addr, topic, partitions)
	got := readUntilSentinels(t, ctx, b.Addr, topic, partitions, kgo.ReadCommitted())
	for p := range int32(partitions) {
		if k := recordKeys(got[p]); !slices.Equal(k, txnKeys("before", p, 3)) {
			t.Errorf("read_committed partition %d: %v, want only the committed %v", p, k, txnKeys("before", p, 3))
		}
	}
	got = readUntilSentinels(t, ctx, b.Addr, topic, partitions, kgo.ReadUncommitted())
	for p := range int32(partitions) {
		if k := recordKeys(got[p]); !slices.Equal(k, append(txnKeys("before", p, 3), txnKeys("timed-out", p, 4)...)) {
			t.Errorf("read_uncommitted partition %d: %v, want the committed and the timed-out records", p, k)
		}
	}
}

// TestTxnAdminDescribe checks kadm's view of a transaction while it is open and after
// its commit: DescribeTransactions (state, partitions, producer id), ListTransactions
// (with and without a state filter) and DescribeProducers (the open transaction's first
// offset on each partition).
func TestTxnAdminDescribe(t *testing.T) {
	t.Parallel()
	b := startTxnBroker(t, nil)
	ctx := testContext(t, 60*time.Second)
	_, adm := newAdmin(t, b.Addr)
	const topic, partitions, txnID = "txn-admin", 3, "txn-admin-id"
	createTopicKadm(t, ctx, adm, topic, partitions, nil)

	prod := newTxnClient(t, b.Addr, txnID, kgo.TransactionTimeout(45*time.Second))
	runTxn(t, ctx, prod, kgo.TryCommit, txnRecords(topic, "first", 2, 3))
	if err := prod.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	offsets := produceInTxn(t, ctx, prod, append(txnRecords(topic, "open", 0, 2), txnRecords(topic, "open", 1, 2)...))
	startOf := map[int32]int64{0: offsets[0], 1: offsets[2]}

	dts, err := adm.DescribeTransactions(ctx, txnID)
	if err != nil {
		t.Fatalf("kadm DescribeTransactions: %v", err)
	}
	dt, ok := dts[txnID]
	var pid int64 = -1
	switch {
	case !ok || dt.Err != nil:
		t.Errorf("DescribeTransactions(%s) = %+v (found %v)", txnID, dt, ok)
	default:
		pid = dt.ProducerID
		if dt.State != "Ongoing" {
			t.Errorf("open transaction state %q, want Ongoing", dt.State)
		}
		if dt.TimeoutMillis != 45000 {
			t.Errorf("open transaction timeout %d ms, want 45000", dt.TimeoutMillis)
		}
		if dt.ProducerID < 0 || dt.StartTimestamp <= 0 {
			t.Errorf("open transaction producer id %d, start %d", dt.ProducerID, dt.StartTimestamp)
		}
		want := kadm.TopicsSet{topic: {0: {}, 1: {}}}
		if fmt.Sprint(dt.Topics.Sorted()) != fmt.Sprint(want.Sorted()) {
			t.Errorf("open transaction partitions %v, want %v", dt.Topics.Sorted(), want.Sorted())
		}
	}

	lts, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatalf("kadm ListTransactions: %v", err)
	}
	if lt, ok := lts[txnID]; !ok || lt.State != "Ongoing" || lt.ProducerID != pid {
		t.Errorf("ListTransactions: %s = %+v (found %v), want Ongoing with producer id %d", txnID, lt, ok, pid)
	}
	lts, err = adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil {
		t.Fatalf("kadm ListTransactions(Ongoing): %v", err)
	}
	if _, ok := lts[txnID]; !ok {
		t.Errorf("ListTransactions(state Ongoing) misses %s: %v", txnID, lts.Sorted())
	}
	lts, err = adm.ListTransactions(ctx, []int64{pid}, nil)
	if err != nil {
		t.Fatalf("kadm ListTransactions(pid): %v", err)
	}
	if _, ok := lts[txnID]; !ok || len(lts) != 1 {
		t.Errorf("ListTransactions(producer %d) = %v, want only %s", pid, lts.Sorted(), txnID)
	}

	dps, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}, 2: {}}})
	if err != nil {
		t.Fatalf("kadm DescribeProducers: %v", err)
	}
	checkProducers := func(when string, wantStart func(p int32) int64) {
		t.Helper()
		for p := range int32(partitions) {
			dp, ok := dps[topic].Partitions[p]
			if !ok || dp.Err != nil {
				t.Errorf("%s: DescribeProducers %s/%d = %+v (found %v)", when, topic, p, dp, ok)
				continue
			}
			var found bool
			for _, ap := range dp.ActiveProducers {
				if ap.ProducerID != pid {
					continue
				}
				found = true
				if ap.CurrentTxnStartOffset != wantStart(p) {
					t.Errorf("%s: DescribeProducers %s/%d: current txn start offset %d, want %d", when, topic, p, ap.CurrentTxnStartOffset, wantStart(p))
				}
				if ap.LastTimestamp <= 0 || ap.ProducerEpoch < 0 {
					t.Errorf("%s: DescribeProducers %s/%d: %+v", when, topic, p, ap)
				}
			}
			if !found {
				t.Errorf("%s: DescribeProducers %s/%d does not list producer %d: %+v", when, topic, p, pid, dp.ActiveProducers)
			}
		}
	}
	checkProducers("open", func(p int32) int64 {
		if s, ok := startOf[p]; ok {
			return s
		}
		return -1 // partition 2 was only in the first, committed, transaction
	})

	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("EndTransaction(commit): %v", err)
	}
	// The commit answers once the state is PrepareCommit; markers may still be on the
	// way, so poll until the coordinator reports the transaction complete.
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		dts, err = adm.DescribeTransactions(ctx, txnID)
		if err != nil {
			t.Fatalf("kadm DescribeTransactions: %v", err)
		}
		dt = dts[txnID]
		if dt.State == "CompleteCommit" || dt.State == "Empty" {
			break
		}
		if dt.State != "PrepareCommit" {
			t.Fatalf("after commit, transaction state %q, want PrepareCommit then CompleteCommit", dt.State)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("transaction still %q at the deadline", dt.State)
		case <-ticker.C:
		}
	}
	if len(dt.Topics) != 0 {
		t.Errorf("committed transaction still lists partitions %v", dt.Topics.Sorted())
	}
	lts, err = adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil {
		t.Fatalf("kadm ListTransactions(Ongoing): %v", err)
	}
	if _, ok := lts[txnID]; ok {
		t.Errorf("ListTransactions(state Ongoing) still lists %s after the commit", txnID)
	}
	// DescribeProducers is answered by the partition leader, which learns of the end
	// from the marker; poll until both partitions show no open transaction.
	for {
		dps, err = adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}, 2: {}}})
		if err != nil {
			t.Fatalf("kadm DescribeProducers: %v", err)
		}
		open := false
		dps.EachProducer(func(d kadm.DescribedProducer) { open = open || d.CurrentTxnStartOffset != -1 })
		if !open {
			break
		}
		select {
		case <-ctx.Done():
			checkProducers("after commit", func(int32) int64 { return -1 })
			t.Fatalf("DescribeProducers still shows an open transaction at the deadline")
		case <-ticker.C:
		}
	}
	checkProducers("after commit", func(int32) int64 { return -1 })
}

// TestTxnConfluentPython runs scripts/python/txn_confluent.py, a confluent-kafka-python
// consume-transform-produce loop that aborts some of its transactions, then checks the
// output with franz-go: read_committed holds every input record exactly once, and
// read_uncommitted holds more (the aborted attempts).
func TestTxnConfluentPython(t *testing.T) {
	t.Parallel()
	py := pythonWith(t, "confluent_kafka")
	b := startTxnBroker(t, nil)
	ctx := testContext(t, 3*time.Minute)
	_, adm := newAdmin(t, b.Addr)
	const in, out, partitions, n = "txn-py-in", "txn-py-out", 3, 1500
	createTopicKadm(t, ctx, adm, in, partitions, nil)
	createTopicKadm(t, ctx, adm, out, partitions, nil)
	inputs := produceCTPInput(t, ctx, b.Addr, in, partitions, n)

	runScript(t, []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"},
		py, "scripts/python/txn_confluent.py", b.Addr, in, out, "txn-py-group", fmt.Sprint(n))

	writeSentinels(t, ctx, b.Addr, out, partitions)
	checkExactlyOnce(t, inputs, readUntilSentinels(t, ctx, b.Addr, out, partitions, kgo.ReadCommitted()))
	all := readUntilSentinels(t, ctx, b.Addr, out, partitions, kgo.ReadUncommitted())
	total := 0
	for _, rs := range all {
		total += len(rs)
	}
	if total <= n {
		t.Errorf("read_uncommitted holds %d output records, want more than %d: the script aborts some transactions after producing", total, n)
	}
}
