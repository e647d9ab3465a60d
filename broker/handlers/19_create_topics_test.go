package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func createTopicsReq(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = topics
	req.ValidateOnly = validateOnly
	req.TimeoutMillis = 0
	return req
}

func createTopic(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], strp(configs[i+1])
		t.Configs = append(t.Configs, c)
	}
	return t
}

// topicCode is an expected per-topic result.
type topicCode struct {
	topic string
	code  int16
}

func TestCreateTopics(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int16
		topics  []kmsg.CreateTopicsRequestTopic
		// want is, per result in order, topic and error code.
		want []topicCode
	}{
		{"ok v0", 0, []kmsg.CreateTopicsRequestTopic{createTopic("a", 3, 1)}, []topicCode{{"a", 0}}},
		{"defaults v4", 4, []kmsg.CreateTopicsRequestTopic{createTopic("a", -1, -1)}, []topicCode{{"a", 0}}},
		{"bad name", 7, []kmsg.CreateTopicsRequestTopic{createTopic("a/b", 1, 1)}, []topicCode{{"a/b", kerr.InvalidTopicException.Code}}},
		{"bad rf", 7, []kmsg.CreateTopicsRequestTopic{createTopic("a", 1, 3)}, []topicCode{{"a", kerr.InvalidReplicationFactor.Code}}},
		{"bad partitions", 7, []kmsg.CreateTopicsRequestTopic{createTopic("a", 0, 1)}, []topicCode{{"a", kerr.InvalidPartitions.Code}}},
		{"bad config", 7, []kmsg.CreateTopicsRequestTopic{createTopic("a", 1, 1, "retention.ms", "x")}, []topicCode{{"a", kerr.InvalidConfig.Code}}},
		{"unknown config", 7, []kmsg.CreateTopicsRequestTopic{createTopic("a", 1, 1, "no.such", "1")}, []topicCode{{"a", kerr.InvalidConfig.Code}}},
		{"duplicate last", 7, []kmsg.CreateTopicsRequestTopic{createTopic("d", 1, 1), createTopic("ok", 1, 1), createTopic("d", 2, 1)}, []topicCode{{"ok", 0}, {"d", kerr.InvalidRequest.Code}}},
		{"exists", 7, []kmsg.CreateTopicsRequestTopic{createTopic("existing", 1, 1)}, []topicCode{{"existing", kerr.TopicAlreadyExists.Code}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newAdminEnv(t)
			e.createTopic(t, "existing", 1, nil)
			resp := e.call(t, createTopicsReq(false, tc.topics...), tc.version).(*kmsg.CreateTopicsResponse)
			if len(resp.Topics) != len(tc.want) {
				t.Fatalf("got %d results, want %d: %+v", len(resp.Topics), len(tc.want), resp.Topics)
			}
			for i, w := range tc.want {
				got := resp.Topics[i]
				if got.Topic != w.topic || got.ErrorCode != w.code {
					t.Errorf("result %d: got %s/%d (%s), want %s/%d", i, got.Topic, got.ErrorCode, deref(got.ErrorMessage), w.topic, w.code)
				}
				if tc.version >= 1 && (got.ErrorCode != 0) != (got.ErrorMessage != nil) {
					t.Errorf("result %d: code %d with message %v", i, got.ErrorCode, got.ErrorMessage)
				}
				if got.ErrorCode == 0 && e.d.Controller.Image().Topics[w.topic] == nil {
					t.Errorf("topic %s was not created", w.topic)
				}
			}
		})
	}
}

func TestCreateTopicsV7Details(t *testing.T) {
	e := newAdminEnv(t)
	resp := e.call(t, createTopicsReq(false, createTopic("t", 2, 1, "retention.ms", "1000")), 7).(*kmsg.CreateTopicsResponse)
	rt := resp.Topics[0]
	if rt.ErrorCode != 0 || rt.NumPartitions != 2 || rt.ReplicationFactor != 1 {
		t.Fatalf("got %+v", rt)
	}
	if img := e.d.Controller.Image(); [16]byte(img.Topics["t"].ID) != rt.TopicID {
		t.Fatalf("topic id %x, image has %x", rt.TopicID, img.Topics["t"].ID)
	}
	var sawRetention, sawCleanup bool
	for i, c := range rt.Configs {
		if i > 0 && rt.Configs[i-1].Name >= c.Name {
			t.Fatalf("configs not sorted at %s", c.Name)
		}
		switch c.Name {
		case "retention.ms":
			sawRetention = true
			if deref(c.Value) != "1000" || c.Source != int8(kmsg.ConfigSourceDynamicTopicConfig) || c.ReadOnly {
				t.Errorf("retention.ms = %+v", c)
			}
		case "cleanup.policy":
			sawCleanup = true
			if deref(c.Value) != "delete" || c.Source != int8(kmsg.ConfigSourceDefaultConfig) {
				t.Errorf("cleanup.policy = %+v", c)
			}
		}
	}
	if !sawRetention || !sawCleanup {
		t.Fatalf("configs missing: %+v", rt.Configs)
	}

	// v4 has neither configs nor counts on the wire: the defaults come back.
	resp = e.call(t, createTopicsReq(false, createTopic("u", 1, 1)), 4).(*kmsg.CreateTopicsResponse)
	if rt := resp.Topics[0]; rt.ErrorCode != 0 || rt.NumPartitions != -1 || len(rt.Configs) != 0 {
		t.Fatalf("v4 got %+v", rt)
	}
}

func TestCreateTopicsValidateOnly(t *testing.T) {
	e := newAdminEnv(t)
	resp := e.call(t, createTopicsReq(true, createTopic("t", 4, 1)), 5).(*kmsg.CreateTopicsResponse)
	if rt := resp.Topics[0]; rt.ErrorCode != 0 || rt.NumPartitions != 4 {
		t.Fatalf("got %+v", rt)
	}
	if e.d.Controller.Image().Topics["t"] != nil {
		t.Fatal("validate_only created the topic")
	}
}

func TestCreateTopicsNullConfig(t *testing.T) {
	e := newAdminEnv(t)
	topic := createTopic("t", 1, 1)
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name = "retention.ms"
	topic.Configs = append(topic.Configs, c)
	resp := e.call(t, createTopicsReq(false, topic), 7).(*kmsg.CreateTopicsResponse)
	if rt := resp.Topics[0]; rt.ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("got %+v", rt)
	}
}

func TestCreateTopicsManualAssignment(t *testing.T) {
	e := newAdminEnv(t)
	topic := createTopic("t", -1, -1)
	for p := int32(0); p < 2; p++ {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, []int32{1}
		topic.ReplicaAssignment = append(topic.ReplicaAssignment, a)
	}
	resp := e.call(t, createTopicsReq(false, topic), 3).(*kmsg.CreateTopicsResponse)
	if rt := resp.Topics[0]; rt.ErrorCode != 0 {
		t.Fatalf("got %+v %s", rt, deref(rt.ErrorMessage))
	}
	if n := len(e.d.Controller.Image().Topics["t"].Partitions); n != 2 {
		t.Fatalf("%d partitions", n)
	}
}

// Regression (issue 11 item 1): num_partitions = 2147483647 ran the process
// out of memory, with or without validate_only. Kafka 4.4 answers every
// topic of the request, duplicates and topics with a null config included,
// with POLICY_VIOLATION "Excessively large number of partitions per
// request." (KAFKA-17870) and creates nothing.
func TestCreateTopicsPartitionLimit(t *testing.T) {
	nullConfig := createTopic("null", 1, 1)
	nullConfig.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms"}}
	for _, validateOnly := range []bool{true, false} {
		e := newAdminEnv(t)
		req := createTopicsReq(validateOnly, createTopic("ok", 1, 1), createTopic("huge", 2147483647, 1),
			createTopic("dup", 1, 1), nullConfig, createTopic("dup", 1, 1))
		resp := e.call(t, req, 7).(*kmsg.CreateTopicsResponse)
		want := []string{"ok", "huge", "dup", "null", "dup"}
		if len(resp.Topics) != len(want) {
			t.Fatalf("%+v", resp.Topics)
		}
		for i, got := range resp.Topics {
			if got.Topic != want[i] || got.ErrorCode != kerr.PolicyViolation.Code || deref(got.ErrorMessage) != "Excessively large number of partitions per request." {
				t.Errorf("result %d: %s/%d %q", i, got.Topic, got.ErrorCode, deref(got.ErrorMessage))
			}
		}
		if n := len(e.d.Controller.Image().Topics); n != 0 {
			t.Fatalf("%d topics exist", n)
		}
	}
}
