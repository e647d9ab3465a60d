package broker

import (
	"math"
	"slices"
	"testing"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

func TestLogSyncerLeadershipChanges(t *testing.T) {
	img := func(leaders ...int32) *controller.Image {
		i := controller.EmptyImage("c", 1)
		top := &controller.Topic{Name: "__consumer_offsets"}
		for p, l := range leaders {
			top.Partitions = append(top.Partitions, controller.Partition{Partition: int32(p), Leader: l})
		}
		i.Topics[top.Name] = top
		return i
	}
	type event struct {
		p      int32
		leader bool
	}
	var got []event
	s := &LogSyncer{NodeID: 1, Watched: []string{"__consumer_offsets"}, Leadership: func(tp storage.TopicPartition, leader bool) {
		if tp.Topic != "__consumer_offsets" {
			t.Errorf("event for %s", tp)
		}
		got = append(got, event{tp.Partition, leader})
	}}
	s.leadershipChanges(nil, img(1, 1, 2))
	if len(got) != 0 {
		t.Fatalf("events for the first image: %v", got)
	}
	s.leadershipChanges(img(1, 1, 2), img(2, 1, 1))
	slices.SortFunc(got, func(a, b event) int { return int(a.p - b.p) })
	if want := []event{{0, false}, {2, true}}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	got = nil
	s.leadershipChanges(img(2, 1, 1), controller.EmptyImage("c", 1))
	slices.SortFunc(got, func(a, b event) int { return int(a.p - b.p) })
	if want := []event{{1, false}, {2, false}}; !slices.Equal(got, want) {
		t.Fatalf("events after the topic went away %v, want %v", got, want)
	}
}

// TestLogConfigCompaction checks that the compaction settings of a topic
// reach the storage config the cleaner reads.
func TestLogConfigCompaction(t *testing.T) {
	cfg, err := config.Load([]string{"--override", "log.dirs=" + t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lc := LogConfig(cfg.TopicConfig(map[string]string{"cleanup.policy": "compact", "delete.retention.ms": "1000",
		"min.compaction.lag.ms": "2000", "max.compaction.lag.ms": "3000", "min.cleanable.dirty.ratio": "0.25"}))
	if !lc.Compact || lc.Delete || lc.DeleteRetentionMs != 1000 || lc.MinCompactionLagMs != 2000 ||
		lc.MaxCompactionLagMs != 3000 || lc.MinCleanableDirtyRatio != 0.25 {
		t.Fatalf("%+v", lc)
	}
	def := LogConfig(cfg.TopicConfig(nil))
	if def.Compact || def.DeleteRetentionMs != 86400000 || def.MaxCompactionLagMs != math.MaxInt64 || def.MinCleanableDirtyRatio != 0.5 {
		t.Fatalf("defaults %+v", def)
	}
}
