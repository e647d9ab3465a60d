package quorum

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/samsa-broker/samsa/controller"
)

// TestCaughtUp: Kafka 4.4's LeaderState.isReplicaCaughtUp, the check its
// AddVoterHandler makes of a new voter: caught up once in this leader's
// term and heard from within the hour.
func TestCaughtUp(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		name string
		p    peerProgress
		ok   bool
		want bool
	}{
		{"never answered", peerProgress{}, false, false},
		{"answered, never caught up", peerProgress{term: 3, lastLog: 10, lastContact: now}, true, false},
		{"caught up now", peerProgress{term: 3, lastLog: 10, lastContact: now, lastCaughtUp: now}, true, true},
		{"caught up once, lags now", peerProgress{term: 3, lastLog: 2, lastContact: now, lastCaughtUp: now.Add(-time.Minute)}, true, true},
		{"caught up in an earlier term", peerProgress{term: 2, lastContact: now, lastCaughtUp: now}, true, false},
		{"silent for an hour", peerProgress{term: 3, lastContact: now.Add(-time.Hour), lastCaughtUp: now.Add(-time.Hour)}, true, false},
	} {
		if got := caughtUp(c.p, c.ok, 3, now); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestAddVoterNotCaughtUp: AddVoter refuses a controller that is not
// caught up after Options.RequestTimeout, as Kafka 4.4 refuses one at
// once ("... since it is lagging behind"), instead of waiting for it as
// long as the request allows (it waited up to 30 s). A node that never
// answers is taken out of the configuration again; one that answered but
// lags stays a non-voter receiving the log, is refused again at once
// while it lags, and is added once it has caught up.
func TestAddVoterNotCaughtUp(t *testing.T) {
	const wait = 300 * time.Millisecond
	tc := newTestCluster(t, 3, 300*time.Millisecond, func(o *Options) {
		o.RequestTimeout = wait
		if o.NodeID == 4 {
			o.Observer = true
		}
	})
	tc.mustRegister(1)
	tc.mustCreate("before")
	tc.nodes[4] = &testNode{id: 4, dir: t.TempDir(), created: map[string]int{}}
	tc.start(4)
	tc.isolate(4)
	m := Member{Addr: "node4", Listener: "CONTROLLER", DirectoryID: [16]byte{4}}
	member := func() (present, votes bool) {
		conf, err := tc.leader().q.configuration()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range conf.Servers {
			if s.ID == "4" {
				return true, s.Suffrage == raft.Voter
			}
		}
		return false, false
	}
	add := func() error {
		return tc.onLeader(func(l *testNode) error {
			ctx, cancel := contextTimeout(t, 30*time.Second)
			defer cancel()
			return l.q.AddVoter(ctx, 4, m)
		})
	}

	// Unreachable: refused after the wait, and not left a member.
	start := time.Now()
	err := add()
	if !errors.Is(err, ErrNotCaughtUp) || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("add an unreachable node: %v, want ErrNotCaughtUp (did not answer)", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("add an unreachable node took %v", took)
	}
	if present, _ := member(); present {
		t.Fatal("an unreachable node was left in the configuration")
	}

	// Answered but lags (its answer, injected while it is cut off, names
	// an index short of the leader's): refused as Kafka words it, left a
	// non-voter.
	var lag error
	done := make(chan struct{})
	go func() {
		defer close(done)
		lag = add()
	}()
	waitFor(t, 30*time.Second, "node 4 to be made a non-voter", func() bool {
		present, _ := member()
		return present
	})
	// Every voter gets the answer: leadership may move under load.
	for _, n := range tc.nodes {
		if n.id != 4 && n.q != nil {
			n.q.progress.record("4", n.q.raft.CurrentTerm(), &raft.AppendEntriesResponse{LastLog: 1}, n.q.raft.LastIndex()+1, time.Now())
		}
	}
	<-done
	want := "Aborted add voter operation for ReplicaKey(id=4, directoryId=BAAAAAAAAAAAAAAAAAAAAA) since it is lagging behind"
	if !errors.Is(lag, ErrNotCaughtUp) || lag.Error() != want {
		t.Fatalf("add a lagging node: %v, want ErrNotCaughtUp %q", lag, want)
	}
	if present, votes := member(); !present || votes {
		t.Fatalf("a lagging node: member %v voter %v, want a non-voter", present, votes)
	}
	// Still lagging: refused at once, without waiting.
	start = time.Now()
	if err := add(); !errors.Is(err, ErrNotCaughtUp) || err.Error() != want {
		t.Fatalf("add a lagging member again: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a lagging member was refused after %v", took)
	}

	// Caught up: added.
	tc.heal(4)
	waitFor(t, 30*time.Second, "node 4 to catch up", func() bool {
		l := tc.leader()
		p, ok := l.q.progress.get("4")
		return caughtUp(p, ok, l.q.raft.CurrentTerm(), time.Now())
	})
	tc.change("add node 4 once caught up", func(l *testNode) error {
		ctx, cancel := contextTimeout(t, 30*time.Second)
		defer cancel()
		return l.q.AddVoter(ctx, 4, m)
	}, func() bool { _, votes := member(); return votes })
}

// TestVoterChangePending: while a voter change runs, another is refused at
// once with Kafka 4.4's REQUEST_TIMED_OUT message (its leader has one
// pending voter change at a time), whichever kind either is.
func TestVoterChangePending(t *testing.T) {
	tc := newTestCluster(t, 3, 300*time.Millisecond, nil)
	tc.mustRegister(1)
	ctx := context.Background()
	const want = "Request timed out waiting for leader to handle previous voter change request"
	// Leadership may move under load: then the next leader is asked.
	for attempt := 0; ; attempt++ {
		l := tc.leader()
		other := int32(1)
		if other == l.id {
			other = 2
		}
		changes := []struct {
			name string
			fn   func() error
		}{
			{"add", func() error { return l.q.AddVoter(ctx, 5, Member{Addr: "node5", DirectoryID: [16]byte{5}}) }},
			{"remove", func() error { return l.q.RemoveVoter(ctx, other, [16]byte{}) }},
			{"update", func() error { return l.q.UpdateVoter(ctx, other, Member{Addr: "node9", DirectoryID: [16]byte{9}}) }},
		}
		l.q.changing.Lock() // a change in progress
		moved := false
		for _, c := range changes {
			err := c.fn()
			if errors.Is(err, controller.ErrNotController) && attempt < 5 {
				moved = true
				break
			}
			if !errors.Is(err, ErrChangePending) || err.Error() != want {
				t.Errorf("%s while a change runs: %v, want ErrChangePending %q", c.name, err, want)
			}
		}
		l.q.changing.Unlock()
		if !moved {
			return
		}
	}
}
