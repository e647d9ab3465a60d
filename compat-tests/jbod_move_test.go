package compattests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// jbodReplicaDir returns the log directory holding broker's current (not
// future) replica of topic's partition, whether a future replica exists,
// and the state for a failure message.
func jbodReplicaDir(ctx context.Context, adm *kadm.Client, broker int32, topic string, partition int32) (dir string, future bool, state string) {
	dirs, err := adm.DescribeBrokerLogDirs(ctx, broker, kadm.TopicsSet{topic: {partition: {}}})
	if err != nil {
		return "", false, err.Error()
	}
	var parts []string
	for d, ld := range dirs {
		p, ok := ld.Topics[topic][partition]
		if !ok {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s future=%v size=%d lag=%d", d, p.IsFuture, p.Size, p.OffsetLag))
		if p.IsFuture {
			future = true
		} else {
			dir = d
		}
	}
	return dir, future, strings.Join(parts, "; ")
}

// TestJBODAlterReplicaLogDirs (KIP-113): a partition is moved between the
// two log directories of a samsa node (kadm's AlterReplicaLogDirs) while
// an idempotent franz-go producer writes to it and a consumer reads it:
// every acknowledged record is read exactly once and in order (anomalies
// checked: lost, duplicated, reordered), DescribeLogDirs shows the
// replica in the target directory afterwards; then the node is killed
// just after being asked to move it back, and after the restart it
// serves every record from one directory and moves it again.
func TestJBODAlterReplicaLogDirs(t *testing.T) {
	t.Parallel()
	extra := t.TempDir()
	c := harness.StartCluster(t, 1, harness.ClusterOptions{ExtraLogDirs: func(int) []string { return []string{extra} }})
	b := c.Brokers[0]
	ctx := testContext(t, 3*time.Minute)
	const topic = "moving"
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	jbodWait(ctx, t, 30*time.Second, "topic created", func() (bool, string) {
		r, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": kgoStr("262144")}, topic)
		if err == nil {
			err = r.Err
		}
		return err == nil || strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS"), fmt.Sprint(err)
	})
	var from string
	jbodWait(ctx, t, 30*time.Second, "replica listed", func() (bool, string) {
		d, _, state := jbodReplicaDir(ctx, adm, 1, topic, 0)
		from = d
		return d != "", state
	})
	to := b.Dir
	if jbodSameDir(from, b.Dir) {
		to = extra
	}
	abs, err := filepath.Abs(to)
	if err != nil {
		t.Fatal(err)
	}

	// The producer: values are sequence numbers; acked records are
	// recorded in ack order.
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var mu sync.Mutex
	acked := map[int]bool{}
	var produceErr error
	stop := make(chan struct{})
	produced := make(chan struct{})
	value := make([]byte, 200)
	go func() {
		defer close(produced)
		for i := 0; i < 2_000_000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := append([]byte(strconv.Itoa(i)+":"), value...)
			prod.Produce(ctx, &kgo.Record{Value: v}, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if produceErr == nil {
						produceErr = err
					}
					return
				}
				acked[i] = true
			})
			if i%1000 == 999 {
				if err := prod.Flush(ctx); err != nil {
					return
				}
			}
		}
	}()
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	// The consumer, from the start, while records come.
	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var seen []int
	var offsets []int64
	poll := func() {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		fs := cons.PollFetches(pctx)
		fs.EachRecord(func(r *kgo.Record) {
			n, _ := strconv.Atoi(strings.SplitN(string(r.Value), ":", 2)[0])
			seen = append(seen, n)
			offsets = append(offsets, r.Offset)
		})
	}
	jbodWait(ctx, t, 60*time.Second, "20000 records acknowledged before the move", func() (bool, string) {
		poll()
		return ackedCount() >= 20000, fmt.Sprint(ackedCount())
	})

	rs, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, kadm.AlterReplicaLogDirsReq{abs: kadm.TopicsSet{topic: {0: {}}}})
	if err != nil {
		t.Fatal(err)
	}
	rs.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		if r.Err != nil {
			t.Fatalf("AlterReplicaLogDirs %s-%d to %s: %v", r.Topic, r.Partition, r.Dir, r.Err)
		}
	})
	sawFuture := false
	jbodWait(ctx, t, 90*time.Second, "replica moved to "+abs, func() (bool, string) {
		poll()
		d, future, state := jbodReplicaDir(ctx, adm, 1, topic, 0)
		sawFuture = sawFuture || future
		return jbodSameDir(d, abs) && !future, state
	})
	moved := ackedCount()
	jbodWait(ctx, t, 60*time.Second, "5000 more records acknowledged after the move", func() (bool, string) {
		poll()
		return ackedCount() >= moved+5000, fmt.Sprint(ackedCount())
	})
	close(stop)
	<-produced
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if produceErr != nil {
		t.Errorf("produce error during the move: %v", produceErr)
	}
	total := len(acked)
	mu.Unlock()
	check := func(what string, seen []int, offsets []int64) {
		t.Helper()
		counts := map[int]int{}
		reordered := 0
		for i, n := range seen {
			counts[n]++
			if i > 0 && (n <= seen[i-1] || offsets[i] != offsets[i-1]+1) {
				reordered++
			}
		}
		lost, dups := 0, 0
		mu.Lock()
		for n := range acked {
			if counts[n] == 0 {
				lost++
			}
		}
		mu.Unlock()
		for _, k := range counts {
			dups += max(k-1, 0)
		}
		t.Logf("%s: %d acknowledged, %d read, %d lost, %d duplicated, %d out of order", what, total, len(seen), lost, dups, reordered)
		if lost > 0 || dups > 0 || reordered > 0 {
			t.Fatalf("%s: %d lost, %d duplicated, %d out of order", what, lost, dups, reordered)
		}
	}
	jbodWait(ctx, t, 60*time.Second, "every acknowledged record read", func() (bool, string) {
		poll()
		return len(seen) >= total, fmt.Sprintf("%d of %d", len(seen), total)
	})
	check("live consumer", seen, offsets)
	t.Logf("moved %s-0 from %s to %s with %d records acknowledged at the request; a future replica was listed during the move: %v", topic, from, abs, 20000, sawFuture)

	// Killed (SIGKILL) right after it is asked to move the partition
	// back, whether the move is copying, swapping or done: after the
	// restart the partition is in one directory, whole, the interrupted
	// move starts again (as Kafka resumes a future replica; asking again
	// is harmless) and completes, and no future or half-moved directory
	// is left.
	cons.Close()
	back, err := filepath.Abs(from)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, kadm.AlterReplicaLogDirsReq{back: kadm.TopicsSet{topic: {0: {}}}}); err != nil {
		t.Fatal(err)
	}
	b.Kill(t)
	cl.Close()
	b.Restart(t)
	cl2, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	adm2 := kadm.NewClient(cl2)
	var after string
	jbodWait(ctx, t, 60*time.Second, "replica listed after the restart", func() (bool, string) {
		d, future, state := jbodReplicaDir(ctx, adm2, 1, topic, 0)
		after = d
		return d != "" && !future, state
	})
	t.Logf("after a kill during the move back the replica is in %s", after)
	seen, offsets = nil, nil
	cons = cl2
	jbodWait(ctx, t, 60*time.Second, "every record read after the restart", func() (bool, string) {
		poll()
		return len(seen) >= total, fmt.Sprintf("%d of %d", len(seen), total)
	})
	check("after a kill and restart", seen, offsets)
	if _, err := adm2.AlterBrokerReplicaLogDirs(ctx, 1, kadm.AlterReplicaLogDirsReq{back: kadm.TopicsSet{topic: {0: {}}}}); err != nil {
		t.Fatal(err)
	}
	jbodWait(ctx, t, 60*time.Second, "replica moved back to "+back, func() (bool, string) {
		d, future, state := jbodReplicaDir(ctx, adm2, 1, topic, 0)
		return jbodSameDir(d, back) && !future, state
	})
	if _, err := os.Stat(filepath.Join(abs, topic+"-0")); !os.IsNotExist(err) {
		t.Errorf("%s still holds %s-0 after the move back: %v", abs, topic, err)
	}
	for _, d := range []string{from, extra, b.Dir} {
		names, _ := os.ReadDir(d)
		for _, n := range names {
			if strings.HasPrefix(n.Name(), topic+"-0.") && !strings.HasSuffix(n.Name(), "-delete") {
				t.Errorf("%s left in %s after the restart", n.Name(), d)
			}
		}
	}
}

// TestJBODReassignLogDirsTools runs kafka-reassign-partitions --execute
// with "log_dirs" in its JSON, then --verify, and kafka-log-dirs
// --describe, against samsa and Kafka 4.4 with two log directories each,
// and checks the same outcome: the tool reports the move started and then
// completed, and kafka-log-dirs lists the partition in the target
// directory.
func TestJBODReassignLogDirsTools(t *testing.T) {
	t.Parallel()
	kafkaref.Require(t)
	run := func(t *testing.T, bootstrap string, dirs [2]string) {
		ctx := testContext(t, 3*time.Minute)
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.DefaultProduceTopic("tools-moved"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		jbodWait(ctx, t, 30*time.Second, "topic created", func() (bool, string) {
			r, err := adm.CreateTopic(ctx, 1, 1, nil, "tools-moved")
			if err == nil {
				err = r.Err
			}
			return err == nil || strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS"), fmt.Sprint(err)
		})
		for i := 0; i < 1000; i++ {
			cl.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		var from string
		jbodWait(ctx, t, 30*time.Second, "replica listed", func() (bool, string) {
			d, _, state := jbodReplicaDir(ctx, adm, 1, "tools-moved", 0)
			from = d
			return d != "", state
		})
		to := dirs[0]
		if jbodSameDir(from, dirs[0]) {
			to = dirs[1]
		}
		plan, _ := json.Marshal(map[string]any{"version": 1, "partitions": []map[string]any{
			{"topic": "tools-moved", "partition": 0, "replicas": []int{1}, "log_dirs": []string{to}},
		}})
		file := filepath.Join(t.TempDir(), "plan.json")
		if err := os.WriteFile(file, plan, 0o644); err != nil {
			t.Fatal(err)
		}
		tool := func(name string, args ...string) string {
			out, err := kafkaref.Tool(t, name, append([]string{"--bootstrap-server", bootstrap}, args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s %v: %v\n%s", name, args, err, out)
			}
			return string(out)
		}
		out := tool("kafka-reassign-partitions", "--execute", "--reassignment-json-file", file)
		t.Logf("--execute:\n%s", out)
		if !strings.Contains(out, "Successfully started partition reassignment") || !strings.Contains(out, "Successfully started moving log directory to "+to) {
			t.Fatalf("--execute did not start the reassignment and the log directory move:\n%s", out)
		}
		jbodWait(ctx, t, 60*time.Second, "--verify reports the move complete", func() (bool, string) {
			out := tool("kafka-reassign-partitions", "--verify", "--reassignment-json-file", file)
			return strings.Contains(out, "Reassignment of replica tools-moved-0-1 completed successfully"), out
		})
		out = tool("kafka-log-dirs", "--describe", "--topic-list", "tools-moved", "--broker-list", "1")
		t.Logf("kafka-log-dirs --describe:\n%s", out)
		var desc struct {
			Brokers []struct {
				Broker  int `json:"broker"`
				LogDirs []struct {
					LogDir     string `json:"logDir"`
					Partitions []struct {
						Partition string `json:"partition"`
						Size      int64  `json:"size"`
						IsFuture  bool   `json:"isFuture"`
					} `json:"partitions"`
				} `json:"logDirs"`
			} `json:"brokers"`
		}
		line := out[strings.Index(out, "{"):]
		if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &desc); err != nil {
			t.Fatalf("kafka-log-dirs output: %v\n%s", err, out)
		}
		found := ""
		for _, b := range desc.Brokers {
			for _, d := range b.LogDirs {
				for _, p := range d.Partitions {
					if p.Partition == "tools-moved-0" && !p.IsFuture {
						found = d.LogDir
						if p.Size == 0 {
							t.Errorf("partition listed with size 0 in %s", d.LogDir)
						}
					}
				}
			}
		}
		if !jbodSameDir(found, to) {
			t.Fatalf("kafka-log-dirs lists tools-moved-0 in %q, want %s", found, to)
		}
	}
	t.Run("samsa", func(t *testing.T) {
		t.Parallel()
		extra := t.TempDir()
		c := harness.StartCluster(t, 1, harness.ClusterOptions{ExtraLogDirs: func(int) []string { return []string{extra} }})
		a, _ := filepath.Abs(c.Brokers[0].Dir)
		e, _ := filepath.Abs(extra)
		run(t, c.Brokers[0].Addr, [2]string{a, e})
	})
	t.Run("kafka", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		d1, d2 := filepath.Join(root, "d1"), filepath.Join(root, "d2")
		k := kafkaref.Start(t, kafkaref.Options{Overrides: []string{"log.dirs=" + d1 + "," + d2}})
		run(t, k.Bootstrap(), [2]string{d1, d2})
	})
}

func kgoStr(s string) *string { return &s }
