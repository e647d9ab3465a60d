package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/replica"
	"github.com/samsa-broker/samsa/storage"
)

// partitionRef is a partition resolved against the current image and the
// hosted replicas. code is non-zero when the partition cannot be served
// here; replica is set whenever this node hosts it, log only when it
// leads it. Handlers write through replica, never to log directly.
type partitionRef struct {
	topic   *controller.Topic
	part    *controller.Partition
	replica *replica.Partition
	log     *storage.Log
	code    int16
}

// lookupPartition resolves topic/partition for a request without a
// current leader epoch; see lookupPartitionEpoch.
func (d *Deps) lookupPartition(img *controller.Image, t *controller.Topic, partition int32) partitionRef {
	return d.lookupPartitionEpoch(img, t, partition, -1)
}

// lookupPartitionEpoch resolves topic/partition for a request whose
// current_leader_epoch is clientEpoch (-1: none). Errors follow Kafka: an
// unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION; then the
// replica's leader check (replica.Partition.CheckLeader):
// FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, or NOT_LEADER_OR_FOLLOWER
// when this node does not lead it (or does not host it yet), and
// KAFKA_STORAGE_ERROR when its log here is offline (a failed log dir).
func (d *Deps) lookupPartitionEpoch(img *controller.Image, t *controller.Topic, partition int32, clientEpoch int32) partitionRef {
	if t == nil {
		return partitionRef{code: kerr.UnknownTopicOrPartition.Code}
	}
	if partition < 0 || int(partition) >= len(t.Partitions) {
		return partitionRef{topic: t, code: kerr.UnknownTopicOrPartition.Code}
	}
	p := &t.Partitions[partition]
	ref := partitionRef{topic: t, part: p}
	rp, ok := d.Replicas.Lookup(img, t, partition)
	if !ok {
		// Not a replica here, or the log is not open yet: the same
		// answer Kafka gives while a replica is being created.
		ref.code = kerr.NotLeaderForPartition.Code
		if d.Logs != nil && d.Logs.PartitionOffline(storage.TopicPartition{Topic: t.Name, Partition: partition}) {
			ref.code = kerr.KafkaStorageError.Code // its log directory failed
		}
		return ref
	}
	ref.replica = rp
	if ref.code = rp.CheckLeader(clientEpoch); ref.code == 0 {
		ref.log = rp.Log()
	}
	return ref
}

// currentLeader is KIP-951's hint for a NOT_LEADER_OR_FOLLOWER or
// FENCED_LEADER_EPOCH answer: the leader and epoch this node knows.
func (ref partitionRef) currentLeader() (leader, epoch int32) {
	if ref.replica != nil {
		return ref.replica.Leader()
	}
	if ref.part != nil {
		return ref.part.Leader, ref.part.LeaderEpoch
	}
	return -1, -1
}

// leaderEndpoint is the endpoint of leader id that a KIP-951 answer
// (NodeEndpoints of Fetch v16+ and Produce v10+) gives beside
// CurrentLeader: its host and port on listener, the one the request came
// in on, as Kafka's getCurrentLeader (metadataCache.getAliveBrokerNode(id,
// request listener)); none for an unknown or fenced broker. A client
// replaces its metadata's node with this endpoint: the broker's default
// listener instead sent TLS and SASL clients to a PLAINTEXT port, and the
// Java consumer then fetched the partition through a second Node of the
// same id, whose fetches and the other Node's undid each other's session
// (a consumer stuck until its next metadata refresh, session 32).
func leaderEndpoint(img *controller.Image, id int32, listener string) (b controller.Broker, host string, port int32, ok bool) {
	b, ok = img.Brokers[id]
	if !ok || b.Fenced {
		return b, "", 0, false
	}
	host, port = b.Endpoint(listener)
	return b, host, port, true
}

// topicByName returns the topic or nil.
func topicByName(img *controller.Image, name string) *controller.Topic {
	return img.Topics[name]
}

// topicByID returns the topic or nil.
func topicByID(img *controller.Image, id [16]byte) *controller.Topic {
	return img.TopicsByID[controller.Uuid(id)]
}

// topicConfig resolves a topic's effective configuration (cached per
// published topic, topic_config_cache.go).
func (d *Deps) topicConfig(t *controller.Topic) config.TopicConfig {
	return d.topicConfigs.get(d.Config, t)
}
