package config

import "strconv"

// ShareCoordinator is the share coordinator's settings (KIP-932), read
// from Values.
type ShareCoordinator struct {
	StateTopicNumPartitions     int32 // share.coordinator.state.topic.num.partitions
	StateTopicReplicationFactor int16 // share.coordinator.state.topic.replication.factor
	StateTopicMinISR            int16 // share.coordinator.state.topic.min.isr
	StateTopicSegmentBytes      int32 // share.coordinator.state.topic.segment.bytes
	WriteTimeoutMs              int32 // share.coordinator.write.timeout.ms
}

// ShareCoordinatorSettings returns the share.coordinator.* settings,
// Kafka's defaults for any not set (Values holds every defined setting
// once loaded; the defaults cover a Config built by hand).
func (c *Config) ShareCoordinatorSettings() ShareCoordinator {
	num := func(name string, bits int, def int64) int64 {
		if v, err := strconv.ParseInt(c.Values[name], 10, bits); err == nil {
			return v
		}
		return def
	}
	return ShareCoordinator{
		StateTopicNumPartitions:     int32(num("share.coordinator.state.topic.num.partitions", 32, 50)),
		StateTopicReplicationFactor: int16(num("share.coordinator.state.topic.replication.factor", 16, 3)),
		StateTopicMinISR:            int16(num("share.coordinator.state.topic.min.isr", 16, 2)),
		StateTopicSegmentBytes:      int32(num("share.coordinator.state.topic.segment.bytes", 32, 104857600)),
		WriteTimeoutMs:              int32(num("share.coordinator.write.timeout.ms", 32, 5000)),
	}
}
