package kafkaref_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// produceFetch produces n records with acks=all to topic and reads them back in order.
func produceFetch(t *testing.T, addrs []string, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		r := &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("value-%d", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	// Each value once; within a partition in the order produced.
	seen := make(map[string]bool)
	last := make(map[int32]int)
	for len(seen) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("fetched %d of %d records: %v", len(seen), n, err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Errorf("fetch %s[%d]: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			var i int
			if _, err := fmt.Sscanf(string(r.Value), "value-%d", &i); err != nil || seen[string(r.Value)] {
				t.Fatalf("unexpected or duplicate record %q at %s[%d]@%d", r.Value, r.Topic, r.Partition, r.Offset)
			}
			if prev, ok := last[r.Partition]; ok && i < prev {
				t.Fatalf("partition %d: value-%d after value-%d", r.Partition, i, prev)
			}
			last[r.Partition] = i
			seen[string(r.Value)] = true
		})
	}
}

// alive reports whether pid is a running process. A JVM that kafka-ref.sh started is
// reparented to init when the script exits, so after it ends it can stay a zombie
// until init reaps it; a zombie counts as stopped.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

func TestSingleNodeProduceFetchStop(t *testing.T) {
	k := kafkaref.Start(t, kafkaref.Options{})
	if len(k.Addrs()) != 1 || len(k.Pids()) != 1 {
		t.Fatalf("addrs %v pids %v, want one of each", k.Addrs(), k.Pids())
	}
	// Auto-creation with num.partitions=1, as samsa.
	produceFetch(t, k.Addrs(), "kafkaref-auto", 20)
	adm := kadm.NewClient(mustClient(t, k.Addrs()))
	td, err := adm.ListTopics(context.Background(), "kafkaref-auto")
	if err != nil {
		t.Fatal(err)
	}
	if p := len(td["kafkaref-auto"].Partitions); p != 1 {
		t.Errorf("auto-created topic has %d partitions, want 1", p)
	}

	// The CLI tools run from the same jars.
	out, err := kafkaref.Tool(t, "kafka-topics", "--bootstrap-server", k.Bootstrap(), "--list").CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-topics --list: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "kafkaref-auto") {
		t.Errorf("kafka-topics --list = %q, want kafkaref-auto", out)
	}

	pid := k.Pids()[0]
	k.Stop()
	if alive(pid) {
		t.Errorf("pid %d still alive after Stop", pid)
	}
	if _, err := os.Stat(k.Dir() + "/pids"); !os.IsNotExist(err) {
		t.Errorf("pids file still present after Stop: %v", err)
	}
	k.Stop() // idempotent
}

func TestThreeNodesReplicate(t *testing.T) {
	if testing.Short() {
		t.Skip("three JVMs: skipped with -short")
	}
	k := kafkaref.Start(t, kafkaref.Options{Nodes: 3})
	if len(k.Addrs()) != 3 {
		t.Fatalf("addrs %v, want 3", k.Addrs())
	}
	adm := kadm.NewClient(mustClient(t, k.Addrs()))
	ctx := context.Background()
	resp, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": new("2")}, "kafkaref-rf3")
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	produceFetch(t, k.Addrs(), "kafkaref-rf3", 30)
	td, err := adm.ListTopics(ctx, "kafkaref-rf3")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range td["kafkaref-rf3"].Partitions {
		if len(p.ISR) != 3 {
			t.Errorf("partition %d ISR %v, want 3 replicas", p.Partition, p.ISR)
		}
	}
	pids := k.Pids()
	k.Stop()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d still alive after Stop", pid)
		}
	}
}

func mustClient(t *testing.T, addrs []string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
