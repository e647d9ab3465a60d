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

// Regression (issue 11 item 1): CreatePartitions to 1,000,000 partitions
// wrote a million records and held the controller lock for minutes. Kafka
// 4.4 answers every topic with POLICY_VIOLATION "Excessively large number
// of additional partitions per request." when more than 10,000 are added
// in all, validate_only included, and changes nothing.
func TestCreatePartitionsLimit(t *testing.T) {
	for _, validateOnly := range []bool{true, false} {
		e := newAdminEnv(t)
		e.createTopic(t, "a", 1, nil)
		e.createTopic(t, "b", 1, nil)
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Topics = []kmsg.CreatePartitionsRequestTopic{createPartitionsTopic("a", 2), createPartitionsTopic("b", 1000000)}
		req.ValidateOnly = validateOnly
		resp := e.call(t, req, 3).(*kmsg.CreatePartitionsResponse)
		if len(resp.Topics) != 2 {
			t.Fatalf("%+v", resp.Topics)
		}
		for _, got := range resp.Topics {
			if got.ErrorCode != kerr.PolicyViolation.Code || deref(got.ErrorMessage) != "Excessively large number of additional partitions per request." {
				t.Errorf("%s: %d %q", got.Topic, got.ErrorCode, deref(got.ErrorMessage))
			}
		}
		img := e.d.Controller.Image()
		if len(img.Topics["a"].Partitions) != 1 || len(img.Topics["b"].Partitions) != 1 {
			t.Fatal("partitions were added")
		}
	}
}
