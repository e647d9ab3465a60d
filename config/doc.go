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
// are skipped silently. Kafka settings samsa knows but does not implement
// (ssl.*, sasl.*, controller.quorum.voters, transaction.state.log.*, ...) are
// accepted and listed in Config.Ignored with a line in Config.Warnings. An
// unknown setting in the file or an override is an error wrapping
// ErrUnknownSetting; an unknown KAFKA_* variable is only a warning, because
// containers get unrelated KAFKA_* variables (Kubernetes injects KAFKA_PORT
// for a service named kafka). A bad value is an error wrapping
// ErrInvalidValue that names the setting and where it came from.
//
// # Differences from Kafka's defaults
//
//   - listeners is PLAINTEXT://localhost:9092 (Kafka: PLAINTEXT://:9092), so
//     a no-argument start is not reachable from other hosts.
//   - log.dir is ./samsa-data (Kafka: /tmp/kafka-logs).
//   - node.id defaults to 1 and process.roles to broker,controller (Kafka
//     requires both): samsa always runs broker and controller in one process.
//   - listener.security.protocol.map also maps CONTROLLER to PLAINTEXT.
//   - Only the PLAINTEXT security protocol is implemented; a listener mapped
//     to SSL or SASL_* fails Validate with ErrUnsupported.
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
// # Settings
//
// MarkdownTable renders the table of implemented broker settings for the
// README; TestDocTable keeps the copy below in sync (go test ./config -run
// TestDocTable -update rewrites it).
//
// BEGIN SETTINGS TABLE
// END SETTINGS TABLE
package config
