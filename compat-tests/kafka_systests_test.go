// This file runs scenarios of Apache Kafka's own system tests (tests/kafkatest:
// core/replication_test.py, core/transactions_test.py, core/group_mode_transactions_test.py,
// client/consumer_test.py, core/reassign_partitions_test.py) with
// Kafka 4.4's Java test tools (VerifiableProducer, VerifiableConsumer,
// TransactionalMessageCopier from the kafka-tools jar) against a three-node samsa
// cluster of real processes, bouncing, killing and shutting down nodes as those tests
// do, and validating as they do (package systests).
//
// The default run is a CI-sized subset. SAMSA_SYSTESTS=full runs the whole matrix
// (failure modes x leader/controller x idempotence x compression, transactions with
// clean and hard broker and client bounces, ordered and unordered, with and without
// group metadata, both group protocols; consumer rolling bounces, static membership and
// broker failures for both group protocols). SAMSA_SYSTESTS_TARGET=kafka runs the same
// scenarios against Kafka 4.4 (kafka-ref.sh, three nodes) instead of samsa, and =both
// against both: that is how the scenarios themselves were checked.

package compattests

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/systests"
)

// systestsFull reports whether the whole matrix runs (SAMSA_SYSTESTS=full).
func systestsFull() bool { return os.Getenv("SAMSA_SYSTESTS") == "full" }

// systestTargets are the clusters the scenarios run against.
func systestTargets() []string {
	switch os.Getenv("SAMSA_SYSTESTS_TARGET") {
	case "kafka":
		return []string{"kafka"}
	case "both":
		return []string{"samsa", "kafka"}
	default:
		return []string{"samsa"}
	}
}

// startSystestCluster starts three nodes of target with settings.
func startSystestCluster(t *testing.T, target string, settings map[string]string) systests.Cluster {
	t.Helper()
	return startSystestNodes(t, target, 3, settings)
}

// startSystestNodes starts n nodes of target with settings.
func startSystestNodes(t *testing.T, target string, n int, settings map[string]string) systests.Cluster {
	t.Helper()
	if target == "kafka" {
		return systests.StartKafka(t, n, settings)
	}
	return systests.StartSamsa(t, n, settings)
}

// startSecureSystestCluster starts three nodes of target whose clients and
// replication use a listener secured by sec.
func startSecureSystestCluster(t *testing.T, target string, sec systests.Security) (systests.Cluster, *systests.Secured) {
	t.Helper()
	if target == "kafka" {
		return systests.StartKafkaSecure(t, 3, nil, sec)
	}
	return systests.StartSamsaSecure(t, 3, nil, sec)
}

// eachTarget runs f as a subtest per target.
func eachTarget(t *testing.T, f func(t *testing.T, target string)) {
	for _, target := range systestTargets() {
		t.Run(target, func(t *testing.T) { f(t, target) })
	}
}

// requireJava skips (or fails under SAMSA_REQUIRE_CLIENTS=1) without java.
func requireJava(t *testing.T) { lookTool(t, "java") }

// --- replication_test.py -------------------------------------------------------------

// replicationCase is one point of test_replication_with_broker_failure's matrix.
type replicationCase struct {
	failure     string // clean_shutdown, hard_shutdown, clean_bounce, hard_bounce
	broker      string // leader (of partition 0) or controller (the quorum leader)
	idempotent  bool
	compression string
	// security is the client and inter-broker listener (zero: PLAINTEXT).
	security systests.Security
}

func (c replicationCase) name() string {
	n := c.failure + "/" + c.broker
	if c.idempotent {
		n += "/idempotent"
	}
	if c.compression != "" {
		n += "/" + c.compression
	}
	if c.security.Protocol != "" {
		n += "/" + c.security.Name()
	}
	return n
}

// TestSystestReplication is replication_test.py: a topic of 3 partitions, RF 3 and
// min.insync.replicas=2; a VerifiableProducer (acks=-1, 1000 messages/s) and a
// VerifiableConsumer run while the leader of partition 0 or the active controller is
// shut down (SIGTERM), killed (SIGKILL), or bounced cleanly or hard, chasing the leader;
// then every acknowledged message must have been consumed, and with idempotence none
// twice.
func TestSystestReplication(t *testing.T) {
	requireJava(t)
	t.Parallel()
	cases := []replicationCase{
		{failure: "hard_bounce", broker: "leader", idempotent: true},
		{failure: "clean_shutdown", broker: "controller", compression: "gzip"},
	}
	// The SASL_SSL hard bounce failed once in 13 runs in session 31 (a
	// consumer's position on one partition stopped short of the acks, no
	// client or broker error). Session 32 found the cause: samsa's KIP-951
	// leader endpoints named the PLAINTEXT listener to SSL and SASL_SSL
	// consumers (fixed; TestSystestLeaderMoveSecure); 97 runs after the fix
	// had no stall, and it is back in the CI subset.
	cases = append(cases, replicationCase{failure: "hard_bounce", broker: "leader", security: saslSCRAM256})
	if systestsFull() {
		cases = nil
		for _, f := range []string{"clean_shutdown", "hard_shutdown", "clean_bounce", "hard_bounce"} {
			cases = append(cases,
				replicationCase{failure: f, broker: "leader", idempotent: true},
				replicationCase{failure: f, broker: "leader"},
				replicationCase{failure: f, broker: "controller"},
				replicationCase{failure: f, broker: "leader", compression: "gzip"})
		}
		for _, comp := range []string{"snappy", "lz4", "zstd"} {
			cases = append(cases, replicationCase{failure: "hard_bounce", broker: "leader", idempotent: true, compression: comp})
		}
		// The security_protocol axis: SASL_SSL for each failure mode of the
		// leader and the controller (GSSAPI, the Python test's default
		// mechanism, is SCRAM-SHA-512 here: samsa has no Kerberos), PLAIN
		// for the clients and between the brokers, SCRAM-SHA-256 clients with
		// SCRAM-SHA-512 between the brokers; and SSL (mutual TLS) with each
		// compression type.
		scram512 := systests.Security{Protocol: "SASL_SSL", ClientMechanism: "SCRAM-SHA-512", InterBrokerMechanism: "SCRAM-SHA-512"}
		for _, f := range []string{"clean_shutdown", "hard_shutdown", "clean_bounce", "hard_bounce"} {
			cases = append(cases,
				replicationCase{failure: f, broker: "leader", security: scram512},
				replicationCase{failure: f, broker: "controller", security: scram512})
		}
		cases = append(cases,
			replicationCase{failure: "hard_bounce", broker: "leader", security: systests.Security{Protocol: "SASL_SSL", ClientMechanism: "PLAIN", InterBrokerMechanism: "PLAIN"}},
			replicationCase{failure: "hard_bounce", broker: "leader", security: saslSCRAM256})
		for _, comp := range []string{"gzip", "snappy", "lz4", "zstd"} {
			cases = append(cases, replicationCase{failure: "hard_bounce", broker: "leader", compression: comp, security: systests.Security{Protocol: "SSL"}})
		}
	}
	eachTarget(t, func(t *testing.T, target string) {
		for _, rc := range cases {
			t.Run(rc.name(), func(t *testing.T) { runReplication(t, target, rc) })
		}
	})
}

// saslSCRAM256 is the SASL_SSL case the Python test parametrizes on its own:
// SCRAM-SHA-256 clients, SCRAM-SHA-512 between the brokers.
var saslSCRAM256 = systests.Security{Protocol: "SASL_SSL", ClientMechanism: "SCRAM-SHA-256", InterBrokerMechanism: "SCRAM-SHA-512"}

// bounces is how many times the bounce failure modes chase the node (5 in Kafka's
// tests; 2 in the CI subset).
func bounces() int {
	if systestsFull() {
		return 5
	}
	return 2
}

func runReplication(t *testing.T, target string, rc replicationCase) {
	var c systests.Cluster
	var tools *systests.Tools
	var clientBootstrap string // the listener the clients are given
	if rc.security.Protocol != "" {
		var sec *systests.Secured
		c, sec = startSecureSystestCluster(t, target, rc.security)
		tools = systests.NewTools(t, c.Bootstrap()).WithClientProps(sec.Bootstrap, sec.ClientProps)
		clientBootstrap = sec.Bootstrap
	} else {
		c = startSystestCluster(t, target, nil)
		tools = systests.NewTools(t, c.Bootstrap())
		clientBootstrap = c.Bootstrap()
	}
	const topic = "test_topic"
	systests.CreateTopic(t, c, topic, 3, 3, map[string]string{"min.insync.replicas": "2"})
	prod := tools.StartProducer(t, "producer", systests.ProducerOptions{Topic: topic, Throughput: 1000,
		Idempotent: rc.idempotent, Compression: rc.compression})
	loggers := stallLoggers
	if os.Getenv("SAMSA_SYSTESTS_QUIET_CONSUMER") != "" {
		loggers = nil // the consumer's WARN lines only
	}
	cons := tools.StartConsumers(t, "consumer", systests.ConsumerOptions{Topic: topic, Group: "test_group", Verbose: true,
		Loggers: loggers})

	// await_startup
	if !systests.Poll(180*time.Second, func() bool { return cons.TotalConsumed() >= 5 }) {
		t.Fatalf("the consumer did not receive 5 records within 180 s (producer acked %d, consumer joined %d)", prod.NumAcked(), cons.Joined())
	}
	target1 := func() int {
		if rc.broker == "controller" {
			return systests.ActiveController(t, c, 60*time.Second)
		}
		return systests.Leader(t, c, topic, 0, 60*time.Second)
	}
	start := time.Now()
	switch rc.failure {
	case "clean_shutdown":
		n := target1()
		c.Stop(t, n)
		t.Logf("shut down node %d (%s)", n+1, rc.broker)
	case "hard_shutdown":
		n := target1()
		c.Kill(t, n)
		t.Logf("killed node %d (%s)", n+1, rc.broker)
	case "clean_bounce", "hard_bounce":
		for i := range bounces() {
			n := target1()
			if rc.failure == "clean_bounce" {
				c.Stop(t, n)
			} else {
				c.Kill(t, n)
				// The system test waits out the broker session (18 s + 5 s);
				// here: until the controller fenced the node.
				systests.WaitFenced(t, c, n, 60*time.Second)
			}
			c.Start(t, n)
			t.Logf("bounce %d: node %d (%s) restarted at %v", i+1, n+1, rc.broker, time.Since(start).Round(time.Millisecond))
		}
	}

	// run_validation
	const minRecords = 5000
	if !systests.Poll(120*time.Second, func() bool { return prod.NumAcked() > minRecords }) {
		na, last := prod.NotAcked()
		t.Fatalf("producer acked %d records (%d failed, last: %s), want > %d", prod.NumAcked(), len(na), last, minRecords)
	}
	stopAndDrain(t, c, topic, prod, cons)
	checkConsumerAnomalies(t, cons)
	if loggers != nil {
		// Every node the consumer used must be on its own listener: a
		// KIP-951 leader endpoint of another listener made it fetch
		// through a second Node of the same id (session 32).
		for i := range cons.Members() {
			log := cons.Stderr(i)
			if bad := systests.ForeignNodes(log, strings.Split(clientBootstrap, ",")); len(bad) > 0 {
				t.Errorf("consumer %d was given nodes off its listener %s: %v", i+1, clientBootstrap, bad)
			}
			t.Logf("consumer %d took %d leader changes from fetch answers (KIP-951)", i+1,
				strings.Count(log, "as the leader was updated, position will be validated"))
		}
	}
	acked, consumed := prod.Acked(), cons.ConsumedValues()
	na, lastErr := prod.NotAcked()
	t.Logf("%s: %d acked, %d not acked (%s), %d consumed, in %v", c.Name(), len(acked), len(na), lastErr, len(consumed),
		time.Since(start).Round(time.Second))
	ok, msg := systests.ValidateDelivery(acked, consumed, rc.idempotent)
	if msg != "" {
		t.Log(msg)
	}
	if !ok {
		t.Errorf("delivery invalid: %s", msg)
	}
}

// stallLoggers are the consumer's loggers of the replication scenario: where
// it fetches each partition from and at which position (AbstractFetch), what
// each fetch answered and its errors (FetchCollector, FetchSessionHandler),
// its position validations after a leader change (KIP-320: OffsetFetcher,
// OffsetsForLeaderEpochUtils, SubscriptionState), the leaders and epochs it
// learns (Metadata), and its disconnections (NetworkClient): what a
// consumer that stops short of the acks after a bounce did (session 32).
// SAMSA_SYSTESTS_QUIET_CONSUMER=1 leaves them out (WARN lines only).
var stallLoggers = map[string]string{
	"org.apache.kafka.clients.consumer.internals.AbstractFetch":              "DEBUG",
	"org.apache.kafka.clients.consumer.internals.FetchCollector":             "DEBUG",
	"org.apache.kafka.clients.FetchSessionHandler":                           "DEBUG",
	"org.apache.kafka.clients.consumer.internals.OffsetFetcher":              "DEBUG",
	"org.apache.kafka.clients.consumer.internals.OffsetsForLeaderEpochUtils": "DEBUG",
	"org.apache.kafka.clients.consumer.internals.SubscriptionState":          "DEBUG",
	"org.apache.kafka.clients.Metadata":                                      "DEBUG",
	"org.apache.kafka.clients.NetworkClient":                                 "INFO",
	"org.apache.kafka.clients.consumer.internals.ConsumerCoordinator":        "INFO",
}

// stopAndDrain stops the producer, waits until the consumer committed past
// every partition's last acked offset (run_validation's wait for the
// consumer to catch up), and stops the consumer. When it does not, the
// failure says what each node answers for the partition behind and what
// the consumer last logged about it.
func stopAndDrain(t *testing.T, c systests.Cluster, topic string, prod *systests.Producer, cons *systests.Consumers) {
	t.Helper()
	prod.Stop(t)
	last := prod.LastAckedOffsets()
	var behind string
	var stuck systests.TopicPartition
	var stuckAt int64
	if !systests.Poll(120*time.Second, func() bool {
		for tp, off := range last {
			// The committed offset is the next one to read: past the last ack.
			if com := cons.LastCommit(tp); com <= off {
				behind = fmt.Sprintf("%v committed %d, position %d, last acked offset %d", tp, com, cons.Position(tp), off)
				stuck, stuckAt = tp, max(com, cons.Position(tp))
				return false
			}
		}
		return true
	}) {
		var log strings.Builder
		log.WriteString("each partition (committed, position, last acked offset):")
		for _, tp := range slices.SortedFunc(maps.Keys(last), func(a, b systests.TopicPartition) int { return cmp.Compare(a.Partition, b.Partition) }) {
			fmt.Fprintf(&log, " %v %d %d %d;", tp, cons.LastCommit(tp), cons.Position(tp), last[tp])
		}
		fmt.Fprintf(&log, " %d records consumed in all", cons.TotalConsumed())
		for i := range cons.Members() {
			fmt.Fprintf(&log, "\nconsumer %d's last lines about %v:\n%s", i+1, stuck,
				systests.LinesAbout(cons.Stderr(i), 40, stuck.String()))
		}
		t.Fatalf("the consumer did not consume up to the acked offsets: %s (assigned %v; partitions: %s)\n%s%s",
			behind, cons.Assignment(), systests.PartitionStates(c, topic),
			systests.DiagnosePartition(c, stuck.Topic, stuck.Partition, cons.Group(), stuckAt), log.String())
	}
	cons.StopAll(t)
}

func checkConsumerAnomalies(t *testing.T, cons *systests.Consumers) {
	t.Helper()
	for _, a := range cons.Anomalies() {
		t.Errorf("consumer: %s", a)
	}
}

// --- transactions_test.py ------------------------------------------------------------

type txnCase struct {
	failure          string // clean_bounce, hard_bounce
	target           string // brokers, clients
	checkOrder       bool
	useGroupMetadata bool
	protocol         string // of the verifying consumers: classic, consumer
	// groupMode is group_mode_transactions_test.py: 9 input and output
	// partitions, three copiers subscribing to the input topic in one group.
	groupMode bool
}

func (c txnCase) name() string {
	if c.groupMode {
		return fmt.Sprintf("group_mode/%s/%s/%s", c.failure, c.target, c.protocol)
	}
	return fmt.Sprintf("%s/%s/order=%v/groupmeta=%v/%s", c.failure, c.target, c.checkOrder, c.useGroupMetadata, c.protocol)
}

// TestSystestTransactions is transactions_test.py: an input topic seeded by an
// idempotent VerifiableProducer is copied to an output topic by one
// TransactionalMessageCopier per input partition (transactions of 750 records, random
// aborts, transaction timeout 40 s), while the brokers are bounced one by one (waiting
// for no under-replicated partitions after each) or the copiers are bounced at 20 %
// progress, cleanly or hard. A read_committed VerifiableConsumer reads the output during
// the copy and another after it: each must see every input value exactly once (and, with
// one partition each, in the input's order).
func TestSystestTransactions(t *testing.T) {
	requireJava(t)
	t.Parallel()
	cases := []txnCase{
		{failure: "hard_bounce", target: "brokers", useGroupMetadata: true, protocol: "classic"},
		{failure: "clean_bounce", target: "clients", checkOrder: true, protocol: "consumer"},
	}
	if systestsFull() {
		cases = nil
		for _, f := range []string{"hard_bounce", "clean_bounce"} {
			for _, tg := range []string{"brokers", "clients"} {
				for _, order := range []bool{true, false} {
					for _, gm := range []bool{true, false} {
						for _, proto := range []string{"classic", "consumer"} {
							cases = append(cases, txnCase{failure: f, target: tg, checkOrder: order, useGroupMetadata: gm, protocol: proto})
						}
					}
				}
				cases = append(cases, txnCase{failure: f, target: tg, useGroupMetadata: true, protocol: "classic", groupMode: true})
			}
		}
	}
	eachTarget(t, func(t *testing.T, target string) {
		for _, tc := range cases {
			t.Run(tc.name(), func(t *testing.T) { runTransactions(t, target, tc) })
		}
	})
}

func runTransactions(t *testing.T, target string, tc txnCase) {
	c := startSystestCluster(t, target, nil)
	const input, output = "input-topic", "output-topic"
	inParts, outParts, seed := 2, 3, 30000
	if systestsFull() {
		seed = 100000
	}
	copierCount, keys := 0, 0
	if tc.checkOrder {
		inParts, outParts, seed = 1, 1, seed/3
	}
	if tc.groupMode {
		inParts, outParts, copierCount, keys = 9, 9, 3, 9
	}
	minISR := map[string]string{"min.insync.replicas": "2"}
	systests.CreateTopic(t, c, input, inParts, 3, minISR)
	systests.CreateTopic(t, c, output, outParts, 3, minISR)
	tools := systests.NewTools(t, c.Bootstrap())
	start := time.Now()

	// seed_messages
	seeder := tools.StartProducer(t, "seed-producer", systests.ProducerOptions{Topic: input, MaxMessages: seed,
		Throughput: 100000, Idempotent: true, RepeatingKeys: keys})
	seeder.Wait(t)
	inputValues := seeder.Acked()
	if len(inputValues) != seed {
		na, last := seeder.NotAcked()
		t.Fatalf("seeding: %d of %d acked (%d failed, last %s)", len(inputValues), seed, len(na), last)
	}
	t.Logf("seeded %d messages in %v", seed, time.Since(start).Round(time.Millisecond))

	var copiers []*systests.Copier
	if copierCount == 0 {
		copierCount = inParts // one per input partition
	}
	for i := range copierCount {
		o := systests.CopierOptions{TransactionalID: fmt.Sprintf("copier-%d", i), Group: "transactions-test-consumer-group",
			InputTopic: input, InputPartition: i, OutputTopic: output, UseGroupMetadata: tc.useGroupMetadata}
		if tc.groupMode {
			o.GroupMode, o.InputPartition = true, 0
		}
		copiers = append(copiers, tools.StartCopier(t, o.TransactionalID, o))
	}
	readCommitted := func(name, group string) *systests.Consumers {
		return tools.StartConsumers(t, name, systests.ConsumerOptions{Topic: output, Group: group, Protocol: tc.protocol,
			Verbose: true, ReadCommitted: true, LooseOffsets: true})
	}
	concurrent := readCommitted("concurrent-consumer", "concurrent_consumer")
	// The system test waits here until the concurrent consumer has read something;
	// on a loaded machine a JVM takes long enough to start that the copy was nearly
	// done by then, so the bounces start once the copiers have started copying.
	if !systests.Poll(180*time.Second, func() bool { return copiers[0].Progress() > 0 || copiers[0].Done() }) {
		t.Fatalf("copier-0 did not start copying within 180 s")
	}

	clean := tc.failure == "clean_bounce"
	switch tc.target {
	case "brokers":
		for n := range 3 {
			if clean {
				c.Stop(t, n)
			} else {
				c.Kill(t, n)
				systests.WaitFenced(t, c, n, 60*time.Second)
			}
			c.Start(t, n)
			systests.WaitNoUnderReplicated(t, c, 120*time.Second)
			t.Logf("node %d bounced (%s) at %v; copier-0 at %.0f%%", n+1, tc.failure, time.Since(start).Round(time.Millisecond), copiers[0].Progress())
		}
	case "clients":
		for round := range 3 {
			for _, cp := range copiers {
				if !systests.Poll(120*time.Second, func() bool { return cp.Done() || cp.Progress() >= 20 }) {
					t.Fatalf("round %d: a copier made no 20%% progress within 120 s (%.1f%%)", round, cp.Progress())
				}
				cp.Restart(t, clean)
			}
		}
	}
	for i, cp := range copiers {
		if !systests.Poll(300*time.Second, cp.Done) {
			t.Fatalf("copier-%d did not finish copying within 300 s (progress %.1f%%)", i, cp.Progress())
		}
	}
	t.Logf("copy finished at %v", time.Since(start).Round(time.Millisecond))
	if !systests.Poll(180*time.Second, func() bool { return len(concurrent.ConsumedValues()) > 0 }) {
		t.Fatalf("the concurrent read_committed consumer read nothing within 180 s")
	}

	drain := func(cons *systests.Consumers) []int64 {
		if !systests.Poll(180*time.Second, func() bool { return len(cons.ConsumedValues()) >= seed }) {
			t.Errorf("read_committed consumer read %d of %d values within 180 s", len(cons.ConsumedValues()), seed)
		}
		cons.StopAll(t)
		return cons.ConsumedValues()
	}
	concurrentValues := drain(concurrent)
	outputValues := drain(readCommitted("verifying-consumer", "verifying_consumer"))
	if tc.checkOrder && !slices.IsSorted(inputValues) {
		t.Errorf("the seed messages themselves were not in order")
	}
	if ok, msg := systests.ExactlyOnce(inputValues, outputValues, tc.checkOrder); !ok {
		t.Errorf("output read after the copy (%d values): %s", len(outputValues), msg)
	}
	if ok, msg := systests.ExactlyOnce(inputValues, concurrentValues, tc.checkOrder); !ok {
		t.Errorf("output read during the copy (%d values): %s", len(concurrentValues), msg)
	}
	t.Logf("%s: %d input values copied exactly once in %v", c.Name(), seed, time.Since(start).Round(time.Second))
}

// --- client/consumer_test.py ---------------------------------------------------------

// TestSystestConsumer is consumer_test.py's OffsetValidationTest: one partition,
// a VerifiableProducer (500 messages/s) and a group of three VerifiableConsumers
// committing synchronously after each poll.
//   - broker_failure: a node (node 1, as the system test's nodes[0]) is shut down or
//     killed while they consume: no rebalance follows, the group goes on consuming, and
//     at the end the consumed total equals the position (no duplicates) and the last
//     commit equals the position.
//   - rolling_bounce: each consumer in turn is stopped cleanly and started again,
//     waiting for the group to take it back; the total equals the position.
//   - static_bounce (classic, eager RangeAssignor): with static membership, bouncing
//     every member but the first revokes nothing from the first (no rebalance); without
//     it, it does.
func TestSystestConsumer(t *testing.T) {
	requireJava(t)
	t.Parallel()
	type cc struct {
		scenario, protocol string
		clean, static      bool
	}
	cases := []cc{
		{scenario: "broker_failure", protocol: "consumer", clean: false},
		{scenario: "rolling_bounce", protocol: "classic", clean: true},
		{scenario: "static_bounce", protocol: "classic", clean: true, static: true},
	}
	if systestsFull() {
		cases = nil
		for _, proto := range []string{"classic", "consumer"} {
			for _, clean := range []bool{true, false} {
				cases = append(cases, cc{scenario: "broker_failure", protocol: proto, clean: clean})
			}
			cases = append(cases, cc{scenario: "rolling_bounce", protocol: proto, clean: true},
				cc{scenario: "rolling_bounce", protocol: proto, clean: true, static: true})
		}
		cases = append(cases, cc{scenario: "static_bounce", protocol: "classic", clean: true, static: true},
			cc{scenario: "static_bounce", protocol: "classic", clean: true})
	}
	eachTarget(t, func(t *testing.T, target string) {
		for _, k := range cases {
			name := fmt.Sprintf("%s/%s/clean=%v/static=%v", k.scenario, k.protocol, k.clean, k.static)
			t.Run(name, func(t *testing.T) { runConsumerScenario(t, target, k.scenario, k.protocol, k.clean, k.static) })
		}
	})
}

func runConsumerScenario(t *testing.T, target, scenario, protocol string, clean, static bool) {
	c := startSystestCluster(t, target, nil)
	const topic = "test_topic"
	tp := systests.TopicPartition{Topic: topic, Partition: 0}
	systests.CreateTopic(t, c, topic, 1, 3, nil)
	tools := systests.NewTools(t, c.Bootstrap())
	prod := tools.StartProducer(t, "producer", systests.ProducerOptions{Topic: topic, Throughput: 500, Idempotent: true})
	if !systests.Poll(60*time.Second, func() bool { return prod.NumAcked() >= 1000 }) {
		t.Fatalf("producer acked %d of 1000 records within 60 s", prod.NumAcked())
	}
	session := 10000
	if scenario == "static_bounce" {
		session = 60000
	}
	opts := systests.ConsumerOptions{Topic: topic, Group: "test_group_id", Members: 3, Protocol: protocol,
		Static: static, SessionTimeoutMS: session,
		// The membership managers' INFO lines (fencing, rejoining, the
		// coordinator found) explain an unexpected rebalance.
		Loggers: map[string]string{
			"org.apache.kafka.clients.consumer.internals.ConsumerMembershipManager":       "INFO",
			"org.apache.kafka.clients.consumer.internals.AbstractMembershipManager":       "INFO",
			"org.apache.kafka.clients.consumer.internals.CoordinatorRequestManager":       "INFO",
			"org.apache.kafka.clients.consumer.internals.ConsumerHeartbeatRequestManager": "INFO",
		}}
	if protocol == "consumer" {
		opts.Assignor = "range"
	}
	cons := tools.StartConsumers(t, "consumer", opts)
	// The system test allows 2 x the session timeout for the group to form; the
	// consumption timeout is max(30 s + 5 s, 2 x session).
	join := 2 * time.Duration(max(session, 60000)) * time.Millisecond
	consumption := time.Duration(max(35000, 2*session)) * time.Millisecond
	awaitAll := func(what string) {
		t.Helper()
		if !systests.Poll(join, func() bool { return cons.Joined() == cons.Members() }) {
			t.Fatalf("%s: %d of %d consumers joined within %v", what, cons.Joined(), cons.Members(), join)
		}
	}
	awaitConsumed := func(what string, n int64) {
		t.Helper()
		from := cons.TotalConsumed()
		if !systests.Poll(consumption, func() bool { return cons.TotalConsumed() >= from+n }) {
			t.Fatalf("%s: consumed %d of %d more records within %v", what, cons.TotalConsumed()-from, n, consumption)
		}
	}
	awaitAll("start")
	if !systests.Poll(60*time.Second, func() bool { a := cons.Assignment(); return len(a) == 1 && a[0] == tp }) {
		t.Fatalf("the group did not settle on one owner of %v: %v", tp, cons.Assignment())
	}
	if protocol == "consumer" {
		// The members join one by one and the range assignor is not sticky:
		// the partition may move once more after the last join (on Kafka as
		// on samsa), which the rebalance count below must not take for one
		// caused by the broker failure.
		systests.WaitGroupConverged(t, c, opts.Group, cons.Members(), 60*time.Second)
		if !systests.Poll(60*time.Second, func() bool { a := cons.Assignment(); return len(a) == 1 && a[0] == tp }) {
			t.Fatalf("the converged group has not one owner of %v: %v", tp, cons.Assignment())
		}
	}

	switch scenario {
	case "broker_failure":
		rebalances := cons.NumRebalances()
		if clean {
			c.Stop(t, 0)
		} else {
			c.Kill(t, 0)
		}
		awaitConsumed("after the broker failure", 1000)
		if n := cons.NumRebalances(); n != rebalances {
			t.Errorf("the broker failure caused %d rebalances (%s)", n-rebalances, cons.Rebalances())
			for i := range cons.Members() {
				t.Logf("consumer %d's membership log:\n%s", i+1, grepLines(cons.Stderr(i), " INFO "))
			}
		}
	case "rolling_bounce", "static_bounce":
		keep := 0
		if scenario == "static_bounce" {
			keep = 1
		}
		revokes := cons.RevokesOfFirst(1)
		rounds := 1 // CI: each member bounced once
		if systestsFull() {
			rounds = 5
		}
		for range rounds {
			for i := keep; i < cons.Members(); i++ {
				cons.StopMember(t, i, clean)
				if !systests.Poll(time.Duration(session)*time.Millisecond+5*time.Second, func() bool { return cons.Dead() == 1 }) {
					t.Fatalf("consumer %d did not shut down", i+1)
				}
				cons.StartMember(t, i)
				awaitAll(fmt.Sprintf("consumer %d restarted", i+1))
				awaitConsumed(fmt.Sprintf("consumer %d restarted", i+1), 1)
			}
		}
		if scenario == "static_bounce" {
			after := cons.RevokesOfFirst(1) - revokes
			if static && after != 0 {
				t.Errorf("bouncing static members revoked the partitions of the member kept alive %d times", after)
			}
			if !static && after == 0 {
				t.Errorf("bouncing dynamic members with eager assignment revoked nothing from the member kept alive")
			}
		}
	}
	cons.StopAll(t)
	prod.Stop(t)
	checkConsumerAnomalies(t, cons)
	pos, total := cons.Position(tp), cons.TotalConsumed()
	if pos != total {
		t.Errorf("total consumed records %d did not match the consumed position %d", total, pos)
	}
	if scenario == "broker_failure" {
		if com := cons.LastCommit(tp); com != pos {
			t.Errorf("last committed offset %d did not match the last consumed position %d", com, pos)
		}
	}
	t.Logf("%s: %d records consumed, %d rebalances", c.Name(), total, cons.NumRebalances())
}

// --- reassign_partitions_test.py -----------------------------------------------------

// TestSystestReassignPartitions is reassign_partitions_test.py: four nodes, a topic of 20
// partitions with RF 3 and min.insync.replicas=3, a VerifiableProducer and a
// VerifiableConsumer; once every partition has data, the partitions' replica lists are
// jumbled among them (AlterPartitionReassignments, what kafka-reassign-partitions
// --execute sends), with nodes 1 and 3 bounced cleanly during the reassignment or not;
// the reassignment must complete and every acked value be consumed.
func TestSystestReassignPartitions(t *testing.T) {
	requireJava(t)
	t.Parallel()
	bounce := []bool{true}
	if systestsFull() {
		bounce = []bool{true, false}
	}
	eachTarget(t, func(t *testing.T, target string) {
		for _, b := range bounce {
			t.Run(fmt.Sprintf("bounce=%v", b), func(t *testing.T) { runReassign(t, target, b) })
		}
	})
}

func runReassign(t *testing.T, target string, bounceBrokers bool) {
	c := startSystestNodes(t, target, 4, nil)
	const topic, partitions = "test_topic", 20
	systests.CreateTopic(t, c, topic, partitions, 3, map[string]string{"min.insync.replicas": "3"})
	tools := systests.NewTools(t, c.Bootstrap())
	prod := tools.StartProducer(t, "producer", systests.ProducerOptions{Topic: topic, Throughput: 1000})
	cons := tools.StartConsumers(t, "consumer", systests.ConsumerOptions{Topic: topic, Group: "test_group", Verbose: true})
	if !systests.Poll(180*time.Second, func() bool { return len(prod.LastAckedOffsets()) == partitions && cons.TotalConsumed() > 0 }) {
		t.Fatalf("producer acked records of %d of %d partitions, consumer read %d, within 180 s",
			len(prod.LastAckedOffsets()), partitions, cons.TotalConsumed())
	}
	m, err := systests.Metadata(t.Context(), c, topic)
	if err != nil || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != partitions {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	before := map[int32][]int32{}
	for _, p := range m.Topics[0].Partitions {
		before[p.Partition] = p.Replicas
	}
	// Jumble: partition i takes the replica list partition perm[i] had.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	perm := rng.Perm(partitions)
	target2 := map[int32][]int32{}
	for i := range partitions {
		target2[int32(i)] = before[int32(perm[i])]
	}
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = 60000
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	for p, r := range target2 {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p, r
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := req.RequestWith(t.Context(), cl)
	if err != nil {
		t.Fatalf("AlterPartitionReassignments: %v", err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("AlterPartitionReassignments: error %d", resp.ErrorCode)
	}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("AlterPartitionReassignments %s-%d: error %d", tp.Topic, p.Partition, p.ErrorCode)
			}
		}
	}
	start := time.Now()
	if bounceBrokers {
		for _, n := range []int{0, 2} {
			c.Stop(t, n)
			c.Start(t, n)
		}
	}
	// verify_reassign_partitions: no reassignment in progress and every partition
	// has its target replicas.
	var last string
	if !systests.Poll(180*time.Second, func() bool {
		m, err := systests.Metadata(t.Context(), c, topic)
		if err != nil || len(m.Topics) != 1 {
			last = fmt.Sprint(err)
			return false
		}
		for _, p := range m.Topics[0].Partitions {
			if !slices.Equal(p.Replicas, target2[p.Partition]) {
				last = fmt.Sprintf("partition %d: replicas %v, target %v", p.Partition, p.Replicas, target2[p.Partition])
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the reassignment did not complete within 180 s: %s", last)
	}
	t.Logf("%s: reassignment of %d partitions complete in %v", c.Name(), partitions, time.Since(start).Round(time.Millisecond))
	if !systests.Poll(60*time.Second, func() bool { return prod.NumAcked() > 5000 }) {
		t.Fatalf("producer acked %d records, want > 5000", prod.NumAcked())
	}
	stopAndDrain(t, c, topic, prod, cons)
	checkConsumerAnomalies(t, cons)
	acked, consumed := prod.Acked(), cons.ConsumedValues()
	ok, msg := systests.ValidateDelivery(acked, consumed, false)
	if msg != "" {
		t.Log(msg)
	}
	if !ok {
		t.Errorf("delivery invalid: %s", msg)
	}
	t.Logf("%s: %d acked, %d consumed", c.Name(), len(acked), len(consumed))
}

// --- fetch_from_follower_test.py -----------------------------------------------------

// TestSystestFetchFromFollower is fetch_from_follower_test.py (KIP-392): three nodes in
// racks rack-a, rack-b and rack-c with replica.selector.class=RackAwareReplicaSelector,
// a topic of one partition (RF 3, min.insync.replicas=1), a VerifiableProducer at
// 1000/s and a consumer with client.rack set to the rack of a follower and
// metadata.max.age.ms=3000. The consumer must be told that follower is its preferred
// read replica (the system test reads the consumer's preferred-read-replica JMX
// metric; here the consumer's FetchCollector DEBUG line "Updating preferred read
// replica for partition test_topic-0 to N"), go on consuming, and in the end have
// consumed every acked value.
func TestSystestFetchFromFollower(t *testing.T) {
	requireJava(t)
	t.Parallel()
	protocols := []string{"classic"}
	if systestsFull() {
		protocols = []string{"classic", "consumer"}
	}
	eachTarget(t, func(t *testing.T, target string) {
		for _, proto := range protocols {
			t.Run(proto, func(t *testing.T) { runFetchFromFollower(t, target, proto) })
		}
	})
}

func runFetchFromFollower(t *testing.T, target, protocol string) {
	racks := func(id int) map[string]string {
		return map[string]string{"broker.rack": fmt.Sprintf("rack-%c", 'a'+id-1)}
	}
	settings := map[string]string{"replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector"}
	var c systests.Cluster
	if target == "kafka" {
		c = systests.StartKafkaNodes(t, 3, settings, racks)
	} else {
		c = systests.StartSamsaNodes(t, 3, settings, racks)
	}
	const topic = "test_topic"
	systests.CreateTopic(t, c, topic, 1, 3, map[string]string{"min.insync.replicas": "1"})
	leader := systests.Leader(t, c, topic, 0, 60*time.Second) + 1 // node id
	// As the system test: node 2 (rack-b) unless it leads, then node 1 (rack-a).
	follower, rack := 2, "rack-b"
	if leader == 2 {
		follower, rack = 1, "rack-a"
	}
	tools := systests.NewTools(t, c.Bootstrap())
	prod := tools.StartProducer(t, "producer", systests.ProducerOptions{Topic: topic, Throughput: 1000, Idempotent: true})
	cons := tools.StartConsumers(t, "consumer", systests.ConsumerOptions{Topic: topic, Group: "test-consumer-group-1",
		Protocol: protocol, Verbose: true, Extra: []string{"client.rack=" + rack, "metadata.max.age.ms=3000"},
		Loggers: map[string]string{"org.apache.kafka.clients.consumer.internals.FetchCollector": "DEBUG"}})
	if !systests.Poll(180*time.Second, func() bool { return cons.TotalConsumed() >= 100 }) {
		t.Fatalf("the consumer read %d records within 180 s (producer acked %d)", cons.TotalConsumed(), prod.NumAcked())
	}
	want := fmt.Sprintf("Updating preferred read replica for partition %s-0 to %d,", topic, follower)
	if !systests.Poll(60*time.Second, func() bool { return strings.Contains(cons.Stderr(0), want) }) {
		t.Fatalf("the consumer in %s (leader %d) was not given follower %d as its preferred read replica within 60 s; its preferred-replica lines:\n%s",
			rack, leader, follower, grepLines(cons.Stderr(0), "preferred read replica"))
	}
	// It goes on consuming once it fetches from the follower.
	from := cons.TotalConsumed()
	if !systests.Poll(120*time.Second, func() bool { return cons.TotalConsumed() >= from+2000 }) {
		t.Fatalf("after switching to follower %d the consumer read %d more records within 120 s", follower, cons.TotalConsumed()-from)
	}
	stopAndDrain(t, c, topic, prod, cons)
	checkConsumerAnomalies(t, cons)
	acked, consumed := prod.Acked(), cons.ConsumedValues()
	if ok, msg := systests.ValidateDelivery(acked, consumed, true); !ok {
		t.Errorf("delivery invalid: %s", msg)
	}
	if n := strings.Count(cons.Stderr(0), "Unset the preferred read replica"); n > 0 {
		t.Logf("the consumer unset its preferred read replica %d times", n)
	}
	t.Logf("%s: leader %d, consumer in %s read from follower %d; %d acked, %d consumed", c.Name(), leader, rack, follower, len(acked), len(consumed))
}

// --- client/truncation_test.py -------------------------------------------------------

// TestSystestTruncation is truncation_test.py's test_offset_truncate (KIP-320): a topic
// of one partition with RF 2, a VerifiableProducer at 10/s and a VerifiableConsumer
// reading it. The first ISR member is stopped, the consumer reads 10 more records from
// the second, which is then stopped too (the partition has no leader); the first comes
// back (out of sync: not electable), unclean.leader.election.enable is set on the
// topic, so it is elected and the records only the second had are gone; the second
// comes back and truncates. The consumer must detect the truncation (its position
// comes back to where it was, it reads no value twice), and a new group reads fewer
// records than the first consumer did. Five nodes, so that the metadata quorum
// survives two stopped nodes (the system test's controller is a node of its own).
func TestSystestTruncation(t *testing.T) {
	requireJava(t)
	t.Parallel()
	if !systestsFull() {
		t.Skip("five nodes: SAMSA_SYSTESTS=full")
	}
	eachTarget(t, func(t *testing.T, target string) { runTruncation(t, target) })
}

func runTruncation(t *testing.T, target string) {
	// Kafka 4.4's controller, and samsa's, elect unclean leaders of
	// leaderless partitions every unclean.leader.election.interval.ms (5
	// minutes by default), not when the topic config changes.
	settings := map[string]string{"unclean.leader.election.interval.ms": "1000"}
	c := startSystestNodes(t, target, 5, settings)
	const topic = "test_topic"
	tp := systests.TopicPartition{Topic: topic, Partition: 0}
	systests.CreateTopic(t, c, topic, 1, 2, nil)
	tools := systests.NewTools(t, c.Bootstrap())
	prod := tools.StartProducer(t, "producer", systests.ProducerOptions{Topic: topic, Throughput: 10})
	if !systests.Poll(180*time.Second, func() bool { return prod.NumAcked() >= 10 }) {
		t.Fatalf("producer acked %d of 10 records within 180 s", prod.NumAcked())
	}
	cons := tools.StartConsumers(t, "consumer", systests.ConsumerOptions{Topic: topic, Group: "truncation-test",
		Verbose: true, LooseOffsets: true})
	if !systests.Poll(180*time.Second, func() bool { return cons.Joined() == 1 }) {
		t.Fatalf("the consumer did not join within 180 s")
	}
	isr := systests.ISR(t, c, topic, 0)
	if len(isr) != 2 {
		t.Fatalf("ISR %v, want two replicas", isr)
	}
	node1, node2 := isr[0], isr[1]
	c.Stop(t, node1)
	t.Logf("stopped node %d; ISR down to node %d; consumer at %d", node1+1, node2+1, cons.Position(tp))
	from := cons.TotalConsumed()
	if !systests.Poll(60*time.Second, func() bool { return cons.TotalConsumed() > from+10 }) {
		t.Fatalf("the consumer read %d more records from node %d within 60 s, want > 10", cons.TotalConsumed()-from, node2+1)
	}
	c.Stop(t, node2)
	t.Logf("stopped node %d; no ISR member left; consumer at %d", node2+1, cons.Position(tp))
	settled := func(cons *systests.Consumers) bool {
		return systests.Stable(60*time.Second, 2*time.Second, cons.TotalConsumed)
	}
	if !settled(cons) {
		t.Fatalf("the consumer kept reading with no leader")
	}
	c.Start(t, node1)
	pre := cons.Position(tp)
	total1 := cons.TotalConsumed()
	t.Logf("node %d back (out of sync); consumer at %d after %d records", node1+1, pre, total1)
	systests.SetTopicConfig(t, c, topic, "unclean.leader.election.enable", "true")
	set := time.Now()
	if got := systests.Leader(t, c, topic, 0, 120*time.Second); got != node1 {
		t.Fatalf("leader is node %d, want the unclean leader %d", got+1, node1+1)
	}
	t.Logf("node %d elected (unclean) %v after the config change", node1+1, time.Since(set).Round(time.Millisecond))
	c.Start(t, node2)
	if !systests.Poll(120*time.Second, func() bool { return cons.Position(tp) >= pre }) {
		t.Fatalf("the consumer's position %d did not come back to %d within 120 s", cons.Position(tp), pre)
	}
	// The producer stops first (the system test stops the consumer first, so
	// the new group may read what the producer wrote after the consumer
	// stopped): the first consumer then reads all there is.
	prod.Stop(t)
	if !settled(cons) {
		t.Fatalf("the consumer did not settle after the producer stopped")
	}
	values := cons.ConsumedValues()
	if dup := duplicates(values); dup > 0 {
		t.Errorf("the consumer read %d values twice (it reset instead of detecting the truncation?)", dup)
	}
	cons.StopAll(t)
	total := len(values)

	again := tools.StartConsumers(t, "consumer2", systests.ConsumerOptions{Topic: topic, Group: "group2", Verbose: true})
	if !systests.Poll(180*time.Second, func() bool { return again.TotalConsumed() > 0 }) {
		t.Fatalf("the second consumer read nothing within 180 s")
	}
	if !settled(again) {
		t.Fatalf("the second consumer did not settle")
	}
	again.StopAll(t)
	checkConsumerAnomalies(t, again)
	total2 := again.TotalConsumed()
	if total2 >= int64(total) {
		t.Errorf("a new group read %d records, the first consumer %d: nothing was truncated", total2, total)
	}
	t.Logf("%s: first consumer read %d records, a new group %d: %d truncated", c.Name(), total, total2, int64(total)-total2)
}

// duplicates counts the values of v seen more than once.
func duplicates(v []int64) int {
	seen := map[int64]bool{}
	n := 0
	for _, x := range v {
		if seen[x] {
			n++
		}
		seen[x] = true
	}
	return n
}

// TestSystestDiagnosePartition checks the failure report of a stalled
// consumer (systests.DiagnosePartition) on a real cluster: every node's view
// of a partition with 30 records, the batches each serves a consumer from
// offset 10, the leader's end offset and the group's committed offset.
func TestSystestDiagnosePartition(t *testing.T) {
	t.Parallel()
	c := systests.StartSamsa(t, 3, nil)
	const topic = "diag"
	systests.CreateTopic(t, c, topic, 1, 3, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 30 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.CommitOffsets(ctx, "g", kadm.OffsetsFromRecords(kgo.Record{Topic: topic, Partition: 0, Offset: 9})); err != nil {
		t.Fatal(err)
	}
	leader := systests.Leader(t, c, topic, 0, 60*time.Second)
	// Followers learn the high watermark with their next fetch.
	var got string
	if !systests.Poll(60*time.Second, func() bool {
		got = systests.DiagnosePartition(c, topic, 0, "g", 10)
		return strings.Count(got, "hw=30 ") == 3
	}) {
		t.Fatalf("not every node serves offsets 10-29 under high watermark 30:\n%s", got)
	}
	t.Log(got)
	for _, want := range []string{"offsets 10-29", fmt.Sprintf("node index %d (%s): metadata leader=%d epoch=", leader, c.Addrs()[leader], leader+1),
		"isr=[", "end offset 30", "committed 10"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "list offsets: NOT_LEADER"); n != 2 {
		t.Errorf("%d followers answer ListOffsets NOT_LEADER_OR_FOLLOWER, want 2:\n%s", n, got)
	}
}

// TestSystestLeaderMoveSecure moves the leadership of every partition to a
// live node while a VerifiableConsumer on an SSL listener reads them (the
// replica lists are rotated by a reassignment onto the same replicas and
// the preferred leaders elected, as kafka-leader-election does): the old
// leaders answer its next fetches FENCED_LEADER_EPOCH or
// NOT_LEADER_OR_FOLLOWER with the new leader and its endpoint (KIP-951),
// which the Java consumer puts in its metadata. That endpoint must be the
// new leader's on the consumer's own listener, and the consumer must go on
// reading every partition: samsa gave the default (PLAINTEXT) listener's
// endpoint, and the consumer then read nothing more of a moved partition
// until its next metadata refresh (session 32; the replication hard
// bounce met it by chance, when a live node lost a leadership).
func TestSystestLeaderMoveSecure(t *testing.T) {
	requireJava(t)
	t.Parallel()
	eachTarget(t, func(t *testing.T, target string) {
		c, sec := startSecureSystestCluster(t, target, systests.Security{Protocol: "SSL"})
		tools := systests.NewTools(t, c.Bootstrap()).WithClientProps(sec.Bootstrap, sec.ClientProps)
		const topic = "test_topic"
		systests.CreateTopic(t, c, topic, 3, 3, nil)
		prod := tools.StartProducer(t, "producer", systests.ProducerOptions{Topic: topic, Throughput: 500, Idempotent: true})
		cons := tools.StartConsumers(t, "consumer", systests.ConsumerOptions{Topic: topic, Group: "test_group", Verbose: true,
			Loggers: stallLoggers})
		if !systests.Poll(180*time.Second, func() bool { return cons.TotalConsumed() >= 200 }) {
			t.Fatalf("the consumer read %d records within 180 s (producer acked %d)", cons.TotalConsumed(), prod.NumAcked())
		}
		m, err := systests.Metadata(t.Context(), c, topic)
		if err != nil || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 3 {
			t.Fatalf("metadata of %s: %v", topic, err)
		}
		moved := map[int32][]int32{} // partition: rotated replicas, the new leader first
		for _, p := range m.Topics[0].Partitions {
			r := p.Replicas
			i := slices.Index(r, p.Leader)
			if i < 0 {
				t.Fatalf("%s-%d: leader %d not in replicas %v", topic, p.Partition, p.Leader, r)
			}
			moved[p.Partition] = append(slices.Clone(r[i+1:]), r[:i+1]...)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		req := kadm.AlterPartitionAssignmentsReq{}
		for p, r := range moved {
			req.Assign(topic, p, r)
		}
		if res, err := adm.AlterPartitionAssignments(t.Context(), req); err != nil || res.Error() != nil {
			t.Fatalf("AlterPartitionReassignments: %v %v", err, res.Error())
		}
		from := cons.TotalConsumed()
		var last string
		if !systests.Poll(120*time.Second, func() bool {
			res, err := adm.ElectLeaders(t.Context(), kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}, 1: {}, 2: {}}})
			last = fmt.Sprint(res, err)
			m, err := systests.Metadata(t.Context(), c, topic)
			if err != nil || len(m.Topics) != 1 {
				return false
			}
			for _, p := range m.Topics[0].Partitions {
				if p.Leader != moved[p.Partition][0] {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("the preferred leaders %v were not elected within 120 s: %s (%s)", moved, last, systests.PartitionStates(c, topic))
		}
		t.Logf("%s: leaders moved to %v", c.Name(), moved)
		if !systests.Poll(120*time.Second, func() bool { return cons.TotalConsumed() >= from+1000 }) {
			t.Errorf("the consumer read %d records in 120 s after the leaders moved", cons.TotalConsumed()-from)
		}
		stopAndDrain(t, c, topic, prod, cons)
		checkConsumerAnomalies(t, cons)
		log := cons.Stderr(0)
		if bad := systests.ForeignNodes(log, strings.Split(sec.Bootstrap, ",")); len(bad) > 0 {
			t.Errorf("the consumer was given nodes off its listener %s: %v", sec.Bootstrap, bad)
		}
		t.Logf("the consumer took %d leader changes from fetch answers (KIP-951)",
			strings.Count(log, "as the leader was updated, position will be validated"))
		ok, msg := systests.ValidateDelivery(prod.Acked(), cons.ConsumedValues(), true)
		if !ok {
			t.Errorf("delivery invalid: %s", msg)
		}
	})
}
