package compattests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// jbodMoveBound bounds how long the partitions of a failed log directory
// take to get a new leader (the broker reports the directory at once; the
// rest is one controller write and the metadata reaching the nodes).
const jbodMoveBound = 30 * time.Second

// TestJBODLogDirFailure (KIP-858): three nodes with two log directories
// each; node 1's second directory is a small tmpfs of its own. Topic
// "jbod" has six partitions, RF=3, min.insync.replicas=2, all led by node
// 1, and an idempotent acks=all producer writes to every partition. The
// tmpfs is filled, so the next write there fails with ENOSPC: node 1 must
// keep running, the partitions of that directory must get another leader
// and lose node 1 from their ISR (Metadata lists it as an offline
// replica) within jbodMoveBound, while the partitions of its healthy
// directory keep node 1 as their leader throughout; DescribeLogDirs on
// node 1 answers KAFKA_STORAGE_ERROR for the failed directory; and every
// acknowledged record is read back afterwards (anomaly checked: lost).
// Needs root for mount(2), as the fault test bed's full-disk step.
func TestJBODLogDirFailure(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs for the failing log directory needs root")
	}
	t.Parallel()
	failing := t.TempDir()
	if err := syscall.Mount("tmpfs", failing, "tmpfs", 0, "size=33554432,mode=0755"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(failing, syscall.MNT_DETACH) })
	c := harness.StartCluster(t, 3, harness.ClusterOptions{ExtraLogDirs: func(id int) []string {
		if id == 1 {
			return []string{failing}
		}
		return []string{t.TempDir()}
	}})
	ctx := testContext(t, 3*time.Minute)
	const topic, partitions = "jbod", 6

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000), kgo.RecordDeliveryTimeout(90*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := range partitions {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(p), []int32{1, int32(2 + p%2), int32(3 - p%2)}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "min.insync.replicas", kmsg.StringPtr("2")
	rt.Configs = append(rt.Configs, cfg)
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %v / %+v", err, resp)
	}
	observer := c.Brokers[1].Addr // node 2 answers Metadata throughout
	jbodWait(ctx, t, jbodMoveBound, "every partition led by node 1 with a full ISR", func() (bool, string) {
		m, err := rawMetadata(ctx, observer, topic)
		if err != nil || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != partitions {
			return false, fmt.Sprintf("metadata: %v", err)
		}
		for _, p := range m.Topics[0].Partitions {
			if p.Leader != 1 || len(p.ISR) != 3 {
				return false, fmt.Sprintf("partition %d leader %d isr %v", p.Partition, p.Leader, p.ISR)
			}
		}
		return true, ""
	})

	// Which of node 1's directories holds which partition (once it has
	// created every log: its metadata may trail node 2's).
	var inFailing, inHealthy []int32
	jbodWait(ctx, t, jbodMoveBound, "node 1 hosting every partition", func() (bool, string) {
		inFailing, inHealthy = nil, nil
		dirs, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
		if err != nil {
			return false, fmt.Sprintf("DescribeLogDirs: %v", err)
		}
		for dir, d := range dirs {
			for p := range d.Topics[topic] {
				if jbodSameDir(dir, failing) {
					inFailing = append(inFailing, p)
				} else {
					inHealthy = append(inHealthy, p)
				}
			}
		}
		return len(inFailing)+len(inHealthy) == partitions, fmt.Sprintf("%v (tmpfs) / %v", inFailing, inHealthy)
	})
	slices.Sort(inFailing)
	slices.Sort(inHealthy)
	if len(inFailing) == 0 || len(inHealthy) == 0 || len(inFailing)+len(inHealthy) != partitions {
		t.Fatalf("node 1 spread the partitions %v (tmpfs) / %v: want both directories used", inFailing, inHealthy)
	}
	t.Logf("node 1 holds partitions %v in the tmpfs directory and %v in the other", inFailing, inHealthy)

	// The producer: one record per partition per round, synchronously.
	var (
		mu     sync.Mutex
		acked  = map[int32][]int{}
		rounds int
		stop   = make(chan struct{})
		done   = make(chan struct{})
	)
	ackedTotal := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, a := range acked {
			n += len(a)
		}
		return n
	}
	go func() {
		defer close(done)
		for seq := 0; ; seq++ {
			select {
			case <-stop:
				return
			default:
			}
			recs := make([]*kgo.Record, partitions)
			for p := range recs {
				recs[p] = &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(strconv.Itoa(p) + ":" + strconv.Itoa(seq))}
			}
			results := cl.ProduceSync(ctx, recs...)
			mu.Lock()
			for _, r := range results {
				if r.Err == nil {
					acked[r.Record.Partition] = append(acked[r.Record.Partition], seq)
				}
			}
			rounds++
			mu.Unlock()
			if ctx.Err() != nil {
				return
			}
		}
	}()
	stopProducer := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}
	defer stopProducer()
	jbodWait(ctx, t, time.Minute, "300 acknowledged records before the fault", func() (bool, string) {
		n := ackedTotal()
		return n >= 300, fmt.Sprintf("%d acknowledged", n)
	})

	filled, err := jbodFill(failing)
	if err != nil {
		t.Fatal(err)
	}
	failedAt := time.Now()
	t.Logf("filled node 1's tmpfs directory (%d bytes of filler) after %d acknowledged records", filled, ackedTotal())

	var moved time.Duration
	jbodWait(ctx, t, jbodMoveBound, "the failed directory's partitions led elsewhere, node 1 offline in them", func() (bool, string) {
		m, err := rawMetadata(ctx, observer, topic)
		if err != nil || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != partitions {
			return false, fmt.Sprintf("metadata: %v", err)
		}
		for _, p := range m.Topics[0].Partitions {
			if slices.Contains(inHealthy, p.Partition) {
				if p.Leader != 1 {
					t.Fatalf("partition %d of node 1's healthy directory lost its leader: leader %d isr %v", p.Partition, p.Leader, p.ISR)
				}
				continue
			}
			if p.Leader == 1 || p.Leader < 0 || slices.Contains(p.ISR, 1) || !slices.Contains(p.OfflineReplicas, 1) {
				return false, fmt.Sprintf("partition %d leader %d isr %v offline %v", p.Partition, p.Leader, p.ISR, p.OfflineReplicas)
			}
		}
		moved = time.Since(failedAt)
		return true, ""
	})
	t.Logf("partitions %v moved to other leaders %v after the directory filled", inFailing, moved.Round(10*time.Millisecond))

	if err := harness.Probe(ctx, c.Brokers[0].Addr); err != nil {
		t.Fatalf("node 1 stopped answering after one of its two log directories failed: %v", err)
	}
	dirs, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
	if err != nil {
		t.Fatalf("DescribeLogDirs after the failure: %v", err)
	}
	for dir, d := range dirs {
		want := error(nil)
		if jbodSameDir(dir, failing) {
			want = kerr.KafkaStorageError
		}
		if !errors.Is(d.Err, want) && d.Err != want {
			t.Errorf("DescribeLogDirs on node 1: %s answered %v, want %v", dir, d.Err, want)
		}
	}

	// More rounds through the new leaders and node 1's healthy directory.
	after := ackedTotal()
	jbodWait(ctx, t, time.Minute, "120 more acknowledged records after the move", func() (bool, string) {
		n := ackedTotal()
		return n >= after+120, fmt.Sprintf("%d acknowledged", n)
	})
	stopProducer()
	mu.Lock()
	t.Logf("%d rounds, %d records acknowledged", rounds, jbodAcked(acked))
	mu.Unlock()
	for _, p := range inHealthy {
		if last := acked[p]; len(last) == 0 || last[len(last)-1] < after/partitions {
			t.Errorf("partition %d (node 1's healthy directory) took no record after the failure: last acknowledged %v", p, last[max(0, len(last)-3):])
		}
	}

	// Read back everything and look for every acknowledged record.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	offsets := map[int32]kgo.Offset{}
	for p := range int32(partitions) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[int32]map[int]int{}
	next := map[int32]int64{}
	caughtUp := func() bool {
		for p := range int32(partitions) {
			e, _ := ends.Lookup(topic, p)
			if next[p] < e.Offset {
				return false
			}
		}
		return true
	}
	for !caughtUp() {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back stalled at %v (ends %v)", next, ends)
		}
		fs.EachRecord(func(r *kgo.Record) {
			part, seqStr, _ := strings.Cut(string(r.Value), ":")
			seq, _ := strconv.Atoi(seqStr)
			if part != strconv.Itoa(int(r.Partition)) {
				t.Errorf("partition %d holds %q", r.Partition, r.Value)
			}
			if seen[r.Partition] == nil {
				seen[r.Partition] = map[int]int{}
			}
			seen[r.Partition][seq]++
			next[r.Partition] = r.Offset + 1
		})
	}
	lost, dups := 0, 0
	for p, seqs := range acked {
		for _, s := range seqs {
			if seen[p][s] == 0 {
				lost++
				if lost <= 10 {
					t.Errorf("lost: acknowledged record %d:%d not read back", p, s)
				}
			}
		}
	}
	for _, m := range seen {
		for _, n := range m {
			dups += max(n-1, 0)
		}
	}
	t.Logf("read back: %d acknowledged, %d lost, %d duplicated", jbodAcked(acked), lost, dups)
	if lost > 0 {
		t.Fatalf("%d acknowledged records lost", lost)
	}
}

// jbodAcked counts the acknowledged records.
func jbodAcked(acked map[int32][]int) int {
	n := 0
	for _, a := range acked {
		n += len(a)
	}
	return n
}

// jbodWait polls cond every 100 ms until it holds, failing the test with
// its last state after limit.
func jbodWait(ctx context.Context, t *testing.T, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("not within %v: %s (%s)", limit, what, state)
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// jbodSameDir reports whether two paths name the same directory.
func jbodSameDir(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}

// jbodFill writes a filler file into dir until its file system refuses
// more (ENOSPC), and returns the bytes written.
func jbodFill(dir string) (int64, error) {
	f, err := os.OpenFile(filepath.Join(dir, "jbod-filler"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var total int64
	for _, size := range []int{1 << 20, 4096} {
		buf := make([]byte, size)
		for {
			k, err := f.Write(buf)
			total += int64(k)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				return total, err
			}
		}
	}
	return total, nil
}
