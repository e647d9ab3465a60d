package coordinator

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// The shard-side pieces consumer, streams and share groups share: their
// ListGroups rows, fence log lines, deadlines, and the tombstones and
// holder removal of a deleted group.

// typeListed tells whether a ListGroups types filter (empty: all) admits
// groups of this type; Kafka compares the names ignoring case.
func typeListed(types []string, groupType string) bool {
	return len(types) == 0 || slices.ContainsFunc(types, func(t string) bool { return strings.EqualFold(t, groupType) })
}

// stateListed tells whether a ListGroups states filter (empty: all)
// admits this state name, ignoring case.
func stateListed(states []string, state string) bool {
	return len(states) == 0 || slices.ContainsFunc(states, func(st string) bool { return strings.EqualFold(st, state) })
}

// listedGroup is a ListGroups row of a group whose protocol type is its
// group type (consumer, streams, share).
func listedGroup(id, groupType, state string) kmsg.ListGroupsResponseGroup {
	lg := kmsg.NewListGroupsResponseGroup()
	lg.Group = id
	lg.ProtocolType = groupType
	lg.GroupState = state
	lg.GroupType = groupType
	return lg
}

// describeNotFound is the GROUP_ID_NOT_FOUND message of a describe of a
// group of groupType, as Kafka words it: "not found", or "is not a
// <groupType> group" when the id names a live group of another type
// (otherType).
func describeNotFound(id, groupType string, otherType bool) *string {
	msg := "Group " + id + " not found."
	if otherType {
		msg = "Group " + id + " is not a " + groupType + " group."
	}
	return &msg
}

// logFenced logs, at INFO as Kafka does, a member of a consumer or streams
// group fenced by its deadlines: a member fenced while its client still
// fetches is the usual cause of a record delivered twice, and this line
// is what tells it apart. held names what it failed to revoke.
func (s *shard) logFenced(groupType, group, held string, f cgFence) {
	why := "its session expired"
	if !f.expired {
		why = "it did not revoke its " + held + " within its rebalance timeout"
	}
	s.logger.Info("coordinator: "+groupType+" group member fenced because "+why,
		"group", group, "member", f.member, "client_id", f.clientID, "member_epoch", f.epoch)
}

// deadliner is a group with deadlines of its own.
type deadliner interface {
	NextDeadline() (time.Time, bool)
}

// earliestOf returns the earliest of next and the deadlines of groups.
func earliestOf[G deadliner](groups map[string]G, next time.Time) time.Time {
	for _, g := range groups {
		if d, ok := g.NextDeadline(); ok && d.Before(next) {
			next = d
		}
	}
	return next
}

// offsetTombstones returns the tombstones of a group's committed offsets
// and of its pending transactional ones, with the committed offsets (nil
// when the group has no holder). g is the group's holder or nil.
// REQUIRES: on the shard goroutine.
func (s *shard) offsetTombstones(id string, g *Group) ([]wire.Record, map[topicPartition]offsetEntry) {
	var recs []wire.Record
	var committed map[topicPartition]offsetEntry
	if g != nil {
		committed = g.offsets
		for tp := range g.offsets {
			recs = append(recs, wire.Record{Key: offsetCommitKey(id, tp)})
		}
	}
	return append(recs, s.txnTombstones(id, committed)...), committed
}

// dropHolder forgets a deleted group's pending transactional offsets and
// its holder g (nil when none), once its tombstones are written.
// REQUIRES: on the shard goroutine.
func (s *shard) dropHolder(id string, g *Group) {
	s.pendingTxn().dropGroup(id)
	if g != nil {
		g.state = Dead
		g.offsets = map[topicPartition]offsetEntry{}
		delete(s.groups, id)
	}
}
