package broker

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"testing"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
)

// TestCoordinatorShardChanges: the coordinator reconciler loads the
// internal partitions this node leads and unloads those it stopped
// leading, also when the topic goes away; a partition led again in a new
// leader epoch is reloaded, and each loaded shard's coordinator epoch is
// the leader epoch it was loaded in (so an old coordinator's transaction
// markers are fenced by TRANSACTION_COORDINATOR_FENCED).
func TestCoordinatorShardChanges(t *testing.T) {
	epoch := int32(0)
	img := func(leaders ...int32) *controller.Image {
		i := controller.EmptyImage("c", 1)
		top := &controller.Topic{Name: "__consumer_offsets"}
		for p, l := range leaders {
			top.Partitions = append(top.Partitions, controller.Partition{Partition: int32(p), Leader: l, LeaderEpoch: epoch})
		}
		i.Topics[top.Name] = top
		return i
	}
	var events []string
	var s *shardSet
	s = &shardSet{topic: "__consumer_offsets", loaded: map[int32]int32{},
		load: func(p int32) error {
			events = append(events, fmt.Sprintf("load %d epoch %d", p, s.coordinatorEpoch(p)))
			return nil
		},
		unload: func(p int32) { events = append(events, fmt.Sprintf("unload %d", p)) }}
	s.epochs.m = map[int32]int32{}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, step := range []struct {
		epoch int32
		img   func() *controller.Image
		want  []string
	}{
		{0, func() *controller.Image { return img(1, 1, 2) }, []string{"load 0 epoch 0", "load 1 epoch 0"}},
		{0, func() *controller.Image { return img(2, 1, 1) }, []string{"unload 0", "load 2 epoch 0"}},
		{0, func() *controller.Image { return img(2, 1, 1) }, nil},
		// Leadership moved away and back between two images: epoch 3.
		{3, func() *controller.Image { return img(2, 1, 1) }, []string{"unload 1", "unload 2", "load 1 epoch 3", "load 2 epoch 3"}},
		{3, func() *controller.Image { return controller.EmptyImage("c", 1) }, []string{"unload 1", "unload 2"}},
	} {
		events = nil
		epoch = step.epoch
		s.follow(step.img(), 1, logger)
		if !slices.Equal(events, step.want) {
			t.Fatalf("events %v, want %v", events, step.want)
		}
	}
	if len(s.loaded) != 0 || s.coordinatorEpoch(1) != -1 {
		t.Fatalf("still loaded: %v, epoch %d", s.loaded, s.coordinatorEpoch(1))
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
