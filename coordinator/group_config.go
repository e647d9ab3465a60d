package coordinator

import (
	"strconv"
	"time"
)

// Group config overrides (the GROUP config resource, stored by the
// controller): a group's consumer.* or share.* session timeout and
// heartbeat interval replace the broker's group.consumer.* and
// group.share.* settings for that group, from its next heartbeat on. The
// values were validated when they were set (broker/handlers
// group_configs.go), so a value that does not parse is ignored.

// overrideMillis sets *d from overrides[name] when it holds a positive
// number of milliseconds.
func overrideMillis(overrides map[string]string, name string, d *time.Duration) {
	if v, ok := overrides[name]; ok {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
			*d = time.Duration(ms) * time.Millisecond
		}
	}
}

// consumerConfigFor returns the KIP-848 settings of one group: the
// broker's, with the group's overrides.
func (c *Coordinator) consumerConfigFor(group string) *ConsumerGroupConfig {
	return groupConfigFor(c, group, &c.cgConfig, func(o map[string]string, cfg *ConsumerGroupConfig) {
		overrideMillis(o, "consumer.session.timeout.ms", &cfg.SessionTimeout)
		overrideMillis(o, "consumer.heartbeat.interval.ms", &cfg.HeartbeatInterval)
	})
}

// groupConfigFor returns the broker's settings base of one group's type,
// or a copy of them with the group's overrides o applied by override when
// the group has any.
func groupConfigFor[C any](c *Coordinator, group string, base *C, override func(o map[string]string, cfg *C)) *C {
	if c.opts.GroupConfig == nil {
		return base
	}
	o := c.opts.GroupConfig(group)
	if len(o) == 0 {
		return base
	}
	cfg := *base
	override(o, &cfg)
	return &cfg
}

// shareConfigFor returns the share group settings of one group: the
// broker's, with the group's overrides.
func (c *Coordinator) shareConfigFor(group string) *ShareGroupConfig {
	return groupConfigFor(c, group, &c.sgConfig, func(o map[string]string, cfg *ShareGroupConfig) {
		overrideMillis(o, "share.session.timeout.ms", &cfg.SessionTimeout)
		overrideMillis(o, "share.heartbeat.interval.ms", &cfg.HeartbeatInterval)
	})
}
