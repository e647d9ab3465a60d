// This file runs the consumer-group scenario of groups_test.go with the non-Go clients
// KafkaJS (scripts/js/groups.js) and kafka-python (scripts/python/groups_kafka_python.py):
// three members of one group share a 12-partition topic, each record is consumed once
// and each partition by one member; a member leaves and the other two consume a second
// batch exactly once; a second group reads everything. The scripts do the checking and
// exit non-zero on a failure; the wrappers here start the broker, create the topic with
// kadm and run them with runScript's deadline.

package compattests

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// createGroupScriptTopic creates the groupPartitions-partition topic a group script uses.
func createGroupScriptTopic(t *testing.T, addr, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resps, err := kadm.NewClient(newScriptClient(t, addr)).CreateTopics(ctx, groupPartitions, 1, nil, topic)
	if err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
	if err := resps.Error(); err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
}

// TestGroupKafkaJS runs scripts/js/groups.js.
func TestGroupKafkaJS(t *testing.T) {
	t.Parallel()
	node := lookTool(t, "node")
	if _, err := os.Stat("scripts/js/node_modules/kafkajs/package.json"); err != nil {
		missingClient(t, "KafkaJS is not installed (run npm ci in compat-tests/scripts/js): %v", err)
	}
	b := startGroupBroker(t)
	const topic = "compat-group-kafkajs"
	createGroupScriptTopic(t, b.Addr, topic)
	runScript(t, []string{"KAFKAJS_NO_PARTITIONER_WARNING=1"}, node, "scripts/js/groups.js", b.Addr, topic)
}

// TestGroupKafkaPython runs scripts/python/groups_kafka_python.py.
func TestGroupKafkaPython(t *testing.T) {
	t.Parallel()
	py := pythonWith(t, "kafka")
	b := startGroupBroker(t)
	const topic = "compat-group-kafka-python"
	createGroupScriptTopic(t, b.Addr, topic)
	runScript(t, []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"},
		py, "scripts/python/groups_kafka_python.py", b.Addr, topic)
}
