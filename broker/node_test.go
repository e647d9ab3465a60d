package broker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/config"
)

func startTestNode(t testing.TB, dir string, overrides ...string) *Node {
	t.Helper()
	args := []string{"--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "log.dirs=" + dir}
	for _, o := range overrides {
		args = append(args, "--override", o)
	}
	cfg, err := config.Load(args, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := StartNode(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func closeTestNode(t testing.TB, n *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestNodeProduceFetchRestart drives an in-process node over real sockets
// with franz-go: create a topic, produce, consume by offset, restart on the
// same dir, consume again.
func TestNodeProduceFetchRestart(t *testing.T) {
	dir := t.TempDir()
	n := startTestNode(t, dir)
	addr := n.Addrs()[0].String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t1"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "t1"); err != nil {
		t.Fatal(err)
	}
	const per = 200
	for p := int32(0); p < 3; p++ {
		for i := 0; i < per; i++ {
			r := &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cl.Close()
	check := func(addr string) {
		t.Helper()
		c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			"t1": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()},
		}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		next := map[int32]int{}
		for got := 0; got < 3*per; {
			fs := c.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("timed out after %d records", got)
			}
			fs.EachError(func(_ string, p int32, err error) { t.Fatalf("partition %d: %v", p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				want := fmt.Sprintf("p%d-%d", r.Partition, next[r.Partition])
				if !bytes.Equal(r.Value, []byte(want)) || r.Offset != int64(next[r.Partition]) {
					t.Fatalf("got %q at offset %d, want %q at %d", r.Value, r.Offset, want, next[r.Partition])
				}
				next[r.Partition]++
				got++
			})
		}
	}
	check(addr)
	closeTestNode(t, n)

	n = startTestNode(t, dir)
	defer closeTestNode(t, n)
	check(n.Addrs()[0].String())
}
