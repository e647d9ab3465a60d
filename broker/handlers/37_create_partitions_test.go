package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func createPartitionsTopic(name string, count int32, assignment ...[]int32) kmsg.CreatePartitionsRequestTopic {
	t := kmsg.NewCreatePartitionsRequestTopic()
	t.Topic, t.Count = name, count
	for _, replicas := range assignment {
		a := kmsg.NewCreatePartitionsRequestTopicAssignment()
		a.Replicas = replicas
		t.Assignment = append(t.Assignment, a)
	}
	return t
}

func TestCreatePartitions(t *testing.T) {
	for _, tc := range []struct {
		name         string
		topics       []kmsg.CreatePartitionsRequestTopic
		validateOnly bool
		want         []topicCode
		partitions   int // of topic "a" afterwards
	}{
		{"grow", []kmsg.CreatePartitionsRequestTopic{createPartitionsTopic("a", 3)}, false, []topicCode{{"a", 0}}, 3},
		{"validate only", []kmsg.CreatePartitionsRequestTopic{createPartitionsTopic("a", 3)}, true, []topicCode{{"a", 0}}, 1},
		{"shrink", []kmsg.CreatePartitionsRequestTopic{createPartitionsTopic("a", 1)}, false, []topicCode{{"a", kerr.InvalidPartitions.Code}}, 1},
		{"unknown", []kmsg.CreatePartitionsRequestTopic{createPartitionsTopic("nope", 2)}, false, []topicCode{{"nope", kerr.UnknownTopicOrPartition.Code}}, 1},
		{"assignment", []kmsg.CreatePartitionsRequestTopic{createPartitionsTopic("a", 2, []int32{1})}, false, []topicCode{{"a", 0}}, 2},
		{"bad assignment", []kmsg.CreatePartitionsRequestTopic{createPartitionsTopic("a", 3, []int32{1})}, false, []topicCode{{"a", kerr.InvalidReplicaAssignment.Code}}, 1},
		{"unknown broker", []kmsg.CreatePartitionsRequestTopic{createPartitionsTopic("a", 2, []int32{5})}, false, []topicCode{{"a", kerr.InvalidReplicaAssignment.Code}}, 1},
		{"duplicate", []kmsg.CreatePartitionsRequestTopic{createPartitionsTopic("a", 2), createPartitionsTopic("a", 3)}, false, []topicCode{{"a", kerr.InvalidRequest.Code}}, 1},
	} {
		for _, v := range []int16{0, 3} {
			e := newAdminEnv(t)
			e.createTopic(t, "a", 1, nil)
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.Topics, req.ValidateOnly = tc.topics, tc.validateOnly
			resp := e.call(t, req, v).(*kmsg.CreatePartitionsResponse)
			if len(resp.Topics) != len(tc.want) {
				t.Fatalf("%s v%d: %+v", tc.name, v, resp.Topics)
			}
			for i, w := range tc.want {
				got := resp.Topics[i]
				if got.Topic != w.topic || got.ErrorCode != w.code || (got.ErrorCode != 0) != (got.ErrorMessage != nil) {
					t.Errorf("%s v%d: got %s/%d %v, want %s/%d", tc.name, v, got.Topic, got.ErrorCode, got.ErrorMessage, w.topic, w.code)
				}
			}
			if n := len(e.d.Controller.Image().Topics["a"].Partitions); n != tc.partitions {
				t.Errorf("%s v%d: %d partitions, want %d", tc.name, v, n, tc.partitions)
			}
		}
	}
}
