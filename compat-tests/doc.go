// Package compattests runs unmodified Kafka clients (franz-go, sarama, segmentio/kafka-go
// and confluent-kafka-go) against the real samsa binary started by package harness.
// Every known incompatibility is explained in FINDINGS.md.
package compattests
