// Package replica is samsa's replication data path (Kafka's ReplicaManager
// and Partition): it hosts the partitions of this node, makes each one a
// leader or a follower as the published metadata image says, copies the
// leaders' logs to the followers with Kafka's pull model, and owns every
// change of the high watermark.
package replica
