package config

import "strings"

// ignoredKeys are Kafka broker settings samsa knows but does not implement.
// Docker compose files and server.properties set many of them; samsa accepts
// them with a warning instead of refusing to start.
var ignoredKeys = map[string]bool{
	// KRaft quorum: tuning of Kafka's own Raft implementation (samsa's is
	// hashicorp/raft; see controller.quorum.election.timeout.ms).
	"controller.quorum.fetch.timeout.ms":        true,
	"controller.quorum.election.backoff.max.ms": true, "controller.quorum.append.linger.ms": true,
	"controller.quorum.request.timeout.ms": true, "controller.quorum.retry.backoff.ms": true,
	"controller.quorum.auto.join.enable":     true,
	"initial.broker.registration.timeout.ms": true,
	"metadata.log.segment.bytes":             true, "metadata.log.segment.ms": true,
	"metadata.max.retention.bytes": true, "metadata.max.retention.ms": true,
	"metadata.log.max.record.bytes.between.snapshots": true, "metadata.log.max.snapshot.interval.ms": true,
	"metadata.max.idle.interval.ms": true, "controlled.shutdown.enable": true,
	"node.id.generation.enable": true, "eligible.leader.replicas.enable": true,
	"security.inter.broker.protocol": true, "inter.broker.protocol.version": true,
	"log.message.format.version": true, "unstable.api.versions.enable": true,
	"unstable.feature.versions.enable": true, "server.max.startup.time.ms": true,
	// Sockets, threads and request handling.
	"socket.listen.backlog.size": true, "socket.connection.setup.timeout.ms": true,
	"socket.connection.setup.timeout.max.ms": true, "queued.max.requests": true,
	"num.replica.fetchers": true, "num.recovery.threads.per.data.dir": true,
	"background.threads": true, "request.timeout.ms": true, "reserved.broker.max.id": true,
	"host.name": true, "advertised.host.name": true, "port": true, "advertised.port": true,
	"fetch.purgatory.purge.interval.requests":    true,
	"producer.purgatory.purge.interval.requests": true, "delete.records.purgatory.purge.interval.requests": true,
	"num.quota.samples": true, "replication.quota.window.num": true, "replication.quota.window.size.seconds": true,
	"alter.log.dirs.replication.quota.window.num": true, "alter.log.dirs.replication.quota.window.size.seconds": true,
	"controller.quota.window.num": true, "controller.quota.window.size.seconds": true,
	"client.quota.callback.class": true, "principal.builder.class": true,
	"create.topic.policy.class.name": true,
	"alter.config.policy.class.name": true, "config.providers": true, "kafka.metrics.reporters": true,
	"kafka.metrics.polling.interval.secs": true, "auto.include.jmx.reporter": true,
	"telemetry.max.bytes": true, "broker.rack.aware": true, "password.encoder.secret": true,
	// Replication details.
	"replica.fetch.min.bytes":                       true,
	"replica.socket.timeout.ms":                     true,
	"replica.high.watermark.checkpoint.interval.ms": true, "log.dir.failure.timeout.ms": true,
	"leader.replication.throttled.rate": true, "follower.replication.throttled.rate": true,
	"replica.alter.log.dirs.io.max.bytes.per.second": true,
	// Log details.
	"log.cleaner.threads": true, "log.cleaner.io.max.bytes.per.second": true,
	"log.cleaner.io.buffer.size": true, "log.cleaner.io.buffer.load.factor": true,
	"log.flush.offset.checkpoint.interval.ms": true, "log.flush.start.offset.checkpoint.interval.ms": true,
	"log.initial.task.delay.ms": true, "log.message.downconversion.enable": true,
	"log.message.timestamp.difference.max.ms": true, "log.cleaner.enable.compaction": true,
	"log.segment.bytes.minimum": true, "log.dir.failure.timeout": true,
	// Groups, offsets and transactions.
	"offsets.topic.segment.bytes": true, "offsets.topic.compression.codec": true,
	"offsets.load.buffer.size":               true,
	"offsets.commit.required.acks":           true,
	"transaction.state.log.load.buffer.size": true, "transaction.two.phase.commit.enable": true,
	"fetch.max.bytes.limit":        true,
	"group.coordinator.new.enable": true, "group.coordinator.threads": true,
	"group.coordinator.append.linger.ms": true, "group.version": true, "share.version": true,
	"remote.log.storage.system.enable": true, "log.remote.storage.system.enable": true,
}

// ignoredPrefixes are families of Kafka settings samsa does not implement:
// TLS, SASL, per-listener overrides, metrics, tiered storage, share groups,
// the new group protocol knobs, delegation.token.master.key (gone in Kafka
// 4.0; the delegation.token.* settings of 4.4 are implemented), ZooKeeper
// (gone in Kafka 4.0) and vendor extensions.
var ignoredPrefixes = []string{
	"ssl.", "sasl.", "listener.name.", "security.", "metric.", "metrics.", "confluent.",
	"remote.log.", "remote.", "share.", "group.share.", "group.consumer.", "group.streams.",
	"group.coordinator.", "delegation.token.", "zookeeper.", "transaction.state.log.",
	"kafka.metrics.", "password.encoder.", "quota.", "client.quota.", "controller.quorum.",
	"controller.socket.", "authorizer.", "ldap.", "log4j.", "socket.", "replica.", "telemetry.",
	"connections.", "max.connection", "early.start.listeners",
}

// isIgnoredKey reports whether key is a Kafka setting samsa accepts without
// acting on it: any setting of Kafka 4.4 (kafka_defs.go) that is not in
// BrokerDefs, and the older or vendor names above.
func isIgnoredKey(key string) bool {
	if ignoredKeys[key] || isKafkaSetting(key) {
		return true
	}
	for _, p := range ignoredPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}
