package faults

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStaleLeaderResetsResumingConsumer reproduces the mechanism behind
// docs/DURABILITY.md finding 16 (SAMSA_FAULTS_F16_REPRO=1; about a minute,
// so not in CI). The nemesis cuts a node off from the other nodes only:
// clients still reach it, and it keeps its last metadata image, so it
// still answers as the leader of its partitions (as an isolated Kafka
// broker does: nothing fences a broker from its own side). A franz-go
// consumer whose metadata still names it resumes at an offset committed
// under the new leader, with the new leader's epoch:
//
//  1. OffsetForLeaderEpoch(current = the stale leader's epoch, epoch = the
//     new one) at the stale leader answers -1/-1 (it never saw that epoch;
//     Kafka 4.4 answers the same, compat-tests/diff "epoch-5-current-0");
//     with nothing consumed yet franz-go keeps the committed offset;
//  2. Fetch at that offset is past the stale leader's log end:
//     OFFSET_OUT_OF_RANGE (Kafka 4.4 the same, "out-of-range-current-epoch");
//  3. an OFFSET_OUT_OF_RANGE on a partition's first fetch sends franz-go
//     v1.22.3 to its ConsumeResetOffset: the log start for "earliest".
//
// The consumer then receives again every record below the commit. The Java
// consumer records the committed offset's epoch and refreshes metadata
// older than it before validating, so it would go to the new leader. Here
// the consumer's dialer reaches only the stale leader, which makes the
// stale metadata certain; in TestKIP848GroupUnderFaults a member that kept
// fetching from the cut-off node (no error, so no metadata refresh) is in
// the same place when a partition it led is assigned to that member.
func TestStaleLeaderResetsResumingConsumer(t *testing.T) {
	if os.Getenv("SAMSA_FAULTS_F16_REPRO") == "" {
		t.Skip("a reproduction, not a CI test: set SAMSA_FAULTS_F16_REPRO=1")
	}
	c := StartCluster(t, Config{Nodes: 3})
	if c.Net == nil {
		t.Skip("needs a network that can cut links")
	}
	ctx := context.Background()
	const topic = "f16x"
	if err := CreateTopic(ctx, c.Addrs(), QueueOptions{Topic: topic, Partitions: 1}, 3); err != nil {
		t.Fatal(err)
	}
	only := func(allowed ...string) func(ctx context.Context, network, host string) (net.Conn, error) {
		return func(ctx context.Context, network, host string) (net.Conn, error) {
			for _, a := range allowed {
				if a == host {
					var d net.Dialer
					return d.DialContext(ctx, network, host)
				}
			}
			return nil, fmt.Errorf("experiment: %s not reachable", host)
		}
	}
	leaderOf := func(ctx context.Context, addrs []string, dial func(context.Context, string, string) (net.Conn, error)) (int32, int32, error) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.Dialer(dial))
		if err != nil {
			return -1, -1, err
		}
		defer cl.Close()
		md, err := kadm.NewClient(cl).Metadata(ctx, topic)
		if err != nil {
			return -1, -1, err
		}
		p := md.Topics[topic].Partitions[0]
		return p.Leader, p.LeaderEpoch, nil
	}
	produce := func(addrs []string, dial func(context.Context, string, string) (net.Conn, error), n int, from int) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.Dialer(dial), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(from + i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var d net.Dialer
	produce(c.Addrs(), d.DialContext, 100, 0)
	var oldLeader, oldEpoch int32
	err := pollUntil(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		var err error
		oldLeader, oldEpoch, err = leaderOf(ctx, c.Addrs(), d.DialContext)
		return err == nil && oldLeader > 0, err
	})
	if err != nil {
		t.Fatal(err)
	}
	stale := c.NodeByID(oldLeader)
	var rest []string
	var restIdx []int
	for _, n := range c.Nodes {
		if n != stale {
			rest = append(rest, n.Addr)
			restIdx = append(restIdx, n.ID-1)
		}
	}
	t.Logf("leader %d epoch %d at %s; cutting it off", oldLeader, oldEpoch, stale.Addr)
	if err := c.Net.Partition([][]int{{stale.ID - 1}, restIdx}); err != nil {
		t.Fatal(err)
	}
	var newLeader, newEpoch int32
	err = pollUntil(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		var err error
		newLeader, newEpoch, err = leaderOf(ctx, rest, only(rest...))
		return err == nil && newLeader > 0 && newLeader != oldLeader, err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("new leader %d epoch %d", newLeader, newEpoch)
	produce(rest, only(rest...), 100, 100)

	// The consumer reaches only the stale leader, and resumes at 150
	// committed under the new leader's epoch.
	f, err := os.Create(t.TempDir() + "/client.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(stale.Addr), kgo.Dialer(only(stale.Addr)),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(150).WithEpoch(newEpoch)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.WithLogger(kgo.BasicLogger(f, kgo.LogLevelDebug, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	fs := cl.PollFetches(pctx)
	fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch error %s/%d: %v", tp, p, err) })
	first := int64(-1)
	fs.EachRecord(func(r *kgo.Record) {
		if first < 0 {
			first = r.Offset
		}
	})
	t.Logf("first record offset %d (resumed at 150 committed in epoch %d; stale leader epoch %d)", first, newEpoch, oldEpoch)
	if first != 0 {
		b, _ := os.ReadFile(f.Name())
		t.Fatalf("first record at %d, want 0 (the reset this reproduces); client log:\n%s", first, b)
	}
}
