package faults

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A KIP-848 member that takes a cut-off node's stale metadata (it still
// names itself the leader of a partition the others moved) can restart
// that partition from its reset offset although its OffsetFetch answered
// the group's acknowledged commit: its OffsetForLeaderEpoch at the stale
// node is answered -1/-1 (the node never saw the commit's epoch), its
// first Fetch at the committed offset OFFSET_OUT_OF_RANGE (above the
// stale node's log end), and franz-go then resets to
// ConsumeResetOffset. Kafka 4.4's brokers answer those requests the same
// (compat-tests/diff); the Java consumer would not take metadata older
// than the commit's leader epoch. Finding 16 of docs/DURABILITY.md.
// CheckGroup counts such redeliveries as ClientResetAtStaleLeader, not
// as rewound-below-commit, only when the member's own events show all of
// it (staleLeaderReset).

// oorFirstFetchMsg is franz-go v1.22.3's log message (source.go) when
// the first fetch of a partition got OFFSET_OUT_OF_RANGE and it resets
// to ConsumeResetOffset; its key-values are broker, topic, partition and
// prior_offset.
const oorFirstFetchMsg = "received OFFSET_OUT_OF_RANGE on the first fetch, resetting to the configured ConsumeResetOffset"

// GroupStart is where a member started consuming a partition after an
// OffsetFetch (its first delivery of the partition after the answer).
type GroupStart struct {
	Seq int64
	// At is when the first delivery was recorded, since the workload
	// started.
	At        time.Duration
	Member    string
	Partition int32
	// Offset is the first delivered offset; Fetched the committed
	// offset the member's OffsetFetch answered (-1: none).
	Offset, Fetched int64
	// ResetBroker is the node whose OFFSET_OUT_OF_RANGE answer to the
	// member's first fetch of the partition, at the fetched commit, sent
	// it to its reset offset, at ResetAt; -1 when there was none.
	ResetBroker int32
	ResetAt     time.Duration
}

// NodeCut is a span in which the nemesis had a node cut off from a
// majority of the nodes (its side of a network partition was a
// minority), since the workload started. To is 0 when the cut was not
// healed before the history was taken.
type NodeCut struct {
	Node     int32
	From, To time.Duration
}

// memberPartition keys a member's starts of a partition.
type memberPartition struct {
	member    string
	partition int32
}

// cutSpan is a NodeCut on the wall clock.
type cutSpan struct {
	node     int32
	from, to time.Time
}

// noteCut records the nodes a partition into groups cuts off from a
// majority, and ends the spans of the previous partition.
func (nm *Nemesis) noteCut(groups [][]int) {
	now := time.Now()
	nm.mu.Lock()
	defer nm.mu.Unlock()
	nm.endCutsLocked(now)
	for _, g := range groups {
		if 2*len(g) > len(nm.C.Nodes) {
			continue
		}
		for _, m := range g {
			nm.cuts = append(nm.cuts, cutSpan{node: int32(m + 1), from: now})
		}
	}
}

// noteHeal ends the spans of the current partition.
func (nm *Nemesis) noteHeal() {
	now := time.Now()
	nm.mu.Lock()
	defer nm.mu.Unlock()
	nm.endCutsLocked(now)
}

// endCutsLocked ends the open spans at now.
// REQUIRES: nm.mu held.
func (nm *Nemesis) endCutsLocked(now time.Time) {
	for i := range nm.cuts {
		if nm.cuts[i].to.IsZero() {
			nm.cuts[i].to = now
		}
	}
}

// Cuts returns the nodes the nemesis cut off from a majority, as spans
// since start.
func (nm *Nemesis) Cuts(start time.Time) []NodeCut {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	out := make([]NodeCut, 0, len(nm.cuts))
	for _, c := range nm.cuts {
		nc := NodeCut{Node: c.node, From: c.from.Sub(start)}
		if !c.to.IsZero() {
			nc.To = c.to.Sub(start)
		}
		out = append(out, nc)
	}
	return out
}

// resetLogger is a kgo.Logger in front of a member's log (next, or none)
// that hands franz-go's reset after OFFSET_OUT_OF_RANGE on a first fetch
// to onReset, with the answering broker and the offset it fetched.
type resetLogger struct {
	next    kgo.Logger
	onReset func(broker, partition int32, prior int64)
}

// Level is next's level, at least info (the reset is logged at info).
func (l *resetLogger) Level() kgo.LogLevel {
	if l.next != nil && l.next.Level() > kgo.LogLevelInfo {
		return l.next.Level()
	}
	return kgo.LogLevelInfo
}

// Log passes the line on to next at its level and picks out the reset.
func (l *resetLogger) Log(level kgo.LogLevel, msg string, kv ...any) {
	if msg == oorFirstFetchMsg {
		broker, partition, prior := int32(-1), int32(-1), int64(-1)
		for i := 0; i+1 < len(kv); i += 2 {
			switch k, _ := kv[i].(string); k {
			case "broker":
				// franz-go logs a broker's node id as a string
				// ("seed_N" for a seed broker: no node id).
				if s, ok := kv[i+1].(string); ok {
					if id, err := strconv.ParseInt(s, 10, 32); err == nil {
						broker = int32(id)
					}
				}
			case "partition":
				if p, ok := kv[i+1].(int32); ok {
					partition = p
				}
			case "prior_offset":
				if o, ok := kv[i+1].(int64); ok {
					prior = o
				}
			}
		}
		if partition >= 0 {
			l.onReset(broker, partition, prior)
		}
	}
	if l.next != nil && level <= l.next.Level() {
		l.next.Log(level, msg, kv...)
	}
}

// staleHealSlack is how long after a cut heals a reset at the healed
// node is still put down to the cut: the time a healed node needs to
// apply what the quorum decided while it was cut off. Longer, its stale
// image is samsa's fault (a Kafka broker fetches the metadata log as soon
// as it reaches the quorum again), not the client's, and the delivery
// stays rewound-below-commit.
const staleHealSlack = 2 * time.Second

// staleLeaderReset reports whether delivery d, below the acknowledged
// commit c, comes from a member's restart of the partition that the
// member's own events explain as a reset at a cut-off node's stale
// leadership: the member's last start of the partition before d had
// fetched a commit at or above c (the coordinator answered right), began
// below it, after OFFSET_OUT_OF_RANGE on its first fetch at that commit,
// from a node the nemesis had cut off from a majority then or at most
// staleHealSlack before. It returns that start.
func staleLeaderReset(starts []GroupStart, cuts []NodeCut, d GroupDelivery, c GroupCommit) (GroupStart, bool) {
	// starts is the member's starts of d.Partition in Seq order.
	i := sort.Search(len(starts), func(i int) bool { return starts[i].Seq > d.Seq }) - 1
	if i < 0 {
		return GroupStart{}, false
	}
	s := starts[i]
	if s.Fetched < c.Offset || s.Offset >= s.Fetched || d.Offset < s.Offset || s.ResetBroker < 0 {
		return GroupStart{}, false
	}
	for _, cut := range cuts {
		if cut.Node == s.ResetBroker && s.ResetAt >= cut.From && (cut.To == 0 || s.ResetAt <= cut.To+staleHealSlack) {
			return s, true
		}
	}
	return GroupStart{}, false
}

// describeStaleReset is a ClientResetAtStaleLeader example.
func describeStaleReset(d GroupDelivery, c GroupCommit, s GroupStart, cuts []NodeCut) string {
	where := "while it was cut off"
	for _, cut := range cuts {
		if cut.Node == s.ResetBroker && s.ResetAt >= cut.From && cut.To != 0 && s.ResetAt > cut.To {
			where = fmt.Sprintf("%v after its cut healed", (s.ResetAt - cut.To).Round(10*time.Millisecond))
		}
	}
	return fmt.Sprintf("%s received %q at %d/%d after %s's commit of %d was acknowledged: it fetched the commit %d, "+
		"then node %d (%s) answered its first fetch OFFSET_OUT_OF_RANGE and it started again at %d",
		d.Member, d.Value, d.Partition, d.Offset, c.Member, c.Offset, s.Fetched, s.ResetBroker, where, s.Offset)
}
