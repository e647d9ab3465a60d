package quorum

import (
	"strconv"
	"testing"
	"time"
)

// TestHealedFollowerCatchesUpPromptly: a follower cut off from the active
// controller for 7.5 s gets the entries it missed soon after the cut heals.
// With hashicorp/raft's own backoff alone (up to 10.24 s between attempts
// to a failing follower) it got them seconds later, and meanwhile its
// broker answered Metadata and Fetch from the old image (DURABILITY
// finding 16); the transport now retries failed replication itself
// (retry.go). The bound below is far above the retry interval (50 ms) and
// below the backoff the leader had reached (2.5-10 s).
func TestHealedFollowerCatchesUpPromptly(t *testing.T) {
	if testing.Short() {
		t.Skip("cuts a follower off for 7.5 s")
	}
	tc := newTestCluster(t, 3, time.Second, nil)
	for id := int32(1); id <= 3; id++ {
		tc.mustRegister(id)
	}
	l := tc.leader()
	tc.mustCreate("before")
	tc.converged()
	var f *testNode
	for _, n := range tc.nodes {
		if n != l {
			f = n
			break
		}
	}
	tc.isolate(f.id)
	cutEnd := time.Now().Add(7500 * time.Millisecond)
	for i := 0; time.Now().Before(cutEnd); i++ {
		tc.mustCreate("during-" + strconv.Itoa(i))
		select {
		case <-time.After(250 * time.Millisecond): // pacing of the writes during the cut
		case <-t.Context().Done():
			return
		}
	}
	want := tc.leader().c.Image().Offset
	healed := time.Now()
	tc.heal(f.id)
	waitFor(t, 60*time.Second, "the healed follower to apply what it missed", func() bool {
		return f.c.Image().Offset >= want
	})
	took := time.Since(healed)
	t.Logf("healed follower %d applied offset %d %v after the heal", f.id, want, took)
	if took > 2*time.Second {
		t.Errorf("healed follower caught up %v after the heal; the leader's replication backoff was not bypassed", took)
	}
}
