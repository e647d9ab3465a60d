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
	// Replicas, when set, is reconciled with each image once the logs
	// exist (roles, leader epochs, ISR and the high watermark rule).
	Replicas *replica.Manager
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

// RemoveStray deletes local logs the image does not know, e.g. of a topic
// deleted while this node was down.
func (s *LogSyncer) RemoveStray(img *controller.Image) {
	for tp := range s.Logs.Logs() {
		t, ok := img.Topics[tp.Topic]
		if ok && int(tp.Partition) < len(t.Partitions) && s.Logs.TopicID(tp) == [16]byte(t.ID) &&
			contains(t.Partitions[tp.Partition].Replicas, s.NodeID) {
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
