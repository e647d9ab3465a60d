package compattests

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// requireCleanStart fails the test if the broker's latest run logged an error or a panic.
// Warnings (such as truncating a torn tail) are expected after a kill.
func requireCleanStart(t *testing.T, b *harness.Broker) {
	t.Helper()
	out := b.LastRunOutput()
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, `"level":"WARN"`) {
			t.Logf("broker warning after restart: %s", line)
		}
	}
	for _, bad := range []string{"panic:", "level=ERROR", `"level":"ERROR"`, "fatal error:"} {
		if strings.Contains(out, bad) {
			t.Errorf("broker output after restart contains %q:\n%s", bad, out)
		}
	}
}

// createTopicKadm creates topic with n partitions and configs, and waits for leaders.
func createTopicKadm(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, n int32, configs map[string]*string) kadm.TopicID {
	t.Helper()
	resp, err := adm.CreateTopic(ctx, n, 1, configs, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("kadm CreateTopic(%s): %v / %v (%s)", topic, err, resp.Err, resp.ErrMessage)
	}
	waitTopicReady(t, ctx, adm, topic, int(n))
	return resp.ID
}

// consumeAll reads every partition of topic from its start offset to its end offset
// as listed now, by direct assignment.
func consumeAll(t *testing.T, ctx context.Context, addr string, adm *kadm.Client, topic string) map[int32][]*kgo.Record {
	t.Helper()
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("kadm ListStartOffsets: %v", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("kadm ListEndOffsets: %v", err)
	}
	parts := make(map[int32]kgo.Offset)
	remaining := 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("kadm ListEndOffsets %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		s, _ := starts.Lookup(topic, o.Partition)
		parts[o.Partition] = kgo.NewOffset().At(s.Offset)
		remaining += int(o.Offset - s.Offset)
	})
	out := make(map[int32][]*kgo.Record)
	if remaining == 0 {
		return out
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: %d records still missing at the deadline", topic, remaining)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], r)
			remaining--
		})
	}
	return out
}

// TestKillDuringAcksAllProduction kills the broker with SIGKILL while producers write
// sequentially numbered records with acks=all and log.flush.interval.messages=1, then
// restarts it: every acknowledged record must be there exactly once and in order, the
// log must hold a gap-free prefix of what was sent, and the broker must start cleanly.
func TestKillDuringAcksAllProduction(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{Overrides: map[string]string{"log.flush.interval.messages": "1"}})
	ctx := testContext(t, 2*time.Minute)
	_, adm := newAdmin(t, b.Addr)
	const topic, partitions, batch, killAfter = "kill-during-produce", 3, 10, 1500
	createTopicKadm(t, ctx, adm, topic, partitions, nil)

	// Idempotence is off so that a batch in flight at the kill fails after the delivery
	// timeout instead of waiting for the broker to come back.
	producer, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(3*time.Second),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer producer.Close()

	var (
		mu     sync.Mutex
		acked  [partitions][]int
		total  int
		wg     sync.WaitGroup
		enough = make(chan struct{})
		once   sync.Once
	)
	for p := int32(0); p < partitions; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ctx.Err() == nil; seq += batch {
				recs := make([]*kgo.Record, batch)
				for i := range recs {
					recs[i] = &kgo.Record{Partition: p, Key: fmt.Appendf(nil, "%d", p), Value: fmt.Appendf(nil, "%d", seq+i)}
				}
				if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					return // the broker is gone; this batch is unacknowledged
				}
				mu.Lock()
				for i := range recs {
					acked[p] = append(acked[p], seq+i)
				}
				total += batch
				if total >= killAfter {
					once.Do(func() { close(enough) })
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-enough:
	case <-ctx.Done():
		t.Fatalf("only %d records acknowledged before the deadline", total)
	}
	b.Kill(t)
	wg.Wait()
	producer.Close()
	mu.Lock()
	t.Logf("killed the broker after %d acknowledged records", total)
	mu.Unlock()

	// SIGKILL alone rarely tears a write (a write(2) reaches the page cache whole), so
	// also leave the tails a power cut would: on partition 0 a batch whose header
	// promises more bytes than were written, on partition 1 a complete-looking batch
	// whose CRC does not match. Recovery must cut both and keep every acknowledged record.
	appendToActiveSegment(t, b.Dir, topic, 0, tornBatch(1<<40, 500, 30))
	appendToActiveSegment(t, b.Dir, topic, 1, tornBatch(1<<40, 49, 49))

	b.Restart(t)
	requireCleanStart(t, b)

	got := consumeAll(t, ctx, b.Addr, adm, topic)
	for p := int32(0); p < partitions; p++ {
		recs := got[p]
		if len(recs) < len(acked[p]) {
			t.Errorf("partition %d: %d records after restart, but %d were acknowledged", p, len(recs), len(acked[p]))
		}
		// Writes to one partition are sequential, so the log must hold 0, 1, 2, ... with
		// no gap and no duplicate, and its prefix covers every acknowledged record.
		for i, r := range recs {
			seq, err := strconv.Atoi(string(r.Value))
			if err != nil || seq != i || r.Offset != int64(i) {
				t.Errorf("partition %d: record at offset %d holds %q, want sequence %d at offset %d", p, r.Offset, r.Value, i, i)
				break
			}
		}
	}

	// The log keeps working after recovery: new records follow the recovered ones.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("kadm ListEndOffsets: %v", err)
	}
	after, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer after.Close()
	res := after.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("after-restart")})
	r, err := res.First()
	if err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	if e, _ := ends.Lookup(topic, 0); r.Offset != e.Offset {
		t.Errorf("record produced after restart got offset %d, want the end offset %d", r.Offset, e.Offset)
	}
}

// tornBatch returns the start of a record batch: base offset, a batch length of
// length, then have bytes of noise (so a CRC, if the length is complete, cannot match).
func tornBatch(baseOffset int64, length int32, have int) []byte {
	out := binary.BigEndian.AppendUint64(nil, uint64(baseOffset))
	out = binary.BigEndian.AppendUint32(out, uint32(length))
	for i := 0; i < have; i++ {
		out = append(out, byte(0xa5^i))
	}
	return out
}

// appendToActiveSegment appends junk to the newest <offset>.log segment of a partition,
// in the topic-N directory layout Kafka uses.
func appendToActiveSegment(t *testing.T, dataDir, topic string, partition int, junk []byte) {
	t.Helper()
	dir := filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, partition))
	segments, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(segments) == 0 {
		t.Fatalf("no segment files in %s: %v", dir, err)
	}
	sort.Strings(segments)
	f, err := os.OpenFile(segments[len(segments)-1], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatalf("open segment: %v", err)
	}
	defer f.Close()
	if _, err := f.Write(junk); err != nil {
		t.Fatalf("append to segment: %v", err)
	}
}

// TestRestartKeepsTopicsConfigsAndRecords stops the broker with SIGTERM and starts it
// again over the same data directory: topics (with their IDs and partition counts),
// topic config overrides and records must all be there.
func TestRestartKeepsTopicsConfigsAndRecords(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 90*time.Second)
	_, adm := newAdmin(t, b.Addr)

	retention := "86400000"
	idA := createTopicKadm(t, ctx, adm, "restart-a", 3, map[string]*string{"retention.ms": &retention})
	idB := createTopicKadm(t, ctx, adm, "restart-b", 2, nil)
	// A config altered after creation must survive too.
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}, "restart-b"); err != nil {
		t.Fatalf("kadm AlterTopicConfigs: %v", err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	want := map[string]map[int32][]string{"restart-a": {}, "restart-b": {}}
	var recs []*kgo.Record
	for i := 0; i < 900; i++ {
		topic := "restart-a"
		p := int32((i / 3) % 3)
		if i%3 == 2 {
			topic, p = "restart-b", int32(i%2)
		}
		v := fmt.Sprintf("%s-%d-%d", topic, p, i)
		want[topic][p] = append(want[topic][p], v)
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(strconv.Itoa(i)), Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl.Close()

	b.Stop(t)
	b.Restart(t)
	requireCleanStart(t, b)

	tds, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatalf("kadm ListTopics after restart: %v", err)
	}
	for name, id := range map[string]kadm.TopicID{"restart-a": idA, "restart-b": idB} {
		td, ok := tds[name]
		if !ok {
			t.Errorf("topic %s missing after restart; have %v", name, tds.Names())
			continue
		}
		if td.ID != id {
			t.Errorf("topic %s has ID %v after restart, want %v", name, td.ID, id)
		}
		if len(td.Partitions) != len(want[name]) {
			t.Errorf("topic %s has %d partitions after restart, want %d", name, len(td.Partitions), len(want[name]))
		}
	}
	if c, ok := configOf(t, ctx, adm, "restart-a", "retention.ms"); !ok || c.MaybeValue() != retention || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("restart-a retention.ms after restart = %+v (found %v), want %s", c, ok, retention)
	}
	if c, ok := configOf(t, ctx, adm, "restart-b", "cleanup.policy"); !ok || c.MaybeValue() != "compact" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("restart-b cleanup.policy after restart = %+v (found %v), want compact", c, ok)
	}
	for topic, parts := range want {
		got := consumeAll(t, ctx, b.Addr, adm, topic)
		for p, values := range parts {
			if len(got[p]) != len(values) {
				t.Errorf("%s/%d: %d records after restart, want %d", topic, p, len(got[p]), len(values))
				continue
			}
			for i, r := range got[p] {
				if string(r.Value) != values[i] || r.Offset != int64(i) {
					t.Errorf("%s/%d: offset %d holds %q, want %q at %d", topic, p, r.Offset, r.Value, values[i], i)
					break
				}
			}
		}
	}
}

// waitStartOffset polls ListStartOffsets until partition 0 of topic starts at or after min.
func waitStartOffset(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, min int64) int64 {
	t.Helper()
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		starts, err := adm.ListStartOffsets(ctx, topic)
		if err == nil {
			if s, ok := starts.Lookup(topic, 0); ok && s.Err == nil && s.Offset >= min {
				return s.Offset
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("log start offset of %s/0 not ≥ %d at the deadline (last %v, %v)", topic, min, starts, err)
		case <-ticker.C:
		}
	}
}

// TestRetentionDeletesOldSegments fills small segments and waits for the background
// retention check to delete old ones, by size and by time.
func TestRetentionDeletesOldSegments(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{Overrides: map[string]string{"log.retention.check.interval.ms": "500"}})
	ctx := testContext(t, 60*time.Second)
	_, adm := newAdmin(t, b.Addr)
	segment := "16384"
	bySize := "32768"
	byTime := "600000" // ten minutes; the records below are an hour old
	createTopicKadm(t, ctx, adm, "retention-bytes", 1, map[string]*string{"segment.bytes": &segment, "retention.bytes": &bySize})
	createTopicKadm(t, ctx, adm, "retention-ms", 1, map[string]*string{"segment.bytes": &segment, "retention.ms": &byTime})

	// Uncompressed random values, so that a batch takes the ~1.1 KiB the sizes below assume.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()
	value := genRecords(5, "retention", 1, time.Now())[0].Value[:1024]
	old := time.Now().Add(-time.Hour)
	// One record per request so that batches are small and segments roll often.
	for i := 0; i < 200; i++ {
		for _, topic := range []string{"retention-bytes", "retention-ms"} {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value, Timestamp: old}).FirstErr(); err != nil {
				t.Fatalf("produce to %s: %v", topic, err)
			}
		}
	}
	// A 16 KiB segment holds about 14 of these 1.1 KiB batches. retention.bytes keeps
	// less than retention.bytes plus one segment (< 45 records), so the start reaches 150,
	// and what is left stays readable.
	start := waitStartOffset(t, ctx, adm, "retention-bytes", 150)
	ends, err := adm.ListEndOffsets(ctx, "retention-bytes")
	if err != nil {
		t.Fatalf("kadm ListEndOffsets: %v", err)
	}
	if end, _ := ends.Lookup("retention-bytes", 0); end.Offset != 200 {
		t.Errorf("retention-bytes: end offset %d after retention, want 200", end.Offset)
	}
	got := consumeAll(t, ctx, b.Addr, adm, "retention-bytes")
	if len(got[0]) != int(200-start) || (len(got[0]) > 0 && got[0][0].Offset != start) {
		t.Errorf("retention-bytes: read %d records from offset %d after retention, want %d from %d", len(got[0]), firstOffset(got[0]), 200-start, start)
	}
	t.Logf("retention-bytes: log start offset %d of 200 after retention", start)

	// Every record of retention-ms is an hour old, past its ten-minute retention, so
	// Kafka deletes every segment, the active one included (rolling a new one first):
	// the log ends up empty at offset 200.
	waitStartOffset(t, ctx, adm, "retention-ms", 200)
	ends, err = adm.ListEndOffsets(ctx, "retention-ms")
	if err != nil {
		t.Fatalf("kadm ListEndOffsets: %v", err)
	}
	if end, _ := ends.Lookup("retention-ms", 0); end.Offset != 200 {
		t.Errorf("retention-ms: end offset %d after retention, want 200", end.Offset)
	}
	// The emptied log still takes new records at the old end.
	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: "retention-ms", Value: value}).First()
	if err != nil || r.Offset != 200 {
		t.Errorf("retention-ms: produce after retention emptied the log: offset %v, %v; want 200", offsetOf(r), err)
	}
}

func offsetOf(r *kgo.Record) int64 {
	if r == nil {
		return -1
	}
	return r.Offset
}

func firstOffset(recs []*kgo.Record) int64 {
	if len(recs) == 0 {
		return -1
	}
	return recs[0].Offset
}

// TestDeleteRecordsMovesLogStart deletes records with kadm and checks that the log start
// offset moves to exactly the requested offset, that reads start there, and that it
// survives a restart.
func TestDeleteRecordsMovesLogStart(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 60*time.Second)
	_, adm := newAdmin(t, b.Addr)
	const topic = "delete-records"
	createTopicKadm(t, ctx, adm, topic, 2, nil)

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	var recs []*kgo.Record
	for i := 0; i < 200; i++ {
		recs = append(recs, &kgo.Record{Partition: int32(i % 2), Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl.Close()

	targets := map[int32]int64{0: 40, 1: 73}
	var os kadm.Offsets
	for p, o := range targets {
		os.AddOffset(topic, p, o, -1)
	}
	resps, err := adm.DeleteRecords(ctx, os)
	if err != nil {
		t.Fatalf("kadm DeleteRecords: %v", err)
	}
	for p, o := range targets {
		r, ok := resps.Lookup(topic, p)
		if !ok || r.Err != nil || r.LowWatermark != o {
			t.Errorf("DeleteRecords %s/%d to %d: %+v (found %v), want low watermark %d", topic, p, o, r, ok, o)
		}
	}
	check := func(when string) {
		starts, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			t.Fatalf("kadm ListStartOffsets: %v", err)
		}
		for p, o := range targets {
			if s, _ := starts.Lookup(topic, p); s.Err != nil || s.Offset != o {
				t.Errorf("%s: start offset of %s/%d = %+v, want %d", when, topic, p, s, o)
			}
		}
		got := consumeAll(t, ctx, b.Addr, adm, topic)
		for p, o := range targets {
			if len(got[p]) != int(100-o) || firstOffset(got[p]) != o {
				t.Errorf("%s: %s/%d reads %d records from offset %d, want %d from %d", when, topic, p, len(got[p]), firstOffset(got[p]), 100-o, o)
			}
		}
	}
	check("after DeleteRecords")

	// Deleting beyond the high watermark is OFFSET_OUT_OF_RANGE.
	var beyond kadm.Offsets
	beyond.AddOffset(topic, 0, 1000, -1)
	resps, err = adm.DeleteRecords(ctx, beyond)
	if err != nil {
		t.Fatalf("kadm DeleteRecords beyond end: %v", err)
	}
	if r, _ := resps.Lookup(topic, 0); r.Err == nil || !strings.Contains(r.Err.Error(), "OFFSET_OUT_OF_RANGE") {
		t.Errorf("DeleteRecords beyond the end: %+v, want OFFSET_OUT_OF_RANGE", r)
	}

	b.Stop(t)
	b.Restart(t)
	check("after restart")
}
