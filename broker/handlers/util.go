package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// partitionRef is a partition resolved against the current image and the
// local logs. code is non-zero when the partition cannot be served here.
type partitionRef struct {
	topic *controller.Topic
	part  *controller.Partition
	log   *storage.Log
	code  int16
}

// lookupPartition resolves topic/partition. Errors follow Kafka: an unknown
// topic or partition is UNKNOWN_TOPIC_OR_PARTITION; a partition this node
// does not lead is NOT_LEADER_OR_FOLLOWER.
func (d *Deps) lookupPartition(img *controller.Image, t *controller.Topic, partition int32) partitionRef {
	if t == nil {
		return partitionRef{code: kerr.UnknownTopicOrPartition.Code}
	}
	if partition < 0 || int(partition) >= len(t.Partitions) {
		return partitionRef{topic: t, code: kerr.UnknownTopicOrPartition.Code}
	}
	p := &t.Partitions[partition]
	ref := partitionRef{topic: t, part: p}
	if p.Leader != d.Config.NodeID {
		ref.code = kerr.NotLeaderForPartition.Code
		return ref
	}
	l, ok := d.Logs.Log(storage.TopicPartition{Topic: t.Name, Partition: partition})
	if !ok {
		// The image has the partition but the log is not open yet: the
		// same answer Kafka gives while a replica is being created.
		ref.code = kerr.NotLeaderForPartition.Code
		return ref
	}
	ref.log = l
	return ref
}

// topicByName returns the topic or nil.
func topicByName(img *controller.Image, name string) *controller.Topic {
	return img.Topics[name]
}

// topicByID returns the topic or nil.
func topicByID(img *controller.Image, id [16]byte) *controller.Topic {
	return img.TopicsByID[controller.Uuid(id)]
}

// topicConfig resolves a topic's effective configuration.
func (d *Deps) topicConfig(t *controller.Topic) config.TopicConfig {
	return d.Config.TopicConfig(t.Configs)
}

// checkLeaderEpoch compares a client's current_leader_epoch with ours, as
// Kafka does: -1 skips the check, older is FENCED_LEADER_EPOCH, newer is
// UNKNOWN_LEADER_EPOCH.
func checkLeaderEpoch(p *controller.Partition, clientEpoch int32) int16 {
	switch {
	case clientEpoch < 0:
		return 0
	case clientEpoch < p.LeaderEpoch:
		return kerr.FencedLeaderEpoch.Code
	case clientEpoch > p.LeaderEpoch:
		return kerr.UnknownLeaderEpoch.Code
	}
	return 0
}
