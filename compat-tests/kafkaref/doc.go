// Package kafkaref starts Apache Kafka 4.4.0, the reference broker, from a Go test,
// through compat-tests/kafka-ref/kafka-ref.sh (which fetches the jars from Maven
// Central into ~/.m2 on first use and caches the classpath).
//
//	func TestSomething(t *testing.T) {
//		k := kafkaref.Start(t, kafkaref.Options{Nodes: 1}) // stopped by t.Cleanup
//		cl, _ := kgo.NewClient(kgo.SeedBrokers(k.Addrs()...))
//		...
//		out, err := kafkaref.Tool(t, "kafka-topics", "--bootstrap-server", k.Bootstrap(), "--list").Output()
//	}
//
// A machine without java or mvn skips the test, unless SAMSA_REQUIRE_CLIENTS=1
// (set by .ci/run), which fails it instead.
//
// The single node runs with the settings samsa is compared under: one partition per
// auto-created topic, internal topics with replication factor 1 and min.insync.replicas
// 1, no initial rebalance delay, and Kafka's default flush policy (none: the page cache
// decides), heap -Xmx1g. Three nodes keep Kafka's defaults for internal topics. Each
// node is a combined broker and controller with a PLAINTEXT listener and a CONTROLLER
// listener on free loopback ports; its files are in Cluster.Dir()/nodeN (server.log,
// server.properties, data/). When the test fails, Stop copies the tail of each node's
// server.log into the test log.
package kafkaref
