package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/broker"
	"github.com/samsa-broker/samsa/config"
)

// startNode runs a broker in-process on a free port.
func startNode(t *testing.T) string {
	t.Helper()
	cfg, err := config.Load([]string{"--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "log.dirs=" + t.TempDir(),
		"--override", "offsets.topic.num.partitions=3", "--override", "group.initial.rebalance.delay.ms=0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := broker.StartNode(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return n.Addrs()[0].String()
}

// invocation is one `samsa ...` run in-process.
type invocation struct {
	code           int
	stdout, stderr string
}

func samsa(t *testing.T, env map[string]string, stdin string, args ...string) invocation {
	t.Helper()
	var out, errOut bytes.Buffer
	code, handled := dispatch(args, strings.NewReader(stdin), &out, &errOut, func(k string) string { return env[k] })
	if !handled {
		t.Fatalf("samsa %q: not a subcommand", args)
	}
	return invocation{code, out.String(), errOut.String()}
}

// ok runs samsa with SAMSA_BROKERS=addr and wants exit 0.
func ok(t *testing.T, addr, stdin string, args ...string) string {
	t.Helper()
	r := samsa(t, map[string]string{"SAMSA_BROKERS": addr}, stdin, args...)
	if r.code != 0 {
		t.Fatalf("samsa %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

func fails(t *testing.T, addr string, want int, args ...string) invocation {
	t.Helper()
	r := samsa(t, map[string]string{"SAMSA_BROKERS": addr}, "", args...)
	if r.code != want {
		t.Fatalf("samsa %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %q: %v", s, err)
	}
	return v
}

// TestCLITopics runs every topics action against a live broker and parses
// the JSON output; the table output is checked to be aligned columns.
func TestCLITopics(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topics", "create", "orders", "--partitions", "3", "--config", "retention.ms=3600000", "--format", "json")
	fails(t, addr, 1, "topics", "create", "orders")
	ok(t, addr, "", "topics", "create", "orders", "--if-not-exists")
	ok(t, addr, "", "topics", "create", "--topic", "audit")

	list := decode[[]topicJSON](t, ok(t, addr, "", "topics", "list", "--format", "json"))
	if len(list) != 2 || list[0].Name != "audit" || list[1].Name != "orders" || list[1].Partitions != 3 || list[1].ReplicationFactor != 1 {
		t.Fatalf("topics list: %+v", list)
	}
	withInternal := decode[[]topicJSON](t, ok(t, addr, "", "topics", "list", "--internal", "--format", "json"))
	if len(withInternal) < 3 {
		t.Fatalf("topics list --internal: %+v", withInternal)
	}
	table := ok(t, addr, "", "topics", "list")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "TOPIC ") || strings.Index(lines[0], "PARTITIONS") != strings.Index(lines[2], "3") {
		t.Fatalf("table not aligned:\n%s", table)
	}

	desc := decode[[]topicJSON](t, ok(t, addr, "", "topics", "describe", "orders", "--format", "json"))
	if len(desc) != 1 || len(desc[0].PartitionDetails) != 3 || desc[0].Configs["retention.ms"] != "3600000" {
		t.Fatalf("describe: %+v", desc)
	}
	for _, p := range desc[0].PartitionDetails {
		if p.Leader != 1 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
			t.Fatalf("partition %+v", p)
		}
	}
	if out := ok(t, addr, "", "topics", "describe"); !strings.Contains(out, "LEADER-EPOCH") || !strings.Contains(out, "retention.ms=3600000") {
		t.Fatalf("describe table:\n%s", out)
	}
	fails(t, addr, 1, "topics", "describe", "nope")

	ok(t, addr, "", "topics", "alter-configs", "orders", "--set", "cleanup.policy=compact", "--delete", "retention.ms")
	desc = decode[[]topicJSON](t, ok(t, addr, "", "topics", "describe", "orders", "--format", "json"))
	if desc[0].Configs["cleanup.policy"] != "compact" || desc[0].Configs["retention.ms"] != "" {
		t.Fatalf("after alter-configs: %+v", desc[0].Configs)
	}
	r := fails(t, addr, 1, "topics", "alter-configs", "orders", "--set", "cleanup.policy=bogus")
	if !strings.Contains(r.stderr, "INVALID_CONFIG") {
		t.Fatalf("alter-configs bogus: %+v", r)
	}

	res := decode[[]result](t, ok(t, addr, "", "topics", "delete", "audit", "--format", "json"))
	if len(res) != 1 || res[0].Name != "audit" || res[0].Error != "" {
		t.Fatalf("delete: %+v", res)
	}
	fails(t, addr, 1, "topics", "delete", "audit")
	ok(t, addr, "", "topics", "delete", "audit", "--if-exists")

	fails(t, addr, 2, "topics")
	fails(t, addr, 2, "topics", "frobnicate")
	fails(t, addr, 2, "topics", "create")
	fails(t, addr, 2, "topics", "list", "--format", "yaml")
	fails(t, addr, 2, "topics", "list", "--no-such-flag")
	if r := fails(t, addr, 0, "topics", "create", "--help"); !strings.Contains(r.stderr, "--partitions") {
		t.Fatalf("help: %q", r.stderr)
	}
}

// TestCLIProduceConsumeGroups produces lines with keys, consumes them by
// offset, timestamp and group, and drives the groups actions.
func TestCLIProduceConsumeGroups(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topics", "create", "events", "--partitions", "1")
	var in strings.Builder
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&in, "k%d:value %d\n", i, i)
	}
	before := time.Now().UnixMilli()
	pr := decode[map[string]any](t, ok(t, addr, in.String(), "produce", "events", "--key-separator", ":", "-H", "source=cli", "--format", "json"))
	if pr["produced"] != float64(10) || pr["failed"] != float64(0) {
		t.Fatalf("produce: %v", pr)
	}
	fails(t, addr, 2, "produce")

	out := ok(t, addr, "", "consume", "events", "--from-beginning", "-n", "3")
	if out != "value 0\nvalue 1\nvalue 2\n" {
		t.Fatalf("consume: %q", out)
	}
	out = ok(t, addr, "", "consume", "events", "--offset", "8", "-n", "2", "--key-separator", "=")
	if out != "k8=value 8\nk9=value 9\n" {
		t.Fatalf("consume --offset: %q", out)
	}
	out = ok(t, addr, "", "consume", "events", "--partition", "0", "--from-timestamp", fmt.Sprint(before), "-n", "1", "--format", "json")
	rec := decode[recordJSON](t, out)
	if rec.Offset != 0 || rec.Key == nil || *rec.Key != "k0" || rec.Value != "value 0" || rec.Headers["source"] != "cli" {
		t.Fatalf("consume json: %+v", rec)
	}
	// Asking for more records than there are fails after --idle-timeout.
	fails(t, addr, 1, "consume", "events", "--from-beginning", "-n", "11", "--idle-timeout", "1s")
	fails(t, addr, 1, "consume", "missing", "-n", "1", "--timeout", "5s")

	// A group consumes 4 records and commits exactly those.
	out = ok(t, addr, "", "consume", "events", "--group", "g1", "--from-beginning", "-n", "4")
	if strings.Count(out, "\n") != 4 {
		t.Fatalf("group consume: %q", out)
	}
	groups := decode[[]groupJSON](t, ok(t, addr, "", "groups", "list", "--format", "json"))
	if len(groups) != 1 || groups[0].Group != "g1" {
		t.Fatalf("groups list: %+v", groups)
	}
	lag := func() offsetJSON {
		t.Helper()
		d := decode[[]groupDescJSON](t, ok(t, addr, "", "groups", "describe", "g1", "--format", "json"))
		if len(d) != 1 || len(d[0].Offsets) != 1 {
			t.Fatalf("groups describe: %+v", d)
		}
		return d[0].Offsets[0]
	}
	if o := lag(); o.CurrentOffset != 4 || o.LogEndOffset != 10 || o.Lag != 6 {
		t.Fatalf("lag: %+v", o)
	}
	if out := ok(t, addr, "", "groups", "describe", "g1"); !strings.Contains(out, "LOG-END-OFFSET") {
		t.Fatalf("describe table:\n%s", out)
	}
	fails(t, addr, 1, "groups", "describe", "nobody")

	// reset-offsets: a dry run changes nothing, --execute commits.
	plan := decode[map[string]any](t, ok(t, addr, "", "groups", "reset-offsets", "g1", "--topic", "events", "--to-offset", "7", "--format", "json"))
	if plan["executed"] != false {
		t.Fatalf("dry run: %v", plan)
	}
	if o := lag(); o.CurrentOffset != 4 {
		t.Fatalf("dry run moved the offset: %+v", o)
	}
	ok(t, addr, "", "groups", "reset-offsets", "g1", "--topic", "events:0", "--to-offset", "7", "--execute")
	if o := lag(); o.CurrentOffset != 7 || o.Lag != 3 {
		t.Fatalf("after --to-offset 7: %+v", o)
	}
	ok(t, addr, "", "groups", "reset-offsets", "g1", "--all-topics", "--shift-by", "-5", "--execute")
	if o := lag(); o.CurrentOffset != 2 {
		t.Fatalf("after --shift-by -5: %+v", o)
	}
	ok(t, addr, "", "groups", "reset-offsets", "g1", "--all-topics", "--to-latest", "--execute")
	if o := lag(); o.CurrentOffset != 10 || o.Lag != 0 {
		t.Fatalf("after --to-latest: %+v", o)
	}
	ok(t, addr, "", "groups", "reset-offsets", "g1", "--topic", "events", "--to-datetime", time.UnixMilli(before).UTC().Format(time.RFC3339Nano), "--execute")
	if o := lag(); o.CurrentOffset != 0 {
		t.Fatalf("after --to-datetime: %+v", o)
	}
	ok(t, addr, "", "groups", "reset-offsets", "g1", "--topic", "events", "--to-earliest", "--execute")
	fails(t, addr, 2, "groups", "reset-offsets", "g1", "--topic", "events")
	fails(t, addr, 2, "groups", "reset-offsets", "g1", "--topic", "events", "--to-earliest", "--to-latest")

	// A member that is consuming blocks --execute, as in Kafka.
	member, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("events"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	member.PollRecords(ctx, 1)
	r := fails(t, addr, 1, "groups", "reset-offsets", "g1", "--topic", "events", "--to-earliest", "--execute")
	if !strings.Contains(r.stderr, "inactive") {
		t.Fatalf("reset of an active group: %+v", r)
	}
	fails(t, addr, 1, "groups", "delete", "g1") // NON_EMPTY_GROUP
	member.Close()

	res := decode[[]result](t, ok(t, addr, "", "groups", "delete", "g1", "--format", "json"))
	if len(res) != 1 || res[0].Error != "" {
		t.Fatalf("groups delete: %+v", res)
	}
	groups = decode[[]groupJSON](t, ok(t, addr, "", "groups", "list", "--format", "json"))
	if len(groups) != 0 {
		t.Fatalf("groups after delete: %+v", groups)
	}
}

// TestCLIClusterHealth: cluster shows the broker and the controller;
// health passes for the broker's node id and fails for another id and for
// an address nothing listens on.
func TestCLIClusterHealth(t *testing.T) {
	addr := startNode(t)
	cl := decode[map[string]any](t, ok(t, addr, "", "cluster", "--format", "json"))
	brokers, _ := cl["brokers"].([]any)
	if cl["controller"] != float64(1) || len(brokers) != 1 || cl["cluster_id"] == "" {
		t.Fatalf("cluster: %v", cl)
	}
	if out := ok(t, addr, "", "cluster"); !strings.Contains(out, "Controller: 1") || !strings.Contains(out, "Metadata quorum: leader 1") {
		t.Fatalf("cluster table:\n%s", out)
	}
	// The quorum (DescribeQuorum): a quorum of one, this node leading.
	q, _ := cl["quorum"].(map[string]any)
	reps, _ := q["replicas"].([]any)
	if q["leader"] != float64(1) || len(reps) != 1 || reps[0].(map[string]any)["role"] != "leader" {
		t.Fatalf("cluster quorum: %v (%v)", q, cl["quorum_error"])
	}

	h := decode[map[string]any](t, ok(t, addr, "", "health", "--format", "json"))
	if h["healthy"] != true {
		t.Fatalf("health: %v", h)
	}
	if r := samsa(t, map[string]string{"SAMSA_BROKERS": addr, "KAFKA_NODE_ID": "1"}, "", "health"); r.code != 0 || !strings.Contains(r.stdout, "lists broker 1") {
		t.Fatalf("health with KAFKA_NODE_ID=1: %+v", r)
	}
	if r := samsa(t, map[string]string{"SAMSA_BROKERS": addr, "KAFKA_NODE_ID": "7"}, "", "health"); r.code != 1 {
		t.Fatalf("health with KAFKA_NODE_ID=7: %+v", r)
	}
	if r := samsa(t, nil, "", "health", "-b", "127.0.0.1:1", "--timeout", "2s", "-q"); r.code != 1 || r.stdout != "" {
		t.Fatalf("health of nothing: %+v", r)
	}
	// The flag wins over SAMSA_BROKERS.
	if r := samsa(t, map[string]string{"SAMSA_BROKERS": "127.0.0.1:1"}, "", "health", "--bootstrap-server", addr); r.code != 0 {
		t.Fatalf("--bootstrap-server over SAMSA_BROKERS: %+v", r)
	}
}

// TestDispatch: only the subcommand names and --version are the CLI; every
// other command line (none, flags, a properties file) serves a broker.
func TestDispatch(t *testing.T) {
	for _, args := range [][]string{nil, {"--override", "num.partitions=3"}, {"server.properties"}, {"--config", "topics"}, {"--help"}} {
		if _, handled := dispatch(args, nil, io.Discard, io.Discard, func(string) string { return "" }); handled {
			t.Errorf("dispatch(%q) handled; want the broker", args)
		}
	}
	for _, args := range [][]string{{"--version"}, {"version"}, {"--config", "server.properties", "--version"}} {
		var out bytes.Buffer
		if code, handled := dispatch(args, nil, &out, io.Discard, nil); !handled || code != 0 || !strings.HasPrefix(out.String(), "samsa ") {
			t.Fatalf("%q: %d %v %q", args, code, handled, out.String())
		}
	}
}
