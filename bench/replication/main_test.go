package main

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// TestWaitBrokersSeesALateBroker is a regression test (issue 13 item 4):
// waitBrokers used kadm's BrokerMetadata, which franz-go answers from the
// client's cached broker list (refreshed by its metadata loop every 5
// minutes), so a first answer missing a broker stuck until the deadline:
// "metadata lists 2 of 3 brokers" while every node listed 3. Here the
// client first sees two brokers (node 3 stopped), node 3 comes back, and
// the same client must see three.
func TestWaitBrokersSeesALateBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	c := harness.StartCluster(t, 3, harness.ClusterOptions{})
	bootstrap := strings.Join(c.Addrs(), ",")
	c.Brokers[2].Stop(t)
	kc, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers[0].Addr, c.Brokers[1].Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	if err := waitBrokersWith(kc, bootstrap, 2, time.Now().Add(90*time.Second)); err != nil {
		t.Fatalf("with node 3 stopped: %v", err)
	}
	// The client's broker list now holds two brokers.
	c.Brokers[2].Restart(t)
	if err := waitBrokersWith(kc, bootstrap, 3, time.Now().Add(90*time.Second)); err != nil {
		t.Fatalf("after node 3 came back: %v", err)
	}
}
