package config

import "testing"

// TestCleanupPolicyValues: cleanup.policy and log.cleanup.policy take what
// Kafka 4.4's ValidList.in("compact", "delete") takes: any list of those
// items, the empty one included (infinite retention), each item once.
// samsa refused the empty list, which confluent-kafka-python's
// test_incremental_alter_configs sets by SUBTRACTing "delete".
func TestCleanupPolicyValues(t *testing.T) {
	topic, ok := topicDef("cleanup.policy")
	if !ok {
		t.Fatal("no cleanup.policy topic setting")
	}
	for _, tc := range []struct {
		value string
		ok    bool
	}{
		{"", true}, {" ", true}, {"delete", true}, {"compact", true}, {"delete,compact", true},
		{"compact, delete", true}, {"delete,delete", false}, {"archive", false}, {"delete,x", false},
	} {
		if err := topic.Validate(tc.value); (err == nil) != tc.ok {
			t.Errorf("cleanup.policy=%q: %v, want ok=%v", tc.value, err, tc.ok)
		}
		_, err := Load([]string{"--override", "log.cleanup.policy=" + tc.value}, nil)
		if (err == nil) != tc.ok {
			t.Errorf("log.cleanup.policy=%q: %v, want ok=%v", tc.value, err, tc.ok)
		}
	}
	c, err := Load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tc := c.TopicConfig(map[string]string{"cleanup.policy": ""}); tc.CleanupPolicyDelete || tc.CleanupPolicyCompact {
		t.Errorf("empty cleanup.policy: delete=%v compact=%v, want neither", tc.CleanupPolicyDelete, tc.CleanupPolicyCompact)
	}
}
