package replica

import (
	"slices"
	"time"
)

// This file holds the replication rules as pure functions of the state
// they decide on, with now passed in: the high watermark, when a follower
// is caught up, which followers leave and which may join the ISR, and
// where a diverging follower truncates. Partition applies them.

// FollowerState is what a leader knows of one follower from its fetches.
type FollowerState struct {
	// LogEndOffset is the follower's log end offset: the offset of its
	// last fetch. -1 until the follower fetched from this leader.
	LogEndOffset int64
	// LogStartOffset is the follower's log start offset as its last fetch
	// gave it (KIP-392: a consumer is sent only to a follower whose log
	// holds the fetch offset).
	LogStartOffset int64
	// LastCaughtUp is the last time the follower was known to have
	// everything the leader had (Kafka's lastCaughtUpTimeMs).
	LastCaughtUp time.Time
	// LastFetch is the time of the follower's last fetch, and
	// LastFetchLeaderLEO the leader's log end offset then.
	LastFetch          time.Time
	LastFetchLeaderLEO int64
	// HighWatermarkSent is the high watermark of the leader's last answer
	// to the follower.
	HighWatermarkSent int64
}

// UpdateFollowerFetch returns the state of a follower after a fetch at
// fetchOffset at time now, when the leader's log end offset is leaderLEO.
// A fetch at the leader's log end makes the follower caught up now; a
// fetch that reached the leader's log end of the previous fetch makes it
// caught up as of that previous fetch (Kafka's lastCaughtUpTimeMs: a
// follower that always fetches what was there one round ago, on a busy
// partition, never falls out of the ISR).
func UpdateFollowerFetch(s FollowerState, fetchOffset, leaderLEO int64, now time.Time) FollowerState {
	switch {
	case fetchOffset >= leaderLEO:
		s.LastCaughtUp = maxTime(s.LastCaughtUp, now)
	case !s.LastFetch.IsZero() && fetchOffset >= s.LastFetchLeaderLEO:
		s.LastCaughtUp = maxTime(s.LastCaughtUp, s.LastFetch)
	}
	s.LogEndOffset = fetchOffset
	s.LastFetch = now
	s.LastFetchLeaderLEO = leaderLEO
	return s
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// HighWatermark is Kafka's maybeIncrementLeaderHW: the minimum log end
// offset over the ISR (the leader's own included), never below current, the
// high watermark already exposed. A follower whose log end offset is not
// known yet (-1) holds the high watermark where it is. With ISR = {leader}
// it is the leader's log end offset.
func HighWatermark(current int64, leader int32, leaderLEO int64, isr []int32, followers map[int32]FollowerState) int64 {
	hw := leaderLEO
	for _, id := range isr {
		if id == leader {
			continue
		}
		f, ok := followers[id]
		if !ok || f.LogEndOffset < 0 {
			return current
		}
		hw = min(hw, f.LogEndOffset)
	}
	return max(hw, current)
}

// UnderMinISR is Kafka's isUnderMinIsr, the "strict min ISR" rule of
// KIP-966 that Kafka 4.x applies to every partition: a leader whose
// committed ISR has fewer members than min.insync.replicas (capped at the
// number of replicas, Kafka's effectiveMinIsr) does not advance its high
// watermark. A record a lone leader took (acks=1, or an acks=all produce
// that timed out before the shrink) stays invisible until enough replicas
// have it again, so a consumer never reads what one failure could erase.
func UnderMinISR(isr, replicas, minISR int) bool {
	return isr < min(minISR, replicas)
}

// MaximalISR is the ISR the high watermark must honour while an ISR change
// is in flight: the union of the committed and the proposed ISR (Kafka's
// maximalIsr). Until the controller confirms a shrink, the removed replica
// still counts; an added replica counts as soon as it is proposed.
func MaximalISR(isr, pending []int32) []int32 {
	out := slices.Clone(isr)
	for _, id := range pending {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// OutOfSyncReplicas returns the followers of the ISR that were last caught
// up more than lagMax before now (replica.lag.time.max.ms), in ISR order:
// the candidates for an ISR shrink.
func OutOfSyncReplicas(leader int32, isr []int32, followers map[int32]FollowerState, now time.Time, lagMax time.Duration) []int32 {
	var out []int32
	for _, id := range isr {
		if id == leader {
			continue
		}
		if now.Sub(followers[id].LastCaughtUp) > lagMax {
			out = append(out, id)
		}
	}
	return out
}

// CanJoinISR reports whether a follower may be added to the ISR: it is a
// replica, not in the ISR yet, and its log end offset reached both the
// high watermark and the offset at which the leader's epoch started (so it
// holds everything of earlier epochs that the leader holds).
func CanJoinISR(id int32, replicas, isr []int32, followerLEO, highWatermark, epochStartOffset int64) bool {
	return slices.Contains(replicas, id) && !slices.Contains(isr, id) &&
		followerLEO >= highWatermark && followerLEO >= epochStartOffset
}

// Without returns isr minus the ids in drop, in order.
func Without(isr, drop []int32) []int32 {
	return slices.DeleteFunc(slices.Clone(isr), func(id int32) bool { return slices.Contains(drop, id) })
}

// DivergingEpoch is the leader's check of a follower fetch at fetchOffset
// whose last fetched batch had lastFetchedEpoch (Fetch v12+). endEpoch and
// endOffset are the leader's answer to OffsetForLeaderEpoch for
// lastFetchedEpoch (the largest epoch <= it and where that epoch ends).
// The fetch diverges when the leader does not have that epoch or the
// epoch ended before fetchOffset; the follower then truncates with
// TruncationOffset.
func DivergingEpoch(lastFetchedEpoch int32, fetchOffset int64, endEpoch int32, endOffset int64) (epoch int32, offset int64, diverged bool) {
	if lastFetchedEpoch < 0 {
		return -1, -1, false
	}
	if endEpoch != lastFetchedEpoch || endOffset < fetchOffset {
		return endEpoch, endOffset, true
	}
	return -1, -1, false
}

// EpochEnd is an answer to OffsetForLeaderEpoch: the largest epoch at or
// below the one asked about, and the offset at which it ended.
type EpochEnd func(epoch int32) (endEpoch int32, endOffset int64)

// TruncationOffset is where a follower truncates given the leader's epoch
// end (leaderEpoch, leaderEnd) from a DivergingEpoch or an
// OffsetForLeaderEpoch answer, its own epoch ends, log end offset and high
// watermark. done is false when the follower must ask again with its
// next-lower epoch (its largest epoch at or below the leader's is older
// than the leader's: Kafka's truncation in rounds).
//
//   - The leader knows no such epoch (leaderEnd -1): truncate to the high
//     watermark, the only offset known committed.
//   - The follower has the same epoch: truncate to the smaller end.
//   - The follower's epoch is older: truncate to its end and go again.
//   - The follower has no epoch at or below: truncate to the leader's end.
func TruncationOffset(leaderEpoch int32, leaderEnd int64, local EpochEnd, localLEO, localHW int64) (offset int64, done bool) {
	if leaderEpoch < 0 || leaderEnd < 0 {
		return min(localHW, localLEO), true
	}
	fe, fo := local(leaderEpoch)
	switch {
	case fe == leaderEpoch:
		return min(fo, leaderEnd, localLEO), true
	case fe >= 0:
		return min(fo, localLEO), false
	default:
		return min(leaderEnd, localLEO), true
	}
}
