package faults

import (
	"context"
	"testing"
	"time"
)

// The membership and forced-unclean scenarios of extra_test.go on five
// voters (run.sh --extra5; not in CI): more replicas outside each
// partition, a five-voter metadata quorum, and for the membership change
// more voters that can take the removed broker's place.

// TestMemberRemovedAndAddedFiveNodes is TestMemberRemovedAndAdded on five
// voters and a broker-only node 6 that holds a replica of every workload
// partition (the leader of partitions 0 and 2): every partition on node 6
// (internal topics too) is reassigned to a voter it lacks and node 6 is
// stopped for good; then a fresh broker 7 starts on an empty disk and the
// even workload partitions are reassigned to put it first. Nothing
// acknowledged may be lost, duplicated or moved.
func TestMemberRemovedAndAddedFiveNodes(t *testing.T) {
	extraTests(t)
	c := StartCluster(t, Config{Nodes: 5, Brokers: 1, Spares: 1})
	replicas := [][]int32{{6, 1, 2}, {2, 6, 3}, {6, 4, 5}, {5, 3, 6}}
	runMembershipScenario(t, c, "members5", replicas, 6)
}

// runMembershipScenario runs the queue workload on a topic laid out as
// replicas, decommissions node remove and adds a fresh broker under it
// (RunMembership), and checks the history.
func runMembershipScenario(t *testing.T, c *Cluster, topic string, replicas [][]int32, remove int32) {
	t.Helper()
	ctx := context.Background()
	o := QueueOptions{Topic: topic, Partitions: int32(len(replicas)), Producers: 2, Interval: 5 * time.Millisecond,
		Group: topic + "-group", GroupMembers: 2, Acks: -1}
	if err := CreateAssignedTopic(ctx, c.Addrs(), o.Topic, replicas, nil); err != nil {
		t.Fatal(err)
	}
	q, err := StartQueue(c.Addrs(), o)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			q.Stop()
		}
	}()
	if err := pollUntil(ctx, time.Minute, func(context.Context) (bool, error) { return q.Acked() >= 2000, nil }); err != nil {
		t.Fatal(err)
	}
	r, err := RunMembership(ctx, c, q, o.Topic, c.NodeByID(remove), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("faults: %s", r)
	holdFor(ctx, 3*time.Second)
	q.StopProducers()
	holdFor(ctx, 3*time.Second)
	q.Stop()
	stopped = true
	if err := q.FinalRead(ctx, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	rep := Check(q.History())
	t.Logf("faults: %s", rep)
	if r.AckedEnd <= r.AckedBefore {
		t.Errorf("nothing acknowledged during the membership changes (%d before, %d after)", r.AckedBefore, r.AckedEnd)
	}
	if rep.Anomalies() != 0 {
		t.Errorf("anomalies:\n%s", rep)
	}
}

// TestUncleanElectionFiveNodes is TestUncleanElection on five voters: the
// one-partition topic lives on two nodes other than the active
// controller, the link between them is cut (the three others see both)
// until the ISR is the leader alone, and the leader is killed, once with
// unclean.leader.election.enable=false and once with true.
func TestUncleanElectionFiveNodes(t *testing.T) { runUncleanElection(t, 5, "unclean5") }
