// This file runs Kafka 4.4's own command-line tools (samsa.compat.ToolChecks in
// compat-tests/java, which calls the tools' main classes in one JVM) against samsa and
// against Apache Kafka 4.4.0. kafka-leader-election and kafka-reassign-partitions are not
// run: samsa does not serve ElectLeaders nor the partition reassignment APIs yet
// (FINDINGS.md).

package compattests

import (
	"testing"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// javaToolChecks are the checks of samsa.compat.ToolChecks, in their order.
var javaToolChecks = []string{
	"kafka-topics", "kafka-configs", "kafka-console-producer-consumer", "kafka-consumer-groups",
	"kafka-get-offsets-delete-records", "kafka-transactions", "kafka-perf-tests",
}

// TestJavaTools runs kafka-topics, kafka-configs, the console producer and consumer,
// kafka-consumer-groups, kafka-get-offsets, kafka-delete-records, kafka-transactions and
// the producer and consumer perf tests, asserting on what they print and on the broker's
// state afterwards.
func TestJavaTools(t *testing.T) {
	t.Parallel()
	cp := javaClasspath(t)
	t.Run("samsa", func(t *testing.T) {
		t.Parallel()
		b := harness.Start(t, harness.Options{})
		reportJavaChecks(t, runJavaChecks(t, cp, "samsa.compat.ToolChecks", b.Addr, "all"), javaToolChecks)
	})
	t.Run("kafka", func(t *testing.T) {
		t.Parallel()
		k := kafkaref.Start(t, kafkaref.Options{})
		reportJavaChecks(t, runJavaChecks(t, cp, "samsa.compat.ToolChecks", k.Bootstrap(), "all"), javaToolChecks)
	})
}
