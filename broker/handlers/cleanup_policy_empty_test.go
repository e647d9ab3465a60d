package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIncrementalAlterConfigsEmptyCleanupPolicy: Kafka 4.4 accepts an empty
// cleanup.policy (ValidList.in allows the empty list; it means infinite
// retention). confluent-kafka-python's test_incremental_alter_configs
// SUBTRACTs "delete" from a topic without an override and expects
// cleanup.policy="" in DescribeConfigs; samsa refused the result with
// INVALID_CONFIG "must be a non-empty list of compact, delete". A
// duplicated item is still refused, as Kafka's ValidList does.
func TestIncrementalAlterConfigsEmptyCleanupPolicy(t *testing.T) {
	e := newAdminEnv(t)
	e.createTopic(t, "t", 1, nil)
	alter := func(op kmsg.IncrementalAlterConfigOp, value string) kmsg.IncrementalAlterConfigsResponseResource {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{
			incResource(kmsg.ConfigResourceTypeTopic, "t", incOp{"cleanup.policy", op, strp(value)}),
		}
		return e.call(t, req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	}

	if rr := alter(kmsg.IncrementalAlterConfigOpSubtract, "delete"); rr.ErrorCode != 0 {
		t.Fatalf("subtract delete from the default: %d %s", rr.ErrorCode, deref(rr.ErrorMessage))
	}
	if got, ok := e.d.Controller.Image().Topics["t"].Configs["cleanup.policy"]; !ok || got != "" {
		t.Fatalf("stored cleanup.policy = %q (set %v), want \"\"", got, ok)
	}
	resp := e.call(t, describeConfigsReq(false, false, describeResource(kmsg.ConfigResourceTypeTopic, "t", "cleanup.policy")), 4).(*kmsg.DescribeConfigsResponse)
	c := findConfig(t, resp.Resources[0].Configs, "cleanup.policy")
	if deref(c.Value) != "" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("described cleanup.policy = %q source %v, want \"\" from DYNAMIC_TOPIC_CONFIG", deref(c.Value), c.Source)
	}
	tc := e.d.Config.TopicConfig(e.d.Controller.Image().Topics["t"].Configs)
	if tc.CleanupPolicyDelete || tc.CleanupPolicyCompact {
		t.Fatalf("empty cleanup.policy resolves to delete=%v compact=%v, want neither", tc.CleanupPolicyDelete, tc.CleanupPolicyCompact)
	}

	if rr := alter(kmsg.IncrementalAlterConfigOpSet, "delete,delete"); rr.ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("set delete,delete: %d %s, want INVALID_CONFIG", rr.ErrorCode, deref(rr.ErrorMessage))
	}
	if rr := alter(kmsg.IncrementalAlterConfigOpSet, "delete,archive"); rr.ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("set delete,archive: %d %s, want INVALID_CONFIG", rr.ErrorCode, deref(rr.ErrorMessage))
	}
}
