package broker

import (
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/samsa-broker/samsa/controller"
)

// metadataEvents logs metadata events once the node serves: the images
// replayed while it starts (the log and snapshot it already had) were logged
// when they happened, and repeating every topic creation at each restart
// would bury the start-up lines. A cluster node may still apply entries that
// existed before its restart after it serves (hashicorp/raft applies them
// once the commit index is known); those are logged again.
type metadataEvents struct {
	logger *slog.Logger
	nodeID int32
	on     atomic.Bool
}

// apply is the OnChange hook.
func (e *metadataEvents) apply(prev, next *controller.Image) {
	if e.on.Load() {
		logImageChanges(e.logger, e.nodeID, prev, next)
	}
}

// logImageChanges writes one INFO line per significant metadata event
// between two published images, as an operator reads them: a topic created
// or deleted, partitions added, a broker registered, fenced or unfenced,
// and, for partitions this node hosts, a leader change and an ISR change.
// Partitions of a topic created in the same step are covered by the topic's
// line. Topics whose *Topic is shared by both images are unchanged (Apply
// copies what it changes), so a step costs what it changed, not the size of
// the cluster.
func logImageChanges(logger *slog.Logger, nodeID int32, prev, next *controller.Image) {
	if prev == nil || next == nil || prev == next {
		return
	}
	for id, b := range next.Brokers {
		old, ok := prev.Brokers[id]
		switch {
		case !ok:
			logger.Info("broker registered", "broker", id, "host", b.Host, "port", b.Port, "fenced", b.Fenced)
		case old.Fenced != b.Fenced && b.Fenced:
			logger.Info("broker fenced", "broker", id)
		case old.Fenced != b.Fenced:
			logger.Info("broker unfenced", "broker", id)
		}
	}
	for id := range prev.Brokers {
		if _, ok := next.Brokers[id]; !ok {
			logger.Info("broker unregistered", "broker", id)
		}
	}
	for name, t := range next.Topics {
		old := prev.Topics[name]
		if old == t {
			continue
		}
		if old == nil || old.ID != t.ID {
			rf := 0
			if len(t.Partitions) > 0 {
				rf = len(t.Partitions[0].Replicas)
			}
			logger.Info("topic created", "topic", name, "topic_id", t.ID.String(), "partitions", len(t.Partitions), "replication_factor", rf)
			continue
		}
		if len(t.Partitions) > len(old.Partitions) {
			logger.Info("partitions added", "topic", name, "from", len(old.Partitions), "to", len(t.Partitions))
		}
		for i, p := range t.Partitions {
			if i >= len(old.Partitions) {
				break
			}
			o := old.Partitions[i]
			if !slices.Contains(p.Replicas, nodeID) && !slices.Contains(o.Replicas, nodeID) {
				continue
			}
			if o.Leader != p.Leader || o.LeaderEpoch != p.LeaderEpoch {
				logger.Info("partition leader changed", "topic", name, "partition", p.Partition,
					"leader", p.Leader, "previous_leader", o.Leader, "leader_epoch", p.LeaderEpoch, "isr", p.ISR)
			} else if !slices.Equal(o.ISR, p.ISR) {
				logger.Info("partition ISR changed", "topic", name, "partition", p.Partition,
					"isr", p.ISR, "previous_isr", o.ISR, "partition_epoch", p.PartitionEpoch)
			}
		}
	}
	for name, t := range prev.Topics {
		if nt, ok := next.Topics[name]; !ok || nt.ID != t.ID {
			logger.Info("topic deleted", "topic", name, "topic_id", t.ID.String())
		}
	}
}
