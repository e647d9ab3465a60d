package compattests

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// clientMetricsTool runs Kafka 4.4's kafka-client-metrics.sh against addr
// and returns what it printed (stdout and stderr, without the log lines
// that carry a timestamp) and whether it succeeded.
func clientMetricsTool(t *testing.T, addr string, args ...string) string {
	t.Helper()
	b, err := kafkaref.Tool(t, "kafka-client-metrics", append([]string{"--bootstrap-server", addr}, args...)...).CombinedOutput()
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		// The tool's log4j ERROR line (with a clock) repeats its message.
		if strings.HasPrefix(l, "[20") || strings.HasPrefix(l, " (org.apache.kafka.tools.") || l == "" {
			continue
		}
		keep = append(keep, l)
	}
	out := strings.Join(keep, "\n")
	if err != nil {
		out += fmt.Sprintf("\n(exit: %v)", err)
	}
	return out
}

// describeSubscription describes a client metrics subscription on the
// seed broker of cl: its configs as name=value, and the source of each.
func describeSubscription(ctx context.Context, cl *kgo.Client, name string) (string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
	req.Resources = append(req.Resources, r)
	resp, err := send(ctx, cl, req)
	if err != nil {
		return "", err
	}
	rr := resp.(*kmsg.DescribeConfigsResponse).Resources[0]
	if rr.ErrorCode != 0 {
		return "", fmt.Errorf("describe %s: error %d", name, rr.ErrorCode)
	}
	var parts []string
	for _, c := range rr.Configs {
		v := ""
		if c.Value != nil {
			v = *c.Value
		}
		parts = append(parts, fmt.Sprintf("%s=%s (%s)", c.Name, v, c.Source))
	}
	sort.Strings(parts)
	return strings.Join(parts, " "), nil
}

// clientMetricsScenario manages client metrics subscriptions with Kafka
// 4.4's kafka-client-metrics.sh against the cluster at addrs (alterations
// through different nodes, so a cluster forwards them to its active
// controller) and returns what each step printed. Every node must show a
// change before the next step (polled with a describe through kmsg).
func clientMetricsScenario(t *testing.T, ctx context.Context, addrs []string) []string {
	t.Helper()
	var clients []*kgo.Client
	for _, a := range addrs {
		cl, err := kgo.NewClient(kgo.SeedBrokers(a))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		clients = append(clients, cl)
	}
	everywhere := func(name, want string) {
		t.Helper()
		for i, cl := range clients {
			poll(ctx, t, fmt.Sprintf("%s on %s shows %s", name, addrs[i], want), func() bool {
				got, err := describeSubscription(ctx, cl, name)
				return err == nil && got == want
			})
		}
	}
	last := addrs[len(addrs)-1]
	var out []string
	step := func(s string) { out = append(out, s) }

	step(clientMetricsTool(t, addrs[0], "--alter", "--name", "cm-producers", "--metrics", "org.apache.kafka.producer.",
		"--interval", "1000", "--match", "client_id=x"))
	step(clientMetricsTool(t, last, "--alter", "--name", "cm-consumers", "--metrics", "org.apache.kafka.consumer.,org.apache.kafka.producer.",
		"--interval", "60000", "--match", "client_software_name=kafka-java,client_id=app-.*"))
	everywhere("cm-producers", "interval.ms=1000 (CLIENT_METRICS_CONFIG) match=client_id=x (CLIENT_METRICS_CONFIG) metrics=org.apache.kafka.producer. (CLIENT_METRICS_CONFIG)")
	everywhere("cm-consumers", "interval.ms=60000 (CLIENT_METRICS_CONFIG) match=client_software_name=kafka-java,client_id=app-.* (CLIENT_METRICS_CONFIG) metrics=org.apache.kafka.consumer.,org.apache.kafka.producer. (CLIENT_METRICS_CONFIG)")
	// --list prints the names in the broker's order (Kafka's is a hash
	// set's): compare them sorted.
	list := strings.Split(clientMetricsTool(t, addrs[1%len(addrs)], "--list"), "\n")
	sort.Strings(list)
	step(strings.Join(list, "\n"))
	step(clientMetricsTool(t, addrs[1%len(addrs)], "--describe", "--name", "cm-consumers"))
	step(clientMetricsTool(t, addrs[0], "--describe", "--name", "cm-none"))
	step(clientMetricsTool(t, addrs[0], "--alter", "--name", "cm-bad", "--interval", "50"))
	step(clientMetricsTool(t, addrs[0], "--alter", "--name", "cm-bad", "--match", "client_name=x"))
	step(clientMetricsTool(t, addrs[0], "--alter", "--name", "cm-bad", "--match", "client_id=["))
	step(clientMetricsTool(t, last, "--delete", "--name", "cm-consumers"))
	step(clientMetricsTool(t, addrs[0], "--alter", "--name", "cm-producers", "--interval", "2000"))
	everywhere("cm-consumers", "interval.ms=300000 (DEFAULT_CONFIG) match= (DEFAULT_CONFIG) metrics= (DEFAULT_CONFIG)")
	everywhere("cm-producers", "interval.ms=2000 (CLIENT_METRICS_CONFIG) match=client_id=x (CLIENT_METRICS_CONFIG) metrics=org.apache.kafka.producer. (CLIENT_METRICS_CONFIG)")
	step(clientMetricsTool(t, last, "--list"))
	step(clientMetricsTool(t, last, "--describe"))
	return out
}

// TestClientMetricsCluster: KIP-714 client metrics subscriptions on a
// three-node samsa cluster, managed with Kafka 4.4's
// kafka-client-metrics.sh, print what the same steps print against Kafka
// 4.4 (kafka-ref): created and changed through different nodes (forwarded
// to the active controller), visible on every node, listed, described
// (a missing one too), invalid intervals and match patterns refused with
// Kafka's messages, deleted. A restart of every node keeps them (they are
// ConfigRecords in the metadata log).
func TestClientMetricsCluster(t *testing.T) {
	kafkaref.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	c, samsa := sameAsKafka(t, func(addrs []string) []string { return clientMetricsScenario(t, ctx, addrs) })
	t.Logf("kafka-client-metrics output (both):\n%s", strings.Join(samsa, "\n--\n"))

	restartCluster(t, c)
	want := "interval.ms=2000 (CLIENT_METRICS_CONFIG) match=client_id=x (CLIENT_METRICS_CONFIG) metrics=org.apache.kafka.producer. (CLIENT_METRICS_CONFIG)"
	for _, addr := range c.Addrs() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		poll(ctx, t, "cm-producers after the restart on "+addr, func() bool {
			got, err := describeSubscription(ctx, cl, "cm-producers")
			return err == nil && got == want
		})
		cl.Close()
	}
	if got := clientMetricsTool(t, c.Addrs()[2], "--list"); got != "cm-producers" {
		t.Errorf("--list after the restart: %q", got)
	}
}
