package quorum

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// unanswered is a Raft future that is never answered until released: what
// hashicorp/raft leaves behind for a Barrier or Apply still queued when it
// shuts down.
type unanswered struct{ release chan struct{} }

func (u unanswered) Error() error { <-u.release; return raft.ErrRaftShutdown }

// TestCloseDuringLeadershipGain: a node closed while it waits for the
// barrier of a leadership gain still closes (it used to wait forever for
// the barrier on its WaitGroup), and a Propose waiting on an unanswered
// entry returns once Close begins.
func TestCloseDuringLeadershipGain(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	entered := make(chan struct{})
	_, trans := raft.NewInmemTransport("one")
	q, err := Open(Options{NodeID: 1, ClusterID: "c", Dir: t.TempDir(), Voters: []Voter{{1, "one"}}, Transport: trans, Logger: testLogger(),
		barrier: func(*raft.Raft) raft.Future {
			close(entered)
			return unanswered{release}
		}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the single voter never gained leadership")
	}
	stuck := make(chan error, 1)
	go func() { stuck <- q.await(unanswered{release}) }()
	closed := make(chan error, 1)
	go func() { closed <- q.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return while the leadership barrier was unanswered")
	}
	select {
	case err := <-stuck:
		if err != raft.ErrRaftShutdown {
			t.Fatalf("await on an unanswered future after Close: %v, want ErrRaftShutdown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("await on an unanswered future did not return after Close")
	}
	if q.Leading() {
		t.Fatal("a closed quorum still says it leads")
	}
}
