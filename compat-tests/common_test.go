package compattests

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Shape of the per-client record round trip: one topic, six partitions, 2,000 records
// per codec produced one codec after the other into the same topic, so every partition
// holds batches of all five codecs.
const (
	numPartitions   = 6
	recordsPerCodec = 2000
	headerKey       = "compat-index"
)

// codecs are the compression.type names, in production order.
var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// testRecord is one record a client produces; Index is its position in the whole run.
type testRecord struct {
	Index     int
	Partition int32
	Key       []byte
	Value     []byte
	Timestamp time.Time // millisecond precision, strictly increasing with Index
	Header    []byte
}

// gotRecord is one record a client consumed.
type gotRecord struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp time.Time
	Headers   map[string][]byte
}

// genRecords returns n records with 1–2 KiB random values spread round-robin over the
// partitions. Record i has timestamp base+i ms, so timestamps increase within each
// partition by numPartitions ms per record.
func genRecords(seed uint64, prefix string, n int, base time.Time) []testRecord {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	base = base.Truncate(time.Millisecond)
	recs := make([]testRecord, n)
	for i := range recs {
		size := 1024 + rng.IntN(1025)
		value := make([]byte, size)
		for j := range value {
			value[j] = alphabet[rng.IntN(len(alphabet))]
		}
		recs[i] = testRecord{
			Index:     i,
			Partition: int32(i % numPartitions),
			Key:       fmt.Appendf(nil, "%s-key-%06d", prefix, i),
			Value:     value,
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			Header:    fmt.Appendf(nil, "%d", i),
		}
	}
	return recs
}

// byPartition groups records by partition, keeping their order.
func byPartition(recs []testRecord) map[int32][]testRecord {
	out := make(map[int32][]testRecord)
	for _, r := range recs {
		out[r.Partition] = append(out[r.Partition], r)
	}
	return out
}

// checkConsumed verifies that got holds exactly want, partition by partition, at offsets
// 0, 1, 2, ... in production order, with keys, values, timestamps and headers intact.
func checkConsumed(t *testing.T, want []testRecord, got map[int32][]gotRecord) {
	t.Helper()
	wantBy := byPartition(want)
	for p := int32(0); p < numPartitions; p++ {
		w, g := wantBy[p], got[p]
		if len(g) != len(w) {
			t.Errorf("partition %d: consumed %d records, want %d", p, len(g), len(w))
		}
		errs := 0
		for i := 0; i < min(len(w), len(g)) && errs < 5; i++ {
			if msg := diffRecord(w[i], int64(i), g[i]); msg != "" {
				t.Errorf("partition %d position %d: %s", p, i, msg)
				errs++
			}
		}
	}
}

func diffRecord(w testRecord, wantOffset int64, g gotRecord) string {
	var problems []string
	if g.Offset != wantOffset {
		problems = append(problems, fmt.Sprintf("offset %d, want %d", g.Offset, wantOffset))
	}
	if !bytes.Equal(g.Key, w.Key) {
		problems = append(problems, fmt.Sprintf("key %q, want %q", trunc(g.Key), trunc(w.Key)))
	}
	if !bytes.Equal(g.Value, w.Value) {
		problems = append(problems, fmt.Sprintf("value of %d bytes (%q), want %d bytes (%q)", len(g.Value), trunc(g.Value), len(w.Value), trunc(w.Value)))
	}
	if !g.Timestamp.Equal(w.Timestamp) {
		problems = append(problems, fmt.Sprintf("timestamp %v, want %v", g.Timestamp.UnixMilli(), w.Timestamp.UnixMilli()))
	}
	if h, ok := g.Headers[headerKey]; !ok || !bytes.Equal(h, w.Header) {
		problems = append(problems, fmt.Sprintf("header %s=%q (present %v), want %q", headerKey, h, ok, w.Header))
	}
	return strings.Join(problems, "; ")
}

func trunc(b []byte) []byte {
	if len(b) > 24 {
		return b[:24]
	}
	return b
}

// timeQuery is a ListOffsets-by-timestamp probe for one partition: the first offset
// whose timestamp is ≥ Millis must be Want.
type timeQuery struct {
	Partition int32
	Millis    int64
	Want      int64
}

// timeQueries returns, for every partition, a probe at the exact timestamp of the
// middle record and one 3 ms before it (between two records of the partition), both
// of which must resolve to the middle record's offset, and probes at the exact
// timestamps of the next record and of the last one.
func timeQueries(want []testRecord) []timeQuery {
	var qs []timeQuery
	wantBy := byPartition(want)
	for p := int32(0); p < numPartitions; p++ {
		recs := wantBy[p]
		mid := len(recs) / 2
		ts := recs[mid].Timestamp.UnixMilli()
		last := len(recs) - 1
		qs = append(qs,
			timeQuery{Partition: p, Millis: ts, Want: int64(mid)},
			timeQuery{Partition: p, Millis: ts - numPartitions/2, Want: int64(mid)},
			// Neighbours and the last record: at most one of these starts a batch, so a
			// broker answering with batch base offsets cannot pass by luck.
			timeQuery{Partition: p, Millis: recs[mid+1].Timestamp.UnixMilli(), Want: int64(mid + 1)},
			timeQuery{Partition: p, Millis: recs[last].Timestamp.UnixMilli(), Want: int64(last)},
		)
	}
	return qs
}

// testContext returns a context that ends after d or when the test ends.
func testContext(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newAdmin returns a kadm client for addr, closed at test cleanup.
func newAdmin(t testing.TB, addr string, opts ...kgo.Opt) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

// checkOffsetsKadm cross-checks, with kadm, that every partition of topic starts at 0
// and ends after the records of want.
func checkOffsetsKadm(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, want []testRecord) {
	t.Helper()
	wantBy := byPartition(want)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("kadm ListStartOffsets: %v", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("kadm ListEndOffsets: %v", err)
	}
	for p := int32(0); p < numPartitions; p++ {
		s, ok := starts.Lookup(topic, p)
		if !ok || s.Err != nil || s.Offset != 0 {
			t.Errorf("kadm start offset of %s/%d = %+v (found %v), want 0", topic, p, s, ok)
		}
		e, ok := ends.Lookup(topic, p)
		if !ok || e.Err != nil || e.Offset != int64(len(wantBy[p])) {
			t.Errorf("kadm end offset of %s/%d = %+v (found %v), want %d", topic, p, e, ok, len(wantBy[p]))
		}
	}
}

// configOf returns the described value of a topic config, with kadm.
func configOf(t *testing.T, ctx context.Context, adm *kadm.Client, topic, name string) (kadm.Config, bool) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatalf("kadm DescribeTopicConfigs(%s): %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatalf("kadm DescribeTopicConfigs(%s): %v", topic, err)
	}
	if rc.Err != nil {
		t.Fatalf("kadm DescribeTopicConfigs(%s): %v", topic, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c, true
		}
	}
	return kadm.Config{}, false
}

// waitTopicGone polls, with kadm, a full metadata listing (which never auto-creates)
// until topic is no longer in it.
func waitTopicGone(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) {
	t.Helper()
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		tds, err := adm.ListTopics(ctx)
		if err == nil && !slices.Contains(tds.Names(), topic) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topic %s still listed after deletion (last error %v): %v", topic, err, ctx.Err())
		case <-ticker.C:
		}
	}
}

// waitTopicReady polls, with kadm, until topic is listed with n partitions that each
// have a leader.
func waitTopicReady(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, n int) {
	t.Helper()
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	for {
		tds, err := adm.ListTopics(ctx, topic)
		if err == nil {
			td, ok := tds[topic]
			if ok && td.Err == nil && len(td.Partitions) == n {
				ready := true
				for _, p := range td.Partitions {
					ready = ready && p.Err == nil && p.Leader >= 0
				}
				if ready {
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topic %s not ready with %d partitions: last %v / %v", topic, n, tds[topic], err)
		case <-ticker.C:
		}
	}
}
