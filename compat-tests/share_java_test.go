// This file runs the share-group checks (KIP-932, "queues for Kafka") of
// samsa.compat.ShareChecks in compat-tests/java against samsa and against Apache Kafka 4.4.0:
// the Java client's KafkaShareConsumer (explicit and implicit acknowledgement, two consumers
// on one partition, redelivery after release and after the acquisition lock times out,
// archiving at the delivery count limit, a new consumer continuing where the group was, a
// killed consumer's records released when its connection closes) and Kafka's
// kafka-share-groups tool (--list, --describe with --offsets, --members and --state,
// --reset-offsets --to-earliest/--to-latest/--to-offset, --delete-offsets, --delete). On
// samsa the test skips while the broker does not advertise ShareFetch (key 78).

package compattests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// javaShareChecks are the checks of samsa.compat.ShareChecks, in their order.
var javaShareChecks = []string{
	"share-explicit-accept-release-reject", "share-implicit", "share-two-consumers-one-partition",
	"share-lock-timeout-redelivery", "share-delivery-limit-archives", "share-restart-continues",
	"share-kill-releases", "kafka-share-groups",
}

// requireShareGroups fails the test when the broker at addr does not advertise
// ShareFetch (key 78): samsa serves share groups (KIP-932), as Kafka 4.4 does
// by default.
func requireShareGroups(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ok, err := harness.AdvertisesAt(ctx, addr, kmsg.ShareFetch)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		return
	}
	t.Fatal("the broker does not advertise ShareFetch (key 78): samsa serves share groups (KIP-932) and must")
}

// TestJavaShareConsumer runs samsa.compat.ShareChecks (kafka-clients 4.4.0's
// KafkaShareConsumer, Admin and kafka-share-groups) against samsa and against Apache Kafka
// 4.4.0. It takes about 60 s per broker (one JVM), 15 s of it one acquisition lock expiring.
func TestJavaShareConsumer(t *testing.T) {
	t.Parallel()
	cp := javaClasspath(t)
	t.Run("samsa", func(t *testing.T) {
		t.Parallel()
		// The share state topic settings kafka-ref.sh gives the reference
		// broker (one node: replication factor 1, min ISR 1).
		b := harness.Start(t, harness.Options{Overrides: map[string]string{
			"share.coordinator.state.topic.replication.factor": "1",
			"share.coordinator.state.topic.min.isr":            "1",
		}})
		requireShareGroups(t, b.Addr)
		reportJavaChecks(t, runJavaChecks(t, cp, "samsa.compat.ShareChecks", b.Addr, "all"), javaShareChecks)
	})
	t.Run("kafka", func(t *testing.T) {
		t.Parallel()
		k := kafkaref.Start(t, kafkaref.Options{})
		reportJavaChecks(t, runJavaChecks(t, cp, "samsa.compat.ShareChecks", k.Bootstrap(), "all"), javaShareChecks)
	})
}
