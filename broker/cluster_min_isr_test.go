package broker

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// describeMinISR returns min.insync.replicas of BROKER resource name (""
// is the cluster default) as DescribeConfigs v4 answers it, and whether
// it was listed.
func describeMinISR(ctx context.Context, t *testing.T, addr, name string) (kmsg.DescribeConfigsResponseResourceConfig, bool) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, name
	if name != "" {
		r.ConfigNames = []string{"min.insync.replicas"}
	}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("DescribeConfigs BROKER %q: %+v", name, resp.Resources)
	}
	for _, c := range resp.Resources[0].Configs {
		if c.Name == "min.insync.replicas" {
			return c, true
		}
	}
	return kmsg.DescribeConfigsResponseResourceConfig{}, false
}

// wantClusterMinISR checks that the cluster default lists
// min.insync.replicas=want and that broker id shows it with source
// DYNAMIC_DEFAULT_BROKER_CONFIG, as Kafka 4.4 does after its bootstrap
// record (checked on kafka-ref started with min.insync.replicas=2).
func wantClusterMinISR(ctx context.Context, t *testing.T, addr, id, want string) {
	t.Helper()
	c, ok := describeMinISR(ctx, t, addr, "")
	if !ok || c.Value == nil || *c.Value != want || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("cluster default min.insync.replicas: listed %v, %+v; want %s from DYNAMIC_DEFAULT_BROKER_CONFIG", ok, c, want)
	}
	c, ok = describeMinISR(ctx, t, addr, id)
	if !ok || c.Value == nil || *c.Value != want || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("broker %s min.insync.replicas: %+v; want %s from DYNAMIC_DEFAULT_BROKER_CONFIG", id, c, want)
	}
}

// TestClusterMinISRBootstrap: a fresh node writes the cluster-wide
// min.insync.replicas from its static value (2 here); a restart keeps the
// stored value although the static one changed, as Kafka writes the
// record only on an empty log.
func TestClusterMinISRBootstrap(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startTestNode(t, dir, "min.insync.replicas=2")
	wantClusterMinISR(ctx, t, n.Addrs()[0].String(), "1", "2")
	closeTestNode(t, n)

	n = startTestNode(t, dir, "min.insync.replicas=3")
	defer closeTestNode(t, n)
	wantClusterMinISR(ctx, t, n.Addrs()[0].String(), "1", "2")
}

// TestClusterMinISROlderMetadata: the metadata log of an older samsa
// (eligible leader replicas on, no cluster-level min.insync.replicas, a
// broker-level one) keeps working: the node adds the cluster-level value
// and drops the broker-level one, as Kafka's eligible.leader.replicas
// upgrade does, and keeps the other dynamic settings.
func TestClusterMinISROlderMetadata(t *testing.T) {
	dir := t.TempDir()
	metaDir := filepath.Join(dir, "__samsa_metadata")
	if err := os.MkdirAll(metaDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// An older samsa's data dir: meta.properties and the metadata.log of
	// the single-node builds, which the node imports.
	if err := os.WriteFile(filepath.Join(dir, "meta.properties"), []byte("version=1\ncluster.id=older-samsa-cluster\nnode.id=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := controller.OpenFileLog(filepath.Join(metaDir, "metadata.log"))
	if err != nil {
		t.Fatal(err)
	}
	three, two := "3", "2"
	if _, err := log.Append([]controller.Record{
		controller.ConfigRecord{ResourceType: controller.ConfigResourceBroker, ResourceName: "1", Name: "min.insync.replicas", Value: &three},
		controller.ConfigRecord{ResourceType: controller.ConfigResourceBroker, ResourceName: "", Name: "log.cleaner.threads", Value: &two},
	}); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startTestNode(t, dir)
	defer closeTestNode(t, n)
	wantClusterMinISR(ctx, t, n.Addrs()[0].String(), "1", "1")
	img := n.ctrl.Image()
	if _, ok := img.BrokerConfigs["1"]["min.insync.replicas"]; ok {
		t.Fatalf("broker-level min.insync.replicas kept: %v", img.BrokerConfigs["1"])
	}
	if img.BrokerConfigs[""]["log.cleaner.threads"] != "2" {
		t.Fatalf("cluster-level configs = %v; want log.cleaner.threads kept", img.BrokerConfigs[""])
	}
}

// TestClusterMinISRThreeNodes: a fresh three-node cluster has the
// cluster-wide value on every node, written once by the first active
// controller.
func TestClusterMinISRThreeNodes(t *testing.T) {
	c := startTestCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range c.nodes {
		deadline := time.Now().Add(time.Minute)
		for {
			// A follower's image may trail the record by a moment.
			if _, ok := c.nodes[i].ctrl.Image().BrokerConfigs[""]["min.insync.replicas"]; ok || time.Now().After(deadline) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
		wantClusterMinISR(ctx, t, c.addr(i), strconv.Itoa(i+1), "1")
	}
}
