// This file checks log compaction (cleanup.policy=compact) on the real binary: franz-go
// overwrites the same keys round after round across many small segments, the broker's
// cleaner (log.cleaner.backoff.ms lowered) removes the superseded records, and then
// franz-go, confluent-kafka-go, Sarama, kafka-go, kcat, kafka-python and KafkaJS all
// read the same compacted log: every record they get is exactly the one produced at that offset, offsets are
// kept, the last record of every key (tombstones included) is still there, and the
// batches compaction empties (kept for producer state) trip no client. The view is
// the same after a restart. A record without a key is refused with INVALID_RECORD, as
// Kafka refuses it for a compacted topic.

package compattests

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	segkafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// compactedRecord is one record as a reader saw it; a nil value is a tombstone.
type compactedRecord struct {
	offset int64
	key    string
	value  *string
}

func (r compactedRecord) String() string {
	if r.value == nil {
		return fmt.Sprintf("%d:%s=<tombstone>", r.offset, r.key)
	}
	return fmt.Sprintf("%d:%s=%s", r.offset, r.key, *r.value)
}

func valuePtr(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

const (
	compactPartitions = 2
	compactKeys       = 40
	compactRounds     = 30
	compactTombRound  = 20 // keys k00..k04 of partition 0 are deleted in this round
)

func TestCompaction(t *testing.T) {
	b := harness.Start(t, harness.Options{Overrides: map[string]string{"log.cleaner.backoff.ms": "200"}})
	ctx := testContext(t, 3*time.Minute)
	topic := "compacted"
	cl, adm := newAdmin(t, b.Addr)
	cfg := map[string]*string{}
	for k, v := range map[string]string{
		"cleanup.policy": "compact", "segment.bytes": "4096", "min.cleanable.dirty.ratio": "0.01",
	} {
		cfg[k] = &v
	}
	if _, err := adm.CreateTopic(ctx, compactPartitions, 1, cfg, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	waitTopicReady(t, ctx, adm, topic, compactPartitions)

	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer prod.Close()

	// produced[p][offset] is what was written at each offset; last[p][key] the offset
	// of the key's last record.
	produced := make([]map[int64]compactedRecord, compactPartitions)
	last := make([]map[string]int64, compactPartitions)
	for p := range produced {
		produced[p], last[p] = map[int64]compactedRecord{}, map[string]int64{}
	}
	for round := range compactRounds {
		var recs []*kgo.Record
		for p := range int32(compactPartitions) {
			for k := range compactKeys {
				if round > compactTombRound && p == 0 && k < 5 {
					continue // deleted keys stay deleted
				}
				r := &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "k%02d", k)}
				if !(round == compactTombRound && p == 0 && k < 5) {
					r.Value = fmt.Appendf(nil, "p%d-k%02d-r%03d", p, k, round)
				}
				recs = append(recs, r)
			}
		}
		res := prod.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, r := range res {
			rec := compactedRecord{offset: r.Record.Offset, key: string(r.Record.Key), value: valuePtr(r.Record.Value)}
			produced[r.Record.Partition][rec.offset] = rec
			last[r.Record.Partition][rec.key] = rec.offset
		}
	}
	// Kafka refuses a record without a key in a compacted topic.
	err = prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Errorf("keyless record to a compacted topic: %v, want INVALID_RECORD", err)
	}

	ends := make([]int64, compactPartitions)
	for p := range int32(compactPartitions) {
		ends[p] = listOffset(t, ctx, cl, topic, p, readUncommittedLevel)
		if want := int64(len(produced[p])); ends[p] != want {
			t.Fatalf("partition %d ends at %d, want %d", p, ends[p], want)
		}
	}

	// Wait for the cleaner: at most half of each partition's records left.
	var view [][]compactedRecord
	for {
		view = readCompactedKgo(t, ctx, b.Addr, topic, ends)
		done := true
		for p := range view {
			done = done && len(view[p]) <= len(produced[p])/2
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not compacted by the deadline: %d and %d of %d and %d records left", len(view[0]), len(view[1]), len(produced[0]), len(produced[1]))
		case <-time.After(300 * time.Millisecond):
		}
	}
	// The cleaner may run again (the first pass can stop early, and what
	// it left is dirty again): wait until a second read a second later,
	// five cleaner periods, sees the same log.
	for {
		select {
		case <-ctx.Done():
			t.Fatal("compaction did not settle by the deadline")
		case <-time.After(time.Second):
		}
		again := readCompactedKgo(t, ctx, b.Addr, topic, ends)
		settled := true
		for p := range view {
			settled = settled && equalCompacted(again[p], view[p])
		}
		view = again
		if settled {
			break
		}
	}
	for p := range view {
		checkCompacted(t, "franz-go", p, view[p], produced[p], last[p])
		t.Logf("partition %d: %d of %d records left after compaction", p, len(view[p]), len(produced[p]))
	}

	readers := map[string]func() [][]compactedRecord{
		"confluent-kafka-go": func() [][]compactedRecord { return readCompactedConfluent(t, ctx, b.Addr, topic, ends) },
		"sarama":             func() [][]compactedRecord { return readCompactedSarama(t, ctx, b.Addr, topic, ends) },
		"kafka-go":           func() [][]compactedRecord { return readCompactedKafkaGo(t, ctx, b.Addr, topic, ends) },
		"kcat":               func() [][]compactedRecord { return readCompactedKcat(t, ctx, b.Addr, topic, ends) },
		"kafka-python": func() [][]compactedRecord {
			return readCompactedScript(t, ctx, ends, pythonWith(t, "kafka"), "scripts/python/dump_kafka_python.py", b.Addr, topic)
		},
		"KafkaJS": func() [][]compactedRecord {
			return readCompactedScript(t, ctx, ends, lookTool(t, "node"), "scripts/js/dump.js", b.Addr, topic, "samsa-compaction-dump")
		},
	}
	for name, read := range readers {
		got := read()
		for p := range view {
			if !equalCompacted(got[p], view[p]) {
				t.Errorf("%s partition %d read %d records, franz-go %d; first difference: %s", name, p, len(got[p]), len(view[p]), firstDifference(got[p], view[p]))
			}
		}
	}

	// The cleaned segments are what a restart finds.
	b.Stop(t)
	b.Restart(t)
	after := readCompactedKgo(t, ctx, b.Addr, topic, ends)
	for p := range view {
		if len(after[p]) > len(view[p]) {
			t.Errorf("partition %d: %d records after the restart, %d before", p, len(after[p]), len(view[p]))
		}
		checkCompacted(t, "franz-go after restart", p, after[p], produced[p], last[p])
	}
}

// checkCompacted checks one partition's compacted view against what was produced.
func checkCompacted(t *testing.T, who string, p int, got []compactedRecord, produced map[int64]compactedRecord, last map[string]int64) {
	t.Helper()
	prev := int64(-1)
	seenLast := map[string]bool{}
	for _, r := range got {
		if r.offset <= prev {
			t.Errorf("%s partition %d: offset %d after %d", who, p, r.offset, prev)
		}
		prev = r.offset
		want, ok := produced[r.offset]
		if !ok || want.key != r.key || (want.value == nil) != (r.value == nil) || (want.value != nil && *want.value != *r.value) {
			t.Errorf("%s partition %d: read %v, produced %v at that offset", who, p, r, want)
		}
		if last[r.key] == r.offset {
			seenLast[r.key] = true
		}
	}
	for k, off := range last {
		if !seenLast[k] {
			t.Errorf("%s partition %d: the last record of %s (offset %d) is missing", who, p, k, off)
		}
	}
}

func equalCompacted(a, b []compactedRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].String() != b[i].String() {
			return false
		}
	}
	return true
}

func firstDifference(a, b []compactedRecord) string {
	for i := range min(len(a), len(b)) {
		if a[i].String() != b[i].String() {
			return fmt.Sprintf("#%d %v vs %v", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d", len(a), len(b))
}

// readCompactedKgo reads every partition from offset 0 up to its end (the last
// produced offset, in the active segment, is never cleaned).
func readCompactedKgo(t *testing.T, ctx context.Context, addr, topic string, ends []int64) [][]compactedRecord {
	t.Helper()
	parts := map[int32]kgo.Offset{}
	for p := range ends {
		parts[int32(p)] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchMaxWait(300*time.Millisecond))
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()
	out := make([][]compactedRecord, len(ends))
	done := 0
	for done < len(ends) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("franz-go: compacted topic not read to its end by the deadline")
		}
		fs.EachError(func(_ string, p int32, err error) { t.Errorf("franz-go fetch %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], compactedRecord{r.Offset, string(r.Key), valuePtr(r.Value)})
			if r.Offset == ends[r.Partition]-1 {
				done++
			}
		})
	}
	return out
}

func readCompactedConfluent(t *testing.T, ctx context.Context, addr, topic string, ends []int64) [][]compactedRecord {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers": addr, "group.id": "samsa-compact-unused", "enable.auto.commit": false,
	})
	if err != nil {
		t.Fatalf("kafka.NewConsumer: %v", err)
	}
	defer c.Close()
	var assignment []kafka.TopicPartition
	for p := range ends {
		assignment = append(assignment, kafka.TopicPartition{Topic: &topic, Partition: int32(p), Offset: 0})
	}
	if err := c.Assign(assignment); err != nil {
		t.Fatalf("confluent Assign: %v", err)
	}
	out := make([][]compactedRecord, len(ends))
	for done := 0; done < len(ends); {
		if ctx.Err() != nil {
			t.Fatalf("confluent-kafka-go: compacted topic not read to its end by the deadline")
		}
		switch e := c.Poll(200).(type) {
		case *kafka.Message:
			p := e.TopicPartition.Partition
			off := int64(e.TopicPartition.Offset)
			out[p] = append(out[p], compactedRecord{off, string(e.Key), valuePtr(e.Value)})
			if off == ends[p]-1 {
				done++
			}
		case kafka.Error:
			t.Errorf("confluent-kafka-go: %v", e)
		}
	}
	return out
}

func readCompactedSarama(t *testing.T, ctx context.Context, addr, topic string, ends []int64) [][]compactedRecord {
	t.Helper()
	consumer, err := sarama.NewConsumer([]string{addr}, saramaConfig())
	if err != nil {
		t.Fatalf("sarama.NewConsumer: %v", err)
	}
	defer consumer.Close()
	out := make([][]compactedRecord, len(ends))
	for p := range ends {
		pc, err := consumer.ConsumePartition(topic, int32(p), sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama ConsumePartition(%d): %v", p, err)
		}
		for len(out[p]) == 0 || out[p][len(out[p])-1].offset < ends[p]-1 {
			select {
			case m := <-pc.Messages():
				out[p] = append(out[p], compactedRecord{m.Offset, string(m.Key), valuePtr(m.Value)})
			case err := <-pc.Errors():
				t.Errorf("sarama partition %d: %v", p, err)
			case <-ctx.Done():
				pc.Close()
				t.Fatalf("sarama: partition %d not read to its end by the deadline", p)
			}
		}
		pc.Close()
	}
	return out
}

func readCompactedKafkaGo(t *testing.T, ctx context.Context, addr, topic string, ends []int64) [][]compactedRecord {
	t.Helper()
	out := make([][]compactedRecord, len(ends))
	for p := range ends {
		r := segkafka.NewReader(segkafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: p, MaxWait: 300 * time.Millisecond})
		if err := r.SetOffset(0); err != nil {
			t.Fatalf("kafka-go SetOffset: %v", err)
		}
		for len(out[p]) == 0 || out[p][len(out[p])-1].offset < ends[p]-1 {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("kafka-go partition %d after %d records: %v", p, len(out[p]), err)
			}
			out[p] = append(out[p], compactedRecord{m.Offset, string(m.Key), valuePtr(m.Value)})
		}
		r.Close()
	}
	return out
}

// readCompactedKcat reads with kcat (Debian's librdkafka 2.0.2), one partition at a
// time, to the end of the partition (-e). Tombstones print as the -Z null marker.
func readCompactedKcat(t *testing.T, ctx context.Context, addr, topic string, ends []int64) [][]compactedRecord {
	t.Helper()
	kcat := lookTool(t, "kcat")
	out := make([][]compactedRecord, len(ends))
	for p := range ends {
		cmd := exec.CommandContext(ctx, kcat, "-C", "-b", addr, "-t", topic, "-p", strconv.Itoa(p), "-o", "beginning", "-e", "-q", "-Z",
			"-f", "%o %k %s\n")
		stdout, err := cmd.Output()
		if err != nil {
			t.Fatalf("kcat partition %d: %v", p, err)
		}
		sc := bufio.NewScanner(strings.NewReader(string(stdout)))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 {
				t.Fatalf("kcat partition %d: line %q", p, sc.Text())
			}
			off, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				t.Fatalf("kcat partition %d: line %q", p, sc.Text())
			}
			r := compactedRecord{offset: off, key: f[1]}
			if f[2] != "NULL" {
				r.value = &f[2]
			}
			out[p] = append(out[p], r)
		}
	}
	return out
}

// readCompactedScript runs a dump script (scripts/python/dump_kafka_python.py,
// scripts/js/dump.js) that prints "PARTITION OFFSET KEY VALUE" lines (NULL for null)
// for every partition read from 0 to its end; the end offsets are its last arguments.
func readCompactedScript(t *testing.T, ctx context.Context, ends []int64, tool, script string, args ...string) [][]compactedRecord {
	t.Helper()
	args = append([]string{script}, args...)
	for _, e := range ends {
		args = append(args, strconv.FormatInt(e, 10))
	}
	cmd := exec.CommandContext(ctx, tool, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	out := make([][]compactedRecord, len(ends))
	for _, line := range strings.Split(strings.TrimSpace(string(stdout)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("%s: line %q", script, line)
		}
		p, err1 := strconv.Atoi(f[0])
		off, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || p >= len(ends) {
			t.Fatalf("%s: line %q", script, line)
		}
		r := compactedRecord{offset: off, key: f[2]}
		if f[3] != "NULL" {
			r.value = &f[3]
		}
		out[p] = append(out[p], r)
	}
	return out
}
