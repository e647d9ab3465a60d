package faults

import (
	"context"
	"os"
	"testing"
)

// extraTests gates the fault tests that are too long for the CI budget
// (run.sh --extra sets it): each starts its own cluster and takes one to
// three minutes.
func extraTests(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	if os.Getenv("SAMSA_FAULTS_EXTRA") != "1" {
		t.Skip("SAMSA_FAULTS_EXTRA=1 (run.sh --extra) runs it")
	}
}

// TestUncleanElection forces what unclean.leader.election.enable decides
// (RunUnclean: the ISR shrunk to the leader by a cut link, the leader
// acknowledging alone with min.insync.replicas=1, then killed), once with
// false and once with true, and reports what each loses and how long the
// partition has no leader. With false nothing acknowledged may be lost
// and no other replica may lead before the old leader is back; with true
// the loss is measured, not failed on.
func TestUncleanElection(t *testing.T) { runUncleanElection(t, 3, "unclean") }

// runUncleanElection runs the forced unclean election scenario on a
// cluster of nodes voters, its topics named prefix-false and prefix-true.
func runUncleanElection(t *testing.T, nodes int, prefix string) {
	extraTests(t)
	c := StartCluster(t, Config{Nodes: nodes})
	if c.Net == nil {
		t.Skip("needs a network that can cut links")
	}
	ctx := context.Background()
	for _, unclean := range []bool{false, true} {
		topic := prefix + "-false"
		if unclean {
			topic = prefix + "-true"
		}
		r, err := RunUnclean(ctx, c, topic, unclean, t.Logf)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("faults: %s", r)
		t.Logf("faults: %s", r.Report)
		if r.AckedLeaderOnly == 0 {
			t.Errorf("unclean=%v: nothing acknowledged while the leader was alone in the ISR: the scenario tested nothing", unclean)
		}
		if !unclean {
			if r.Report.Lost.Count != 0 || r.Report.InconsistentOffset.Count != 0 {
				t.Errorf("unclean=false lost acknowledged records:\n%s", r.Report)
			}
			if r.ElectedAfter < r.OldLeaderDown && r.LeaderAfterKill >= 0 {
				t.Errorf("unclean=false: out-of-sync replica %d elected %v after the kill, before the old leader was back", r.LeaderAfterKill, r.ElectedAfter)
			}
		}
	}
}

// TestMemberRemovedAndAdded decommissions a broker and adds a fresh one
// under the queue workload: three voters and a broker-only node 4 that
// holds a replica of every workload partition (the leader of some); every
// partition on node 4 (internal topics too) is reassigned to a voter with
// AlterPartitionReassignments and node 4 is stopped for good; then a
// broker with a node.id the cluster never saw (5) starts on an empty disk
// and half of the workload partitions are reassigned onto it, as their
// preferred leader. Nothing acknowledged may be lost, duplicated or moved.
func TestMemberRemovedAndAdded(t *testing.T) {
	extraTests(t)
	c := StartCluster(t, Config{Nodes: 3, Brokers: 1, Spares: 1})
	// Node 4 in every partition, first (the leader) in partitions 0 and 2.
	replicas := [][]int32{{4, 1, 2}, {2, 4, 3}, {4, 3, 1}, {1, 2, 4}}
	runMembershipScenario(t, c, "members", replicas, 4)
}
