package handlers

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// AlterPartitionReassignments, key 45, versions 0-1 (KIP-455, KIP-860):
// kafka-reassign-partitions --execute/--cancel and
// Admin.alterPartitionReassignments.
//
//   - v0: topics, each with partitions and their target replicas (null:
//     cancel the reassignment in progress, NO_REASSIGNMENT_IN_PROGRESS when
//     there is none). The controller (controller/reassign.go) adds the new
//     replicas, which catch up as followers; the leader's AlterPartition
//     that brings the last of them into the ISR completes the move and
//     the old replicas are removed (their logs deleted). A target that
//     adds nothing completes at once. Bad targets are
//     INVALID_REPLICA_ASSIGNMENT, unknown partitions
//     UNKNOWN_TOPIC_OR_PARTITION.
//   - v1: allow_replication_factor_change; when false, a target whose size
//     differs from the current replication factor is
//     INVALID_REPLICATION_FACTOR, and the response echoes the flag.
//
// The request changes metadata and is forwarded to the active controller
// (Entry.Forward); timeout_ms is ignored: the controller commits the start
// of each reassignment before answering, not its completion (as Kafka).
func handleAlterPartitionReassignments(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	checkRF := r.Header.APIVersion >= 1 && !req.AllowReplicationFactorChange
	img := d.Controller.Image()
	type slot struct{ topic, partition int }
	var reqs []controller.Reassignment
	var slots []slot
	for ti, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
			if checkRF && p.Replicas != nil {
				if tp := img.Topics[t.Topic]; tp != nil && p.Partition >= 0 && int(p.Partition) < len(tp.Partitions) {
					cur := tp.Partitions[p.Partition]
					if rf := len(cur.Replicas) - len(cur.AddingReplicas); rf != len(p.Replicas) {
						rt.Partitions[pi].ErrorCode = kerr.InvalidReplicationFactor.Code
						rt.Partitions[pi].ErrorMessage = kmsg.StringPtr(fmt.Sprintf("The replication factor is changed from %d to %d", rf, len(p.Replicas)))
						continue
					}
				}
			}
			reqs = append(reqs, controller.Reassignment{TopicPartition: controller.TopicPartition{Topic: t.Topic, Partition: p.Partition}, Replicas: p.Replicas})
			slots = append(slots, slot{ti, pi})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(reqs) == 0 {
		return resp, nil
	}
	var notController *string
	for i, res := range d.Controller.AlterReassignments(reqs) {
		rp := &resp.Topics[slots[i].topic].Partitions[slots[i].partition]
		rp.ErrorCode = res.ErrorCode
		rp.ErrorMessage = adminErrorMessage(res.ErrorCode, res.ErrorMessage)
		if res.ErrorCode == kerr.NotController.Code {
			notController = rp.ErrorMessage
		}
	}
	if notController != nil {
		// This node stopped being the active controller (or its commit
		// was cut off by a leadership change): as Kafka's controller,
		// whose write fails as a whole (AlterPartitionReassignmentsRequest
		// getErrorResponse), the request is NOT_CONTROLLER at the top
		// level and for every partition. Clients retry on the top-level
		// code only (franz-go, Kafka's Admin client): with it on the
		// partitions alone, a reassignment sent during a controller
		// failover failed for good.
		resp.ErrorCode, resp.ErrorMessage = kerr.NotController.Code, notController
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				rp := &resp.Topics[ti].Partitions[pi]
				rp.ErrorCode, rp.ErrorMessage = kerr.NotController.Code, notController
			}
		}
	}
	return resp, nil
}
