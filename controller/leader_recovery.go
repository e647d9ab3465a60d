package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Leader recovery state (KIP-704), as Kafka 4.4 keeps it. An unclean
// election (a leader that was neither in the ISR nor an eligible leader
// replica: unclean.leader.election.enable, or the last known leader
// elected when ISR and ELR are empty) resets the ISR to the new leader
// and marks the partition RECOVERING: the new leader may lack committed
// records, so no follower may join its ISR until the leader says it
// recovered. The leader does so in its AlterPartition requests
// (leader_recovery_state RECOVERED; Kafka's leader, like samsa's, marks
// itself recovered as soon as it leads, since its log was recovered when
// it was opened), which takes the partition back to RECOVERED. While
// RECOVERING, an AlterPartition that keeps RECOVERING with more than the
// leader in the ISR is INVALID_REQUEST, and no request may go from
// RECOVERED back to RECOVERING.
//
// The state is in PartitionRecord and PartitionChangeRecord
// leader_recovery_state (omitted while RECOVERED); markUncleanElections
// sets it on the changes of a write, whatever decision elected the leader.

// Leader recovery states (Kafka's LeaderRecoveryState values).
const (
	LeaderRecovered  int8 = 0
	LeaderRecovering int8 = 1
)

// markUncleanElections sets RECOVERING on each change of recs that
// elects, uncleanly, the leader of a partition that is not RECOVERING
// already, following the partitions through recs (a batch may change a
// partition more than once).
func markUncleanElections(img *Image, recs []Record) []Record {
	type key struct {
		topic     Uuid
		partition int32
	}
	cur := map[key]Partition{}
	for i, rec := range recs {
		ch, ok := rec.(PartitionChangeRecord)
		if !ok {
			continue
		}
		k := key{ch.TopicID, ch.Partition}
		p, seen := cur[k]
		if !seen {
			t := img.TopicsByID[ch.TopicID]
			if t == nil || ch.Partition < 0 || int(ch.Partition) >= len(t.Partitions) {
				continue
			}
			p = t.Partitions[ch.Partition]
		}
		if ch.Leader != nil && *ch.Leader >= 0 && *ch.Leader != p.Leader &&
			!slices.Contains(p.ISR, *ch.Leader) && !slices.Contains(p.ELR, *ch.Leader) &&
			p.LeaderRecoveryState != LeaderRecovering && ch.LeaderRecoveryState == nil {
			ch.LeaderRecoveryState = ptrTo(LeaderRecovering)
			recs[i] = ch
		}
		if ch.Leader != nil {
			p.Leader = *ch.Leader
		}
		if ch.ISR != nil {
			p.ISR = ch.ISR
		}
		if ch.ELR != nil {
			p.ELR = *ch.ELR
		}
		if ch.LeaderRecoveryState != nil {
			p.LeaderRecoveryState = *ch.LeaderRecoveryState
		}
		cur[k] = p
	}
	return recs
}

// checkLeaderRecovery applies the leader recovery rules to an
// AlterPartition of p whose leader is in state recovery: its error (0:
// none) and whether the change takes the partition back to RECOVERED.
func checkLeaderRecovery(t *Topic, p Partition, req AlterPartition, recovery int8) (code int16, msg string, recovered bool) {
	switch {
	case recovery == LeaderRecovering && len(req.NewISR) > 1:
		return kerr.InvalidRequest.Code, fmt.Sprintf("The ISR of %s-%d cannot have more than one replica while the leader is still recovering from an unclean leader election.", t.Name, p.Partition), false
	case recovery == LeaderRecovering && p.LeaderRecoveryState == LeaderRecovered:
		return kerr.InvalidRequest.Code, fmt.Sprintf("The leader recovery state of %s-%d cannot change from RECOVERED to RECOVERING.", t.Name, p.Partition), false
	case recovery != LeaderRecovered && recovery != LeaderRecovering:
		return kerr.InvalidRequest.Code, fmt.Sprintf("Unknown leader recovery state %d.", recovery), false
	}
	return 0, "", p.LeaderRecoveryState == LeaderRecovering && recovery == LeaderRecovered
}

// AlterPartitionRecovery is AlterPartition from a leader whose leader
// recovery state is recovery (AlterPartition v1+ leader_recovery_state;
// AlterPartition is this with LeaderRecovered).
func (c *Controller) AlterPartitionRecovery(req AlterPartition, recovery int8) (Partition, int16, string) {
	var code int16
	var msg string
	err := c.write(false, func(img *Image) []Record {
		var recs []Record
		code, msg, recs = decideAlterPartition(img, req, recovery, c.elr(img))
		return recs
	})
	if err != nil && overrides(code, err) {
		code, msg = errorCode(err)
	}
	_, p, _ := partitionOf(c.Image(), req.TopicID, req.Partition)
	return p, code, msg
}
