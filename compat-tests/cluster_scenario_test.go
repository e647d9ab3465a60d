package compattests

import (
	"sync"
	"testing"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// sameAsKafka runs scenario against a three-node samsa cluster, then
// against a Kafka 4.4 node (kafka-ref, stopped afterwards), and reports
// every step whose output differs. It returns the samsa cluster, still
// running, and what each step printed on it.
func sameAsKafka(t *testing.T, scenario func(addrs []string) []string) (*harness.Cluster, []string) {
	t.Helper()
	c := harness.StartCluster(t, 3, harness.ClusterOptions{})
	samsa := scenario(c.Addrs())

	k := kafkaref.Start(t, kafkaref.Options{})
	kafka := scenario(k.Addrs())
	k.Stop()

	for i := range kafka {
		if samsa[i] != kafka[i] {
			t.Errorf("step %d differs:\nKafka 4.4:\n%s\nsamsa:\n%s", i, kafka[i], samsa[i])
		}
	}
	return c, samsa
}

// restartCluster stops every node of c, then restarts them all at once
// (none is ready before a controller majority is back), and ends the
// test if a restart failed.
func restartCluster(t *testing.T, c *harness.Cluster) {
	t.Helper()
	for _, b := range c.Brokers {
		b.Stop(t)
	}
	var wg sync.WaitGroup
	for _, b := range c.Brokers {
		wg.Go(func() { b.Restart(t) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}
