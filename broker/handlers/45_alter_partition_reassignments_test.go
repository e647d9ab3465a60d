package handlers

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

func reassignRequest(topic string, partition int32, replicas []int32) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = partition, replicas
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestPartitionReassignmentHandlers: broker 2 is registered but never
// fetches, so moving "a"-0 from [1] to [1 2] stays in progress and
// ListPartitionReassignments shows it (all topics, and by name); a v1
// request that changes the replication factor without
// allow_replication_factor_change is INVALID_REPLICATION_FACTOR; cancel
// goes back to [1], a second cancel is NO_REASSIGNMENT_IN_PROGRESS; an
// unregistered broker is INVALID_REPLICA_ASSIGNMENT and an unknown topic
// UNKNOWN_TOPIC_OR_PARTITION.
func TestPartitionReassignmentHandlers(t *testing.T) {
	e := newAdminEnv(t)
	if err := e.d.Controller.RegisterBroker(controller.Broker{ID: 2, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	e.createTopic(t, "a", 1, nil)
	code := func(resp kmsg.Response) int16 {
		return resp.(*kmsg.AlterPartitionAssignmentsResponse).Topics[0].Partitions[0].ErrorCode
	}
	strict := reassignRequest("a", 0, []int32{1, 2})
	strict.AllowReplicationFactorChange = false
	if c := code(e.call(t, strict, 1)); c != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("v1 RF change not allowed: %v", kerr.ErrorForCode(c))
	}
	if c := code(e.call(t, reassignRequest("a", 0, []int32{1, 2}), 0)); c != 0 {
		t.Fatalf("start: %v", kerr.ErrorForCode(c))
	}
	list := func(topics []kmsg.ListPartitionReassignmentsRequestTopic) []kmsg.ListPartitionReassignmentsResponseTopic {
		req := kmsg.NewPtrListPartitionReassignmentsRequest()
		req.Topics = topics
		return e.call(t, req, 0).(*kmsg.ListPartitionReassignmentsResponse).Topics
	}
	named := kmsg.NewListPartitionReassignmentsRequestTopic()
	named.Topic, named.Partitions = "a", []int32{0, 5}
	for _, got := range [][]kmsg.ListPartitionReassignmentsResponseTopic{list(nil), list([]kmsg.ListPartitionReassignmentsRequestTopic{named})} {
		if len(got) != 1 || len(got[0].Partitions) != 1 {
			t.Fatalf("list: %+v", got)
		}
		p := got[0].Partitions[0]
		if !int32sEqual(p.Replicas, []int32{1, 2}) || !int32sEqual(p.AddingReplicas, []int32{2}) || len(p.RemovingReplicas) != 0 {
			t.Fatalf("listed %+v", p)
		}
	}
	if c := code(e.call(t, reassignRequest("a", 0, nil), 0)); c != 0 {
		t.Fatalf("cancel: %v", kerr.ErrorForCode(c))
	}
	if p := e.d.Controller.Image().Topics["a"].Partitions[0]; !int32sEqual(p.Replicas, []int32{1}) || p.Reassigning() {
		t.Fatalf("after cancel: %+v", p)
	}
	if got := list(nil); len(got) != 0 {
		t.Fatalf("listed after cancel: %+v", got)
	}
	for _, tc := range []struct {
		req  *kmsg.AlterPartitionAssignmentsRequest
		want int16
	}{
		{reassignRequest("a", 0, nil), kerr.NoReassignmentInProgress.Code},
		{reassignRequest("a", 0, []int32{1, 9}), kerr.InvalidReplicaAssignment.Code},
		{reassignRequest("nope", 0, []int32{1}), kerr.UnknownTopicOrPartition.Code},
	} {
		if c := code(e.call(t, tc.req, 1)); c != tc.want {
			t.Errorf("%+v: %v, want %v", tc.req.Topics, kerr.ErrorForCode(c), kerr.ErrorForCode(tc.want))
		}
	}
}

func int32sEqual(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// lostLeadershipQuorum stands for the active controller's quorum during a
// leadership change: it still reports Leading (the decision runs) but the
// commit fails with ErrNotController, as hashicorp/raft's
// ErrLeadershipTransferInProgress does while a stopping node hands over.
type lostLeadershipQuorum struct{}

func (lostLeadershipQuorum) Propose(int64, []controller.Record) error {
	return fmt.Errorf("%w: leadership transfer in progress", controller.ErrNotController)
}
func (lostLeadershipQuorum) Leading() bool   { return true }
func (lostLeadershipQuorum) LeaderID() int32 { return 1 }

// TestPartitionReassignmentNotController: when the controller loses its
// role under an AlterPartitionReassignments (found by the faults bed's
// reassign-rolling-restart step), the answer is NOT_CONTROLLER at the top
// level and for every partition, as Kafka's whole-request error response
// (AlterPartitionReassignmentsRequest.getErrorResponse), so that clients,
// which retry on the top-level code, send it again to the new controller.
// Before, only the partitions carried it and franz-go's kadm returned it
// as the reassignment's final result.
func TestPartitionReassignmentNotController(t *testing.T) {
	e := newAdminEnv(t)
	if err := e.d.Controller.RegisterBroker(controller.Broker{ID: 2, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	e.createTopic(t, "a", 2, nil)
	m := controller.NewMachine("admin-test-cluster", 1)
	img := e.d.Controller.Image()
	m.Restore(img)
	c, err := controller.New(controller.Options{NodeID: 1, ClusterID: "admin-test-cluster", Quorum: lostLeadershipQuorum{}, Machine: m,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e.d.Controller = c
	req := reassignRequest("a", 0, []int32{1, 2})
	p1 := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	p1.Partition, p1.Replicas = 1, []int32{2, 1}
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p1)
	for v := int16(0); v <= 1; v++ {
		resp := e.call(t, req, v).(*kmsg.AlterPartitionAssignmentsResponse)
		if resp.ErrorCode != kerr.NotController.Code || resp.ErrorMessage == nil {
			t.Fatalf("v%d top level: %v %v", v, kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != kerr.NotController.Code {
				t.Fatalf("v%d partition %d: %v", v, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
}
