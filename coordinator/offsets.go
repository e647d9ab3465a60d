package coordinator

import (
	"cmp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicPartition names one committed offset of a group.
type topicPartition struct {
	topic     string
	partition int32
}

// offsetEntry is one committed offset.
type offsetEntry struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTime  time.Time
	// expireTime is set only for offsets loaded from OffsetCommitValue
	// v1, which carried an explicit expiry.
	expireTime time.Time
	// recordOffset is the log offset of the record that wrote it: when a
	// transaction commits, its offset replaces a committed one only if
	// its record is later (Kafka's OffsetAndMetadata.recordOffset).
	recordOffset int64
}

// CommitCheck validates an OffsetCommit against the group and returns the
// error code every partition of the request gets (0 to commit), in Kafka's
// order of checks. A member's commit also counts as a heartbeat.
func (g *Group) CommitCheck(now time.Time, generation int32, memberID string, instanceID *string) int16 {
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if g.fenced(instanceID, memberID) {
		return kerr.FencedInstanceID.Code
	}
	if generation < 0 && g.state == Empty {
		// A simple consumer (assign, no group management) that
		// uses the group only to store offsets.
		return 0
	}
	m := g.member(memberID)
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	if g.state == CompletingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	m.heartbeatDeadline = now.Add(m.sessionTimeout)
	return 0
}

// commit records an offset whose record was written.
func (g *Group) commit(tp topicPartition, e offsetEntry) { g.offsets[tp] = e }

// fetchOffset returns the committed offset of tp, or -1.
func (g *Group) fetchOffset(tp topicPartition) (offsetEntry, bool) {
	e, ok := g.offsets[tp]
	return e, ok
}

// committedTopics returns every committed partition, sorted, grouped by
// topic, for OffsetFetch with null topics.
func (g *Group) committedTopics() map[string][]int32 {
	out := map[string][]int32{}
	for tp := range g.offsets {
		out[tp.topic] = append(out[tp.topic], tp.partition)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// subscribedTopics returns the topics the members of a "consumer" group
// subscribe to, read from their metadata for the chosen protocol; known is
// false when the group is not a consumer group or a member's metadata does
// not parse.
func (g *Group) subscribedTopics() (topics map[string]bool, known bool) {
	if g.protocolType != "consumer" || g.protocol == "" {
		return nil, false
	}
	topics = map[string]bool{}
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			return nil, false
		}
		for _, t := range md.Topics {
			topics[t] = true
		}
	}
	return topics, true
}

// OffsetDeleteCheck returns the group-level error of OffsetDelete, and
// the subscribed topics whose partitions get GROUP_SUBSCRIBED_TO_TOPIC.
func (g *Group) OffsetDeleteCheck() (int16, map[string]bool) {
	if g.state == Dead {
		return kerr.GroupIDNotFound.Code, nil
	}
	if g.state == Empty {
		return 0, nil
	}
	subscribed, known := g.subscribedTopics()
	if !known && g.protocolType != "consumer" {
		return kerr.NonEmptyGroup.Code, nil
	}
	return 0, subscribed
}

// DeleteCheck returns the error DeleteGroups gets for the group.
func (g *Group) DeleteCheck() int16 {
	switch {
	case g.state == Dead:
		return kerr.GroupIDNotFound.Code
	case g.state != Empty || g.hasMembers():
		return kerr.NonEmptyGroup.Code
	}
	return 0
}

// expiredOffsets removes and returns the offsets that outlived retention,
// by Kafka's rules since 2.1 (KIP-211): an empty consumer group's offsets
// expire retention after the group became empty; a simple group's (no
// protocol type) retention after their commit; a stable consumer group's
// offsets of topics no member subscribes to, retention after their commit.
// Unlike Kafka, an empty group's offset committed after the group became
// empty counts from its commit, so a late simple commit is not dropped
// early.
func (g *Group) expiredOffsets(now time.Time, retention time.Duration) []topicPartition {
	return g.expiredOffsetsExcept(now, retention, nil)
}

// expiredOffsetsExcept is expiredOffsets keeping the partitions for which
// keep (if not nil) is true: Kafka does not expire an offset while a
// transaction has a pending one for its partition.
func (g *Group) expiredOffsetsExcept(now time.Time, retention time.Duration, keep func(topicPartition) bool) []topicPartition {
	var base func(tp topicPartition, e offsetEntry) (time.Time, bool)
	switch {
	case g.state == Empty && g.protocolType != "":
		base = func(_ topicPartition, e offsetEntry) (time.Time, bool) {
			return maxTime(g.stateSince, e.commitTime), true
		}
	case g.state == Empty:
		base = func(_ topicPartition, e offsetEntry) (time.Time, bool) { return e.commitTime, true }
	case g.state == Stable:
		subscribed, known := g.subscribedTopics()
		if !known {
			return nil
		}
		base = func(tp topicPartition, e offsetEntry) (time.Time, bool) {
			return e.commitTime, !subscribed[tp.topic]
		}
	default:
		return nil
	}
	var out []topicPartition
	for tp, e := range g.offsets {
		if keep != nil && keep(tp) {
			continue
		}
		if !e.expireTime.IsZero() {
			if !now.Before(e.expireTime) {
				out = append(out, tp)
			}
			continue
		}
		if b, ok := base(tp, e); ok && now.Sub(b) >= retention {
			out = append(out, tp)
		}
	}
	for _, tp := range out {
		delete(g.offsets, tp)
	}
	slices.SortFunc(out, func(a, b topicPartition) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// deletable tells whether the group can be removed after its offsets
// went: empty, no members, no offsets (Kafka then writes a tombstone).
func (g *Group) deletable() bool {
	return g.state == Empty && !g.hasMembers() && len(g.offsets) == 0 && g.store == nil
}
