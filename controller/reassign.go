package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// This file holds partition reassignment (Kafka's
// AlterPartitionReassignments, KIP-455) as pure decisions. A reassignment
// of a partition from its replicas O to target T:
//
//  1. starts with one PartitionChangeRecord: replicas = T followed by
//     O \ T, adding = T \ O, removing = O \ T; ISR and leader unchanged.
//     The adding replicas get the partition's log and fetch from the
//     leader like any follower;
//  2. completes when every adding replica is in the ISR (the leader's
//     AlterPartition that adds the last one carries the completion):
//     replicas = T, ISR = ISR ∩ T, adding and removing cleared, and a new
//     leader from that ISR when the old one is not in T. The removed
//     replicas stop and delete their logs;
//  3. or is cancelled (a null target): replicas = O, ISR = ISR ∩ O, a
//     leader from it when the current one was an adding replica.
//
// A reassignment that adds nothing (removal or reorder only) completes at
// once. A new target for a partition being reassigned replaces the
// reassignment in progress, from the original replicas O.

// Reassignment asks to move one partition to Replicas; nil Replicas
// cancels the reassignment in progress.
type Reassignment struct {
	TopicPartition
	Replicas []int32
}

// ReassignmentResult is the outcome for one partition.
type ReassignmentResult struct {
	TopicPartition
	ErrorCode    int16
	ErrorMessage string
}

func nilIfEmpty(s []int32) []int32 {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// minus returns the members of a not in b, in a's order.
func minus(a, b []int32) []int32 {
	var out []int32
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// originalReplicas returns the replicas a partition had before the
// reassignment in progress (all of them when none is).
func originalReplicas(p Partition) []int32 { return minus(p.Replicas, p.AddingReplicas) }

// settle fills change with the final state of a partition whose replicas
// become target: ISR = isr ∩ target, no reassignment, and a leader from
// that ISR when the current one is not in target. It returns false when
// no member of isr is in target (nothing can lead yet).
func settle(img *Image, p Partition, target, isr []int32, change *PartitionChangeRecord) bool {
	newISR := make([]int32, 0, len(isr))
	for _, r := range isr {
		if slices.Contains(target, r) {
			newISR = append(newISR, r)
		}
	}
	if len(newISR) == 0 {
		return false
	}
	empty := []int32{}
	change.Replicas = slices.Clone(target)
	change.ISR = newISR
	change.AddingReplicas, change.RemovingReplicas = &empty, &empty
	if !slices.Contains(target, p.Leader) {
		change.Leader = ptrTo(electLeader(img, target, newISR))
	}
	// Eligible leader replicas stay replicas (elr.go): a removed one
	// leaves the ELR and the last known leader. Kafka 4.4 keeps it there
	// (it never elects it: elections walk the replicas).
	if kept := onlyReplicas(p.ELR, target); len(kept) != len(p.ELR) {
		change.ELR = ptrTo(kept)
	}
	if kept := onlyReplicas(p.LastKnownELR, target); len(kept) != len(p.LastKnownELR) {
		change.LastKnownELR = ptrTo(kept)
	}
	bumpIfReplicaRemoved(p, change)
	return true
}

// onlyReplicas returns the members of ids that are in replicas, never nil.
func onlyReplicas(ids, replicas []int32) []int32 {
	out := []int32{}
	for _, r := range ids {
		if slices.Contains(replicas, r) {
			out = append(out, r)
		}
	}
	return out
}

// bumpIfReplicaRemoved makes a change whose replicas lack one of the
// partition's current replicas bump the leader epoch even when the leader
// stays, as Kafka's PartitionChangeBuilder does since KRaft (KIP-841's
// follow-up, triggerLeaderEpochBumpForReplicaReassignmentIfNeeded): the
// removed replica, which may still be fetching, is fenced by the new epoch
// and the leader starts its followers' state afresh. A change that only
// adds replicas, reorders them, or shrinks or expands the ISR bumps only
// the partition epoch (the ISR-shrink bump of metadata versions before 3.6
// is gone in Kafka 4.x).
func bumpIfReplicaRemoved(p Partition, change *PartitionChangeRecord) {
	if change.Replicas == nil || change.Leader != nil && *change.Leader != p.Leader {
		return // no replica change, or a new leader: its epoch is new anyway
	}
	for _, r := range p.Replicas {
		if !slices.Contains(change.Replicas, r) {
			change.BumpLeaderEpoch = true
			return
		}
	}
}

// decideReassignments decides each partition's reassignment against img.
func decideReassignments(img *Image, reqs []Reassignment) ([]ReassignmentResult, []Record) {
	results := make([]ReassignmentResult, len(reqs))
	var recs []Record
	for i, req := range reqs {
		results[i].TopicPartition = req.TopicPartition
		code, msg, rec := decideReassignment(img, req)
		results[i].ErrorCode, results[i].ErrorMessage = code, msg
		if rec != nil {
			recs = append(recs, *rec)
		}
	}
	return results, recs
}

func decideReassignment(img *Image, req Reassignment) (int16, string, *PartitionChangeRecord) {
	t := img.Topics[req.Topic]
	if t == nil || req.Partition < 0 || int(req.Partition) >= len(t.Partitions) {
		return kerr.UnknownTopicOrPartition.Code, "", nil
	}
	p := t.Partitions[req.Partition]
	change := &PartitionChangeRecord{TopicID: t.ID, Partition: p.Partition}
	orig := originalReplicas(p)
	if req.Replicas == nil {
		if !p.Reassigning() {
			return kerr.NoReassignmentInProgress.Code, "", nil
		}
		if !settle(img, p, orig, p.ISR, change) {
			return kerr.UnknownServerError.Code, fmt.Sprintf("No replica of %s-%d is in sync: the reassignment cannot be cancelled now.", req.Topic, req.Partition), nil
		}
		return 0, "", change
	}
	target := req.Replicas
	if len(target) == 0 {
		return kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes an empty replica list.", nil
	}
	for i, r := range target {
		if slices.Contains(target[:i], r) {
			return kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes the broker " + fmt.Sprint(r) + " more than once.", nil
		}
		if _, ok := img.Brokers[r]; !ok {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", r), nil
		}
	}
	adding, removing := minus(target, orig), minus(orig, target)
	if len(adding) == 0 {
		if !p.Reassigning() && slices.Equal(target, p.Replicas) {
			return 0, "", nil // already there
		}
		if settle(img, p, target, p.ISR, change) {
			return 0, "", change
		}
	}
	change.Replicas = append(slices.Clone(target), removing...)
	change.AddingReplicas, change.RemovingReplicas = &adding, &removing
	if adding == nil {
		change.AddingReplicas = &[]int32{}
	}
	if removing == nil {
		change.RemovingReplicas = &[]int32{}
	}
	// An ISR member that is no longer a replica (a reassignment in
	// progress replaced) leaves the ISR.
	if isr := minus(p.ISR, minus(p.Replicas, change.Replicas)); !slices.Equal(isr, p.ISR) && len(isr) > 0 {
		change.ISR = isr
		if !slices.Contains(isr, p.Leader) {
			change.Leader = ptrTo(electLeader(img, change.Replicas, isr))
		}
	}
	bumpIfReplicaRemoved(p, change)
	return 0, "", change
}

// completeReassignment adds to an ISR change the completion of the
// partition's reassignment when the new ISR holds every adding replica.
func completeReassignment(img *Image, p Partition, change *PartitionChangeRecord) {
	if len(p.AddingReplicas) == 0 || change.ISR == nil {
		return
	}
	for _, r := range p.AddingReplicas {
		if !slices.Contains(change.ISR, r) {
			return
		}
	}
	settle(img, p, minus(p.Replicas, p.RemovingReplicas), change.ISR, change)
}

// AlterReassignments starts, replaces or cancels partition reassignments
// (Kafka's AlterPartitionReassignments); results are in request order.
func (c *Controller) AlterReassignments(reqs []Reassignment) []ReassignmentResult {
	var results []ReassignmentResult
	err := c.write(false, func(img *Image) []Record {
		var recs []Record
		results, recs = decideReassignments(img, reqs)
		return recs
	})
	failResults(results, err, func(r *ReassignmentResult) (*int16, *string) { return &r.ErrorCode, &r.ErrorMessage })
	return results
}
