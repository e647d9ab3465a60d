package compattests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// moveLeader makes node the leader of topic's partition 0: a reorder of
// its replicas (a reassignment that adds nothing completes at once) puts
// node first, and a PREFERRED election elects it. It returns the new
// leader epoch.
func moveLeader(t *testing.T, ctx context.Context, cl *kgo.Client, addrs []string, topic string, replicas []int32) int32 {
	t.Helper()
	adm := kadm.NewClient(cl)
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, replicas)
	// A retriable answer (NOT_CONTROLLER while the quorum elects under
	// load, REQUEST_TIMED_OUT) is asked again, as an admin tool retries;
	// any other error fails the test at once.
	var last error
	if !pollUntil(60*time.Second, func() bool {
		res, err := adm.AlterPartitionAssignments(ctx, req)
		if err == nil {
			res.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
				if err == nil {
					err = r.Err
				}
			})
		}
		if err != nil && !kerr.IsRetriable(err) && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("AlterPartitionAssignments %v: %v", replicas, err)
		}
		last = err
		return err == nil
	}) {
		t.Fatalf("AlterPartitionAssignments %v: still failing after 60 s: %v", replicas, last)
	}
	var epoch int32
	if !pollUntil(60*time.Second, func() bool {
		if _, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}}); err != nil {
			return false
		}
		for _, a := range addrs {
			m, err := rawMetadata(ctx, a, topic)
			if err != nil || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 1 {
				continue
			}
			p := m.Topics[0].Partitions[0]
			if p.Leader == replicas[0] {
				epoch = p.LeaderEpoch
				return true
			}
		}
		return false
	}) {
		t.Fatalf("%s-0: node %d did not become leader", topic, replicas[0])
	}
	return epoch
}

var (
	becomingLeaderLine = regexp.MustCompile(`msg="becoming leader" .*?topic=(\S+) partition=(\d+) leader_epoch=(\d+)`)
	truncationLine     = regexp.MustCompile(`msg="follower log diverges from leader; truncating" .*?topic=(\S+) partition=(\d+) .*truncate_to=(\d+)`)
	caughtUpLine       = regexp.MustCompile(`msg="controller: metadata caught up with the quorum; publishing" .*?offset=(\d+) coalesced_changes=(\d+) since_start=(\S+)`)
)

// TestRestartIgnoresReplayedLeadership is docs/DURABILITY.md finding 3:
// a restarting node replays the metadata log it kept on disk before it
// learns what the quorum committed since, and it used to reconcile its
// replicas against each replayed image: an old image naming it leader at
// an old epoch made it assign that epoch at its log end (which wiped the
// newer epochs of its leader-epoch cache until the storage guard) and act,
// for a moment, as that epoch's leader. Here node 1 leads restart-epochs-0
// at epoch E0; leadership moves to node 2 while node 1 runs (node 1 copies
// records of that newer epoch), node 1 is SIGKILLed, leadership moves to
// node 3 while it is down, and node 1 restarts. Checked: node 1's new run
// never becomes leader of the partition at an old epoch and never hits the
// stale-epoch guard (its log lines), it coalesces the replayed changes,
// it truncates nothing below what was acknowledged before the kill, and,
// made leader again, it serves every acknowledged record exactly once and
// in order.
func TestRestartIgnoresReplayedLeadership(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t, 3, harness.ClusterOptions{Env: []string{
		"KAFKA_BROKER_SESSION_TIMEOUT_MS=3000", "KAFKA_BROKER_HEARTBEAT_INTERVAL_MS=500",
		"KAFKA_AUTO_LEADER_REBALANCE_ENABLE=false",
	}})
	ctx := testContext(t, 4*time.Minute)
	const topic = "restart-epochs"
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000), kgo.RecordDeliveryTimeout(90*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createAssigned(ctx, t, cl, topic, []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	if !pollUntil(60*time.Second, func() bool {
		l, isr := partitionState(ctx, c.Brokers[1].Addr, topic)
		return l == 1 && len(isr) == 3
	}) {
		t.Fatal("restart-epochs-0: no leader 1 with a full ISR")
	}
	next := 0
	produce := func(n int) {
		t.Helper()
		for range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(next))}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", next, err)
			}
			next++
		}
	}
	produce(100)
	e1 := moveLeader(t, ctx, cl, c.Addrs(), topic, []int32{2, 3, 1})
	produce(100)
	// acks=all with node 1 in the ISR: node 1 holds the records of epoch e1.
	if _, isr := partitionState(ctx, c.Brokers[1].Addr, topic); len(isr) != 3 {
		t.Fatalf("ISR %v after the records of epoch %d, want all three nodes", isr, e1)
	}
	ackedBeforeKill := next
	c.Brokers[0].Kill(t)
	e2 := moveLeader(t, ctx, cl, c.Addrs()[1:], topic, []int32{3, 2, 1})
	produce(100)

	start := time.Now()
	c.Brokers[0].Restart(t)
	restart := time.Since(start)
	if !pollUntil(90*time.Second, func() bool {
		_, isr := partitionState(ctx, c.Brokers[2].Addr, topic)
		return len(isr) == 3
	}) {
		_, isr := partitionState(ctx, c.Brokers[2].Addr, topic)
		t.Fatalf("node 1 did not rejoin the ISR after its restart: %v", isr)
	}
	t.Logf("leader epochs: node 2 at %d while node 1 ran, node 3 at %d while it was down; node 1 ready %v after its restart",
		e1, e2, restart.Round(time.Millisecond))

	out := c.Brokers[0].LastRunOutput()
	for _, m := range becomingLeaderLine.FindAllStringSubmatch(out, -1) {
		if m[1] == topic {
			t.Errorf("restarted node 1 became leader of %s-%s at epoch %s (the current epoch is %d): %s", topic, m[2], m[3], e2, m[0])
		}
	}
	if strings.Contains(out, "ignoring leader epoch older than the newest in the cache") {
		t.Errorf("restarted node 1 was asked to lead at a stale epoch:\n%s", grepLines(out, "ignoring leader epoch older"))
	}
	for _, m := range truncationLine.FindAllStringSubmatch(out, -1) {
		if to, _ := strconv.Atoi(m[3]); m[1] == topic && to < ackedBeforeKill {
			t.Errorf("restarted node 1 truncated acknowledged records (%d were acknowledged before the kill): %s", ackedBeforeKill, m[0])
		}
	}
	if m := caughtUpLine.FindStringSubmatch(out); m == nil {
		t.Errorf("no catch-up line in the restarted node's output")
	} else {
		t.Logf("node 1 published its first image at offset %s after %s, %s replayed changes coalesced", m[1], m[3], m[2])
	}

	// Node 1 leads again and serves everything that was acknowledged.
	moveLeader(t, ctx, cl, c.Addrs(), topic, []int32{1, 2, 3})
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers[0].Addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []int
	for len(got) < next {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("lost: read %d of %d acknowledged records from node 1", len(got), next)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v, _ := strconv.Atoi(string(r.Value))
			got = append(got, v)
		})
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("record %d holds %d (duplicated or reordered): %v", i, v, got[max(0, i-3):min(len(got), i+3)])
		}
	}
}

// grepLines returns the lines of out that contain s.
func grepLines(out, s string) string {
	var lines []string
	for l := range strings.SplitSeq(out, "\n") {
		if strings.Contains(l, s) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// TestSingleNodeRestartIsQuick: the catch-up gate of a restarting node
// (it publishes metadata once its own registration is in its image) costs
// a lone node nothing noticeable: it is its own quorum and registers with
// itself as soon as Raft elected it.
func TestSingleNodeRestartIsQuick(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 2*time.Minute)
	cl, adm := newAdmin(t, b.Addr)
	createTopicKadm(t, ctx, adm, "quick-restart", 8, nil)
	for i := range 50 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "quick-restart", Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	b.Kill(t)
	start := time.Now()
	b.Restart(t)
	took := time.Since(start)
	m := caughtUpLine.FindStringSubmatch(b.LastRunOutput())
	if m == nil {
		t.Fatalf("no catch-up line in the restarted node's output:\n%s", b.LastRunOutput())
	}
	t.Logf("single node: ready %v after the restart; first image published %s after the controller started (%s changes coalesced)",
		took.Round(time.Millisecond), m[3], m[2])
	if d, err := time.ParseDuration(m[3]); err != nil || d > 10*time.Second {
		t.Errorf("the catch-up of a lone node took %s", m[3])
	}
	if took > 30*time.Second {
		t.Errorf("a lone node took %v to restart", took)
	}
	if !slices.Contains(topicNames(t, ctx, adm), "quick-restart") {
		t.Error("topic lost across the restart")
	}
}

// topicNames lists the cluster's topics.
func topicNames(t *testing.T, ctx context.Context, adm *kadm.Client) []string {
	t.Helper()
	td, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return td.Names()
}

// TestBrokerOnlyDamagedMetadataStore (issue 13): one controller-only node
// and one broker-only node (a layout Kafka allows; a lone controller-only
// voter used to open no controller listener, so no broker could join it).
// The broker's metadata store (its Raft state,
// __samsa_metadata/raft/raft.db) is damaged while it is down; it starts
// again: the damaged state is moved aside (not deleted), the node fetches
// the metadata from the controller, and its partition data is untouched:
// every record written before is read back from it.
func TestBrokerOnlyDamagedMetadataStore(t *testing.T) {
	t.Parallel()
	c := harness.StartSplitCluster(t, 1, 1, harness.ClusterOptions{})
	ctx := testContext(t, 2*time.Minute)
	b := c.Brokers[1]
	cl, adm := newAdmin(t, b.Addr)
	if r, err := adm.CreateTopic(ctx, 2, 1, nil, "damaged-meta"); err != nil || r.Err != nil {
		t.Fatalf("CreateTopic: %v / %v", err, r.Err)
	}
	waitTopicReady(t, ctx, adm, "damaged-meta", 2)
	for i := range 40 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "damaged-meta", Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	b.Stop(t)
	db := filepath.Join(b.Dir, "__samsa_metadata", "raft", "raft.db")
	raw, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for i := range min(2*4096, len(raw)) {
		raw[i] = byte(i*7 + 0xa5) // both bbolt meta pages
	}
	if err := os.WriteFile(db, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	b.Restart(t)
	if !strings.Contains(b.LastRunOutput(), "moved it aside and fetching the metadata from the quorum again") {
		t.Errorf("no repair line in the restarted broker's output")
	}
	if aside, _ := filepath.Glob(filepath.Join(b.Dir, "__samsa_metadata", "raft.damaged-*")); len(aside) != 1 {
		t.Errorf("damaged metadata store set aside as %v, want one dir", aside)
	}
	_, adm = newAdmin(t, b.Addr)
	got := 0
	for _, recs := range consumeAll(t, ctx, b.Addr, adm, "damaged-meta") {
		got += len(recs)
	}
	if got != 40 {
		t.Fatalf("read %d of 40 records back from the repaired broker", got)
	}
}
