package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
)

// AlterReplicaLogDirs, key 34, versions 1-2 (KIP-113; Kafka 4 removed v0,
// KIP-896): move this node's replicas of the named partitions to the
// named log directory (an absolute path of log.dirs). The move runs in
// the background while the replica keeps serving; DescribeLogDirs lists
// the copy as a future replica until it takes over
// (broker/log_dir_move.go, storage/move.go).
//
//   - v2: flexible.
//   - Needs ALTER on the cluster, else every partition is
//     CLUSTER_AUTHORIZATION_FAILED (authz_admin.go).
//   - Per partition, in Kafka 4.4's order: INVALID_TOPIC_EXCEPTION for a
//     topic name too long for the future directory's name,
//     LOG_DIR_NOT_FOUND for a directory that is not one of log.dirs
//     (relative paths included), KAFKA_STORAGE_ERROR for an offline
//     directory or replica, INVALID_REPLICA_ASSIGNMENT for a cordoned
//     directory, REPLICA_NOT_AVAILABLE for a partition this node does not
//     host (the directory is remembered: the replica is created there if
//     it comes later), UNKNOWN_TOPIC_OR_PARTITION for a partition the
//     metadata does not know, 0 otherwise (also when the replica is in
//     that directory already).
//   - A partition named twice is answered once, for the last directory
//     named (Kafka keeps a map); the answer groups partitions by topic,
//     in the order first named (Kafka's is a hash map's).
func handleAlterReplicaLogDirs(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	// Kafka keeps one directory per partition, the last named.
	var order []storage.TopicPartition
	dirOf := map[storage.TopicPartition]string{}
	for _, dir := range req.Dirs {
		for _, t := range dir.Topics {
			for _, p := range t.Partitions {
				tp := storage.TopicPartition{Topic: t.Topic, Partition: p}
				if _, ok := dirOf[tp]; !ok {
					order = append(order, tp)
				}
				dirOf[tp] = dir.Dir
			}
		}
	}
	byTopic := map[string]int{}
	for _, tp := range order {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[tp.Topic] = i
			rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
		rp.Partition = tp.Partition
		rp.ErrorCode = kerr.KafkaStorageError.Code
		if d.LogDirMoves != nil {
			rp.ErrorCode = d.LogDirMoves.AlterReplicaLogDir(tp, dirOf[tp])
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp, nil
}
