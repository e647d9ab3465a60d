package compattests

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// featureEpoch masks the epoch of `kafka-features describe` lines: the
// metadata offset of the answering node, which differs between clusters.
var featureEpoch = regexp.MustCompile(`Epoch: -?\d+`)

// normalizeFeatures collapses the padding of `kafka-features describe`
// lines ("Feature: %-40s  SupportedMinVersion: %-15s ...") and masks the
// epoch.
func normalizeFeatures(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			lines = append(lines, featureEpoch.ReplaceAllString(l, "Epoch: *"))
		}
	}
	return strings.Join(lines, "\n")
}

// featuresScenario runs Kafka 4.4's kafka-features tool and a Java
// transactional producer (kafka-producer-perf-test --transactional-id)
// against the cluster at addrs and returns what each step printed or
// found, in order: describe; downgrade transaction.version to 1; describe
// (once every node shows it); the producer epoch of a Java transactional
// producer that committed several transactions at transaction.version 1
// (the TV1 path: EndTxn does not bump the epoch, so it stays 0); upgrade
// --release-version 4.4; describe; the epoch after the same producer run
// at transaction.version 2 (bumped by every commit).
func featuresScenario(t *testing.T, ctx context.Context, addrs []string, rf string) []string {
	t.Helper()
	var out []string
	tool := func(name string, args ...string) string {
		t.Helper()
		b, err := kafkaref.Tool(t, name, append([]string{"--bootstrap-server", addrs[0]}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, b)
		}
		return string(b)
	}
	// describeOn runs describe against one node until cond holds (a node
	// learns a change from the metadata log a moment after the commit).
	describe := func(want string) string {
		t.Helper()
		var last string
		for _, addr := range addrs {
			poll(ctx, t, "kafka-features describe on "+addr+" shows "+want, func() bool {
				b, err := kafkaref.Tool(t, "kafka-features", "--bootstrap-server", addr, "describe").CombinedOutput()
				last = normalizeFeatures(string(b))
				if err != nil || !strings.Contains(last, want) {
					t.Logf("describe on %s: %v\n%s", addr, err, last)
					return false
				}
				return true
			})
		}
		return last
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	producerEpoch := func(txnID string) string {
		t.Helper()
		tool("kafka-topics", "--create", "--if-not-exists", "--topic", "features-txn", "--partitions", "2", "--replication-factor", rf)
		b, err := kafkaref.Tool(t, "kafka-producer-perf-test", "--topic", "features-txn", "--num-records", "60", "--record-size", "16",
			"--throughput", "120", "--transactional-id", txnID, "--transaction-duration-ms", "100",
			"--producer-props", "bootstrap.servers="+strings.Join(addrs, ","), "acks=all").CombinedOutput()
		if err != nil {
			t.Fatalf("kafka-producer-perf-test: %v\n%s", err, b)
		}
		var d kadm.DescribedTransaction
		poll(ctx, t, "transaction "+txnID+" complete", func() bool {
			ds, err := adm.DescribeTransactions(ctx, txnID)
			if err != nil {
				t.Logf("DescribeTransactions %s: %v", txnID, err)
				return false
			}
			d = ds[txnID]
			if d.Err != nil || d.State != "CompleteCommit" {
				t.Logf("transaction %s: %+v", txnID, d)
				return false
			}
			return true
		})
		if d.ProducerEpoch == 0 {
			return "epoch 0"
		}
		return "epoch bumped"
	}

	out = append(out, describe("Feature: transaction.version SupportedMinVersion: 0 SupportedMaxVersion: 2 FinalizedVersionLevel: 2 Epoch"))
	out = append(out, tool("kafka-features", "downgrade", "--feature", "transaction.version=1"))
	out = append(out, describe("Feature: transaction.version SupportedMinVersion: 0 SupportedMaxVersion: 2 FinalizedVersionLevel: 1 Epoch"))
	out = append(out, producerEpoch("features-tv1"))
	out = append(out, tool("kafka-features", "upgrade", "--release-version", "4.4"))
	out = append(out, describe("Feature: transaction.version SupportedMinVersion: 0 SupportedMaxVersion: 2 FinalizedVersionLevel: 2 Epoch"))
	out = append(out, producerEpoch("features-tv2"))
	return out
}

// TestFeaturesCluster: feature levels change on a three-node samsa
// cluster as on Kafka 4.4. Kafka's kafka-features tool describes the
// levels, downgrades transaction.version to 1 through node 1 (the active
// controller commits it, every node then shows it), a Java transactional
// producer then commits with transaction version 1 (its epoch is not
// bumped per transaction), `upgrade --release-version 4.4` brings the
// levels back (kraft.version upgraded to 1 as on Kafka's static quorum),
// and the producer commits with transaction version 2. The same steps
// against a Kafka 4.4 node (kafka-ref) print the same output. A restart
// of the whole samsa cluster keeps the levels (metadata log).
func TestFeaturesCluster(t *testing.T) {
	kafkaref.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	// The topic is replicated to every node: 3 on samsa, 1 on kafka-ref.
	c, samsa := sameAsKafka(t, func(addrs []string) []string {
		return featuresScenario(t, ctx, addrs, strconv.Itoa(len(addrs)))
	})
	t.Logf("kafka-features describe after the upgrade (both):\n%s", samsa[5])
	t.Logf("downgrade: %q; upgrade --release-version 4.4: %q", samsa[1], samsa[4])
	// The Java producer took the transaction version 1 path at level 1
	// and version 2 at level 2, on both.
	if samsa[3] != "epoch 0" || samsa[6] != "epoch bumped" {
		t.Errorf("producer epochs: %q at transaction.version 1, %q at 2", samsa[3], samsa[6])
	}

	// The levels are in the metadata log: downgrade, restart every node,
	// and every node still shows the downgrade.
	b, err := kafkaref.Tool(t, "kafka-features", "--bootstrap-server", c.Addrs()[1], "downgrade", "--feature", "transaction.version=1", "--feature", "group.version=0").CombinedOutput()
	if err != nil {
		t.Fatalf("downgrade: %v\n%s", err, b)
	}
	levelsOn := func(addr string) map[string]int16 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			return nil
		}
		defer cl.Close()
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-test", "1"
		resp, err := send(ctx, cl, req)
		if err != nil {
			return nil
		}
		m := map[string]int16{}
		for _, f := range resp.(*kmsg.ApiVersionsResponse).FinalizedFeatures {
			m[f.Name] = f.MaxVersionLevel
		}
		return m
	}
	downgraded := func(addr string) bool {
		m := levelsOn(addr)
		_, group := m["group.version"]
		return m != nil && m["transaction.version"] == 1 && !group && m["metadata.version"] == 33
	}
	for _, addr := range c.Addrs() {
		poll(ctx, t, "downgrade on "+addr, func() bool { return downgraded(addr) })
	}
	restartCluster(t, c)
	for _, addr := range c.Addrs() {
		poll(ctx, t, "levels after the restart on "+addr, func() bool { return downgraded(addr) })
	}
}
