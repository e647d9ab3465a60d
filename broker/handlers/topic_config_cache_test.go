package handlers

import (
	"testing"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
)

// TestTopicConfigCache: the cached configuration is the one TopicConfig
// resolves, a topic copied with other configs (as the image builder does
// on an AlterConfigs) gets its own, another *config.Config resolves again,
// and the cache stays bounded.
func TestTopicConfigCache(t *testing.T) {
	cfg, err := config.Load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var c topicConfigCache
	t1 := &controller.Topic{Name: "a", Configs: map[string]string{"max.message.bytes": "1000"}}
	if got, want := c.get(cfg, t1), cfg.TopicConfig(t1.Configs); got != want {
		t.Fatalf("first get: %+v, want %+v", got, want)
	}
	if got := c.get(cfg, t1).MaxMessageBytes; got != 1000 {
		t.Fatalf("cached max.message.bytes %d, want 1000", got)
	}
	t2 := *t1
	t2.Configs = map[string]string{"max.message.bytes": "2000", "cleanup.policy": "compact"}
	if got := c.get(cfg, &t2); got.MaxMessageBytes != 2000 || !got.CleanupPolicyCompact {
		t.Fatalf("altered copy: %+v, want max.message.bytes 2000 and compact", got)
	}
	if got := c.get(cfg, t1).MaxMessageBytes; got != 1000 {
		t.Fatalf("original after the copy: max.message.bytes %d, want 1000", got)
	}
	other, err := config.Load([]string{"--override", "message.max.bytes=3000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t3 := &controller.Topic{Name: "b"}
	c.get(cfg, t3)
	if got := c.get(other, t3).MaxMessageBytes; got != 3000 {
		t.Fatalf("under another config: max.message.bytes %d, want the broker's 3000", got)
	}
	for range 2 * topicConfigCacheMax {
		c.get(cfg, &controller.Topic{Name: "x"})
	}
	if n := c.n.Load(); n > topicConfigCacheMax {
		t.Fatalf("cache holds %d entries, want at most %d", n, topicConfigCacheMax)
	}
	size := 0
	c.m.Range(func(_, _ any) bool { size++; return true })
	if size > topicConfigCacheMax {
		t.Fatalf("cache map holds %d entries, want at most %d", size, topicConfigCacheMax)
	}
}

// BenchmarkTopicConfig: resolving a topic's configuration from its
// overrides and the broker's settings against taking it from the cache,
// as each Produce does.
func BenchmarkTopicConfig(b *testing.B) {
	cfg, err := config.Load(nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	topic := &controller.Topic{Name: "a", Configs: map[string]string{"max.message.bytes": "1000"}}
	b.Run("resolve", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			cfg.TopicConfig(topic.Configs)
		}
	})
	b.Run("cached", func(b *testing.B) {
		var c topicConfigCache
		b.ReportAllocs()
		for range b.N {
			c.get(cfg, topic)
		}
	})
}
