package quorum

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/controller"
)

// TestUpdateVoter (KIP-853 UpdateRaftVoter, issue 13 item 3): a voter of
// controller.quorum.voters (zero directory id) reports its listener name
// and directory id while the active controller keeps committing: its Raft
// address changes, which UpdateVoter applies by removing it and adding it
// back (hashicorp/raft v1.7.2 races when a live member's address changes
// in place; this test runs under -race in CI with writes going on). The
// voter then votes at its new address: the quorum commits with it after
// losing the third node. The same update again writes no configuration
// entry; another directory id is ErrVoterNotFound, as are unknown ids; the
// zero directory id ErrInvalidVoter; a change of the leader's own address
// ErrLeaderEndpoint; a follower answers controller.ErrNotController.
func TestUpdateVoter(t *testing.T) {
	tc := newTestCluster(t, 3, 300*time.Millisecond, nil)
	tc.mustRegister(1)
	tc.mustCreate("before")
	target := int32(2)
	if tc.leader().id == target {
		target = 3
	}
	dir := [16]byte{7, 7, 7}
	updated := Member{Addr: fmt.Sprintf("node%d", target), Listener: "CONTROLLER", DirectoryID: dir}
	ctx, cancel := contextTimeout(t, 2*time.Minute)
	defer cancel()

	for _, tc2 := range []struct {
		name string
		id   int32
		m    Member
		want error
	}{
		{"zero directory id", target, Member{Addr: updated.Addr}, ErrInvalidVoter},
		{"unknown voter", 9, Member{Addr: "node9", DirectoryID: dir}, ErrVoterNotFound},
	} {
		if err := tc.onLeader(func(l *testNode) error { return l.q.UpdateVoter(ctx, tc2.id, tc2.m) }); !errors.Is(err, tc2.want) {
			t.Errorf("%s: %v, want %v", tc2.name, err, tc2.want)
		}
	}
	for _, n := range tc.nodes {
		if n.q.Leading() {
			continue
		}
		if err := n.q.UpdateVoter(ctx, target, updated); !errors.Is(err, controller.ErrNotController) {
			t.Errorf("update on follower %d: %v, want ErrNotController", n.id, err)
		}
		break
	}

	// Writes go on while the address changes: the leader replicates to
	// the member throughout.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	leaders := map[int32]*controller.Controller{}
	for id, n := range tc.nodes {
		leaders[id] = n.c
	}
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			for _, c := range leaders {
				createTopic(c, fmt.Sprint("during-", i)) // NOT_CONTROLLER on all but the leader
			}
		}
	})
	tc.change("update voter", func(l *testNode) error {
		if l.id == target {
			// UpdateVoter cannot move the leader's own address: move
			// the leadership and try again.
			err := l.q.Raft().LeadershipTransfer().Error()
			return fmt.Errorf("%w: moved the leadership off node %d (%v)", controller.ErrNotController, target, err)
		}
		return l.q.UpdateVoter(ctx, target, updated)
	}, func() bool {
		members, votes, err := tc.leader().q.Members()
		return err == nil && votes[target] && members[target] == updated
	})
	close(stop)
	wg.Wait()

	l := tc.leader()
	members, votes, err := l.q.Members()
	if err != nil || !votes[target] || members[target] != updated {
		t.Fatalf("after the update: members %+v votes %v (%v)", members, votes, err)
	}
	index := l.q.Raft().GetConfiguration().Index()
	if err := l.q.UpdateVoter(ctx, target, updated); err != nil {
		t.Fatalf("the same update again: %v", err)
	}
	if got := l.q.Raft().GetConfiguration().Index(); got != index {
		t.Errorf("an unchanged update wrote a configuration entry (index %d → %d)", index, got)
	}
	if err := l.q.UpdateVoter(ctx, target, Member{Addr: updated.Addr, Listener: "CONTROLLER", DirectoryID: [16]byte{8}}); !errors.Is(err, ErrVoterNotFound) {
		t.Errorf("another directory id: %v, want ErrVoterNotFound", err)
	}
	own := members[l.id]
	if own.DirectoryID == ([16]byte{}) {
		own.DirectoryID = [16]byte{1}
	}
	own.Listener = "OTHER"
	if err := l.q.UpdateVoter(ctx, l.id, own); !errors.Is(err, ErrLeaderEndpoint) && !errors.Is(err, controller.ErrNotController) {
		t.Errorf("the leader's own endpoint: %v, want ErrLeaderEndpoint", err)
	}

	// The updated voter votes: with the third node gone, the quorum
	// still commits through it.
	third := int32(0)
	for id := range tc.nodes {
		if id != target && (third == 0 || id != l.id) {
			third = id
		}
	}
	tc.stop(third)
	var rest []int32
	for id := range tc.nodes {
		if id != third {
			rest = append(rest, id)
		}
	}
	tc.mustCreate("after-update", rest...)
}
