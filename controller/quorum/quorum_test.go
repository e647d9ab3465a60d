package quorum

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/controller"
)

var quietLogger = slog.New(slog.DiscardHandler)

// testTimeout is the election timeout of the test clusters: short, but long
// enough that a loaded machine (-race, shared cores) rarely loses a lease.
// Tests still expect leadership to move at any time.
const testTimeout = 500 * time.Millisecond

func testLogger() *slog.Logger {
	if os.Getenv("QUORUM_TEST_LOG") != "" {
		return slog.Default()
	}
	return quietLogger
}

func testRand(seed uint64) io.Reader {
	var s [32]byte
	s[0] = byte(seed)
	return rand.NewChaCha8(s)
}

// testNode is one voter: its quorum, its controller, and what its
// OnChange saw.
type testNode struct {
	id    int32
	dir   string
	trans *raft.InmemTransport
	q     *Quorum
	c     *controller.Controller

	mu      sync.Mutex
	created map[string]int // topic name → times OnChange saw it appear
}

func (n *testNode) onChange(prev, next *controller.Image) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for name, t := range next.Topics {
		if old, ok := prev.Topics[name]; !ok || old.ID != t.ID {
			n.created[name]++
		}
	}
}

func (n *testNode) createdCount(name string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.created[name]
}

// testCluster is voters 1..n over raft's in-memory transport, each with its
// own raft.db and snapshots in a temp dir.
type testCluster struct {
	t       *testing.T
	nodes   map[int32]*testNode
	voters  []Voter
	timeout time.Duration
	tune    func(*Options)
}

func newTestCluster(t *testing.T, n int, timeout time.Duration, tune func(*Options)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, nodes: map[int32]*testNode{}, timeout: timeout, tune: tune}
	for i := 1; i <= n; i++ {
		tc.voters = append(tc.voters, Voter{ID: int32(i), Addr: "node" + strconv.Itoa(i)})
	}
	for _, v := range tc.voters {
		tc.nodes[v.ID] = &testNode{id: v.ID, dir: t.TempDir(), created: map[string]int{}}
	}
	for _, v := range tc.voters {
		tc.start(v.ID)
	}
	t.Cleanup(func() {
		for _, n := range tc.nodes {
			tc.stop(n.id)
		}
	})
	return tc
}

// start opens node id's quorum and controller from its dir and connects its
// transport to every running node.
func (tc *testCluster) start(id int32) {
	tc.t.Helper()
	n := tc.nodes[id]
	_, n.trans = raft.NewInmemTransport(raft.ServerAddress("node" + strconv.Itoa(int(id))))
	o := Options{NodeID: id, ClusterID: "c", Dir: n.dir, Voters: tc.voters, Transport: n.trans,
		ElectionTimeout: tc.timeout, Logger: testLogger().With("node", id)}
	if tc.tune != nil {
		tc.tune(&o)
	}
	q, err := Open(o)
	if err != nil {
		tc.t.Fatal(err)
	}
	n.q = q
	for _, other := range tc.nodes {
		if other.id != id && other.q != nil {
			n.trans.Connect(other.trans.LocalAddr(), other.trans)
			other.trans.Connect(n.trans.LocalAddr(), n.trans)
		}
	}
	n.c, err = controller.New(controller.Options{NodeID: id, ClusterID: "c", Quorum: q, Machine: q.Machine(),
		Rand: testRand(uint64(id)), Logger: quietLogger, DefaultPartitions: 1, DefaultReplicationFactor: 1, OnChange: n.onChange})
	if err != nil {
		tc.t.Fatal(err)
	}
}

func (tc *testCluster) stop(id int32) {
	n := tc.nodes[id]
	if n.q == nil {
		return
	}
	tc.isolate(id)
	n.c.Close()
	if err := n.q.Close(); err != nil {
		tc.t.Errorf("close node %d: %v", id, err)
	}
	n.trans.Close()
	n.q, n.c = nil, nil
}

// isolate cuts node id off from every other node, both ways.
func (tc *testCluster) isolate(id int32) {
	n := tc.nodes[id]
	n.trans.DisconnectAll()
	for _, other := range tc.nodes {
		if other.id != id && other.q != nil {
			other.trans.Disconnect(n.trans.LocalAddr())
		}
	}
}

// heal reconnects node id to every running node.
func (tc *testCluster) heal(id int32) {
	n := tc.nodes[id]
	for _, other := range tc.nodes {
		if other.id != id && other.q != nil {
			n.trans.Connect(other.trans.LocalAddr(), other.trans)
			other.trans.Connect(n.trans.LocalAddr(), n.trans)
		}
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not a wait for the condition
	}
}

// leader waits until exactly one running node among ids is the active
// controller and returns it.
func (tc *testCluster) leader(ids ...int32) *testNode {
	tc.t.Helper()
	if ids == nil {
		ids = slices.Sorted(maps.Keys(tc.nodes))
	}
	var l *testNode
	waitFor(tc.t, 30*time.Second, "an active controller", func() bool {
		l = nil
		count := 0
		for _, id := range ids {
			if n := tc.nodes[id]; n.q != nil && n.q.Leading() {
				l, count = n, count+1
			}
		}
		return count == 1
	})
	return l
}

// converged waits until every running node published the same image.
func (tc *testCluster) converged() *controller.Image {
	tc.t.Helper()
	var img *controller.Image
	waitFor(tc.t, 30*time.Second, "all nodes to publish the same image", func() bool {
		img = nil
		for _, n := range tc.nodes {
			if n.c == nil {
				continue
			}
			got := n.c.Image()
			if img == nil {
				img = got
				continue
			}
			if got.Offset != img.Offset || !reflect.DeepEqual(controller.ImageRecords(got), controller.ImageRecords(img)) {
				return false
			}
		}
		return true
	})
	return img
}

// mustCreate creates topic name through whichever node is the active
// controller, retrying on NOT_CONTROLLER (leadership may move at any time
// on a loaded machine). An earlier attempt that failed with NOT_CONTROLLER
// may have committed, so TOPIC_ALREADY_EXISTS on a retry is success.
func (tc *testCluster) mustCreate(name string, ids ...int32) {
	tc.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for retry := false; ; retry = true {
		code := createTopic(tc.leader(ids...).c, name)
		if code == 0 || retry && code == kerr.TopicAlreadyExists.Code {
			return
		}
		if code != kerr.NotController.Code || time.Now().After(deadline) {
			tc.t.Fatalf("create %s: %v", name, kerr.ErrorForCode(code))
		}
	}
}

// mustRegister registers broker id through the active controller.
func (tc *testCluster) mustRegister(id int32) {
	tc.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := tc.leader().c.RegisterBroker(controller.Broker{ID: id, Host: "h", Port: 9090 + id})
		if err == nil {
			return
		}
		if !errors.Is(err, controller.ErrNotController) || time.Now().After(deadline) {
			tc.t.Fatal(err)
		}
	}
}

func createTopic(c *controller.Controller, name string) int16 {
	res := c.CreateTopics([]controller.CreateTopic{{Name: name, NumPartitions: 1, ReplicationFactor: -1}}, false)
	return res[0].ErrorCode
}

func TestThreeVotersReplicate(t *testing.T) {
	tc := newTestCluster(t, 3, testTimeout, nil)
	for id := int32(1); id <= 3; id++ {
		tc.mustRegister(id)
	}
	for i := range 5 {
		tc.mustCreate(fmt.Sprintf("t%d", i))
	}
	img := tc.converged()
	l := tc.leader()
	if len(img.Topics) != 5 || len(img.Brokers) != 3 {
		t.Fatalf("image has %d topics and %d brokers, want 5 and 3", len(img.Topics), len(img.Brokers))
	}
	waitFor(t, 10*time.Second, "every node to know the active controller", func() bool {
		for _, n := range tc.nodes {
			if n.c.ActiveController() != l.id {
				return false
			}
		}
		return true
	})
}

// TestWriteOnFollower: a voter that is not the active controller refuses
// writes with NOT_CONTROLLER and commits nothing.
func TestWriteOnFollower(t *testing.T) {
	tc := newTestCluster(t, 3, testTimeout, nil)
	tc.mustRegister(1)
	before := tc.converged()
	l := tc.leader()
	for _, n := range tc.nodes {
		if n == l {
			continue
		}
		if code := createTopic(n.c, "f"); code != kerr.NotController.Code {
			t.Fatalf("create on follower %d: %v, want NOT_CONTROLLER", n.id, kerr.ErrorForCode(code))
		}
		// NOT_CONTROLLER replaces the follower's own verdict too: its image
		// may be stale.
		if code := createTopic(n.c, "bad/name"); code != kerr.NotController.Code {
			t.Fatalf("invalid create on follower %d: %v, want NOT_CONTROLLER", n.id, kerr.ErrorForCode(code))
		}
		if err := n.c.RegisterBroker(controller.Broker{ID: 7, Host: "h", Port: 9097}); !errors.Is(err, controller.ErrNotController) {
			t.Fatalf("register on follower: %v", err)
		}
	}
	if after := tc.converged(); after.Offset != before.Offset {
		t.Fatalf("offset moved from %d to %d on follower writes", before.Offset, after.Offset)
	}
}

// TestIsolatedLeaderStepsDown: a controller cut off from the majority
// stops acting as controller; a write on it fails; the majority elects a
// new one; after healing the old leader follows and nothing committed is
// lost or applied twice.
func TestIsolatedLeaderStepsDown(t *testing.T) {
	tc := newTestCluster(t, 3, testTimeout, nil)
	tc.mustRegister(1)
	tc.mustCreate("before")
	old := tc.leader()
	tc.isolate(old.id)
	// A write on the isolated leader cannot commit: it fails with
	// NOT_CONTROLLER once the leader's lease runs out, or at once if it
	// already stepped down.
	if code := createTopic(old.c, "lost"); code != kerr.NotController.Code {
		t.Fatalf("write on isolated leader: %v, want NOT_CONTROLLER", kerr.ErrorForCode(code))
	}
	waitFor(t, 10*time.Second, "the isolated leader to step down", func() bool { return !old.q.Leading() })
	var rest []int32
	for id := range tc.nodes {
		if id != old.id {
			rest = append(rest, id)
		}
	}
	tc.mustCreate("after", rest...)
	tc.heal(old.id)
	img := tc.converged()
	if img.Topics["before"] == nil || img.Topics["after"] == nil || img.Topics["lost"] != nil {
		t.Fatalf("topics after failover: %v", slices.Sorted(maps.Keys(img.Topics)))
	}
	for _, n := range tc.nodes {
		for _, name := range []string{"before", "after"} {
			if got := n.createdCount(name); got != 1 {
				t.Errorf("node %d saw %q created %d times", n.id, name, got)
			}
		}
	}
}

// TestFailoverUnderWrites: a stream of CreateTopics through whichever node
// leads, while leaders are isolated in turn; every acknowledged topic is on
// every node exactly once.
func TestFailoverUnderWrites(t *testing.T) {
	tc := newTestCluster(t, 3, testTimeout, nil)
	tc.mustRegister(1)
	var acked []string
	seq := 0
	write := func(n int) {
		for range n {
			l := tc.leader()
			name := fmt.Sprintf("w%d", seq)
			seq++
			switch code := createTopic(l.c, name); code {
			case 0:
				acked = append(acked, name)
			case kerr.NotController.Code:
				// ambiguous: may or may not be committed
			default:
				t.Fatalf("create %s: %v", name, kerr.ErrorForCode(code))
			}
		}
	}
	write(10)
	for round := range 3 {
		old := tc.leader()
		tc.isolate(old.id)
		write(10)
		// At least one write must commit without the isolated node.
		name := fmt.Sprintf("r%d", round)
		var rest []int32
		for id := range tc.nodes {
			if id != old.id {
				rest = append(rest, id)
			}
		}
		tc.mustCreate(name, rest...)
		acked = append(acked, name)
		tc.heal(old.id)
		t.Logf("round %d: isolated node %d", round, old.id)
	}
	img := tc.converged()
	for _, name := range acked {
		if img.Topics[name] == nil {
			t.Errorf("acknowledged topic %s lost", name)
		}
	}
	for _, n := range tc.nodes {
		for name := range img.Topics {
			if got := n.createdCount(name); got != 1 {
				t.Errorf("node %d saw %q created %d times", n.id, name, got)
			}
		}
	}
	t.Logf("%d of 40 writes acknowledged", len(acked))
}

// TestSnapshotCatchUp: a follower that was down while the leader
// snapshotted and compacted its log catches up from the leader's
// snapshot plus the tail; a full restart rebuilds the same image from each
// node's own snapshot and log.
func TestSnapshotCatchUp(t *testing.T) {
	tc := newTestCluster(t, 3, testTimeout, func(o *Options) {
		o.TrailingLogs = 2
		o.SnapshotThreshold = 1 << 30 // only explicit snapshots
	})
	tc.mustRegister(1)
	for i := range 10 {
		tc.mustCreate(fmt.Sprintf("a%d", i))
	}
	tc.converged()
	l := tc.leader()
	var follower *testNode
	for _, n := range tc.nodes {
		if n != l {
			follower = n
			break
		}
	}
	tc.stop(follower.id)
	for i := range 10 {
		tc.mustCreate(fmt.Sprintf("b%d", i))
	}
	waitFor(t, 30*time.Second, "a0 deleted", func() bool {
		res := tc.leader().c.DeleteTopics([]string{"a0"}, nil)
		return res[0].ErrorCode == 0 || res[0].ErrorCode == kerr.UnknownTopicOrPartition.Code
	})
	// Every running node snapshots and compacts its log (a leader change
	// in between must not let the follower catch up from a log).
	for _, n := range tc.nodes {
		if n.q != nil {
			waitFor(t, 30*time.Second, "a snapshot", func() bool {
				return n.q.Raft().Snapshot().Error() == nil
			})
		}
	}
	tc.start(follower.id)
	img := tc.converged()
	if len(img.Topics) != 19 || img.Topics["a0"] != nil {
		t.Fatalf("topics after catch-up: %v", slices.Sorted(maps.Keys(img.Topics)))
	}
	// The leader kept 2 entries after its snapshot, so the follower can
	// only have caught up by installing it.
	if got := follower.q.Raft().Stats()["last_snapshot_index"]; got == "0" {
		t.Fatalf("follower caught up without a snapshot")
	}
	for id := range tc.nodes {
		tc.stop(id)
	}
	for id := range tc.nodes {
		tc.nodes[id].created = map[string]int{}
		tc.start(id)
	}
	tc.leader()
	again := tc.converged()
	if again.Offset != img.Offset || !reflect.DeepEqual(controller.ImageRecords(again), controller.ImageRecords(img)) {
		t.Fatalf("image after full restart differs: offset %d, want %d", again.Offset, img.Offset)
	}
}
