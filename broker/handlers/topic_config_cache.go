package handlers

import (
	"sync"
	"sync/atomic"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
)

// topicConfigCache keeps each topic's effective configuration, resolved
// once: config.Config.TopicConfig parses some twenty values from strings,
// and every Produce needs it (max.message.bytes, cleanup.policy, ...),
// which was about a twentieth of the broker's CPU per produced record at
// low rates. A published controller.Topic is never changed (the image
// builder copies a topic before changing its configs), so the topic's
// pointer is the key; an entry made for another *config.Config (tests
// swap Deps.Config) is resolved again. The cache is emptied when it
// reaches topicConfigCacheMax entries, so topics of old images do not stay
// alive for long.
type topicConfigCache struct {
	m sync.Map // *controller.Topic -> *cachedTopicConfig
	n atomic.Int64
}

type cachedTopicConfig struct {
	cfg *config.Config
	tc  config.TopicConfig
}

// topicConfigCacheMax bounds the cache: far more than the topics a
// cluster has, so the cache is emptied only after many config changes.
const topicConfigCacheMax = 4096

// get returns t's effective configuration under cfg.
func (c *topicConfigCache) get(cfg *config.Config, t *controller.Topic) config.TopicConfig {
	if v, ok := c.m.Load(t); ok {
		if e := v.(*cachedTopicConfig); e.cfg == cfg {
			return e.tc
		}
	}
	tc := cfg.TopicConfig(t.Configs)
	if c.n.Add(1) > topicConfigCacheMax {
		c.m.Clear()
		c.n.Store(1)
	}
	c.m.Store(t, &cachedTopicConfig{cfg: cfg, tc: tc})
	return tc
}
