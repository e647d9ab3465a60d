package broker

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/replica"
	"github.com/samsa-broker/samsa/storage"
)

// LogSyncer makes local storage follow the metadata image: it opens a log
// for every partition this node replicates, deletes the logs of deleted
// topics, and pushes topic config changes into open logs. It runs as the
// controller's OnChange callback, in commit order.
type LogSyncer struct {
	NodeID int32
	Config *config.Config
	Logs   *storage.Manager
	Logger *slog.Logger
	// Replicas, when set, is reconciled with each image once the logs
	// exist (roles, leader epochs, ISR and the high watermark rule).
	Replicas *replica.Manager
	// dirs, when set, places new logs in the directories the image
	// assigns and reports where logs live (log_dir_placement.go).
	dirs *logDirFailures
	// moves, when set, holds the directories AlterReplicaLogDirs asked
	// for replicas not hosted yet (log_dir_move.go).
	moves *logDirMoves

	// mu serializes Apply and SetAsideStray, so that the start-up check
	// judges logs against the newest image Apply saw (last), never an
	// older one that lacks a topic whose log Apply just created.
	mu   sync.Mutex
	last *controller.Image
}

// LogConfig turns a topic's resolved config into the storage settings.
func LogConfig(tc config.TopicConfig) storage.LogConfig {
	return storage.LogConfig{
		SegmentBytes:          tc.SegmentBytes,
		SegmentMs:             tc.SegmentMs,
		RetentionMs:           tc.RetentionMs,
		RetentionBytes:        tc.RetentionBytes,
		IndexIntervalBytes:    tc.IndexIntervalBytes,
		SegmentIndexBytes:     tc.SegmentIndexBytes,
		FlushIntervalMessages: tc.FlushMessages,
		FlushMs:               tc.FlushMs,
		FileDeleteDelayMs:     tc.FileDeleteDelayMs,
		Delete:                tc.CleanupPolicyDelete,
		Compact:               tc.CleanupPolicyCompact,
		DeleteRetentionMs:     tc.DeleteRetentionMs,
		MinCompactionLagMs:    tc.MinCompactionLagMs,
		MaxCompactionLagMs:    tc.MaxCompactionLagMs,
		// min.cleanable.dirty.ratio
		MinCleanableDirtyRatio: tc.MinCleanableDirtyRatio,
	}
}

// Apply is the OnChange callback.
func (s *LogSyncer) Apply(prev, next *controller.Image) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = next
	if s.dirs != nil {
		s.dirs.assign.delivered.Store(next) // before checkDir queues a report
	}
	s.applyCordoned(prev, next)
	// Deleted topics, and topics re-created under the same name with a
	// new id: drop the old logs first.
	if prev != nil {
		for name, old := range prev.Topics {
			if cur, ok := next.Topics[name]; ok && cur.ID == old.ID {
				continue
			}
			for _, p := range old.Partitions {
				s.deleteLog(storage.TopicPartition{Topic: name, Partition: p.Partition})
			}
		}
	}
	var creates []logCreate
	for name, t := range next.Topics {
		var old *controller.Topic
		if prev != nil {
			old = prev.Topics[name]
		}
		configChanged := old == nil || old.ID != t.ID || !sameConfigs(old.Configs, t.Configs)
		lc := LogConfig(s.Config.TopicConfig(t.Configs))
		for _, p := range t.Partitions {
			if !contains(p.Replicas, s.NodeID) {
				continue
			}
			tp := storage.TopicPartition{Topic: name, Partition: p.Partition}
			l, ok := s.Logs.Log(tp)
			if ok && s.Logs.TopicID(tp) != [16]byte(t.ID) {
				// A log left by another topic id (or without its
				// partition.metadata) is never served as this topic's.
				ok = s.settle(next, tp)
				l, _ = s.Logs.Log(tp)
			}
			if !ok {
				creates = append(creates, logCreate{tp: tp, topic: t, partition: p, config: lc})
				continue
			} else if configChanged {
				l.SetConfig(lc)
			}
			s.checkDir(tp, t, p)
		}
	}
	s.createLogs(creates)
	// Leader epochs and the high watermark are the replica layer's.
	if s.Replicas != nil {
		s.Replicas.Apply(prev, next)
	}
	// Partitions reassigned away from this node: their Partition stopped
	// above; the log goes.
	if prev != nil {
		for name, t := range next.Topics {
			old := prev.Topics[name]
			if old == nil || old.ID != t.ID {
				continue
			}
			for _, p := range old.Partitions {
				if int(p.Partition) < len(t.Partitions) && contains(p.Replicas, s.NodeID) && !contains(t.Partitions[p.Partition].Replicas, s.NodeID) {
					s.Logger.Info("deleting the log of a partition reassigned away", "topic", name, "partition", p.Partition)
					s.deleteLog(storage.TopicPartition{Topic: name, Partition: p.Partition})
				}
			}
		}
	}
}

// SetAsideStray settles, once the first metadata image is known at start,
// every local log against it (issue 11 items 9 and 10): a log of a topic
// id the image does not know, or of a partition not assigned to this
// node, is moved aside as "-stray" with an ERROR line, never deleted (a
// torn or damaged metadata log once made this delete the data of every
// topic it no longer found); a log that lost its partition.metadata gets
// the image's topic id; a log whose id the image gives to another topic
// is taken offline in place.
//
// An image that has applied nothing (offset -1) or knows no topic says
// nothing about which logs are stray: a node restarted without a metadata
// quorum has such an image, and judging against it wiped every log of a
// cluster killed and restarted as a whole (docs/DURABILITY.md, finding 4).
func (s *LogSyncer) SetAsideStray(img *controller.Image) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil {
		img = s.last
	}
	if img.Offset < 0 || len(img.Topics) == 0 {
		if n := len(s.Logs.Logs()); n > 0 {
			s.Logger.Warn("metadata image is empty; keeping local logs it does not list", "logs", n, "offset", img.Offset)
		}
		return
	}
	for tp := range s.Logs.Logs() {
		s.settle(img, tp)
	}
	// Directories gone from outside (issue 11 item 14): data lost, unless
	// the partition was deleted meanwhile.
	for tp, mp := range s.Logs.MissingAtStart() {
		if v, _ := judgeLocalLog(img, s.NodeID, tp, [16]byte{}); v == adoptTopicID {
			s.Logger.Error("partition directory missing at start (removed from outside?); its data on this broker is lost and the log starts again empty",
				"topic", tp.Topic, "partition", tp.Partition, "dir", mp.Dir, "log_start_offset", mp.LogStartOffset,
				"recovery_point", mp.RecoveryPoint, "high_watermark", mp.HighWatermark)
		}
	}
}

// settle applies the verdict of judgeLocalLog to tp's log and reports
// whether the log is kept (and now carries the image's topic id).
func (s *LogSyncer) settle(img *controller.Image, tp storage.TopicPartition) bool {
	v, reason := judgeLocalLog(img, s.NodeID, tp, s.Logs.TopicID(tp))
	switch v {
	case keepLog:
		return true
	case adoptTopicID:
		if err := s.Logs.SetTopicID(tp, [16]byte(img.Topics[tp.Topic].ID)); err != nil {
			s.Logger.Error("cannot rewrite partition.metadata; taking the log offline", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			s.Logs.TakeOffline(tp, "partition.metadata missing and cannot be rewritten: "+err.Error())
			return false
		}
		return true
	case offlineLog:
		s.Logs.TakeOffline(tp, reason)
	default:
		if err := s.Logs.MoveStray(tp, reason); err != nil {
			s.Logger.Error("cannot move stray log aside; it stays offline in place", "topic", tp.Topic, "partition", tp.Partition, "reason", reason, "err", err)
		}
	}
	return false
}

// localVerdict is what to do with a local partition log the metadata image
// does not match.
type localVerdict int

const (
	keepLog      localVerdict = iota
	adoptTopicID              // no partition.metadata: take the image's id
	strayLog                  // move aside as -stray
	offlineLog                // leave in place, do not serve
)

// judgeLocalLog decides what becomes of the local log of tp whose
// partition.metadata holds localID (zero: missing) given the image, and
// why. Kafka 4.4 (LogManager.isStrayReplica) calls a log stray when its
// topic id is not in the image or the partition's replicas do not include
// this broker; we do the same. Where Kafka 4.4 also calls a log without a
// topic id stray, we rewrite the id from the image when the image assigns
// that partition to this node (its data would otherwise stop being
// served). A topic id the image gives to a topic of another name cannot
// come from a deletion: it is an error, and the log goes offline.
func judgeLocalLog(img *controller.Image, nodeID int32, tp storage.TopicPartition, localID [16]byte) (localVerdict, string) {
	assigned := func(t *controller.Topic) bool {
		return t != nil && tp.Partition >= 0 && int(tp.Partition) < len(t.Partitions) &&
			contains(t.Partitions[tp.Partition].Replicas, nodeID)
	}
	t := img.Topics[tp.Topic]
	switch {
	case localID == [16]byte{}:
		if assigned(t) {
			return adoptTopicID, ""
		}
		return strayLog, "no partition.metadata, and the metadata assigns no such partition to this broker"
	case t != nil && [16]byte(t.ID) == localID:
		if assigned(t) {
			return keepLog, ""
		}
		if int(tp.Partition) >= len(t.Partitions) {
			return strayLog, fmt.Sprintf("topic has %d partitions in the metadata", len(t.Partitions))
		}
		return strayLog, fmt.Sprintf("replicas %v do not include this broker", t.Partitions[tp.Partition].Replicas)
	}
	if other, ok := img.TopicsByID[controller.Uuid(localID)]; ok {
		return offlineLog, fmt.Sprintf("partition.metadata names topic id %s, which the metadata gives to topic %q", controller.Uuid(localID), other.Name)
	}
	return strayLog, fmt.Sprintf("topic id %s is not in the metadata (topic deleted, or metadata lost)", controller.Uuid(localID))
}

func (s *LogSyncer) deleteLog(tp storage.TopicPartition) {
	if _, ok := s.Logs.Log(tp); !ok {
		return
	}
	if err := s.Logs.DeleteLog(tp); err != nil {
		s.Logger.Error("cannot delete log", "topic", tp.Topic, "partition", tp.Partition, "err", err)
	}
}

func sameConfigs(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
