package broker

import (
	"log/slog"

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
	// Leadership, when set, is told when this node becomes or stops
	// being the leader of a partition of one of the Watched topics
	// (the coordinators' internal topics: ownership of a group or a
	// transactional id follows leadership of its partition). It runs on
	// the controller's callback and must not block. The first image
	// (prev nil) reports nothing: the coordinators load at start.
	Leadership func(tp storage.TopicPartition, leader bool)
	Watched    []string
	// Replicas, when set, is reconciled with each image once the logs
	// exist (roles, leader epochs, ISR and the high watermark rule).
	Replicas *replica.Manager
}

// leadershipChanges calls Leadership for every watched partition whose
// leadership by this node differs between prev and next.
func (s *LogSyncer) leadershipChanges(prev, next *controller.Image) {
	if s.Leadership == nil || prev == nil {
		return
	}
	leads := func(img *controller.Image, topic string) map[int32]bool {
		out := map[int32]bool{}
		if t, ok := img.Topics[topic]; ok {
			for _, p := range t.Partitions {
				if p.Leader == s.NodeID {
					out[p.Partition] = true
				}
			}
		}
		return out
	}
	for _, topic := range s.Watched {
		before, after := leads(prev, topic), leads(next, topic)
		for p := range before {
			if !after[p] {
				s.Leadership(storage.TopicPartition{Topic: topic, Partition: p}, false)
			}
		}
		for p := range after {
			if !before[p] {
				s.Leadership(storage.TopicPartition{Topic: topic, Partition: p}, true)
			}
		}
	}
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
	defer s.leadershipChanges(prev, next)
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
			if !ok {
				var err error
				l, err = s.Logs.CreateLog(tp, t.ID, lc)
				if err != nil {
					s.Logger.Error("cannot create log", "topic", name, "partition", p.Partition, "err", err)
					continue
				}
			} else if configChanged {
				l.SetConfig(lc)
			}
		}
	}
	// Leader epochs and the high watermark are the replica layer's.
	if s.Replicas != nil {
		s.Replicas.Apply(prev, next)
	}
}

// RemoveStray deletes local logs the image does not know, e.g. of a topic
// deleted while this node was down.
func (s *LogSyncer) RemoveStray(img *controller.Image) {
	for tp := range s.Logs.Logs() {
		t, ok := img.Topics[tp.Topic]
		if ok && int(tp.Partition) < len(t.Partitions) && s.Logs.TopicID(tp) == [16]byte(t.ID) {
			continue
		}
		s.Logger.Warn("deleting log not in metadata", "topic", tp.Topic, "partition", tp.Partition)
		s.deleteLog(tp)
	}
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
