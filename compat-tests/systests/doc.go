// Package systests runs the scenarios of Apache Kafka's own system tests
// (tests/kafkatest in Kafka's source: replication_test, transactions_test,
// consumer_test, reassign_partitions_test, fetch_from_follower_test,
// truncation_test) with Kafka 4.4's Java test tools against a cluster of real
// processes: samsa nodes (harness.StartCluster) or Kafka 4.4 nodes
// (kafkaref.Start), the latter to confirm that a scenario is right. Either
// may have per-node settings (StartSamsaNodes, StartKafkaNodes: broker.rack)
// or a secured client and inter-broker listener (StartSamsaSecure,
// StartKafkaSecure: SSL, SASL_SSL with PLAIN and SCRAM).
//
// The tools are the ones Kafka's ducktape services wrap, run from the
// kafka-tools 4.4.0 jar:
//
//   - VerifiableProducer (Producer): produces increasing integers and prints a
//     JSON event per acknowledged (producer_send_success) or failed
//     (producer_send_error) send.
//   - VerifiableConsumer (Consumers): a group of consumer processes printing
//     startup_complete, partitions_assigned/revoked, records_consumed,
//     record_data (--verbose), offsets_committed and shutdown_complete.
//   - TransactionalMessageCopier (Copier): copies one input partition (or, in
//     group mode, the subscribed topic) to an output topic in transactions,
//     printing its progress ({"consumed", "remaining", "stage"}).
//
// Each tool's stdout is read line by line; every JSON event goes through the
// same bookkeeping as the Python services (verifiable_producer.py,
// verifiable_consumer.py, transactional_message_copier.py), including the
// consumer's offset checks (records consumed only from assigned partitions,
// from the expected offset, commits never ahead of the position), which are
// recorded as anomalies instead of raised. ValidateDelivery is
// ProduceConsumeValidateTest's check: every acknowledged value consumed, no
// duplicates where the producer was idempotent.
//
// Usage (see compat-tests/kafka_systests_test.go):
//
//	c := systests.StartSamsa(t, 3, env)        // or systests.StartKafka(t, 3, overrides)
//	tools := systests.NewTools(t, c.Bootstrap())
//	p := tools.StartProducer(t, systests.ProducerOptions{Topic: "test_topic", Idempotent: true})
//	cs := tools.StartConsumers(t, systests.ConsumerOptions{Topic: "test_topic", Group: "g", Members: 1, Verbose: true})
//	... bounce nodes with c.Stop / c.Kill / c.Start ...
//	p.Stop(t)
//	ok, msg := systests.ValidateDelivery(p.Acked(), cs.ConsumedValues(), true)
package systests
