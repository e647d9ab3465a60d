package config

import (
	"slices"
	"strings"
	"testing"
)

// TestReplicaFetchSettings is the regression test for issue 11 item 4's
// second half: replica.fetch.response.max.bytes (and replica.fetch.max.bytes,
// replica.fetch.wait.max.ms, replica.fetch.backoff.ms) were accepted with
// "not implemented" while followers always asked for 10 MiB and 1 MiB.
// They are settings with Kafka's defaults now, and Kafka's rule that the
// wait is at most replica.lag.time.max.ms holds.
func TestReplicaFetchSettings(t *testing.T) {
	c := mustLoad(t, nil, nil)
	if c.ReplicaFetchResponseMaxBytes != 10<<20 || c.ReplicaFetchMaxBytes != 1<<20 || c.ReplicaFetchWaitMaxMs != 500 || c.ReplicaFetchBackoffMs != 1000 {
		t.Fatalf("defaults %d %d %d %d", c.ReplicaFetchResponseMaxBytes, c.ReplicaFetchMaxBytes, c.ReplicaFetchWaitMaxMs, c.ReplicaFetchBackoffMs)
	}
	c = mustLoad(t, []string{"--override", "replica.fetch.response.max.bytes=2097152", "--override", "replica.fetch.max.bytes=65536"},
		[]string{"KAFKA_REPLICA_FETCH_WAIT_MAX_MS=250", "KAFKA_REPLICA_FETCH_BACKOFF_MS=100"})
	if c.ReplicaFetchResponseMaxBytes != 2<<20 || c.ReplicaFetchMaxBytes != 64<<10 || c.ReplicaFetchWaitMaxMs != 250 || c.ReplicaFetchBackoffMs != 100 {
		t.Fatalf("set %d %d %d %d", c.ReplicaFetchResponseMaxBytes, c.ReplicaFetchMaxBytes, c.ReplicaFetchWaitMaxMs, c.ReplicaFetchBackoffMs)
	}
	for _, k := range []string{"replica.fetch.response.max.bytes", "replica.fetch.max.bytes", "replica.fetch.wait.max.ms", "replica.fetch.backoff.ms"} {
		if slices.Contains(c.Ignored, k) {
			t.Errorf("%s still reported as not implemented", k)
		}
	}
	if _, err := Load([]string{"--override", "replica.fetch.max.bytes=-1"}, nil); err == nil {
		t.Error("replica.fetch.max.bytes=-1 accepted")
	}
	_, err := Load([]string{"--override", "replica.fetch.wait.max.ms=40000"}, nil)
	if err == nil || !strings.Contains(err.Error(), "replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms") {
		t.Errorf("wait above the lag time: %v", err)
	}
}
