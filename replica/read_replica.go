package replica

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// This file holds fetch from the closest replica (KIP-392): which replica
// a leader sends a consumer to (replica.selector.class), and the check a
// follower makes before serving a consumer's fetch.

// ErrUnknownSelector is returned by ParseReplicaSelector for a
// replica.selector.class samsa does not implement.
var ErrUnknownSelector = errors.New("replica: unknown replica.selector.class")

// The replica.selector.class values Kafka ships.
const (
	RackAwareSelectorClass = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
	LeaderSelectorClass    = "org.apache.kafka.common.replica.LeaderSelector"
)

// Selector is a replica.selector.class: how a leader picks the replica a
// consumer reads from.
type Selector int8

// Selectors.
const (
	// SelectorNone is Kafka's default (no class): consumers are never
	// sent elsewhere.
	SelectorNone Selector = iota
	// SelectorLeader is LeaderSelector: always the leader, which Kafka
	// never sends out as a preferred read replica, so the same as none.
	SelectorLeader
	// SelectorRackAware is RackAwareReplicaSelector: a replica in the
	// consumer's rack (client.rack), the leader when it is one of them.
	SelectorRackAware
)

// ParseReplicaSelector parses replica.selector.class ("" is none).
func ParseReplicaSelector(class string) (Selector, error) {
	switch class {
	case "":
		return SelectorNone, nil
	case LeaderSelectorClass:
		return SelectorLeader, nil
	case RackAwareSelectorClass:
		return SelectorRackAware, nil
	}
	return SelectorNone, fmt.Errorf("%w: %q", ErrUnknownSelector, class)
}

// ReplicaView is what a leader knows of one replica when it picks where a
// consumer reads (Kafka's ReplicaView).
type ReplicaView struct {
	ID int32
	// Rack is the broker's broker.rack ("" when it has none).
	Rack string
	// LogEndOffset is the replica's log end offset as the leader knows it.
	LogEndOffset int64
	// SinceCaughtUp is how long ago the replica was last caught up (0 for
	// the leader).
	SinceCaughtUp time.Duration
}

// moreCaughtUp is Kafka's ReplicaView.comparator: a higher log end
// offset, then a shorter time since caught up, then a higher broker id.
func moreCaughtUp(a, b ReplicaView) bool {
	if a.LogEndOffset != b.LogEndOffset {
		return a.LogEndOffset > b.LogEndOffset
	}
	if a.SinceCaughtUp != b.SinceCaughtUp {
		return a.SinceCaughtUp < b.SinceCaughtUp
	}
	return a.ID > b.ID
}

// SelectReadReplica is the replica selector's decision: the replica a
// consumer in clientRack should read from, among the leader and the
// eligible followers (see Partition.PreferredReadReplica for which are).
// It returns the leader's id when the consumer stays with the leader.
//
// RackAwareReplicaSelector picks the leader when the client gives no rack,
// when no replica is in its rack, or when the leader is; otherwise the
// most caught-up replica of the client's rack. The other selectors always
// pick the leader.
func SelectReadReplica(sel Selector, clientRack string, leader ReplicaView, followers []ReplicaView) int32 {
	if sel != SelectorRackAware || clientRack == "" || leader.Rack == clientRack {
		return leader.ID
	}
	best, found := ReplicaView{}, false
	for _, f := range followers {
		if f.Rack != clientRack {
			continue
		}
		if !found || moreCaughtUp(f, best) {
			best, found = f, true
		}
	}
	if !found {
		return leader.ID
	}
	return best.ID
}

// ReadReplicaOf says, for PreferredReadReplica, whether a broker can be
// named to a client (registered and not fenced: Kafka's replica
// endpoints) and its rack.
type ReadReplicaOf func(id int32) (rack string, ok bool)

// PreferredReadReplica is Kafka's findPreferredReadReplica, asked by the
// leader for a consumer fetch at fetchOffset from clientRack: the replica
// the consumer should read from instead of this leader, or ok false to
// serve the fetch here. The candidates are the followers in the committed
// ISR whose log (as the leader knows it from their fetches) holds
// fetchOffset — log start offset <= fetchOffset <= log end offset — and
// that brokerOf can name; a lagging follower out of the ISR is never
// chosen, so a consumer sent back to the leader stays there until the
// follower is in sync again.
func (p *Partition) PreferredReadReplica(sel Selector, clientRack string, fetchOffset int64, brokerOf ReadReplicaOf) (id int32, ok bool) {
	if sel != SelectorRackAware || clientRack == "" {
		return -1, false
	}
	local := p.m.opts.NodeID
	leaderRack, leaderOK := brokerOf(local)
	if !leaderOK {
		leaderRack = ""
	}
	now := p.m.now()
	p.mu.Lock()
	if p.mu.role != RoleLeader {
		p.mu.Unlock()
		return -1, false
	}
	leader := ReplicaView{ID: local, Rack: leaderRack, LogEndOffset: p.log.LogEndOffset()}
	var followers []ReplicaView
	for id, f := range p.mu.followers {
		if !slices.Contains(p.mu.isr, id) || f.LogEndOffset < fetchOffset || f.LogStartOffset > fetchOffset {
			continue
		}
		rack, known := brokerOf(id)
		if !known {
			continue
		}
		since := time.Duration(0)
		if !f.LastCaughtUp.IsZero() {
			since = now.Sub(f.LastCaughtUp)
		}
		followers = append(followers, ReplicaView{ID: id, Rack: rack, LogEndOffset: f.LogEndOffset, SinceCaughtUp: since})
	}
	p.mu.Unlock()
	chosen := SelectReadReplica(sel, clientRack, leader, followers)
	if chosen == local {
		return -1, false
	}
	return chosen, true
}

// CheckReplica answers whether a consumer's fetch with clientEpoch as its
// current leader epoch (-1: none) may be read from this node's replica,
// leader or follower (Fetch v11+, KIP-392): FENCED_LEADER_EPOCH and
// UNKNOWN_LEADER_EPOCH as CheckLeader, NOT_LEADER_OR_FOLLOWER when this
// node holds no role for the partition.
func (p *Partition) CheckReplica(clientEpoch int32) int16 {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case clientEpoch >= 0 && clientEpoch < p.mu.leaderEpoch:
		return kerr.FencedLeaderEpoch.Code
	case clientEpoch > p.mu.leaderEpoch:
		return kerr.UnknownLeaderEpoch.Code
	case p.mu.role == RoleNone:
		return kerr.NotLeaderForPartition.Code
	}
	return 0
}
