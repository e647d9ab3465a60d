package quorum

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/samsa-broker/samsa/controller"
)

func TestMemberAddress(t *testing.T) {
	dir := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	tests := []struct {
		m    Member
		addr raft.ServerAddress
	}{
		{Member{Addr: "h:9093"}, "h:9093"},
		{Member{Addr: "h:9093", Listener: "CONTROLLER"}, "h:9093;listener=CONTROLLER"},
		{Member{Addr: "[::1]:9093", Listener: "C", DirectoryID: dir}, "[::1]:9093;listener=C;directory=AQIDBAUGBwgJCgsMDQ4PEA"},
		{Member{Addr: "h:9093", Listener: "C", DirectoryID: dir, Unregistered: true}, "h:9093;listener=C;directory=AQIDBAUGBwgJCgsMDQ4PEA;unregistered=1"},
	}
	for _, tt := range tests {
		if got := tt.m.serverAddress(); got != tt.addr {
			t.Errorf("%+v encoded as %q, want %q", tt.m, got, tt.addr)
		}
		if got := parseMember(tt.addr); got != tt.m {
			t.Errorf("%q parsed as %+v, want %+v", tt.addr, got, tt.m)
		}
		if got := dialAddress(tt.addr); string(got) != tt.m.Addr {
			t.Errorf("%q dials %q, want %q", tt.addr, got, tt.m.Addr)
		}
	}
	// Fields a later build may add, or garbled ones, are ignored.
	if got := parseMember("h:1;directory=zz;future=1;listener=L"); got != (Member{Addr: "h:1", Listener: "L"}) {
		t.Errorf("garbled address parsed as %+v", got)
	}
}

// members returns node id's view of the Raft configuration: who votes.
func votersOf(t *testing.T, q *Quorum) map[int32]bool {
	t.Helper()
	_, votes, err := q.Members()
	if err != nil {
		t.Fatal(err)
	}
	return votes
}

// TestRemoveAndAddVoter: RemoveVoter makes a voter an observer that keeps
// receiving the log (Kafka's removed controller keeps fetching), AddVoter
// makes it a voter again with its listener and directory id kept in the
// Raft configuration; the error cases answer as Kafka's handlers do
// (unknown voter, wrong directory id, last voter: VOTER_NOT_FOUND;
// adding a voter: DUPLICATE_VOTER).
func TestRemoveAndAddVoter(t *testing.T) {
	tc := newTestCluster(t, 3, 300*time.Millisecond, nil)
	tc.mustRegister(1)
	tc.mustCreate("before")
	ctx := t.Context()
	for _, c := range []struct {
		name string
		fn   func(q *Quorum) error
		want error
	}{
		{"remove an unknown voter", func(q *Quorum) error { return q.RemoveVoter(ctx, 9, [16]byte{9}) }, ErrVoterNotFound},
		{"remove with a wrong directory id", func(q *Quorum) error { return q.RemoveVoter(ctx, 3, [16]byte{7}) }, ErrVoterNotFound},
		{"add an existing voter", func(q *Quorum) error { return q.AddVoter(ctx, 2, Member{Addr: "node2", DirectoryID: [16]byte{2}}) }, ErrDuplicateVoter},
		{"add with the zero directory id", func(q *Quorum) error { return q.AddVoter(ctx, 5, Member{Addr: "node5"}) }, ErrInvalidVoter},
		{"remove an unknown voter by the zero directory id", func(q *Quorum) error { return q.RemoveVoter(ctx, 9, [16]byte{}) }, ErrInvalidVoter},
	} {
		if err := tc.onLeader(func(l *testNode) error { return c.fn(l.q) }); !errors.Is(err, c.want) {
			t.Fatalf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// The active controller removes itself: it steps down and follows
	// the log as an observer.
	victim := tc.leader().id
	votes := func(id int32) func() bool {
		return func() bool { return votersOf(t, tc.leader().q)[id] }
	}
	tc.change("remove the active controller", func(l *testNode) error { return l.q.RemoveVoter(ctx, victim, [16]byte{}) },
		func() bool { return !votes(victim)() })
	waitFor(t, 30*time.Second, fmt.Sprintf("node %d to learn it no longer votes", victim), func() bool {
		v, ok := votersOf(t, tc.nodes[victim].q)[victim]
		return ok && !v
	})
	// The observer still receives the log.
	tc.mustCreate("while-observer")
	if tc.nodes[victim].q.Leading() {
		t.Fatal("the removed voter still leads")
	}
	tc.converged()

	dir := [16]byte{0xd1, 0xd2}
	addr := string(tc.nodes[victim].trans.LocalAddr())
	tc.change("add it back", func(l *testNode) error {
		ctxAdd, cancel := contextTimeout(t, 30*time.Second)
		defer cancel()
		return l.q.AddVoter(ctxAdd, victim, Member{Addr: addr, Listener: "CONTROLLER", DirectoryID: dir})
	}, votes(victim))
	var st Status
	waitFor(t, 30*time.Second, "the leader's status with three voters", func() bool {
		var err error
		st, err = tc.leader().q.Status()
		return err == nil && len(st.Voters) == 3
	})
	found := false
	for _, v := range st.Voters {
		if v.ID == victim {
			found = v.Member.DirectoryID == dir && v.Member.Listener == "CONTROLLER"
		}
	}
	if !found || len(st.Observers) != 0 {
		t.Fatalf("status after adding %d back: %+v", victim, st)
	}
	// Removing it again needs the directory id it was added with.
	if err := tc.onLeader(func(l *testNode) error { return l.q.RemoveVoter(ctx, victim, [16]byte{}) }); !errors.Is(err, ErrInvalidVoter) {
		t.Fatalf("remove with the zero directory id: %v, want ErrInvalidVoter", err)
	}
	if err := tc.onLeader(func(l *testNode) error { return l.q.RemoveVoter(ctx, victim, [16]byte{9}) }); !errors.Is(err, ErrVoterNotFound) {
		t.Fatalf("remove with another directory id: %v, want ErrVoterNotFound", err)
	}

	// Down to one voter: the last one cannot be removed.
	survivor := tc.leader().id
	for _, id := range []int32{1, 2, 3} {
		if id == survivor {
			continue
		}
		var d [16]byte
		if id == victim {
			d = dir
		}
		tc.change(fmt.Sprintf("remove %d", id), func(l *testNode) error { return l.q.RemoveVoter(ctx, id, d) },
			func() bool { return !votes(id)() })
	}
	waitFor(t, 30*time.Second, "one voter left", func() bool {
		n := 0
		for _, v := range votersOf(t, tc.leader().q) {
			if v {
				n++
			}
		}
		return n == 1
	})
	l := tc.leader()
	if err := l.q.RemoveVoter(ctx, l.id, [16]byte{}); !errors.Is(err, ErrVoterNotFound) {
		t.Fatalf("remove the last voter: %v, want ErrVoterNotFound", err)
	}
	tc.mustCreate("one-voter")
}

// onLeader runs fn on the active controller, and again on the next one
// while it answers controller.ErrNotController (leadership moves under
// load), for up to 30 s; it returns fn's last error.
func (tc *testCluster) onLeader(fn func(l *testNode) error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := fn(tc.leader())
		if !errors.Is(err, controller.ErrNotController) || time.Now().After(deadline) {
			return err
		}
	}
}

// change runs a voter change on the active controller until it succeeds
// or done shows it took effect (an attempt that lost leadership may still
// have committed it), for up to 60 s.
func (tc *testCluster) change(what string, fn func(l *testNode) error, done func() bool) {
	tc.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := tc.onLeader(fn)
		if err == nil || done() {
			return
		}
		if time.Now().After(deadline) {
			tc.t.Fatalf("%s: %v", what, err)
		}
	}
}

// TestAddFourthVoter: a controller started without bootstrapping (as with
// controller.quorum.bootstrap.servers) joins through AddVoter, catches up,
// votes, and is still a voter after a restart; with it the quorum of four
// survives the loss of the leader.
func TestAddFourthVoter(t *testing.T) {
	tc := newTestCluster(t, 3, 300*time.Millisecond, func(o *Options) {
		if o.NodeID == 4 {
			o.Observer = true
		}
	})
	tc.mustRegister(1)
	tc.mustCreate("before")
	tc.nodes[4] = &testNode{id: 4, dir: t.TempDir(), created: map[string]int{}}
	tc.start(4)
	if tc.nodes[4].q.LeaderID() >= 0 && tc.nodes[4].q.Leading() {
		t.Fatal("a joining controller leads")
	}
	tc.change("add node 4", func(l *testNode) error {
		ctx, cancel := contextTimeout(t, 30*time.Second)
		defer cancel()
		return l.q.AddVoter(ctx, 4, Member{Addr: "node4", Listener: "CONTROLLER", DirectoryID: [16]byte{4}})
	}, func() bool { return votersOf(t, tc.leader().q)[4] })
	if img := tc.converged(); img.Topics["before"] == nil {
		t.Fatal("the new voter did not catch up")
	}
	tc.stop(4)
	tc.start(4)
	waitFor(t, 30*time.Second, "node 4 to know it votes after a restart", func() bool {
		return votersOf(t, tc.nodes[4].q)[4]
	})
	old := tc.leader()
	tc.stop(old.id)
	var rest []int32
	for id := range int32(5) {
		if id != 0 && id != old.id {
			rest = append(rest, id)
		}
	}
	tc.mustCreate("after", rest...)
}

// TestDamagedVoterRejoins: a voter whose raft.db is damaged does not
// refuse to start while other voters exist: its store is set aside (kept),
// it does not bootstrap a new cluster, refuses votes while it catches up,
// ends with the quorum's image, and votes again. A lone voter still
// refuses (TestDamagedStore).
func TestDamagedVoterRejoins(t *testing.T) {
	tc := newTestCluster(t, 3, 300*time.Millisecond, nil)
	tc.mustRegister(1)
	for i := range 5 {
		tc.mustCreate(fmt.Sprint("t", i))
	}
	victim := int32(3)
	if tc.leader().id == victim {
		victim = 2
	}
	tc.stop(victim)
	dir := tc.nodes[victim].dir
	db := filepath.Join(dir, "raft.db")
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for i := range min(2*4096, len(b)) {
		b[i] = byte(i*7 + 0xa5) // both meta pages: bbolt refuses the file
	}
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	tc.mustCreate("while-down")
	tc.start(victim)
	aside, _ := filepath.Glob(dir + ".damaged-*")
	if len(aside) != 1 {
		t.Fatalf("damaged store set aside as %v, want one dir", aside)
	}
	if img := tc.converged(); img.Topics["while-down"] == nil || img.Topics["t0"] == nil {
		t.Fatal("the rejoined voter lacks committed topics")
	}
	waitFor(t, 30*time.Second, "the rejoined voter to vote again", func() bool { return !tc.nodes[victim].q.Rejoining() })
	if _, err := os.Stat(filepath.Join(dir, rejoinMarker)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("rejoin marker left: %v", err)
	}
	// With the victim voting again, the quorum survives losing another.
	other := int32(1)
	if other == victim {
		other = 2
	}
	tc.stop(other)
	var rest []int32
	for id := range int32(4) {
		if id != 0 && id != other {
			rest = append(rest, id)
		}
	}
	tc.mustCreate("after", rest...)
}

// TestRejoinMarkerStopsBootstrap: a node with the rejoin marker and no
// Raft state (it crashed before catching up) does not bootstrap a new
// quorum: alone, it never becomes a leader.
func TestRejoinMarkerStopsBootstrap(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, rejoinMarker), []byte("test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, trans := raft.NewInmemTransport("node1")
	defer trans.Close()
	q, err := Open(Options{NodeID: 1, ClusterID: "c", Dir: dir, Voters: []Voter{{1, "node1"}, {2, "node2"}}, Transport: trans,
		ElectionTimeout: 50 * time.Millisecond, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if !q.Rejoining() {
		t.Fatal("not rejoining with the marker present")
	}
	conf, err := q.configuration()
	if err != nil {
		t.Fatal(err)
	}
	if len(conf.Servers) != 0 {
		t.Fatalf("bootstrapped a configuration %+v", conf.Servers)
	}
}

// TestVoteGuard: while on, vote and pre-vote requests are answered "not
// granted" without reaching Raft; other RPCs, and every RPC once off, go
// through.
func TestVoteGuard(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	g := &voteGuard{stop: stop, wg: &wg, logger: testLogger()}
	g.on.Store(true)
	in := make(chan raft.RPC)
	out := g.consumer(in)
	defer func() { close(stop); wg.Wait() }()
	send := func(cmd any) raft.RPCResponse {
		resp := make(chan raft.RPCResponse, 1)
		in <- raft.RPC{Command: cmd, RespChan: resp}
		select {
		case r := <-resp:
			return r
		case rpc := <-out:
			rpc.Respond("forwarded", nil)
			return <-resp
		case <-time.After(30 * time.Second):
			t.Fatal("no answer")
		}
		return raft.RPCResponse{}
	}
	r := send(&raft.RequestVoteRequest{Term: 7})
	if v, ok := r.Response.(*raft.RequestVoteResponse); !ok || v.Granted || v.Term != 7 {
		t.Fatalf("vote while guarded: %+v", r.Response)
	}
	r = send(&raft.RequestPreVoteRequest{Term: 8})
	if v, ok := r.Response.(*raft.RequestPreVoteResponse); !ok || v.Granted {
		t.Fatalf("pre-vote while guarded: %+v", r.Response)
	}
	if r = send(&raft.AppendEntriesRequest{}); r.Response != "forwarded" {
		t.Fatalf("append entries while guarded: %+v", r.Response)
	}
	// A leadership transfer would make the node a candidate at once.
	if r = send(&raft.TimeoutNowRequest{}); r.Error == nil || r.Response == "forwarded" {
		t.Fatalf("timeout-now while guarded: %+v", r)
	}
	g.on.Store(false)
	if r = send(&raft.RequestVoteRequest{Term: 9}); r.Response != "forwarded" {
		t.Fatalf("vote after the guard: %+v", r.Response)
	}
}

// TestDamagedSnapshots: a voter whose every snapshot is unreadable
// is treated like one with a damaged raft.db (checkSnapshots).
func TestDamagedSnapshots(t *testing.T) {
	dir := t.TempDir()
	q, trans := openOne(t, dir)
	if err := q.WaitLeading(t.Context()); err != nil {
		t.Fatal(err)
	}
	v := "1"
	if err := q.Propose(q.Machine().Image().Offset, []controller.Record{controller.ConfigRecord{ResourceType: controller.ConfigResourceBroker, Name: "x", Value: &v}}); err != nil {
		t.Fatal(err)
	}
	if err := q.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	q.Close()
	trans.Close()
	empty := controller.NewMachine("c", 1).Empty()
	if err := checkSnapshots(dir, empty, testLogger()); err != nil {
		t.Fatalf("good snapshot: %v", err)
	}
	states, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin"))
	if len(states) == 0 {
		t.Fatal("no snapshot written")
	}
	for _, s := range states {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b {
			b[i] ^= 0x5a
		}
		if err := os.WriteFile(s, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := checkSnapshots(dir, empty, testLogger()); !errors.Is(err, controller.ErrCorrupt) {
		t.Fatalf("damaged snapshots: %v, want ErrCorrupt", err)
	}
	// A lone voter refuses to start on them rather than form a new cluster.
	if q, trans, err := openOneErr(dir); err == nil {
		q.Close()
		trans.Close()
		t.Fatal("a lone voter started on damaged snapshots")
	}
}

func contextTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), d)
}
