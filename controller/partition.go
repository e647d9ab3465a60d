package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// This file holds the replication decisions: ISR changes requested by
// partition leaders, leader movement when brokers are fenced or unfenced,
// and leader elections. Like decide.go these are pure.

// AlterPartition is a partition leader's request to change its ISR (Kafka's
// AlterPartition). LeaderEpoch and PartitionEpoch are the epochs the leader
// knows; a stale request is refused so that two leaders cannot interleave.
type AlterPartition struct {
	TopicID        Uuid
	Partition      int32
	LeaderID       int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
}

// partitionOf finds a partition by topic id.
func partitionOf(img *Image, id Uuid, partition int32) (*Topic, Partition, int16) {
	t := img.TopicsByID[id]
	if t == nil {
		return nil, Partition{}, kerr.UnknownTopicID.Code
	}
	if partition < 0 || int(partition) >= len(t.Partitions) {
		return t, Partition{}, kerr.UnknownTopicOrPartition.Code
	}
	return t, t.Partitions[partition], 0
}

// decideAlterPartition checks an ISR change and returns the record that
// makes it (none if the ISR is already as requested).
func decideAlterPartition(img *Image, req AlterPartition, recovery int8, elr ELRPolicy) (int16, string, []Record) {
	t, p, code := partitionOf(img, req.TopicID, req.Partition)
	if code != 0 {
		return code, "", nil
	}
	switch {
	case req.LeaderID != p.Leader:
		return kerr.NotLeaderForPartition.Code, fmt.Sprintf("Broker %d is not the leader of %s-%d (leader %d).", req.LeaderID, t.Name, p.Partition, p.Leader), nil
	case req.LeaderEpoch < p.LeaderEpoch:
		return kerr.FencedLeaderEpoch.Code, fmt.Sprintf("Leader epoch %d is older than the current %d.", req.LeaderEpoch, p.LeaderEpoch), nil
	case req.LeaderEpoch > p.LeaderEpoch:
		return kerr.UnknownLeaderEpoch.Code, fmt.Sprintf("Leader epoch %d is newer than the current %d.", req.LeaderEpoch, p.LeaderEpoch), nil
	case req.PartitionEpoch != p.PartitionEpoch:
		return kerr.InvalidUpdateVersion.Code, fmt.Sprintf("Partition epoch %d does not match the current %d.", req.PartitionEpoch, p.PartitionEpoch), nil
	case !slices.Contains(req.NewISR, req.LeaderID):
		return kerr.InvalidRequest.Code, "The new ISR must include the leader.", nil
	}
	for i, r := range req.NewISR {
		if !slices.Contains(p.Replicas, r) {
			return kerr.InvalidRequest.Code, fmt.Sprintf("Broker %d in the new ISR is not a replica.", r), nil
		}
		if slices.Contains(req.NewISR[:i], r) {
			return kerr.InvalidRequest.Code, fmt.Sprintf("Broker %d is in the new ISR more than once.", r), nil
		}
		// Shrinking may keep a fenced member; adding one is refused, since a
		// fenced broker cannot be caught up.
		if b, ok := img.Brokers[r]; (!ok || b.Fenced) && !slices.Contains(p.ISR, r) {
			return kerr.IneligibleReplica.Code, fmt.Sprintf("Broker %d is fenced and cannot join the ISR.", r), nil
		}
		if img.ReplicaOffline(r, t.ID, p.Partition) && !slices.Contains(p.ISR, r) {
			code, msg := ineligibleOffline(r)
			return code, msg, nil
		}
	}
	code, msg, recovered := checkLeaderRecovery(t, p, req, recovery)
	if code != 0 {
		return code, msg, nil
	}
	if slices.Equal(req.NewISR, p.ISR) {
		if recovered {
			return 0, "", []Record{PartitionChangeRecord{TopicID: t.ID, Partition: p.Partition, LeaderRecoveryState: ptrTo(LeaderRecovered)}}
		}
		return 0, "", nil
	}
	change := PartitionChangeRecord{TopicID: t.ID, Partition: p.Partition, ISR: slices.Clone(req.NewISR)}
	if recovered {
		change.LeaderRecoveryState = ptrTo(LeaderRecovered)
	}
	completeReassignment(img, p, &change)
	if elr.enabled() {
		elrAfterISRChange(t, p, &change, elr)
	}
	return 0, "", []Record{change}
}

// electLeader picks the first replica, in replica order, that is in isr and
// unfenced in img; -1 if there is none.
func electLeader(img *Image, replicas, isr []int32) int32 {
	for _, r := range replicas {
		if b, ok := img.Brokers[r]; ok && !b.Fenced && slices.Contains(isr, r) {
			return r
		}
	}
	return -1
}

// forEachPartition visits every partition in topic-name order, so decisions
// that touch many partitions produce their records deterministically.
func forEachPartition(img *Image, fn func(t *Topic, p Partition)) {
	for _, name := range sortedKeys(img.Topics) {
		t := img.Topics[name]
		for _, p := range t.Partitions {
			fn(t, p)
		}
	}
}

// decideFenceBroker fences or unfences broker id and moves leadership.
// Fencing removes the broker from every ISR it is in, except where it is the
// last member (an ISR never becomes empty, so the last in-sync replica stays
// known), and elects a new leader where it led. Unfencing makes it leader of
// leaderless partitions whose ISR holds it. Where the topic allows
// unclean election (unclean), a partition left without an eligible ISR
// member gets its first unfenced replica as leader, with an ISR of it
// alone, and a leaderless partition takes the unfenced broker when none
// of its ISR is alive.
//
// With eligible leader replicas (elr non-nil) the rules of elr.go apply
// instead (decideFenceBrokerELR).
func decideFenceBroker(img *Image, id int32, fenced bool, unclean UncleanPolicy, elr ELRPolicy) (bool, []Record) {
	b, ok := img.Brokers[id]
	if !ok {
		return false, nil
	}
	if b.Fenced == fenced {
		return true, nil
	}
	recs := []Record{BrokerFenceRecord{BrokerID: id, Fenced: fenced}}
	after, err := Apply(img, recs[0])
	if err != nil {
		panic(fmt.Sprintf("controller: fence decision: %v", err))
	}
	if elr.enabled() {
		return true, append(recs, decideFenceBrokerELR(after, id, fenced, unclean, elr)...)
	}
	forEachPartition(after, func(t *Topic, p Partition) {
		change := PartitionChangeRecord{TopicID: t.ID, Partition: p.Partition}
		if fenced {
			if !slices.Contains(p.ISR, id) {
				return
			}
			isr := p.ISR
			if len(isr) > 1 {
				isr = slices.DeleteFunc(slices.Clone(isr), func(r int32) bool { return r == id })
				change.ISR = isr
			}
			if p.Leader == id {
				leader := electLeader(after, p.Replicas, isr)
				if leader == -1 && unclean.allowed(t) {
					if leader = uncleanLeader(after, t.ID, p); leader != -1 {
						change.ISR = []int32{leader}
					}
				}
				change.Leader = ptrTo(leader)
			}
		} else {
			if p.Leader != -1 || !slices.Contains(p.Replicas, id) || after.ReplicaOffline(id, t.ID, p.Partition) {
				return
			}
			switch {
			case slices.Contains(p.ISR, id):
				change.Leader = ptrTo(electLeader(after, p.Replicas, p.ISR))
			case unclean.allowed(t) && electLeader(after, p.Replicas, p.ISR) == -1:
				leader := uncleanLeader(after, t.ID, p)
				change.Leader, change.ISR = ptrTo(leader), []int32{leader}
			default:
				return
			}
		}
		recs = append(recs, change)
	})
	return true, recs
}

func ptrTo[T any](v T) *T { return &v }

// ElectionType selects how ElectLeaders picks a leader, numbered as in Kafka.
type ElectionType int8

// Election types.
const (
	ElectPreferred ElectionType = 0
	ElectUnclean   ElectionType = 1
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// ElectLeaderResult is the outcome for one partition of ElectLeaders.
type ElectLeaderResult struct {
	TopicPartition
	ErrorCode    int16
	ErrorMessage string
}

// decideElectLeaders elects leaders for the given partitions. Preferred
// election moves leadership to the first replica when it is in the ISR and
// unfenced. Unclean election only acts on leaderless partitions: it picks an
// unfenced ISR member if any, else any unfenced replica, whose log then
// becomes the truth (the ISR is reset to it alone).
//
// With eligible leader replicas (elr non-nil), unclean election prefers
// an ELR member of a partition whose ISR is empty, and then its last
// known leader (elrElectUnclean).
func decideElectLeaders(img *Image, typ ElectionType, parts []TopicPartition, elr ELRPolicy) ([]ElectLeaderResult, []Record) {
	results := make([]ElectLeaderResult, len(parts))
	var recs []Record
	done := map[TopicPartition]bool{}
	for i, tp := range parts {
		res := ElectLeaderResult{TopicPartition: tp}
		results[i] = res
		t := img.Topics[tp.Topic]
		if t == nil {
			results[i].ErrorCode = kerr.UnknownTopicOrPartition.Code
			results[i].ErrorMessage = "No such topic as " + tp.Topic
			continue
		}
		if tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
			results[i].ErrorCode = kerr.UnknownTopicOrPartition.Code
			results[i].ErrorMessage = fmt.Sprintf("No such partition as %s-%d", tp.Topic, tp.Partition)
			continue
		}
		if done[tp] {
			continue
		}
		done[tp] = true
		p := t.Partitions[tp.Partition]
		change := PartitionChangeRecord{TopicID: t.ID, Partition: p.Partition}
		switch typ {
		case ElectPreferred:
			preferred := p.Replicas[0]
			if p.Leader == preferred {
				results[i].ErrorCode = kerr.ElectionNotNeeded.Code
				continue
			}
			if electLeader(img, p.Replicas[:1], p.ISR) != preferred || img.ReplicaOffline(preferred, t.ID, p.Partition) {
				// Kafka gives no message of its own here.
				results[i].ErrorCode = kerr.PreferredLeaderNotAvailable.Code
				continue
			}
			change.Leader = ptrTo(preferred)
		case ElectUnclean:
			if p.Leader != -1 {
				results[i].ErrorCode = kerr.ElectionNotNeeded.Code
				continue
			}
			if elr.enabled() {
				rec, ok := elrElectUnclean(img, t, p, elr)
				if !ok {
					results[i].ErrorCode = kerr.EligibleLeadersNotAvailable.Code
					continue
				}
				recs = append(recs, rec)
				continue
			}
			online := img.onlineReplicas(t.ID, p)
			leader := electLeader(img, online, p.ISR)
			if leader == -1 {
				leader = electLeader(img, online, online)
				if leader == -1 {
					results[i].ErrorCode = kerr.EligibleLeadersNotAvailable.Code
					continue
				}
				change.ISR = []int32{leader}
			}
			change.Leader = ptrTo(leader)
		default:
			results[i].ErrorCode = kerr.InvalidRequest.Code
			results[i].ErrorMessage = fmt.Sprintf("Unknown election type %d.", typ)
			continue
		}
		recs = append(recs, change)
	}
	return results, recs
}
