package diff

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scriptCluster covers the quorum, election and reassignment APIs on the
// single-node brokers of the suite: DescribeQuorum of the metadata
// partition (and of one that is not), preferred and unclean elections of a
// partition that needs none and of unknown ones, reassignments that change
// nothing, name an unknown broker or topic, or cancel what is not running,
// and the list of reassignments; UnregisterBroker of an unknown broker,
// UnregisterController of an unknown controller and of the active one, and
// the voter changes Kafka refuses before looking at its quorum (a static
// one here, which it cannot change; samsa can): the zero directory id, no
// controller listener, another cluster's id.
func scriptCluster(s *Session) error {
	each(kmsg.UnregisterBroker, func(v int16) {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = 99
		s.Do("unknown-broker", v, req)
	})
	each(kmsg.UnregisterController, func(v int16) {
		// Node 1 is each broker's own node and active controller.
		for _, c := range []struct {
			step string
			id   int32
		}{{"unknown-controller", 99}, {"active-controller", 1}} {
			req := kmsg.NewPtrUnregisterControllerRequest()
			req.ControllerID = c.id
			s.Do(c.step, v, req)
		}
	})
	each(kmsg.RemoveRaftVoter, func(v int16) {
		req := kmsg.NewPtrRemoveRaftVoterRequest()
		req.VoterID = 99
		s.Do("zero-directory-id", v, req)
	})
	each(kmsg.AddRaftVoter, func(v int16) {
		mk := func(dir [16]byte, listener bool, cluster *string) *kmsg.AddRaftVoterRequest {
			req := kmsg.NewPtrAddRaftVoterRequest()
			req.ClusterID, req.VoterID, req.VoterDirectoryID, req.TimeoutMillis = cluster, 7, dir, 3000
			if listener {
				l := kmsg.NewAddRaftVoterRequestListener()
				l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", 1
				req.Listeners = append(req.Listeners, l)
			}
			return req
		}
		wrong := "diff-no-such-cluster"
		s.Do("zero-directory-id", v, mk([16]byte{}, true, nil))
		s.Do("no-controller-listener", v, mk([16]byte{1}, false, nil))
		s.Do("other-cluster", v, mk([16]byte{1}, true, &wrong))
	})
	each(kmsg.DescribeQuorum, func(v int16) {
		mk := func(topic string) *kmsg.DescribeQuorumRequest {
			req := kmsg.NewPtrDescribeQuorumRequest()
			t := kmsg.NewDescribeQuorumRequestTopic()
			t.Topic = topic
			p := kmsg.NewDescribeQuorumRequestTopicPartition()
			t.Partitions = append(t.Partitions, p)
			req.Topics = append(req.Topics, t)
			return req
		}
		s.Do("metadata-partition", v, mk("__cluster_metadata"))
		s.Do("not-the-metadata-topic", v, mk(topicA))
	})
	each(kmsg.ElectLeaders, func(v int16) {
		mk := func(electionType int8, topic string, partitions ...int32) *kmsg.ElectLeadersRequest {
			req := kmsg.NewPtrElectLeadersRequest()
			req.ElectionType, req.TimeoutMillis = electionType, 30000
			t := kmsg.NewElectLeadersRequestTopic()
			t.Topic, t.Partitions = topic, partitions
			req.Topics = append(req.Topics, t)
			return req
		}
		s.Do("preferred-not-needed", v, mk(0, topicA, 0))
		s.Do("unknown-topic", v, mk(0, "diff-nope", 0))
		s.Do("unknown-partition", v, mk(0, topicA, 99))
		if v >= 1 {
			s.Do("unclean-not-needed", v, mk(1, topicA, 0))
		}
	})
	each(kmsg.AlterPartitionAssignments, func(v int16) {
		mk := func(topic string, partition int32, replicas []int32) *kmsg.AlterPartitionAssignmentsRequest {
			req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			req.TimeoutMillis = 30000
			t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			t.Topic = topic
			p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			p.Partition, p.Replicas = partition, replicas
			t.Partitions = append(t.Partitions, p)
			req.Topics = append(req.Topics, t)
			return req
		}
		s.Do("cancel-none-running", v, mk(topicA, 0, nil))
		s.Do("unknown-broker", v, mk(topicA, 0, []int32{99}))
		s.Do("unknown-topic", v, mk("diff-nope", 0, []int32{1}))
		s.Do("empty-replicas", v, mk(topicA, 0, []int32{}))
		s.Do("duplicate-replicas", v, mk(topicA, 0, []int32{1, 1}))
	})
	each(kmsg.ListPartitionReassignments, func(v int16) {
		req := kmsg.NewPtrListPartitionReassignmentsRequest()
		req.TimeoutMillis = 30000
		s.Do("all", v, req)
		named := kmsg.NewPtrListPartitionReassignmentsRequest()
		named.TimeoutMillis = 30000
		t := kmsg.NewListPartitionReassignmentsRequestTopic()
		t.Topic, t.Partitions = topicA, []int32{0}
		named.Topics = append(named.Topics, t)
		s.Do("named", v, named)
	})
	return nil
}
