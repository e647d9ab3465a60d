package quorum

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestRejoiningVoterNeverCampaigns is a regression test for issue 13 item
// 2: the vote guard refused other candidates' votes, but a rejoining voter
// that had learned the voter set and then lost the leader still timed out
// as a follower and became a candidate, voting for itself in a term it may
// already have voted in before its store was lost. Here a voter restarts
// with the rejoin marker and an empty store (RejoinMinWait keeps it
// rejoining), catches up, and is cut off from the other two: over many
// election timeouts it must stay a follower. Restarted with the default
// wait, it lifts its guard; cut off again with the others stopped, it
// then becomes a candidate as a voter should (its election timer is back
// to the configured timeout).
func TestRejoiningVoterNeverCampaigns(t *testing.T) {
	const timeout = 100 * time.Millisecond
	holdFor := int32(0)
	tc := newTestCluster(t, 3, timeout, func(o *Options) {
		if o.NodeID == holdFor {
			o.RejoinMinWait = time.Hour
		}
	})
	tc.mustRegister(1)
	tc.mustCreate("before")
	victim := int32(3)
	if tc.leader().id == victim {
		victim = 2
	}
	tc.stop(victim)
	dir := tc.nodes[victim].dir
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rejoinMarker), []byte("test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	holdFor = victim
	tc.start(victim)
	n := tc.nodes[victim]
	waitFor(t, 60*time.Second, "the rejoining voter to learn the voter set and catch up", func() bool {
		conf, err := n.q.configuration()
		if err != nil || len(conf.Servers) != 3 {
			return false
		}
		commit, err := strconv.ParseUint(n.q.Raft().Stats()["commit_index"], 10, 64)
		return err == nil && commit > 0 && n.q.Raft().AppliedIndex() >= commit
	})
	tc.isolate(victim)
	// 30 election timeouts: without the fix the node campaigns after one
	// or two. This window only bounds how long the bug may hide; a
	// passing run does not depend on timing.
	end := time.Now().Add(30 * timeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(end) {
		if st := n.q.Raft().State(); st != raft.Follower {
			t.Fatalf("rejoining voter cut off from the leader in state %v", st)
		}
		<-tick.C
	}
	if !n.q.Rejoining() {
		t.Fatal("the guard lifted before RejoinMinWait")
	}

	tc.stop(victim)
	holdFor = 0
	tc.start(victim)
	n = tc.nodes[victim]
	waitFor(t, 60*time.Second, "the rejoining voter to catch up and vote again", func() bool { return !n.q.Rejoining() })
	if got := n.q.Raft().ReloadableConfig().HeartbeatTimeout; got != timeout {
		t.Fatalf("heartbeat timeout after rejoining %v, want %v", got, timeout)
	}
	for id := range tc.nodes {
		if id != victim {
			tc.stop(id)
		}
	}
	waitFor(t, 60*time.Second, "the voter to campaign once alone", func() bool {
		return n.q.Raft().State() == raft.Candidate
	})
}
