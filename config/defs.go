package config

import (
	"math"
)

// Def describes one broker setting: its Kafka name, type and default, a one
// line description, whether Kafka lets it change at runtime through
// AlterConfigs (Dynamic), and a validator that checks both type and range.
//
// A Def without a default (HasDefault false) is Kafka's "null": the setting is
// unset unless given, and DescribeConfigs reports it as null.
//
// For Kafka's settings, Dynamic, PerBroker, ListenerOnly, Unlisted,
// KafkaRequired and Synonyms come from Kafka's table (kafka_defs.go), not
// from this file.
type Def struct {
	Name       string
	Type       Type
	Default    string
	HasDefault bool
	Doc        string
	Dynamic    bool
	Validate   func(string) error

	// PerBroker: dynamic on a broker's own resource only, never as the
	// cluster-wide default (Kafka's per-broker update mode).
	PerBroker bool
	// ListenerOnly: AlterConfigs takes it only with a listener prefix
	// (Kafka's keystore and truststore settings).
	ListenerOnly bool
	// Unlisted: not in a DescribeConfigs listing of a broker unless named
	// (Kafka's internal settings, samsa's own ones).
	Unlisted bool
	// KafkaRequired: Kafka has no default and requires the setting
	// (node.id, process.roles, ...), so DescribeConfigs shows no default.
	KafkaRequired bool
	// Ignored: a Kafka setting samsa accepts and lists but does not act on.
	Ignored bool
	// Synonyms are the names the setting falls back to, most specific
	// first, itself included (log.retention.ms, log.retention.minutes,
	// log.retention.hours), as Kafka's brokerConfigSynonyms.
	Synonyms []string
}

// BrokerDefs lists every broker setting samsa implements, in the order of
// MarkdownTable. It is an immutable table: do not modify it. AllBrokerDefs
// adds the Kafka settings samsa accepts without acting on them.
var BrokerDefs = withKafkaModes(brokerDefs())

const (
	maxLongStr = "9223372036854775807" // math.MaxInt64, Kafka's Long.MAX_VALUE defaults
	maxIntStr  = "2147483647"          // math.MaxInt32
)

// defaultListeners deliberately differs from Kafka's PLAINTEXT://:9092: with
// no arguments samsa listens on localhost only, which is the safe quick start.
const defaultListeners = "PLAINTEXT://localhost:9092"

// defaultLogDir deliberately differs from Kafka's /tmp/kafka-logs so that a
// quick start does not lose data on reboot.
const defaultLogDir = "./samsa-data"

// defaultQueuedMaxRequestBytes deliberately differs from Kafka's -1
// (unbounded): 256 MiB keeps the memory of requests in flight bounded.
const defaultQueuedMaxRequestBytes = "268435456"

const defaultSecurityProtocolMap = "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

func brokerDefs() []Def {
	d := func(name string, t Type, dflt string, doc string, v validator) Def {
		return Def{Name: name, Type: t, Default: dflt, HasDefault: true, Doc: doc, Validate: v}
	}
	null := func(name string, t Type, doc string, v validator) Def {
		return Def{Name: name, Type: t, Doc: doc, Validate: v}
	}
	dyn := func(x Def) Def { x.Dynamic = true; return x }

	defs := []Def{
		// Identity and roles.
		d("node.id", Int, "1", "Id of this node. Kafka requires it; samsa defaults to 1 for a single-node quick start.", atLeast(Int, 0)),
		d("broker.id", Int, "-1", "Legacy alias of node.id; if both are set they must agree.", atLeast(Int, -1)),
		null("cluster.id", String, "Cluster id (usually a 22-character base64 UUID: kafka-storage.sh random-uuid makes one; any string without control characters is taken, as in Kafka 4.4). Also read from the CLUSTER_ID environment variable. Unset: samsa generates one and stores it in meta.properties.", validateClusterID),
		d("process.roles", List, "broker,controller", "Roles of this process: broker, controller, or both (combined mode). A controller votes in the metadata quorum (controller.quorum.voters); a broker-only node follows the metadata log without voting.", listOf("broker", "controller")),
		d("controller.quorum.voters", List, "", "The controller quorum as id@host:port of each controller's controller listener, the same list on every node. Unset or naming only this node: a quorum of one. Several voters form one cluster over Raft on the controller listeners.", validateVoters),
		d("controller.quorum.bootstrap.servers", List, "", "host:port of controllers to find the quorum through (KIP-853). Without controller.quorum.voters, a list naming only this node's controller listener is a quorum of one; a controller whose list names other nodes joins their quorum and waits until kafka-metadata-quorum add-controller (AddRaftVoter) adds it. A broker-only node with this list alone asks these controllers in turn for the quorum (DescribeQuorum: the active controller and its endpoint), registers with the active controller and then follows the metadata log, learning the voters and their changes from it, also after the bootstrap servers left the quorum.", nil),
		d("controller.quorum.election.timeout.ms", Int, "1000", "How long a controller waits without hearing from the active controller before it starts an election; the active controller steps down after as long without a majority. A quorum of one uses at most 50 ms.", atLeast(Int, 10)),
		null("broker.rack", String, "Rack of this broker, reported in Metadata.", nil),
		d("broker.heartbeat.interval.ms", Int, "2000", "How often a broker heartbeats to the active controller.", atLeast(Int, 1)),
		d("broker.session.timeout.ms", Int, "9000", "A broker that has not heartbeated for this long is fenced and its leaderships move.", atLeast(Int, 1)),

		// Networking.
		dyn(d("listeners", List, defaultListeners, "Listeners as NAME://host:port. An empty host means all interfaces. Kafka's default is PLAINTEXT://:9092. Unset while advertised.listeners is set: derived from it as the apache/kafka image does (same names and ports, all interfaces), plus this node's controller listener from controller.quorum.voters. Per broker at runtime (AlterConfigs), as Kafka: new names are bound and removed ones closed with their connections at once, kept in the metadata log across restarts; the registration (what Metadata advertises) stays the one made at start (docs/OPERATIONS.md \"Adding and removing listeners at runtime\").", validateListenerList)),
		null("advertised.listeners", List, "Listeners given to clients; controller listeners in it are not given out. Default: listeners.", validateListenerList),
		dyn(d("listener.security.protocol.map", String, defaultSecurityProtocolMap, "Map of listener name to security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. TLS and SASL use Kafka's ssl.* and sasl.* settings, per listener as listener.name.<l>.<setting>.", validateProtocolMap)),
		null("controller.listener.names", List, "Names of the listeners used by the controller. They are not advertised to clients.", distinctList(true)),
		null("inter.broker.listener.name", String, "Listener used between brokers. Default: PLAINTEXT if present, else the first non-controller listener.", nil),
		dyn(d("num.network.threads", Int, "3", "Accepted for compatibility; samsa uses a goroutine per connection.", atLeast(Int, 1))),
		dyn(d("num.io.threads", Int, "8", "Accepted for compatibility; informational.", atLeast(Int, 1))),
		d("socket.send.buffer.bytes", Int, "102400", "SO_SNDBUF of the connections the broker accepts, in bytes; -1 (or any value <= 0) leaves the OS default, which Linux autotunes up to tcp_wmem's maximum. With Kafka's default, broker and consumers spent less CPU per GB consumed than with the OS default (bench/README.md).", typeOnly(Int)),
		d("socket.receive.buffer.bytes", Int, "-1", "SO_RCVBUF of the listeners' sockets, so of the connections they accept, in bytes (set before bind, as Kafka does); -1 (or any value <= 0) leaves the OS default, which Linux autotunes up to tcp_rmem's maximum. Kafka's default is 102400; samsa defaults to -1 because a fixed receive buffer turns off autotuning and cost samsa 23% more broker CPU per GB produced (bench/README.md, stop 31).", typeOnly(Int)),
		d("socket.request.max.bytes", Int, "104857600", "Largest request the broker accepts, in bytes; a larger size prefix closes the connection before anything is allocated.", atLeast(Int, 1)),
		// Connection and memory limits. Kafka can change the max.connections*
		// settings at runtime; samsa reads them at start.
		d("queued.max.request.bytes", Long, defaultQueuedMaxRequestBytes, "Budget of request bytes read but not yet processed, over all connections; when it is used up, connections stop reading until requests finish. -1 is unbounded. Kafka's default is -1; samsa defaults to 256 MiB so that clients cannot exhaust memory.", anyOf(intRange(Long, -1, -1), atLeast(Long, 1))),
		d("connections.max.idle.ms", Long, "600000", "Close connections with no request in progress and no traffic for this long.", typeOnly(Long)),
		// Delegation tokens (delegation_token.go).
		null("delegation.token.secret.key", Password, "Secret key that derives each delegation token's HMAC (its SCRAM password). The same key must be set on every node. Unset or empty: delegation tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED).", nil),
		d("delegation.token.max.lifetime.ms", Long, "604800000", "Largest lifetime of a delegation token: no renewal extends it past its issue time plus this (7 days).", atLeast(Long, 1)),
		d("delegation.token.expiry.time.ms", Long, "86400000", "How long a delegation token is valid after its creation or last renewal unless renewed (1 day).", atLeast(Long, 1)),
		d("delegation.token.expiry.check.interval.ms", Long, "3600000", "How often the active controller removes expired delegation tokens from the metadata (1 hour).", atLeast(Long, 1)),
		// Authorization (authorizer.go).
		d("authorizer.class.name", String, "", "The authorizer: empty (every client may do everything) or "+StandardAuthorizerClass+", which checks the ACLs stored in the metadata log (CreateAcls, kafka-acls). Any other class refuses to start.", validateAuthorizerClass),
		d("super.users", String, "", "Principals allowed everything whatever the ACLs, as User:a;User:b (semicolon-separated). Used with authorizer.class.name.", validateSuperUsers),
		d("allow.everyone.if.no.acl.found", Boolean, "false", "With an authorizer: allow an operation on a resource that no ACL matches. Kafka's default false denies it.", typeOnly(Boolean)),
		d("max.connections", Int, maxIntStr, "Largest number of client connections; at the limit the broker stops accepting until one closes (read at start).", atLeast(Int, 0)),
		d("max.connections.per.ip", Int, maxIntStr, "Largest number of connections from one IP address; a new connection over it is closed at once (read at start).", atLeast(Int, 0)),
		d("max.connections.per.ip.overrides", String, "", "Per-IP or host name limits overriding max.connections.per.ip, as host:count,... (read at start).", validateConnectionOverrides),
		d("max.connection.creation.rate", Int, maxIntStr, "Largest rate of new connections per second over the broker's listeners (the inter-broker listener is not counted when there are others), measured over quota.window.*: over it the broker waits before it serves the next connection (read at start; ip entities' connection_creation_rate quotas limit each address).", atLeast(Int, 0)),
		// Client quotas (broker/quota); read at start.
		d("quota.window.num", Int, "11", "Number of samples client byte-rate, request and connection creation rate quotas are measured over (read at start).", atLeast(Int, 1)),
		d("quota.window.size.seconds", Int, "1", "Length of each client quota sample, in seconds (read at start).", atLeast(Int, 1)),
		d("controller.quota.window.num", Int, "11", "Number of samples of the controller mutation quota: a client's burst is its controller_mutation_rate times this many windows (read at start).", atLeast(Int, 1)),
		d("controller.quota.window.size.seconds", Int, "1", "Length of each controller mutation quota sample, in seconds (read at start).", atLeast(Int, 1)),

		// Log storage.
		null("log.dirs", List, "Directories of the partition logs. Overrides log.dir.", distinctList(false)),
		d("log.dir", List, defaultLogDir, "Log directories used when log.dirs is unset. Kafka's default is /tmp/kafka-logs.", distinctList(false)),
		d("cordoned.log.dirs", List, "", "Log directories (entries of log.dirs, or * for all) that get no new partition replicas (KIP-1066): the broker lists them to the controller, which places no new replica on a broker whose every directory is cordoned, and the broker puts none of its new logs in them. Existing replicas stay. Dynamic per broker (IncrementalAlterConfigs on the broker's own resource; deleting it restores the static value).", validateCordonedLogDirs),
		null("metadata.log.dir", String, "Directory of the metadata log. Default: the first log directory.", nil),
		d("log.dir.failure.timeout.ms", Long, "30000", "With several log directories, how long a broker tries to report a failed one to the active controller before it halts (KIP-858).", atLeast(Long, 1)),
		dyn(d("log.segment.bytes", Int, "1073741824", "Largest size of a log segment file.", atLeast(Int, 1024*1024))),
		dyn(null("log.roll.ms", Long, "Largest age of the active segment before it rolls. Overrides log.roll.hours.", atLeast(Long, 1))),
		d("log.roll.hours", Int, "168", "Largest age of the active segment before it rolls, in hours.", atLeast(Int, 1)),
		dyn(null("log.roll.jitter.ms", Long, "Random jitter subtracted from the roll time. Overrides log.roll.jitter.hours.", atLeast(Long, 0))),
		d("log.roll.jitter.hours", Int, "0", "Random jitter subtracted from the roll time, in hours.", atLeast(Int, 0)),
		dyn(null("log.retention.ms", Long, "How long to keep a log segment; -1 keeps forever. Overrides log.retention.minutes and log.retention.hours.", typeOnly(Long))),
		null("log.retention.minutes", Int, "Retention in minutes. Overrides log.retention.hours.", typeOnly(Int)),
		d("log.retention.hours", Int, "168", "Retention in hours; negative keeps forever.", typeOnly(Int)),
		dyn(d("log.retention.bytes", Long, "-1", "Largest size of a partition log before old segments are deleted; -1 is unlimited.", typeOnly(Long))),
		d("log.retention.check.interval.ms", Long, "300000", "How often retention is checked.", atLeast(Long, 1)),
		dyn(d("log.flush.interval.messages", Long, maxLongStr, "Messages appended before the log is fsynced.", atLeast(Long, 1))),
		dyn(null("log.flush.interval.ms", Long, "Largest time a message stays unflushed. Default: log.flush.scheduler.interval.ms.", atLeast(Long, 0))),
		d("log.flush.scheduler.interval.ms", Long, maxLongStr, "How often the flusher checks whether logs need fsync.", typeOnly(Long)),
		dyn(d("log.index.interval.bytes", Int, "4096", "Bytes of log between offset index entries.", atLeast(Int, 0))),
		dyn(d("log.index.size.max.bytes", Int, "10485760", "Largest size of an offset or time index file.", atLeast(Int, 4))),
		dyn(d("log.segment.delete.delay.ms", Long, "60000", "Delay before a deleted segment is removed from disk.", atLeast(Long, 0))),
		dyn(d("log.cleanup.policy", List, "delete", "Default cleanup policy: delete, compact, both, or neither (empty: segments are kept forever).", listOrEmptyOf("compact", "delete"))),
		d("log.cleaner.enable", Boolean, "true", "Run the log cleaner for compacted topics.", nil),
		// Kafka can change these two at runtime; samsa reads them at start.
		d("log.cleaner.backoff.ms", Long, "15000", "How often the cleaner looks for logs to clean (read at start).", atLeast(Long, 0)),
		d("log.cleaner.dedupe.buffer.size", Long, "134217728", "Memory for the key map of one clean (read at start).", atLeast(Long, 1)),
		dyn(d("log.cleaner.delete.retention.ms", Long, "86400000", "How long tombstones are kept in compacted topics.", atLeast(Long, 0))),
		dyn(d("log.cleaner.min.compaction.lag.ms", Long, "0", "Least time a message stays uncompacted.", atLeast(Long, 0))),
		dyn(d("log.cleaner.max.compaction.lag.ms", Long, maxLongStr, "Largest time a message stays uncompacted.", atLeast(Long, 1))),
		dyn(d("log.cleaner.min.cleanable.ratio", Double, "0.5", "Least dirty ratio for a log to be cleaned.", doubleRange(0, 1))),
		dyn(d("log.preallocate", Boolean, "false", "Preallocate segment files.", nil)),
		dyn(d("log.message.timestamp.type", String, "CreateTime", "Timestamp stored in messages: CreateTime or LogAppendTime.", oneOf("CreateTime", "LogAppendTime"))),
		dyn(d("log.message.timestamp.before.max.ms", Long, maxLongStr, "Largest allowed age of a message timestamp behind the broker clock.", atLeast(Long, 0))),
		dyn(d("log.message.timestamp.after.max.ms", Long, "3600000", "Largest allowed lead of a message timestamp ahead of the broker clock.", atLeast(Long, 0))),
		dyn(d("log.local.retention.ms", Long, "-2", "Local retention with tiered storage; -2 means use log.retention.ms.", atLeast(Long, -2))),
		dyn(d("log.remote.copy.lag.ms", Long, "0", "Tiered storage upload lag in time; accepted, no effect.", atLeast(Long, -1))),
		dyn(d("log.remote.copy.lag.bytes", Long, "-1", "Tiered storage upload lag in bytes; accepted, no effect.", atLeast(Long, -1))),
		dyn(d("max.decompressed.message.bytes", Int, "2147483639", "Largest decompressed record; accepted, not enforced yet.", atLeast(Int, 1))),
		dyn(d("log.local.retention.bytes", Long, "-2", "Local retention bytes with tiered storage; -2 means use log.retention.bytes.", atLeast(Long, -2))),
		dyn(d("message.max.bytes", Int, "1048588", "Largest record batch size the broker accepts.", atLeast(Int, 0))),
		dyn(d("compression.type", String, "producer", "Compression of stored data: producer keeps the producer's codec.", oneOf(compressionTypes...))),
		dyn(d("compression.gzip.level", Int, "-1", "gzip level when compression.type is gzip.", anyOf(intRange(Int, -1, -1), intRange(Int, 1, 9)))),
		dyn(d("compression.lz4.level", Int, "9", "lz4 level when compression.type is lz4.", intRange(Int, 1, 17))),
		dyn(d("compression.zstd.level", Int, "3", "zstd level when compression.type is zstd.", intRange(Int, -131072, 22))),

		// Topics and replication.
		d("num.partitions", Int, "1", "Default number of partitions of a new topic.", atLeast(Int, 1)),
		d("default.replication.factor", Int, "1", "Default replication factor of a new topic.", intRange(Int, 1, math.MaxInt16)),
		d("auto.create.topics.enable", Boolean, "true", "Create a topic when a client asks for metadata of an unknown one.", nil),
		d("delete.topic.enable", Boolean, "true", "Allow DeleteTopics.", nil),
		dyn(d("min.insync.replicas", Int, "1", "Least in-sync replicas for an acks=all write. The active controller of a new cluster stores its value as the cluster-wide dynamic default, as Kafka 4.4 does for eligible leader replicas (KIP-966); a broker-level value cannot be set.", atLeast(Int, 1))),
		dyn(d("unclean.leader.election.enable", Boolean, "false", "Allow an out-of-sync replica to become leader. When a broker is fenced or comes back the active controller elects at once; a leaderless partition whose topic allows it later (the setting changed at runtime) is elected at the next unclean.leader.election.interval.ms check, as in Kafka 4.4; kafka-leader-election --election-type unclean elects at once.", nil)),
		d("unclean.leader.election.interval.ms", Long, "300000", "How often the active controller elects unclean leaders of leaderless partitions whose topic allows it (unclean.leader.election.enable), the first time one interval after it became active (Kafka's internal setting; 5 minutes).", atLeast(Long, 1)),
		d("fetch.max.bytes", Int, "57671680", "Largest number of record bytes returned by one fetch (clients and followers); a request's max_bytes above it is lowered to it.", atLeast(Int, 1024)),
		d("replica.lag.time.max.ms", Long, "30000", "A follower that has not caught up for this long leaves the ISR.", atLeast(Long, 0)),
		d("replica.fetch.max.bytes", Int, "1048576", "Record bytes a follower asks for per partition in one fetch (the first batch is returned even when larger).", atLeast(Int, 0)),
		d("replica.fetch.response.max.bytes", Int, "10485760", "Record bytes a follower asks for in one fetch response, over all partitions (the leader also caps it at fetch.max.bytes).", atLeast(Int, 0)),
		d("replica.socket.receive.buffer.bytes", Int, "-1", "SO_RCVBUF of a follower's fetch connections to partition leaders, in bytes (set before connect, as Kafka does); -1 (or any value <= 0) leaves the OS default. Kafka's default is 65536; samsa defaults to -1 (autotuned), as for socket.receive.buffer.bytes.", typeOnly(Int)),
		d("replica.fetch.wait.max.ms", Int, "500", "How long a follower's fetch waits at the leader for data; at most replica.lag.time.max.ms.", atLeast(Int, 0)),
		d("replica.fetch.backoff.ms", Int, "1000", "How long a follower waits after a failed fetch of a partition.", atLeast(Int, 0)),
		null("replica.selector.class", String, "How a leader picks the replica a consumer reads from (KIP-392). Unset (Kafka's default) or org.apache.kafka.common.replica.LeaderSelector: the leader; org.apache.kafka.common.replica.RackAwareReplicaSelector: an in-sync replica in the consumer's client.rack (matched against broker.rack) that holds the fetch offset, the leader when it is in that rack. Followers serve consumers' Fetch v11+ up to their high watermark whatever this says.", oneOf("", "org.apache.kafka.common.replica.RackAwareReplicaSelector", "org.apache.kafka.common.replica.LeaderSelector")),
		d("auto.leader.rebalance.enable", Boolean, "true", "Move leadership back to each partition's preferred replica when it is in the ISR, every leader.imbalance.check.interval.seconds.", nil),
		d("leader.imbalance.check.interval.seconds", Long, "300", "How often the active controller balances leaders (auto.leader.rebalance.enable).", atLeast(Long, 1)),
		d("leader.imbalance.per.broker.percentage", Int, "10", "Accepted for compatibility; as in Kafka's KRaft controller, every imbalanced partition is balanced.", atLeast(Int, 0)),
		d("max.incremental.fetch.session.cache.slots", Int, "1000", "Largest number of KIP-227 incremental fetch sessions kept; beyond it a new session may evict an idle or smaller one.", atLeast(Int, 0)),
		// Share groups (KIP-932): share sessions and share-partitions on partition leaders (broker/share).
		d("group.share.record.lock.duration.ms", Int, "30000", "How long a share consumer holds the records it acquired before they become available again, unless its group sets share.record.lock.duration.ms.", intRange(Int, 1000, 3600000)),
		d("group.share.min.record.lock.duration.ms", Int, "15000", "Least record lock duration of a share group (bound of group.share.record.lock.duration.ms and of the group config share.record.lock.duration.ms).", intRange(Int, 1000, 30000)),
		d("group.share.max.record.lock.duration.ms", Int, "60000", "Largest record lock duration of a share group (bound of group.share.record.lock.duration.ms and of the group config share.record.lock.duration.ms).", intRange(Int, 30000, 3600000)),
		d("group.share.delivery.count.limit", Int, "5", "Deliveries of a record to share consumers after which it is archived instead of made available again, unless its group sets share.delivery.count.limit.", intRange(Int, 2, 10)),
		d("group.share.partition.max.record.locks", Int, "2000", "Most records of one share-partition in flight (acquired or awaiting redelivery) at once, unless its group sets share.partition.max.record.locks.", intRange(Int, 100, 10000)),
		d("group.share.max.share.sessions", Int, "2000", "Most share sessions a broker keeps; a new one beyond is SHARE_SESSION_LIMIT_REACHED.", atLeast(Int, 1)),

		// Groups and offsets.
		d("offsets.topic.num.partitions", Int, "50", "Partitions of __consumer_offsets.", atLeast(Int, 1)),
		d("offsets.topic.replication.factor", Short, "3", "Replication factor of __consumer_offsets; created once that many brokers are unfenced (COORDINATOR_NOT_AVAILABLE until then). With a static controller.quorum.voters list (or no quorum settings) of fewer combined nodes, samsa caps it at their number, so that a single node works without settings.", atLeast(Short, 1)),
		d("offsets.commit.timeout.ms", Int, "5000", "How long a group coordinator's write (an offset commit, a group change) waits for the in-sync replicas before it fails; group answers held behind such a write fail too.", atLeast(Int, 1)),
		d("offsets.retention.minutes", Int, "10080", "How long committed offsets of an empty group are kept.", atLeast(Int, 1)),
		d("offsets.retention.check.interval.ms", Long, "600000", "How often expired offsets are removed.", atLeast(Long, 1)),
		d("offset.metadata.max.bytes", Int, "4096", "Largest metadata string of a committed offset; longer is OFFSET_METADATA_TOO_LARGE. Kafka accepts any integer; samsa requires at least 1.", atLeast(Int, 1)),
		d("group.initial.rebalance.delay.ms", Int, "3000", "Delay of the first rebalance of a new classic group.", atLeast(Int, 0)),
		d("group.min.session.timeout.ms", Int, "6000", "Least session timeout a classic group member may ask for.", typeOnly(Int)),
		d("group.max.session.timeout.ms", Int, "1800000", "Largest session timeout a classic group member may ask for.", typeOnly(Int)),
		d("group.max.size", Int, maxIntStr, "Largest number of members of a classic group.", atLeast(Int, 1)),
		d("group.coordinator.rebalance.protocols", List, "classic,consumer,streams", "Group protocols served: classic (JoinGroup), consumer (KIP-848 ConsumerGroupHeartbeat) and streams (KIP-1071 StreamsGroupHeartbeat). share is accepted and changes nothing: share groups (KIP-932) are on by the share.version feature, as in Kafka 4.4. Deprecated in Kafka 4.4 (every protocol is on in 5.0, switched by the feature versions): leaving one out logs a warning at start, and ApiVersions still lists its APIs (answered UNSUPPORTED_VERSION), as Kafka.", listOf("classic", "consumer", "share", "streams")),
		d("group.consumer.session.timeout.ms", Int, "45000", "Session timeout of a KIP-848 consumer group member.", atLeast(Int, 1)),
		d("group.consumer.min.session.timeout.ms", Int, "45000", "Least session timeout of a KIP-848 consumer group.", atLeast(Int, 1)),
		d("group.consumer.max.session.timeout.ms", Int, "60000", "Largest session timeout of a KIP-848 consumer group.", atLeast(Int, 1)),
		d("group.consumer.heartbeat.interval.ms", Int, "5000", "Heartbeat interval given to KIP-848 consumer group members.", atLeast(Int, 1)),
		d("group.consumer.min.heartbeat.interval.ms", Int, "5000", "Least heartbeat interval of a KIP-848 consumer group.", atLeast(Int, 1)),
		d("group.consumer.max.heartbeat.interval.ms", Int, "15000", "Largest heartbeat interval of a KIP-848 consumer group.", atLeast(Int, 1)),
		d("group.consumer.max.size", Int, maxIntStr, "Largest number of members of a KIP-848 consumer group.", atLeast(Int, 1)),
		d("group.share.session.timeout.ms", Int, "45000", "Session timeout of a KIP-932 share group member.", atLeast(Int, 1)),
		d("group.share.min.session.timeout.ms", Int, "45000", "Least session timeout of a share group (bound of the group config share.session.timeout.ms).", atLeast(Int, 1)),
		d("group.share.max.session.timeout.ms", Int, "60000", "Largest session timeout of a share group (bound of the group config share.session.timeout.ms).", atLeast(Int, 1)),
		d("group.share.heartbeat.interval.ms", Int, "5000", "Heartbeat interval given to share group members.", atLeast(Int, 1)),
		d("group.share.min.heartbeat.interval.ms", Int, "5000", "Least heartbeat interval of a share group (bound of the group config share.heartbeat.interval.ms).", atLeast(Int, 1)),
		d("group.share.max.heartbeat.interval.ms", Int, "15000", "Largest heartbeat interval of a share group (bound of the group config share.heartbeat.interval.ms).", atLeast(Int, 1)),
		d("group.share.max.size", Int, "200", "Largest number of members of a share group.", intRange(Int, 1, 1000)),
		d("group.streams.session.timeout.ms", Int, "45000", "Session timeout of a KIP-1071 streams group member (the group config streams.session.timeout.ms overrides it).", atLeast(Int, 1)),
		d("group.streams.min.session.timeout.ms", Int, "45000", "Least session timeout of a streams group: bound of group.streams.session.timeout.ms (checked at start) and of the group config streams.session.timeout.ms.", atLeast(Int, 1)),
		d("group.streams.max.session.timeout.ms", Int, "60000", "Largest session timeout of a streams group: bound of group.streams.session.timeout.ms (checked at start) and of the group config streams.session.timeout.ms.", atLeast(Int, 1)),
		d("group.streams.heartbeat.interval.ms", Int, "5000", "Heartbeat interval given to streams group members (group config streams.heartbeat.interval.ms).", atLeast(Int, 1)),
		d("group.streams.min.heartbeat.interval.ms", Int, "5000", "Least heartbeat interval of a streams group: bound of group.streams.heartbeat.interval.ms (checked at start) and of the group config streams.heartbeat.interval.ms.", atLeast(Int, 1)),
		d("group.streams.max.heartbeat.interval.ms", Int, "15000", "Largest heartbeat interval of a streams group: bound of group.streams.heartbeat.interval.ms (checked at start) and of the group config streams.heartbeat.interval.ms.", atLeast(Int, 1)),
		d("group.streams.max.standby.replicas", Int, "2", "Largest number of standby replicas of a streams group: bound of group.streams.num.standby.replicas (checked at start) and of the group config streams.num.standby.replicas.", atLeast(Int, 0)),
		d("group.streams.max.size", Int, maxIntStr, "Largest number of members of a streams group.", atLeast(Int, 1)),
		d("group.streams.num.standby.replicas", Int, "0", "Standby replicas of each stateful task (a subtopology with changelog topics) of a streams group (group config streams.num.standby.replicas).", atLeast(Int, 0)),
		d("group.streams.initial.rebalance.delay.ms", Int, "3000", "How long a new streams group waits for more members before its first assignment (group config streams.initial.rebalance.delay.ms).", atLeast(Int, 0)),
		d("group.streams.acceptable.recovery.lag", Long, "10000", "Acceptable recovery lag told to streams group members.", atLeast(Long, 0)),
		d("group.streams.task.offset.interval.ms", Int, "60000", "Interval at which streams group members report their task offsets.", atLeast(Int, 1)),
		d("group.consumer.migration.policy", String, "bidirectional", "Online migration of live groups between the classic protocol and KIP-848 (rolling restarts changing group.protocol): disabled, upgrade (a live classic group becomes a consumer group when a KIP-848 member joins it), downgrade (a consumer group left with only classic members becomes a classic group) or bidirectional; case insensitive. With disabled, classic members cannot join a consumer group.", oneOfFold("disabled", "upgrade", "downgrade", "bidirectional")),
		d("group.consumer.assignors", List, "uniform,range", "Server-side assignors of KIP-848 groups, first is the default. Kafka's class names (org.apache.kafka.coordinator.group.assignor.UniformAssignor, ...RangeAssignor) are accepted too.", nil),

		// Transactions and idempotence.
		d("transaction.max.timeout.ms", Int, "900000", "Largest transaction timeout a producer may ask for.", atLeast(Int, 1)),
		d("transactional.id.expiration.ms", Int, "604800000", "Idle time after which a transactional id expires.", atLeast(Int, 1)),
		dyn(d("producer.id.expiration.ms", Int, "86400000", "Idle time after which a producer id's state expires.", atLeast(Int, 1))),
		d("producer.id.expiration.check.interval.ms", Int, "600000", "How often idle producers' state is looked for and removed.", atLeast(Int, 1)),
		d("transaction.state.log.num.partitions", Int, "50", "Partitions of __transaction_state.", atLeast(Int, 1)),
		d("transaction.state.log.replication.factor", Short, "3", "Replication factor of __transaction_state; created once that many brokers are unfenced. Capped like offsets.topic.replication.factor.", atLeast(Short, 1)),
		d("transaction.state.log.min.isr", Int, "2", "min.insync.replicas of __transaction_state when it is created; samsa caps it at the topic's replication factor.", atLeast(Int, 1)),
		d("transaction.state.log.segment.bytes", Int, "104857600", "Segment size of __transaction_state.", atLeast(Int, 1)),
		d("transaction.abort.timed.out.transaction.cleanup.interval.ms", Int, "10000", "How often transactions past their timeout are aborted.", atLeast(Int, 1)),
		d("transaction.remove.expired.transaction.cleanup.interval.ms", Int, "3600000", "How often expired transactional ids are removed.", atLeast(Int, 1)),
		d("share.coordinator.state.topic.num.partitions", Int, "50", "Partitions of __share_group_state (share groups, KIP-932).", atLeast(Int, 1)),
		d("share.coordinator.state.topic.replication.factor", Short, "3", "Replication factor of __share_group_state, created when first needed; capped like offsets.topic.replication.factor.", atLeast(Short, 1)),
		d("share.coordinator.state.topic.min.isr", Short, "2", "min.insync.replicas of __share_group_state when it is created; samsa caps it at the topic's replication factor.", atLeast(Short, 1)),
		d("share.coordinator.state.topic.segment.bytes", Int, "104857600", "Segment size of __share_group_state.", atLeast(Int, 1)),
		d("share.coordinator.write.timeout.ms", Int, "5000", "How long a share state write waits to be replicated to the ISR.", atLeast(Int, 1)),
		d("transaction.partition.verification.enable", Boolean, "true", "Reject transactional produce to a partition not added to the transaction (KIP-890).", nil),

		// Operations: samsa's own settings, under a samsa. prefix so that
		// they can never collide with a future Kafka setting.
		d("samsa.log.format", String, "text", "Format of the log lines on standard error: text (key=value) or json (one JSON object per line, for log shippers). Environment: KAFKA_SAMSA_LOG_FORMAT.", oneOf("text", "json")),
		d("samsa.log.level", String, "INFO", "Lowest level of the log lines written: DEBUG, INFO, WARN or ERROR. DEBUG also logs every setting's effective value and source at start. Environment: KAFKA_SAMSA_LOG_LEVEL.", oneOf("DEBUG", "INFO", "WARN", "ERROR")),
		d("samsa.http.listener", String, "", "Address (host:port, or http://host:port) of the HTTP listener that serves /metrics (Prometheus, with the JMX exporter's names), /healthz and /readyz. An empty host means all interfaces. Empty: no HTTP listener. Environment: KAFKA_SAMSA_HTTP_LISTENER.", validateHTTPListener),
	}
	for i := range defs {
		if defs[i].Validate == nil {
			defs[i].Validate = typeOnly(defs[i].Type)
		}
	}
	return defs
}

var compressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}
