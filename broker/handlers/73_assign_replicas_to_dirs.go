package handlers

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// AssignReplicasToDirs, key 73, version 0 (KIP-858): a broker tells the
// active controller which of its log directories (by directory.id) holds
// each of its replicas (on a controller listener only). The controller
// records the assignments and, when a directory is already reported
// offline (BrokerHeartbeat v1 offline_log_dirs), takes its replicas out of
// service (controller/log_dirs.go). samsa's brokers send the assignments
// of a directory when it fails; Kafka's send them as replicas are placed.
//
//   - broker_epoch must be the broker's current epoch, else
//     STALE_BROKER_EPOCH (BROKER_ID_NOT_REGISTERED for an unknown broker),
//     as the top-level error; a node that is not the active controller
//     answers NOT_CONTROLLER.
//   - Each partition is answered with the top-level code (0 on success);
//     an unknown topic id is recorded as well (it matters to nothing), as
//     the assignment of a topic deleted meanwhile is harmless.
func handleAssignReplicasToDirs(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AssignReplicasToDirsRequest)
	resp := req.ResponseKind().(*kmsg.AssignReplicasToDirsResponse)
	for _, dir := range req.Directories {
		var replicas []controller.TopicIDPartitions
		for _, t := range dir.Topics {
			tp := controller.TopicIDPartitions{TopicID: controller.Uuid(t.TopicID)}
			for _, p := range t.Partitions {
				tp.Partitions = append(tp.Partitions, p.Partition)
			}
			replicas = append(replicas, tp)
		}
		code, err := d.Controller.AssignReplicasToDirs(req.BrokerID, req.BrokerEpoch, controller.Uuid(dir.ID), replicas)
		if err != nil && code == 0 {
			code = controllerErrorCode(err)
		}
		if code != 0 && resp.ErrorCode == 0 {
			resp.ErrorCode = code
		}
	}
	for _, dir := range req.Directories {
		rd := kmsg.NewAssignReplicasToDirsResponseDirectory()
		rd.ID = dir.ID
		for _, t := range dir.Topics {
			rt := kmsg.NewAssignReplicasToDirsResponseDirectoryTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewAssignReplicasToDirsResponseDirectoryTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, resp.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			rd.Topics = append(rd.Topics, rt)
		}
		resp.Directories = append(resp.Directories, rd)
	}
	return resp, nil
}
