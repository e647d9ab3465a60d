package controller

import (
	"fmt"
	"slices"
)

// This file holds eligible leader replicas (KIP-966), which Kafka 4.1+
// enables for new clusters (feature eligible.leader.replicas.version 1;
// a Kafka 4.4 cluster formatted today finalizes it). Like decide.go the
// rules are pure functions of the image.
//
// With the strict min.insync.replicas rule (the high watermark does not
// advance while the ISR is below min.insync.replicas), a replica that
// leaves the ISR while the ISR is below min.insync.replicas holds every
// committed record. Such replicas are the partition's ELR:
//
//   - An ISR change that leaves the ISR below min.insync.replicas moves the
//     members of the old ISR (and of the old ELR) that are not in the new
//     ISR to the ELR. An ISR at or above min.insync.replicas clears it, and
//     so does an ISR grown back to it. A replica is never in both.
//   - The ISR may become empty: fencing the last member removes it (Kafka
//     keeps the last member in the ISR only when ELR is disabled).
//   - When the ISR is empty, an unfenced ELR member may be elected leader
//     in a clean election: the ISR becomes that member alone and it leaves
//     the ELR.
//   - A broker whose new incarnation registers without the epoch of a clean
//     shutdown (Kafka's previous_broker_epoch) may have lost unflushed
//     records, so it is removed from every ISR and ELR.
//   - The first time the ISR becomes empty, the last leader is recorded as
//     LastKnownELR. With both ISR and ELR empty, that last known leader is
//     elected when it is back (Kafka's "balanced recovery", an election
//     that resets the ISR to the leader as an unclean one does); any later
//     leader clears it.
//   - A change of min.insync.replicas (topic, broker or cluster default)
//     clears the ELR and LastKnownELR of the topics it applies to
//     (Kafka's ClearElrRecord; here PartitionChangeRecords).
//
// One place where samsa differs from Kafka 4.4: the ELR is limited to the
// partition's replicas, so a replica removed by a reassignment leaves the
// ELR (and LastKnownELR) when the reassignment completes (settle,
// reassign.go; testdata/elr_reassign.txt). Kafka keeps it listed (its
// PartitionChangeBuilder filters the ELR by the ISR and the uncleanly
// shut down replicas only), though it never elects it: its elections walk
// the replicas.

// ELRPolicy enables eligible leader replicas and returns a topic's
// effective min.insync.replicas. Nil disables them (Kafka's
// eligible.leader.replicas.version 0): the ISR then never becomes empty
// and elections use the ISR only.
type ELRPolicy func(t *Topic) int

func (e ELRPolicy) enabled() bool { return e != nil }

// electionKind is how a partition change picks a leader when the current
// one is not valid any more.
type electionKind int8

const (
	// electOnline picks from the ISR, from the ELR when the ISR is empty,
	// or the last known leader when both are empty.
	electOnline electionKind = iota
	// electUnclean does as electOnline, then falls back to any acceptable
	// replica (unclean.leader.election.enable).
	electUnclean
)

// elrChange is one partition change under ELR rules: a target ISR, which
// brokers may lead, how to elect, and a broker whose new incarnation
// registered after an unclean shutdown (-1 for none).
type elrChange struct {
	isr             []int32
	acceptable      func(r int32) bool
	election        electionKind
	uncleanShutdown int32
	minISR          int
}

// buildELRChange returns the record that moves partition p of topic t to
// the target of c, keeping the ELR and the last known leader, and whether
// the record changes anything.
func buildELRChange(t *Topic, p Partition, c elrChange) (PartitionChangeRecord, bool) {
	isr := slices.Clone(c.isr)
	if isr == nil {
		isr = []int32{}
	}
	// min.insync.replicas is capped at the replica count, as Kafka's
	// getTopicEffectiveMinIsr (and replica.UnderMinISR) does.
	minISR := min(c.minISR, len(p.Replicas))
	var elr []int32
	if len(isr) < minISR {
		for _, r := range append(slices.Clone(p.ISR), p.ELR...) {
			if !slices.Contains(isr, r) && r != c.uncleanShutdown && slices.Contains(p.Replicas, r) && !slices.Contains(elr, r) {
				elr = append(elr, r)
			}
		}
		slices.Sort(elr)
	}
	valid := func(r int32) bool {
		return r >= 0 && (slices.Contains(isr, r) || len(isr) == 0 && slices.Contains(elr, r)) && c.acceptable(r)
	}
	leader, unclean := p.Leader, false
	if !valid(leader) {
		leader = -1
		for _, r := range p.Replicas {
			if valid(r) {
				leader = r
				break
			}
		}
		if leader == -1 && len(isr) == 0 && len(elr) == 0 && len(p.LastKnownELR) == 1 && c.acceptable(p.LastKnownELR[0]) {
			leader, unclean = p.LastKnownELR[0], true
		}
		if leader == -1 && c.election == electUnclean {
			for _, r := range p.Replicas {
				if c.acceptable(r) {
					leader, unclean = r, true
					break
				}
			}
		}
	}
	rec := PartitionChangeRecord{TopicID: t.ID, Partition: p.Partition}
	if leader != p.Leader {
		rec.Leader = ptrTo(leader)
		switch {
		case unclean:
			// The new leader's log becomes the truth: nobody else is
			// known to hold what it holds.
			isr, elr = []int32{leader}, nil
		case slices.Contains(elr, leader):
			isr = []int32{leader}
			elr = slices.DeleteFunc(elr, func(r int32) bool { return r == leader })
		}
	}
	if !slices.Equal(elr, p.ELR) {
		rec.ELR = ptrTo(nonNil(elr))
	}
	if !slices.Equal(isr, p.ISR) {
		rec.ISR = isr
	}
	switch {
	case rec.ISR != nil && len(rec.ISR) == 0 && p.Leader >= 0 && !slices.Equal(p.LastKnownELR, []int32{p.Leader}):
		// The partition goes leaderless for the first time: remember
		// who led it last.
		rec.LastKnownELR = ptrTo([]int32{p.Leader})
	case len(p.LastKnownELR) > 0 && leader >= 0:
		rec.LastKnownELR = ptrTo([]int32{})
	}
	changed := rec.Leader != nil || rec.ISR != nil || rec.ELR != nil || rec.LastKnownELR != nil
	return rec, changed
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

// without returns s without r.
func without(s []int32, r int32) []int32 {
	return slices.DeleteFunc(slices.Clone(s), func(x int32) bool { return x == r })
}

// unfencedIn returns a predicate for brokers registered and unfenced in img.
func unfencedIn(img *Image) func(int32) bool {
	return func(r int32) bool {
		b, ok := img.Brokers[r]
		return ok && !b.Fenced
	}
}

// electableIn returns a predicate for the replicas of partition p of
// topic t that may lead in img: registered, unfenced and not in a log dir
// their broker reported offline (KIP-858, log_dirs.go).
func electableIn(img *Image, t *Topic, p Partition) func(int32) bool {
	unfenced := unfencedIn(img)
	return func(r int32) bool {
		return unfenced(r) && !img.ReplicaOffline(r, t.ID, p.Partition)
	}
}

// elrElection is the election kind for topic t.
func elrElection(t *Topic, unclean UncleanPolicy) electionKind {
	if unclean.allowed(t) {
		return electUnclean
	}
	return electOnline
}

// decideFenceBrokerELR is decideFenceBroker with eligible leader
// replicas, on after, the image with the fencing record applied.
// Fencing removes the broker from every ISR (which may become empty) and
// elects where the leader is no longer valid; unfencing runs an election
// for every leaderless partition (Kafka's handleBrokerFenced and
// handleBrokerUnfenced).
func decideFenceBrokerELR(after *Image, id int32, fenced bool, unclean UncleanPolicy, elr ELRPolicy) []Record {
	var recs []Record
	forEachPartition(after, func(t *Topic, p Partition) {
		c := elrChange{isr: p.ISR, acceptable: electableIn(after, t, p), election: elrElection(t, unclean), uncleanShutdown: -1, minISR: elr(t)}
		switch {
		case fenced && slices.Contains(p.ISR, id):
			c.isr = without(p.ISR, id)
		case !fenced && p.Leader == -1:
		default:
			return
		}
		if rec, ok := buildELRChange(t, p, c); ok {
			recs = append(recs, rec)
		}
	})
	return recs
}

// decideUncleanShutdown removes broker id, whose new incarnation
// registered without the epoch of a clean shutdown, from every ISR and ELR
// (Kafka's handleBrokerUncleanShutdown): its log may lack records it had
// acknowledged as a follower.
func decideUncleanShutdown(img *Image, id int32, unclean UncleanPolicy, elr ELRPolicy) []Record {
	var recs []Record
	forEachPartition(img, func(t *Topic, p Partition) {
		if !slices.Contains(p.ISR, id) && !slices.Contains(p.ELR, id) {
			return
		}
		acceptable := electableIn(img, t, p)
		c := elrChange{isr: without(p.ISR, id), election: elrElection(t, unclean), uncleanShutdown: id, minISR: elr(t),
			acceptable: func(r int32) bool { return r != id && acceptable(r) }}
		if rec, ok := buildELRChange(t, p, c); ok {
			recs = append(recs, rec)
		}
	})
	return recs
}

// elrAfterISRChange completes change, a leader's ISR change of partition
// p, with the ELR and last known leader it implies. The change keeps its
// leader, or names the one that completing a reassignment elected.
func elrAfterISRChange(t *Topic, p Partition, change *PartitionChangeRecord, elr ELRPolicy) {
	q := p
	if change.ISR != nil {
		q.ISR = change.ISR
	}
	if change.Replicas != nil {
		q.Replicas = change.Replicas
	}
	if change.Leader != nil {
		q.Leader = *change.Leader
	}
	rec, _ := buildELRChange(t, Partition{Partition: p.Partition, Leader: q.Leader, Replicas: q.Replicas, ISR: p.ISR, ELR: p.ELR, LastKnownELR: p.LastKnownELR},
		elrChange{isr: q.ISR, acceptable: func(r int32) bool { return r == q.Leader }, uncleanShutdown: -1, minISR: elr(t)})
	if rec.Leader != nil {
		// The leader is in the new ISR (decideAlterPartition checks it,
		// and a completed reassignment elects from the new ISR), so the
		// rules never move it.
		panic(fmt.Sprintf("controller: ISR change of %s-%d moved the leader", t.Name, p.Partition))
	}
	change.ELR, change.LastKnownELR = rec.ELR, rec.LastKnownELR
}

// elrElectUnclean is ElectLeaders' unclean election of leaderless
// partition p with eligible leader replicas: an unfenced ISR member, else
// an ELR member when the ISR is empty (a clean election), else the last
// known leader, else any unfenced replica. ok is false when no replica
// can lead.
func elrElectUnclean(img *Image, t *Topic, p Partition, elr ELRPolicy) (PartitionChangeRecord, bool) {
	rec, _ := buildELRChange(t, p, elrChange{isr: p.ISR, acceptable: electableIn(img, t, p), election: electUnclean, uncleanShutdown: -1, minISR: elr(t)})
	return rec, rec.Leader != nil && *rec.Leader >= 0
}

// decideUncleanElectionsELR is decideUncleanElections with eligible
// leader replicas.
func decideUncleanElectionsELR(img *Image, unclean UncleanPolicy, elr ELRPolicy) []Record {
	var recs []Record
	forEachPartition(img, func(t *Topic, p Partition) {
		if p.Leader != -1 || !unclean.allowed(t) {
			return
		}
		if rec, ok := elrElectUnclean(img, t, p, elr); ok {
			recs = append(recs, rec)
		}
	})
	return recs
}

// elrClears returns the records that clear the ELR and last known leader
// of the partitions whose min.insync.replicas recs change (Kafka's
// ClearElrRecord): a topic's own setting clears that topic, a cluster
// default clears every topic. img is the image recs were decided
// against. The records of decideClusterMinISR clear nothing, as Kafka's
// activation and ELR upgrade records do not: the first cluster-level
// value (there was none) and the removal of broker-level values (refused
// otherwise while ELR is on) change no effective min.insync.replicas in
// samsa, which applies the static one.
func elrClears(img *Image, recs []Record) []Record {
	all := false
	topics := map[string]bool{}
	_, clusterSet := img.BrokerConfigs[""][minISRName]
	for _, rec := range recs {
		c, ok := rec.(ConfigRecord)
		if !ok || c.Name != minISRName {
			continue
		}
		switch c.ResourceType {
		case ConfigResourceTopic:
			topics[c.ResourceName] = true
		case ConfigResourceBroker:
			if c.ResourceName == "" && clusterSet {
				all = true
			}
		}
	}
	if !all && len(topics) == 0 {
		return nil
	}
	var clears []Record
	forEachPartition(img, func(t *Topic, p Partition) {
		if (all || topics[t.Name]) && (len(p.ELR) > 0 || len(p.LastKnownELR) > 0) {
			clears = append(clears, PartitionChangeRecord{TopicID: t.ID, Partition: p.Partition, ELR: ptrTo([]int32{}), LastKnownELR: ptrTo([]int32{})})
		}
	})
	return clears
}
