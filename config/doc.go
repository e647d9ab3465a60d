// Package config loads and validates samsa's broker configuration, with
// Kafka's setting names, types and defaults, so that a deployment of the
// apache/kafka or bitnami/kafka image keeps working when the image is swapped
// for samsa's.
//
// # Sources
//
// In increasing precedence:
//
//  1. built-in defaults (BrokerDefs; Kafka 4.x defaults except where noted),
//  2. a server.properties file, given as --config FILE or as the single
//     positional argument like kafka-server-start.sh; Java properties syntax
//     ('#'/'!' comments, key=value, key: value, backslash line continuations
//     and escapes),
//  3. the environment: KAFKA_<NAME> as the apache/kafka image maps it (strip
//     KAFKA_, lower-case, "___"→"-", "__"→"_", "_"→"."), bitnami's
//     KAFKA_CFG_<NAME> with the same mapping (winning over KAFKA_<NAME>),
//     and CLUSTER_ID or KAFKA_KRAFT_CLUSTER_ID for cluster.id,
//  4. repeatable --override key=value flags.
//
// Image plumbing variables (KAFKA_HEAP_OPTS, KAFKA_OPTS, KAFKA_VERSION, ...)
// and Kubernetes service variables are skipped with a DEBUG notice. Kafka
// settings samsa knows but does not implement (every other broker setting
// of Kafka 4.4, AllBrokerDefs, and a few older names) are accepted and
// listed in Config.Ignored with a line in Config.Warnings and a WARN notice
// ("setting accepted but not implemented"); their values are kept in
// Config.OtherValues for DescribeConfigs. An unknown setting in the file
// or an override is a warning naming the closest setting, listed in
// Config.Unknown (Kafka 4.4 starts with one too); a KAFKA_* variable
// that names no Kafka setting (a typo such as KAFKA_NUM_PARTITION) is only a
// warning that names the variable and the closest setting's variable,
// listed in Config.UnknownEnv, because a compose file may carry it. A bad
// value is an error wrapping ErrInvalidValue that names the setting and
// where it came from. Config.Notices holds these lines with their levels,
// for the caller to log.
//
// Security (security.go): SSL, SASL_PLAINTEXT and SASL_SSL listeners are
// resolved from Kafka's ssl.* and sasl.* settings, listener-prefixed
// (listener.name.<l>.<setting>) first, into Config.Security; the SASL JAAS
// configuration is listener.name.<l>.<mechanism>.sasl.jaas.config. What
// samsa does not implement still fails closed: a setting that would
// restrict access (mechanisms other than PLAIN and SCRAM-SHA-256/512,
// ssl.* or sasl.* settings of a listener that does not use them) makes
// Load fail with ErrUnsupported naming it, and authorizer.class.name
// naming another class than Kafka's StandardAuthorizer (authorizer.go)
// fails as an invalid value naming the class.
//
// # Differences from Kafka's defaults
//
//   - listeners is PLAINTEXT://localhost:9092 (Kafka: PLAINTEXT://:9092), so
//     a no-argument start is not reachable from other hosts.
//   - log.dir is ./samsa-data (Kafka: /tmp/kafka-logs).
//   - node.id defaults to 1 and process.roles to broker,controller (Kafka
//     requires both): samsa always runs broker and controller in one process.
//   - listener.security.protocol.map also maps CONTROLLER to PLAINTEXT.
//   - queued.max.request.bytes is 256 MiB (Kafka: -1, unbounded).
//   - socket.receive.buffer.bytes and replica.socket.receive.buffer.bytes are
//     -1, the OS default with autotuning (Kafka: 102400 and 65536); set
//     values are honoured as Kafka honours them.
//   - The topic setting segment.bytes accepts values down to 14 bytes, as
//     Kafka 3.x did, so tests can roll segments quickly; Kafka 4.x requires
//     1 MiB there (and for log.segment.bytes, which samsa follows).
//   - A SASL controller listener needs sasl.mechanism.controller.protocol
//     set to PLAIN or SCRAM (Kafka's default GSSAPI is refused at start)
//     and a username and password in its JAAS configuration; samsa's Raft
//     transport goes through the listener's TLS and SASL.
//   - Keystores and truststores are PEM, PKCS#12 or JKS; one without
//     ssl.keystore.type / ssl.truststore.type is recognised by content
//     (Kafka assumes JKS); PKCS12 and JKS each read either format, as
//     the JDK's keystore.type.compat mode. JCEKS and BCFKS stores are not
//     read.
//
// # Usage
//
//	cfg, err := config.Load(os.Args[1:], os.Environ())
//	if errors.Is(err, config.ErrHelp) {
//		fmt.Fprint(os.Stderr, config.Usage())
//		os.Exit(0)
//	}
//	if err != nil {
//		log.Fatal(err)
//	}
//	for _, w := range cfg.Warnings {
//		log.Print(w)
//	}
//	// Topic configs from CreateTopics:
//	if err := config.ValidateTopicConfig(overrides); err != nil {
//		var ce *config.ConfigError
//		errors.As(err, &ce) // ce.Code is kerr.InvalidConfig.Code
//	}
//	tc := cfg.TopicConfig(overrides) // effective retention, segment size, ...
//
// # Topic configs
//
// TopicDefs lists the topic settings (retention.ms, cleanup.policy,
// segment.bytes, ...), each with its broker synonym. A topic's effective value
// is its override, else the broker synonym's effective value (with Kafka's
// fallbacks such as log.retention.hours), else Kafka's default.
//
// # The registry of Kafka's settings
//
// kafka_broker_configs.tsv lists every broker setting of Kafka 4.4 with
// Kafka's type, default, update mode (read-only, per-broker,
// cluster-wide), validator and synonyms, one line per setting sorted by
// name; config/kafkadefs/gen.sh generates it from the Kafka jars that
// compat-tests/kafka-ref resolves. BrokerDefs (defs.go) are the settings
// samsa implements, with samsa's validators and text, and take their
// update mode, synonyms and listing from the table; AllBrokerDefs adds the
// other Kafka settings (Def.Ignored), validated with Kafka's validators.
// Kafka's internal settings and samsa's own (samsa.*, cluster.id) are
// Def.Unlisted: DescribeConfigs shows them only when named or given.
// TestBrokerDefsMatchKafka holds samsa's types and defaults to Kafka's,
// with the deliberate differences listed below.
//
// # Dynamic broker configs
//
// Def.Dynamic marks the settings Kafka lets AlterConfigs change on a BROKER
// resource (Def.PerBroker: only on a broker's own resource). WithDynamic
// layers the stored dynamic values (cluster-wide default, then per broker)
// over the static configuration and returns a new Config, with Sources
// saying which level won; Load's Config is never modified. The broker
// stores and describes dynamic values but does not apply them at runtime
// yet.
//
// # Settings
//
// MarkdownTable renders the table of implemented broker settings for the
// README; TestDocTable keeps the copy below in sync (go test ./config -run
// TestDocTable -update rewrites it).
//
// BEGIN SETTINGS TABLE
//
//	| Name | Default | Description |
//	|------|---------|-------------|
//	| `node.id` | `1` | Id of this node. Kafka requires it; samsa defaults to 1 for a single-node quick start. |
//	| `broker.id` | `-1` | Legacy alias of node.id; if both are set they must agree. |
//	| `cluster.id` | null | Cluster id (usually a 22-character base64 UUID: kafka-storage.sh random-uuid makes one; any string without control characters is taken, as in Kafka 4.4). Also read from the CLUSTER_ID environment variable. Unset: samsa generates one and stores it in meta.properties. |
//	| `process.roles` | `broker,controller` | Roles of this process: broker, controller, or both (combined mode). A controller votes in the metadata quorum (controller.quorum.voters); a broker-only node follows the metadata log without voting. |
//	| `controller.quorum.voters` | "" | The controller quorum as id@host:port of each controller's controller listener, the same list on every node. Unset or naming only this node: a quorum of one. Several voters form one cluster over Raft on the controller listeners. |
//	| `controller.quorum.bootstrap.servers` | "" | host:port of controllers to find the quorum through (KIP-853). Without controller.quorum.voters, a list naming only this node's controller listener is a quorum of one; a controller whose list names other nodes joins their quorum and waits until kafka-metadata-quorum add-controller (AddRaftVoter) adds it. A broker-only node with this list alone asks these controllers in turn for the quorum (DescribeQuorum: the active controller and its endpoint), registers with the active controller and then follows the metadata log, learning the voters and their changes from it, also after the bootstrap servers left the quorum. |
//	| `controller.quorum.election.timeout.ms` | `1000` | How long a controller waits without hearing from the active controller before it starts an election; the active controller steps down after as long without a majority. A quorum of one uses at most 50 ms. |
//	| `broker.rack` | null | Rack of this broker, reported in Metadata. |
//	| `broker.heartbeat.interval.ms` | `2000` | How often a broker heartbeats to the active controller. |
//	| `broker.session.timeout.ms` | `9000` | A broker that has not heartbeated for this long is fenced and its leaderships move. |
//	| `listeners` | `PLAINTEXT://localhost:9092` | Listeners as NAME://host:port. An empty host means all interfaces. Kafka's default is PLAINTEXT://:9092. Unset while advertised.listeners is set: derived from it as the apache/kafka image does (same names and ports, all interfaces), plus this node's controller listener from controller.quorum.voters. Per broker at runtime (AlterConfigs), as Kafka: new names are bound and removed ones closed with their connections at once, kept in the metadata log across restarts; the registration (what Metadata advertises) stays the one made at start (docs/OPERATIONS.md "Adding and removing listeners at runtime"). (dynamic) |
//	| `advertised.listeners` | null | Listeners given to clients; controller listeners in it are not given out. Default: listeners. |
//	| `listener.security.protocol.map` | `CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL` | Map of listener name to security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. TLS and SASL use Kafka's ssl.* and sasl.* settings, per listener as listener.name.<l>.<setting>. (dynamic) |
//	| `controller.listener.names` | null | Names of the listeners used by the controller. They are not advertised to clients. |
//	| `inter.broker.listener.name` | null | Listener used between brokers. Default: PLAINTEXT if present, else the first non-controller listener. |
//	| `num.network.threads` | `3` | Accepted for compatibility; samsa uses a goroutine per connection. (dynamic) |
//	| `num.io.threads` | `8` | Accepted for compatibility; informational. (dynamic) |
//	| `socket.send.buffer.bytes` | `102400` | SO_SNDBUF of the connections the broker accepts, in bytes; -1 (or any value <= 0) leaves the OS default, which Linux autotunes up to tcp_wmem's maximum. With Kafka's default, broker and consumers spent less CPU per GB consumed than with the OS default (bench/README.md). |
//	| `socket.receive.buffer.bytes` | `-1` | SO_RCVBUF of the listeners' sockets, so of the connections they accept, in bytes (set before bind, as Kafka does); -1 (or any value <= 0) leaves the OS default, which Linux autotunes up to tcp_rmem's maximum. Kafka's default is 102400; samsa defaults to -1 because a fixed receive buffer turns off autotuning and cost samsa 23% more broker CPU per GB produced (bench/README.md, stop 31). |
//	| `socket.request.max.bytes` | `104857600` | Largest request the broker accepts, in bytes; a larger size prefix closes the connection before anything is allocated. |
//	| `queued.max.request.bytes` | `268435456` | Budget of request bytes read but not yet processed, over all connections; when it is used up, connections stop reading until requests finish. -1 is unbounded. Kafka's default is -1; samsa defaults to 256 MiB so that clients cannot exhaust memory. |
//	| `connections.max.idle.ms` | `600000` | Close connections with no request in progress and no traffic for this long. |
//	| `delegation.token.secret.key` | null | Secret key that derives each delegation token's HMAC (its SCRAM password). The same key must be set on every node. Unset or empty: delegation tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED). |
//	| `delegation.token.max.lifetime.ms` | `604800000` | Largest lifetime of a delegation token: no renewal extends it past its issue time plus this (7 days). |
//	| `delegation.token.expiry.time.ms` | `86400000` | How long a delegation token is valid after its creation or last renewal unless renewed (1 day). |
//	| `delegation.token.expiry.check.interval.ms` | `3600000` | How often the active controller removes expired delegation tokens from the metadata (1 hour). |
//	| `authorizer.class.name` | "" | The authorizer: empty (every client may do everything) or org.apache.kafka.metadata.authorizer.StandardAuthorizer, which checks the ACLs stored in the metadata log (CreateAcls, kafka-acls). Any other class refuses to start. |
//	| `super.users` | "" | Principals allowed everything whatever the ACLs, as User:a;User:b (semicolon-separated). Used with authorizer.class.name. |
//	| `allow.everyone.if.no.acl.found` | `false` | With an authorizer: allow an operation on a resource that no ACL matches. Kafka's default false denies it. |
//	| `max.connections` | `2147483647` | Largest number of client connections; at the limit the broker stops accepting until one closes (read at start). (dynamic) |
//	| `max.connections.per.ip` | `2147483647` | Largest number of connections from one IP address; a new connection over it is closed at once (read at start). (dynamic) |
//	| `max.connections.per.ip.overrides` | "" | Per-IP or host name limits overriding max.connections.per.ip, as host:count,... (read at start). (dynamic) |
//	| `max.connection.creation.rate` | `2147483647` | Largest rate of new connections per second over the broker's listeners (the inter-broker listener is not counted when there are others), measured over quota.window.*: over it the broker waits before it serves the next connection (read at start; ip entities' connection_creation_rate quotas limit each address). (dynamic) |
//	| `quota.window.num` | `11` | Number of samples client byte-rate, request and connection creation rate quotas are measured over (read at start). |
//	| `quota.window.size.seconds` | `1` | Length of each client quota sample, in seconds (read at start). |
//	| `controller.quota.window.num` | `11` | Number of samples of the controller mutation quota: a client's burst is its controller_mutation_rate times this many windows (read at start). |
//	| `controller.quota.window.size.seconds` | `1` | Length of each controller mutation quota sample, in seconds (read at start). |
//	| `log.dirs` | null | Directories of the partition logs. Overrides log.dir. |
//	| `log.dir` | `./samsa-data` | Log directories used when log.dirs is unset. Kafka's default is /tmp/kafka-logs. |
//	| `cordoned.log.dirs` | "" | Log directories (entries of log.dirs, or * for all) that get no new partition replicas (KIP-1066): the broker lists them to the controller, which places no new replica on a broker whose every directory is cordoned, and the broker puts none of its new logs in them. Existing replicas stay. Dynamic per broker (IncrementalAlterConfigs on the broker's own resource; deleting it restores the static value). (dynamic) |
//	| `metadata.log.dir` | null | Directory of the metadata log. Default: the first log directory. |
//	| `log.dir.failure.timeout.ms` | `30000` | With several log directories, how long a broker tries to report a failed one to the active controller before it halts (KIP-858). |
//	| `log.segment.bytes` | `1073741824` | Largest size of a log segment file. (dynamic) |
//	| `log.roll.ms` | null | Largest age of the active segment before it rolls. Overrides log.roll.hours. (dynamic) |
//	| `log.roll.hours` | `168` | Largest age of the active segment before it rolls, in hours. |
//	| `log.roll.jitter.ms` | null | Random jitter subtracted from the roll time. Overrides log.roll.jitter.hours. (dynamic) |
//	| `log.roll.jitter.hours` | `0` | Random jitter subtracted from the roll time, in hours. |
//	| `log.retention.ms` | null | How long to keep a log segment; -1 keeps forever. Overrides log.retention.minutes and log.retention.hours. (dynamic) |
//	| `log.retention.minutes` | null | Retention in minutes. Overrides log.retention.hours. |
//	| `log.retention.hours` | `168` | Retention in hours; negative keeps forever. |
//	| `log.retention.bytes` | `-1` | Largest size of a partition log before old segments are deleted; -1 is unlimited. (dynamic) |
//	| `log.retention.check.interval.ms` | `300000` | How often retention is checked. |
//	| `log.flush.interval.messages` | `9223372036854775807` | Messages appended before the log is fsynced. (dynamic) |
//	| `log.flush.interval.ms` | null | Largest time a message stays unflushed. Default: log.flush.scheduler.interval.ms. (dynamic) |
//	| `log.flush.scheduler.interval.ms` | `9223372036854775807` | How often the flusher checks whether logs need fsync. |
//	| `log.index.interval.bytes` | `4096` | Bytes of log between offset index entries. (dynamic) |
//	| `log.index.size.max.bytes` | `10485760` | Largest size of an offset or time index file. (dynamic) |
//	| `log.segment.delete.delay.ms` | `60000` | Delay before a deleted segment is removed from disk. (dynamic) |
//	| `log.cleanup.policy` | `delete` | Default cleanup policy: delete, compact, both, or neither (empty: segments are kept forever). (dynamic) |
//	| `log.cleaner.enable` | `true` | Run the log cleaner for compacted topics. |
//	| `log.cleaner.backoff.ms` | `15000` | How often the cleaner looks for logs to clean (read at start). (dynamic) |
//	| `log.cleaner.dedupe.buffer.size` | `134217728` | Memory for the key map of one clean (read at start). (dynamic) |
//	| `log.cleaner.delete.retention.ms` | `86400000` | How long tombstones are kept in compacted topics. (dynamic) |
//	| `log.cleaner.min.compaction.lag.ms` | `0` | Least time a message stays uncompacted. (dynamic) |
//	| `log.cleaner.max.compaction.lag.ms` | `9223372036854775807` | Largest time a message stays uncompacted. (dynamic) |
//	| `log.cleaner.min.cleanable.ratio` | `0.5` | Least dirty ratio for a log to be cleaned. (dynamic) |
//	| `log.preallocate` | `false` | Preallocate segment files. (dynamic) |
//	| `log.message.timestamp.type` | `CreateTime` | Timestamp stored in messages: CreateTime or LogAppendTime. (dynamic) |
//	| `log.message.timestamp.before.max.ms` | `9223372036854775807` | Largest allowed age of a message timestamp behind the broker clock. (dynamic) |
//	| `log.message.timestamp.after.max.ms` | `3600000` | Largest allowed lead of a message timestamp ahead of the broker clock. (dynamic) |
//	| `log.local.retention.ms` | `-2` | Local retention with tiered storage; -2 means use log.retention.ms. (dynamic) |
//	| `log.remote.copy.lag.ms` | `0` | Tiered storage upload lag in time; accepted, no effect. (dynamic) |
//	| `log.remote.copy.lag.bytes` | `-1` | Tiered storage upload lag in bytes; accepted, no effect. (dynamic) |
//	| `max.decompressed.message.bytes` | `2147483639` | Largest decompressed record; accepted, not enforced yet. (dynamic) |
//	| `log.local.retention.bytes` | `-2` | Local retention bytes with tiered storage; -2 means use log.retention.bytes. (dynamic) |
//	| `message.max.bytes` | `1048588` | Largest record batch size the broker accepts. (dynamic) |
//	| `compression.type` | `producer` | Compression of stored data: producer keeps the producer's codec. (dynamic) |
//	| `compression.gzip.level` | `-1` | gzip level when compression.type is gzip. (dynamic) |
//	| `compression.lz4.level` | `9` | lz4 level when compression.type is lz4. (dynamic) |
//	| `compression.zstd.level` | `3` | zstd level when compression.type is zstd. (dynamic) |
//	| `num.partitions` | `1` | Default number of partitions of a new topic. |
//	| `default.replication.factor` | `1` | Default replication factor of a new topic. |
//	| `auto.create.topics.enable` | `true` | Create a topic when a client asks for metadata of an unknown one. |
//	| `delete.topic.enable` | `true` | Allow DeleteTopics. |
//	| `min.insync.replicas` | `1` | Least in-sync replicas for an acks=all write. The active controller of a new cluster stores its value as the cluster-wide dynamic default, as Kafka 4.4 does for eligible leader replicas (KIP-966); a broker-level value cannot be set. (dynamic) |
//	| `unclean.leader.election.enable` | `false` | Allow an out-of-sync replica to become leader. When a broker is fenced or comes back the active controller elects at once; a leaderless partition whose topic allows it later (the setting changed at runtime) is elected at the next unclean.leader.election.interval.ms check, as in Kafka 4.4; kafka-leader-election --election-type unclean elects at once. (dynamic) |
//	| `unclean.leader.election.interval.ms` | `300000` | How often the active controller elects unclean leaders of leaderless partitions whose topic allows it (unclean.leader.election.enable), the first time one interval after it became active (Kafka's internal setting; 5 minutes). |
//	| `fetch.max.bytes` | `57671680` | Largest number of record bytes returned by one fetch (clients and followers); a request's max_bytes above it is lowered to it. |
//	| `replica.lag.time.max.ms` | `30000` | A follower that has not caught up for this long leaves the ISR. |
//	| `replica.fetch.max.bytes` | `1048576` | Record bytes a follower asks for per partition in one fetch (the first batch is returned even when larger). |
//	| `replica.fetch.response.max.bytes` | `10485760` | Record bytes a follower asks for in one fetch response, over all partitions (the leader also caps it at fetch.max.bytes). |
//	| `replica.socket.receive.buffer.bytes` | `-1` | SO_RCVBUF of a follower's fetch connections to partition leaders, in bytes (set before connect, as Kafka does); -1 (or any value <= 0) leaves the OS default. Kafka's default is 65536; samsa defaults to -1 (autotuned), as for socket.receive.buffer.bytes. |
//	| `replica.fetch.wait.max.ms` | `500` | How long a follower's fetch waits at the leader for data; at most replica.lag.time.max.ms. |
//	| `replica.fetch.backoff.ms` | `1000` | How long a follower waits after a failed fetch of a partition. |
//	| `replica.selector.class` | null | How a leader picks the replica a consumer reads from (KIP-392). Unset (Kafka's default) or org.apache.kafka.common.replica.LeaderSelector: the leader; org.apache.kafka.common.replica.RackAwareReplicaSelector: an in-sync replica in the consumer's client.rack (matched against broker.rack) that holds the fetch offset, the leader when it is in that rack. Followers serve consumers' Fetch v11+ up to their high watermark whatever this says. |
//	| `auto.leader.rebalance.enable` | `true` | Move leadership back to each partition's preferred replica when it is in the ISR, every leader.imbalance.check.interval.seconds. |
//	| `leader.imbalance.check.interval.seconds` | `300` | How often the active controller balances leaders (auto.leader.rebalance.enable). |
//	| `leader.imbalance.per.broker.percentage` | `10` | Accepted for compatibility; as in Kafka's KRaft controller, every imbalanced partition is balanced. |
//	| `max.incremental.fetch.session.cache.slots` | `1000` | Largest number of KIP-227 incremental fetch sessions kept; beyond it a new session may evict an idle or smaller one. |
//	| `group.share.record.lock.duration.ms` | `30000` | How long a share consumer holds the records it acquired before they become available again, unless its group sets share.record.lock.duration.ms. |
//	| `group.share.min.record.lock.duration.ms` | `15000` | Least record lock duration of a share group (bound of group.share.record.lock.duration.ms and of the group config share.record.lock.duration.ms). |
//	| `group.share.max.record.lock.duration.ms` | `60000` | Largest record lock duration of a share group (bound of group.share.record.lock.duration.ms and of the group config share.record.lock.duration.ms). |
//	| `group.share.delivery.count.limit` | `5` | Deliveries of a record to share consumers after which it is archived instead of made available again, unless its group sets share.delivery.count.limit. |
//	| `group.share.partition.max.record.locks` | `2000` | Most records of one share-partition in flight (acquired or awaiting redelivery) at once, unless its group sets share.partition.max.record.locks. |
//	| `group.share.max.share.sessions` | `2000` | Most share sessions a broker keeps; a new one beyond is SHARE_SESSION_LIMIT_REACHED. |
//	| `offsets.topic.num.partitions` | `50` | Partitions of __consumer_offsets. |
//	| `offsets.topic.replication.factor` | `3` | Replication factor of __consumer_offsets; created once that many brokers are unfenced (COORDINATOR_NOT_AVAILABLE until then). With a static controller.quorum.voters list (or no quorum settings) of fewer combined nodes, samsa caps it at their number, so that a single node works without settings. |
//	| `offsets.commit.timeout.ms` | `5000` | How long a group coordinator's write (an offset commit, a group change) waits for the in-sync replicas before it fails; group answers held behind such a write fail too. |
//	| `offsets.retention.minutes` | `10080` | How long committed offsets of an empty group are kept. |
//	| `offsets.retention.check.interval.ms` | `600000` | How often expired offsets are removed. |
//	| `offset.metadata.max.bytes` | `4096` | Largest metadata string of a committed offset; longer is OFFSET_METADATA_TOO_LARGE. Kafka accepts any integer; samsa requires at least 1. |
//	| `group.initial.rebalance.delay.ms` | `3000` | Delay of the first rebalance of a new classic group. |
//	| `group.min.session.timeout.ms` | `6000` | Least session timeout a classic group member may ask for. |
//	| `group.max.session.timeout.ms` | `1800000` | Largest session timeout a classic group member may ask for. |
//	| `group.max.size` | `2147483647` | Largest number of members of a classic group. |
//	| `group.coordinator.rebalance.protocols` | `classic,consumer,streams` | Group protocols served: classic (JoinGroup), consumer (KIP-848 ConsumerGroupHeartbeat) and streams (KIP-1071 StreamsGroupHeartbeat). share is accepted and changes nothing: share groups (KIP-932) are on by the share.version feature, as in Kafka 4.4. Deprecated in Kafka 4.4 (every protocol is on in 5.0, switched by the feature versions): leaving one out logs a warning at start, and ApiVersions still lists its APIs (answered UNSUPPORTED_VERSION), as Kafka. |
//	| `group.consumer.session.timeout.ms` | `45000` | Session timeout of a KIP-848 consumer group member. |
//	| `group.consumer.min.session.timeout.ms` | `45000` | Least session timeout of a KIP-848 consumer group. |
//	| `group.consumer.max.session.timeout.ms` | `60000` | Largest session timeout of a KIP-848 consumer group. |
//	| `group.consumer.heartbeat.interval.ms` | `5000` | Heartbeat interval given to KIP-848 consumer group members. |
//	| `group.consumer.min.heartbeat.interval.ms` | `5000` | Least heartbeat interval of a KIP-848 consumer group. |
//	| `group.consumer.max.heartbeat.interval.ms` | `15000` | Largest heartbeat interval of a KIP-848 consumer group. |
//	| `group.consumer.max.size` | `2147483647` | Largest number of members of a KIP-848 consumer group. |
//	| `group.share.session.timeout.ms` | `45000` | Session timeout of a KIP-932 share group member. |
//	| `group.share.min.session.timeout.ms` | `45000` | Least session timeout of a share group (bound of the group config share.session.timeout.ms). |
//	| `group.share.max.session.timeout.ms` | `60000` | Largest session timeout of a share group (bound of the group config share.session.timeout.ms). |
//	| `group.share.heartbeat.interval.ms` | `5000` | Heartbeat interval given to share group members. |
//	| `group.share.min.heartbeat.interval.ms` | `5000` | Least heartbeat interval of a share group (bound of the group config share.heartbeat.interval.ms). |
//	| `group.share.max.heartbeat.interval.ms` | `15000` | Largest heartbeat interval of a share group (bound of the group config share.heartbeat.interval.ms). |
//	| `group.share.max.size` | `200` | Largest number of members of a share group. |
//	| `group.streams.session.timeout.ms` | `45000` | Session timeout of a KIP-1071 streams group member (the group config streams.session.timeout.ms overrides it). |
//	| `group.streams.min.session.timeout.ms` | `45000` | Least session timeout of a streams group: bound of group.streams.session.timeout.ms (checked at start) and of the group config streams.session.timeout.ms. |
//	| `group.streams.max.session.timeout.ms` | `60000` | Largest session timeout of a streams group: bound of group.streams.session.timeout.ms (checked at start) and of the group config streams.session.timeout.ms. |
//	| `group.streams.heartbeat.interval.ms` | `5000` | Heartbeat interval given to streams group members (group config streams.heartbeat.interval.ms). |
//	| `group.streams.min.heartbeat.interval.ms` | `5000` | Least heartbeat interval of a streams group: bound of group.streams.heartbeat.interval.ms (checked at start) and of the group config streams.heartbeat.interval.ms. |
//	| `group.streams.max.heartbeat.interval.ms` | `15000` | Largest heartbeat interval of a streams group: bound of group.streams.heartbeat.interval.ms (checked at start) and of the group config streams.heartbeat.interval.ms. |
//	| `group.streams.max.standby.replicas` | `2` | Largest number of standby replicas of a streams group: bound of group.streams.num.standby.replicas (checked at start) and of the group config streams.num.standby.replicas. |
//	| `group.streams.max.size` | `2147483647` | Largest number of members of a streams group. |
//	| `group.streams.num.standby.replicas` | `0` | Standby replicas of each stateful task (a subtopology with changelog topics) of a streams group (group config streams.num.standby.replicas). |
//	| `group.streams.initial.rebalance.delay.ms` | `3000` | How long a new streams group waits for more members before its first assignment (group config streams.initial.rebalance.delay.ms). |
//	| `group.streams.acceptable.recovery.lag` | `10000` | Acceptable recovery lag told to streams group members. |
//	| `group.streams.task.offset.interval.ms` | `60000` | Interval at which streams group members report their task offsets. |
//	| `group.consumer.migration.policy` | `bidirectional` | Online migration of live groups between the classic protocol and KIP-848 (rolling restarts changing group.protocol): disabled, upgrade (a live classic group becomes a consumer group when a KIP-848 member joins it), downgrade (a consumer group left with only classic members becomes a classic group) or bidirectional; case insensitive. With disabled, classic members cannot join a consumer group. |
//	| `group.consumer.assignors` | `uniform,range` | Server-side assignors of KIP-848 groups, first is the default. Kafka's class names (org.apache.kafka.coordinator.group.assignor.UniformAssignor, ...RangeAssignor) are accepted too. |
//	| `transaction.max.timeout.ms` | `900000` | Largest transaction timeout a producer may ask for. |
//	| `transactional.id.expiration.ms` | `604800000` | Idle time after which a transactional id expires. |
//	| `producer.id.expiration.ms` | `86400000` | Idle time after which a producer id's state expires. (dynamic) |
//	| `producer.id.expiration.check.interval.ms` | `600000` | How often idle producers' state is looked for and removed. |
//	| `transaction.state.log.num.partitions` | `50` | Partitions of __transaction_state. |
//	| `transaction.state.log.replication.factor` | `3` | Replication factor of __transaction_state; created once that many brokers are unfenced. Capped like offsets.topic.replication.factor. |
//	| `transaction.state.log.min.isr` | `2` | min.insync.replicas of __transaction_state when it is created; samsa caps it at the topic's replication factor. |
//	| `transaction.state.log.segment.bytes` | `104857600` | Segment size of __transaction_state. |
//	| `transaction.abort.timed.out.transaction.cleanup.interval.ms` | `10000` | How often transactions past their timeout are aborted. |
//	| `transaction.remove.expired.transaction.cleanup.interval.ms` | `3600000` | How often expired transactional ids are removed. |
//	| `share.coordinator.state.topic.num.partitions` | `50` | Partitions of __share_group_state (share groups, KIP-932). |
//	| `share.coordinator.state.topic.replication.factor` | `3` | Replication factor of __share_group_state, created when first needed; capped like offsets.topic.replication.factor. |
//	| `share.coordinator.state.topic.min.isr` | `2` | min.insync.replicas of __share_group_state when it is created; samsa caps it at the topic's replication factor. |
//	| `share.coordinator.state.topic.segment.bytes` | `104857600` | Segment size of __share_group_state. |
//	| `share.coordinator.write.timeout.ms` | `5000` | How long a share state write waits to be replicated to the ISR. |
//	| `transaction.partition.verification.enable` | `true` | Reject transactional produce to a partition not added to the transaction (KIP-890). (dynamic) |
//	| `samsa.log.format` | `text` | Format of the log lines on standard error: text (key=value) or json (one JSON object per line, for log shippers). Environment: KAFKA_SAMSA_LOG_FORMAT. |
//	| `samsa.log.level` | `INFO` | Lowest level of the log lines written: DEBUG, INFO, WARN or ERROR. DEBUG also logs every setting's effective value and source at start. Environment: KAFKA_SAMSA_LOG_LEVEL. |
//	| `samsa.http.listener` | "" | Address (host:port, or http://host:port) of the HTTP listener that serves /metrics (Prometheus, with the JMX exporter's names), /healthz and /readyz. An empty host means all interfaces. Empty: no HTTP listener. Environment: KAFKA_SAMSA_HTTP_LISTENER. |
//
// END SETTINGS TABLE
package config
