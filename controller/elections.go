package controller

import (
	"slices"
)

// This file holds the leader elections that are not requested by a
// client: unclean elections where unclean.leader.election.enable allows
// them, and the preferred-leader balancing of auto.leader.rebalance.enable.
// Like decide.go these are pure functions of the image.

// UncleanPolicy reports whether a topic allows unclean leader election
// (its unclean.leader.election.enable, else the broker's). Nil allows it
// nowhere, Kafka's default.
type UncleanPolicy func(t *Topic) bool

func (u UncleanPolicy) allowed(t *Topic) bool { return u != nil && u(t) }

// uncleanLeader picks the leader of an unclean election: the first
// unfenced replica in replica order that is not in an offline log
// directory, -1 if none. Its log becomes the partition's truth and the
// ISR is reset to it alone.
func uncleanLeader(img *Image, topicID Uuid, p Partition) int32 {
	online := img.onlineReplicas(topicID, p)
	return electLeader(img, online, online)
}

// decideUncleanElections elects a leader for every leaderless partition
// whose topic allows unclean election and that has no unfenced ISR member
// but an unfenced replica (Kafka's controller does this on its timer and
// when the setting changes; the fencing decisions do it at once).
func decideUncleanElections(img *Image, unclean UncleanPolicy) []Record {
	var recs []Record
	forEachPartition(img, func(t *Topic, p Partition) {
		if p.Leader != -1 || !unclean.allowed(t) || electLeader(img, p.Replicas, p.ISR) != -1 {
			return
		}
		if leader := uncleanLeader(img, t.ID, p); leader != -1 {
			recs = append(recs, PartitionChangeRecord{TopicID: t.ID, Partition: p.Partition, Leader: ptrTo(leader), ISR: []int32{leader}})
		}
	})
	return recs
}

// decideBalanceLeaders moves leadership back to the preferred replica
// (the first of the replica list) of every partition where that replica
// is unfenced, in the ISR and not the leader (auto.leader.rebalance.enable,
// run every leader.imbalance.check.interval.seconds). As Kafka's KRaft
// controller, every imbalanced partition is balanced;
// leader.imbalance.per.broker.percentage is not used.
func decideBalanceLeaders(img *Image) []Record {
	var recs []Record
	forEachPartition(img, func(t *Topic, p Partition) {
		if len(p.Replicas) == 0 || p.Leader == p.Replicas[0] {
			return
		}
		preferred := p.Replicas[0]
		if b, ok := img.Brokers[preferred]; ok && !b.Fenced && slices.Contains(p.ISR, preferred) && !img.ReplicaOffline(preferred, t.ID, p.Partition) {
			recs = append(recs, PartitionChangeRecord{TopicID: t.ID, Partition: p.Partition, Leader: ptrTo(preferred)})
		}
	})
	return recs
}

// ElectUnclean runs the unclean elections that Options.UncleanLeaderElection
// allows (decideUncleanElections) and returns how many partitions got a
// leader. The active controller's owner calls it on a ticker.
func (c *Controller) ElectUnclean() (int, error) {
	var n int
	err := c.write(false, func(img *Image) []Record {
		var recs []Record
		if c.elr(img).enabled() {
			recs = decideUncleanElectionsELR(img, c.opts.UncleanLeaderElection, c.elr(img))
		} else {
			recs = decideUncleanElections(img, c.opts.UncleanLeaderElection)
		}
		n = len(recs)
		return recs
	})
	return n, err
}

// BalanceLeaders moves leadership to the preferred replicas where they
// are eligible (decideBalanceLeaders) and returns how many partitions
// moved.
func (c *Controller) BalanceLeaders() (int, error) {
	var n int
	err := c.write(false, func(img *Image) []Record {
		recs := decideBalanceLeaders(img)
		n = len(recs)
		return recs
	})
	return n, err
}
