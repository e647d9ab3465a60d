package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func mustLoad(t *testing.T, args, env []string) *Config {
	t.Helper()
	c, err := Load(args, env)
	if err != nil {
		t.Fatalf("Load(%q, %q): %v", args, env, err)
	}
	return c
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	c := mustLoad(t, nil, nil)
	want := []Listener{{Name: "PLAINTEXT", Host: "localhost", Port: 9092}}
	if !reflect.DeepEqual(c.Listeners, want) || !reflect.DeepEqual(c.AdvertisedListeners, want) {
		t.Fatalf("listeners %v advertised %v", c.Listeners, c.AdvertisedListeners)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"NodeID", c.NodeID, int32(1)},
		{"ProcessRoles", c.ProcessRoles, []string{"broker", "controller"}},
		{"LogDirs", c.LogDirs, []string{"./samsa-data"}},
		{"NumPartitions", c.NumPartitions, int32(1)},
		{"DefaultReplicationFactor", c.DefaultReplicationFactor, int16(1)},
		{"AutoCreateTopicsEnable", c.AutoCreateTopicsEnable, true},
		{"DeleteTopicEnable", c.DeleteTopicEnable, true},
		{"MessageMaxBytes", c.MessageMaxBytes, int32(1048588)},
		{"SocketRequestMaxBytes", c.SocketRequestMaxBytes, int32(104857600)},
		{"LogSegmentBytes", c.LogSegmentBytes, int64(1073741824)},
		{"LogRollMs", c.LogRollMs, int64(168 * 3600000)},
		{"LogRetentionMs", c.LogRetentionMs, int64(168 * 3600000)},
		{"LogRetentionBytes", c.LogRetentionBytes, int64(-1)},
		{"LogRetentionCheckIntervalMs", c.LogRetentionCheckIntervalMs, int64(300000)},
		{"LogFlushIntervalMessages", c.LogFlushIntervalMessages, int64(math.MaxInt64)},
		{"LogFlushIntervalMs", c.LogFlushIntervalMs, int64(math.MaxInt64)},
		{"LogIndexIntervalBytes", c.LogIndexIntervalBytes, int32(4096)},
		{"LogIndexSizeMaxBytes", c.LogIndexSizeMaxBytes, int32(10485760)},
		{"LogSegmentDeleteDelayMs", c.LogSegmentDeleteDelayMs, int64(60000)},
		{"LogCleanupPolicy", c.LogCleanupPolicy, []string{"delete"}},
		{"LogMessageTimestampType", c.LogMessageTimestampType, "CreateTime"},
		{"CompressionType", c.CompressionType, "producer"},
		{"MinInsyncReplicas", c.MinInsyncReplicas, int32(1)},
		{"OffsetsTopicNumPartitions", c.OffsetsTopicNumPartitions, int32(50)},
		{"OffsetsTopicReplicationFactor", c.OffsetsTopicReplicationFactor, int16(3)},
		{"OffsetsRetentionMinutes", c.OffsetsRetentionMinutes, int64(10080)},
		{"GroupInitialRebalanceDelayMs", c.GroupInitialRebalanceDelayMs, int64(3000)},
		{"GroupMinSessionTimeoutMs", c.GroupMinSessionTimeoutMs, int32(6000)},
		{"GroupMaxSessionTimeoutMs", c.GroupMaxSessionTimeoutMs, int32(1800000)},
		{"TransactionMaxTimeoutMs", c.TransactionMaxTimeoutMs, int32(900000)},
		{"TransactionalIDExpirationMs", c.TransactionalIDExpirationMs, int32(604800000)},
		{"ProducerIDExpirationMs", c.ProducerIDExpirationMs, int32(86400000)},
		{"NumNetworkThreads", c.NumNetworkThreads, int32(3)},
		{"NumIOThreads", c.NumIOThreads, int32(8)},
		{"InterBrokerListenerName", c.InterBrokerListenerName, "PLAINTEXT"},
		{"ClusterID", c.ClusterID, ""},
		{"SecurityMap", c.ListenerSecurityProtocolMap, map[string]string{"CONTROLLER": "PLAINTEXT", "PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL"}},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
	if c.Sources["log.retention.hours"] != SourceDefault || c.Values["log.retention.hours"] != "168" {
		t.Errorf("log.retention.hours: %q %v", c.Values["log.retention.hours"], c.Sources["log.retention.hours"])
	}
	if _, ok := c.Values["log.retention.ms"]; ok {
		t.Errorf("log.retention.ms should be null by default")
	}
	if len(c.Ignored) != 0 || len(c.Warnings) != 0 {
		t.Errorf("ignored %v warnings %v", c.Ignored, c.Warnings)
	}
}

func TestEnvToKey(t *testing.T) {
	tests := []struct {
		env, key string
		ok       bool
	}{
		{"KAFKA_LOG_DIRS", "log.dirs", true},
		{"KAFKA_ADVERTISED_LISTENERS", "advertised.listeners", true},
		{"KAFKA_NODE_ID", "node.id", true},
		{"KAFKA_AUTO_CREATE_TOPICS_ENABLE", "auto.create.topics.enable", true},
		{"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "listener.security.protocol.map", true},
		{"KAFKA_LISTENER_NAME_CLIENT_SASL__MECH", "listener.name.client.sasl_mech", true},
		{"KAFKA_CONFLUENT_FOO___BAR", "confluent.foo-bar", true},
		{"KAFKA_A____B", "a-.b", true}, // like the image's sed: "___" is taken first, then "_"
		{"KAFKA_CFG_LOG_DIRS", "log.dirs", true},
		{"KAFKA_CFG_NODE__X", "node_x", true},
		{"KAFKA_HEAP_OPTS", "", false},
		{"KAFKA_OPTS", "", false},
		{"KAFKA_VERSION", "", false},
		{"KAFKA_HOME", "", false},
		{"PATH", "", false},
		{"KAFKA_", "", false},
	}
	for _, tt := range tests {
		key, ok := envToKey(tt.env)
		if key != tt.key || ok != tt.ok {
			t.Errorf("envToKey(%s) = %q, %v; want %q, %v", tt.env, key, ok, tt.key, tt.ok)
		}
		if tt.ok && !strings.HasPrefix(tt.env, "KAFKA_CFG_") && tt.env != "KAFKA_A____B" {
			if back := KeyToEnv(tt.key); back != tt.env {
				t.Errorf("KeyToEnv(%s) = %s, want %s", tt.key, back, tt.env)
			}
		}
	}
}

func TestEnv(t *testing.T) {
	env := []string{
		"PATH=/usr/bin",
		"KAFKA_HEAP_OPTS=-Xmx1G",
		"KAFKA_JVM_PERFORMANCE_OPTS=-XX:+UseG1GC",
		"KAFKA_NODE_ID=3",
		"KAFKA_PROCESS_ROLES=broker,controller",
		"KAFKA_LISTENERS=PLAINTEXT://:19092,CONTROLLER://:9093,PLAINTEXT_HOST://0.0.0.0:9092",
		"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://kafka:19092,PLAINTEXT_HOST://localhost:9092",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
		"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
		"KAFKA_CONTROLLER_QUORUM_VOTERS=3@kafka:9093",
		"KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1",
		"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=1",
		"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR=1",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0",
		"KAFKA_LOG_DIRS=/var/lib/kafka/data,/mnt/two",
		"KAFKA_AUTO_CREATE_TOPICS_ENABLE=false",
		// Injected by Kubernetes for a Service named kafka: skipped silently.
		"KAFKA_PORT=tcp://10.0.0.1:9092",
		"KAFKA_SERVICE_HOST=10.0.0.1",
		"KAFKA_SERVICE_PORT=9092",
		"KAFKA_SERVICE_PORT_BROKER=9092",
		"KAFKA_PORT_9092_TCP=tcp://10.0.0.1:9092",
		"KAFKA_PORT_9092_TCP_ADDR=10.0.0.1",
		"KAFKA_PORT_9092_TCP_PORT=9092",
		"KAFKA_PORT_9092_TCP_PROTO=tcp",
		"CLUSTER_ID=MkU3OEVBNTcwNTJENDM2Qk",
	}
	c := mustLoad(t, nil, env)
	if c.NodeID != 3 || c.ClusterID != "MkU3OEVBNTcwNTJENDM2Qk" || c.AutoCreateTopicsEnable {
		t.Fatalf("node %d cluster %q auto %v", c.NodeID, c.ClusterID, c.AutoCreateTopicsEnable)
	}
	if !reflect.DeepEqual(c.LogDirs, []string{"/var/lib/kafka/data", "/mnt/two"}) {
		t.Errorf("LogDirs %v", c.LogDirs)
	}
	wantL := []Listener{{"PLAINTEXT", "", 19092}, {"CONTROLLER", "", 9093}, {"PLAINTEXT_HOST", "0.0.0.0", 9092}}
	if !reflect.DeepEqual(c.Listeners, wantL) {
		t.Errorf("Listeners %v", c.Listeners)
	}
	wantA := []Listener{{"PLAINTEXT", "kafka", 19092}, {"PLAINTEXT_HOST", "localhost", 9092}}
	if !reflect.DeepEqual(c.AdvertisedListeners, wantA) {
		t.Errorf("AdvertisedListeners %v", c.AdvertisedListeners)
	}
	if !reflect.DeepEqual(c.ListenerSecurityProtocolMap, map[string]string{"CONTROLLER": "PLAINTEXT", "PLAINTEXT": "PLAINTEXT", "PLAINTEXT_HOST": "PLAINTEXT"}) {
		t.Errorf("map %v", c.ListenerSecurityProtocolMap)
	}
	if c.TransactionStateLogReplicationFactor != 1 {
		t.Errorf("transaction state rf %d", c.TransactionStateLogReplicationFactor)
	}
	if c.OffsetsTopicReplicationFactor != 1 || c.GroupInitialRebalanceDelayMs != 0 {
		t.Errorf("offsets rf %d delay %d", c.OffsetsTopicReplicationFactor, c.GroupInitialRebalanceDelayMs)
	}
	if c.TransactionStateLogMinISR != 1 {
		t.Errorf("transaction state min isr %d", c.TransactionStateLogMinISR)
	}
	if len(c.Ignored) != 0 || len(c.Warnings) != 0 {
		t.Errorf("Ignored %v, Warnings %v, want none", c.Ignored, c.Warnings)
	}
	if c.Sources["log.dirs"] != SourceStatic || c.Sources["num.partitions"] != SourceDefault {
		t.Errorf("sources %v %v", c.Sources["log.dirs"], c.Sources["num.partitions"])
	}
}

func TestEnvDefaultAdvertisedExcludesController(t *testing.T) {
	c := mustLoad(t, nil, []string{
		"KAFKA_LISTENERS=PLAINTEXT://:9092,CONTROLLER://:9093",
		"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
	})
	if want := []Listener{{"PLAINTEXT", "", 9092}}; !reflect.DeepEqual(c.AdvertisedListeners, want) {
		t.Fatalf("advertised %v", c.AdvertisedListeners)
	}
}

func TestBitnamiEnv(t *testing.T) {
	c := mustLoad(t, nil, []string{
		"KAFKA_CFG_NODE_ID=7",
		"KAFKA_CFG_LOG_DIRS=/bitnami/kafka/data",
		"KAFKA_CFG_NUM_PARTITIONS=4",
		"KAFKA_NUM_PARTITIONS=2", // KAFKA_CFG_ wins
		"KAFKA_KRAFT_CLUSTER_ID=q1Sh-9_ISia_zwGINzRvyQ",
		"KAFKA_ENABLE_KRAFT=yes",
		"KAFKA_CFG_SASL_ENABLED_MECHANISMS=PLAIN",
	})
	if c.NodeID != 7 || c.NumPartitions != 4 || c.ClusterID != "q1Sh-9_ISia_zwGINzRvyQ" || c.LogDirs[0] != "/bitnami/kafka/data" {
		t.Fatalf("node %d parts %d cluster %q dirs %v", c.NodeID, c.NumPartitions, c.ClusterID, c.LogDirs)
	}
	if !reflect.DeepEqual(c.Ignored, []string{"sasl.enabled.mechanisms"}) {
		t.Errorf("Ignored %v", c.Ignored)
	}
}

func TestPrecedence(t *testing.T) {
	file := writeFile(t, "num.partitions=2\nlog.retention.hours=24\nmessage.max.bytes=1000\ndefault.replication.factor=1\n")
	env := []string{"KAFKA_NUM_PARTITIONS=3", "KAFKA_MESSAGE_MAX_BYTES=2000"}
	tests := []struct {
		name       string
		args       []string
		env        []string
		partitions int32
		maxBytes   int32
		retention  int64
	}{
		{"defaults", nil, nil, 1, 1048588, 168 * 3600000},
		{"file", []string{"--config", file}, nil, 2, 1000, 24 * 3600000},
		{"positional file", []string{file}, nil, 2, 1000, 24 * 3600000},
		{"env over file", []string{"--config", file}, env, 3, 2000, 24 * 3600000},
		{"override over env", []string{"--config=" + file, "--override", "num.partitions=9", "--override", "log.retention.ms=5"}, env, 9, 2000, 5},
		{"only the winning value is validated", []string{"--config", writeFile(t, "num.partitions=zero\n")}, []string{"KAFKA_NUM_PARTITIONS=6"}, 6, 1048588, 168 * 3600000},
		{"last override wins", []string{"--override", "num.partitions=4", "--override", "num.partitions=5"}, nil, 5, 1048588, 168 * 3600000},
		{"minutes over hours", []string{"--override", "log.retention.minutes=2"}, nil, 1, 1048588, 120000},
		{"negative hours is unlimited", []string{"--override", "log.retention.hours=-1"}, nil, 1, 1048588, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.args, tt.env)
			if c.NumPartitions != tt.partitions || c.MessageMaxBytes != tt.maxBytes || c.LogRetentionMs != tt.retention {
				t.Fatalf("partitions %d maxBytes %d retention %d", c.NumPartitions, c.MessageMaxBytes, c.LogRetentionMs)
			}
		})
	}
}

func TestProperties(t *testing.T) {
	text := "\ufeff# comment\n" +
		"! also a comment\n" +
		"   \n" +
		"num.partitions=3\n" +
		"log.dirs : /a,\\\n" +
		"           /b\n" +
		"  message.max.bytes   2048\n" +
		"broker.rack=r\\u0031\\t\n" +
		"compression.type=gzip\r\n" +
		"key\\=with\\:sep = v\n" +
		"empty=\n" +
		"trailing=x\\\\\n" +
		"last=y\\"
	props, err := parseProperties(text)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range props {
		got[p.Key] = p.Value
	}
	want := map[string]string{
		"num.partitions":    "3",
		"log.dirs":          "/a,/b",
		"message.max.bytes": "2048",
		"broker.rack":       "r1\t",
		"compression.type":  "gzip",
		"key=with:sep":      "v",
		"empty":             "",
		"trailing":          `x\`,
		"last":              "y",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if props[1].Line != 5 {
		t.Errorf("log.dirs line %d, want 5", props[1].Line)
	}
	if _, err := parseProperties("a=\\u12"); err == nil {
		t.Errorf("short \\u escape accepted")
	}
}

func TestLoadFile(t *testing.T) {
	file := writeFile(t, `# server.properties
process.roles=broker,controller
node.id=2
controller.quorum.voters=2@localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
advertised.listeners: PLAINTEXT://broker1:9092
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=/tmp/kraft-combined-logs
num.network.threads=3
socket.listen.backlog.size=50
log.segment.bytes=1048576
ssl.keystore.location=/x
`)
	c := mustLoad(t, []string{"--config", file}, nil)
	if c.NodeID != 2 || c.LogSegmentBytes != 1048576 || c.AdvertisedListeners[0].Host != "broker1" {
		t.Fatalf("node %d seg %d adv %v", c.NodeID, c.LogSegmentBytes, c.AdvertisedListeners)
	}
	if want := []string{"socket.listen.backlog.size", "ssl.keystore.location"}; !reflect.DeepEqual(c.Ignored, want) {
		t.Errorf("Ignored %v", c.Ignored)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		is   error
		msg  string
	}{
		{"bad int", []string{"--override", "num.partitions=abc"}, nil, ErrInvalidValue, "num.partitions"},
		{"int out of range", []string{"--override", "num.partitions=0"}, nil, ErrInvalidValue, "num.partitions"},
		{"int overflow", []string{"--override", "message.max.bytes=9999999999"}, nil, ErrInvalidValue, "message.max.bytes"},
		{"bad bool env", nil, []string{"KAFKA_AUTO_CREATE_TOPICS_ENABLE=yes"}, ErrInvalidValue, "auto.create.topics.enable"},
		{"bad enum", []string{"--override", "compression.type=brotli"}, nil, ErrInvalidValue, "compression.type"},
		{"bad policy", []string{"--override", "log.cleanup.policy=delete,bogus"}, nil, ErrInvalidValue, "log.cleanup.policy"},
		{"segment too small", []string{"--override", "log.segment.bytes=1000"}, nil, ErrInvalidValue, "log.segment.bytes"},
		{"bad listener", []string{"--override", "listeners=localhost:9092"}, nil, ErrInvalidValue, "listeners"},
		{"port range", []string{"--override", "listeners=PLAINTEXT://:70000"}, nil, ErrInvalidValue, "listeners"},
		{"duplicate listener", []string{"--override", "listeners=PLAINTEXT://:1,PLAINTEXT://:2"}, nil, ErrInvalidValue, "listeners"},
		{"advertised not in listeners", []string{"--override", "listeners=PLAINTEXT://:9092", "--override", "advertised.listeners=OTHER://h:1"}, nil, ErrInvalid, "OTHER is not in listeners"},
		{"listener without protocol", []string{"--override", "listeners=FOO://:9092"}, nil, ErrInvalid, "FOO has no entry"},
		{"ssl listener without keystore", []string{"--override", "listeners=SSL://:9093"}, nil, ErrInvalid, "no keystore"},
		// A SASL controller listener this node could not log in to
		// (Kafka 4.4 accepts secured controller listeners; samsa refuses
		// the ones whose controller logins would fail).
		{"sasl controller listener gssapi", nil, slices.DeleteFunc(saslControllerEnv(), func(kv string) bool { return strings.HasPrefix(kv, "KAFKA_SASL_MECHANISM_CONTROLLER_PROTOCOL=") }), ErrUnsupported, "sasl.mechanism.controller.protocol=GSSAPI"},
		{"sasl controller mechanism not enabled", nil, append(saslControllerEnv(), "KAFKA_SASL_MECHANISM_CONTROLLER_PROTOCOL=SCRAM-SHA-512"), ErrInvalid, "not enabled on the controller listener CONTROLLER"},
		{"sasl controller without username", nil, append(saslControllerEnv(),
			`KAFKA_LISTENER_NAME_CONTROLLER_PLAIN_SASL_JAAS_CONFIG=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";`), ErrInvalid, "no username and password"},
		{"bad protocol map", []string{"--override", "listener.security.protocol.map=A:TLS"}, nil, ErrInvalidValue, "listener.security.protocol.map"},
		{"negative node", []string{"--override", "node.id=-1"}, nil, ErrInvalidValue, "node.id"},
		{"node and broker id disagree", []string{"--override", "node.id=1", "--override", "broker.id=2"}, nil, ErrInvalid, "disagree"},
		{"duplicate port", []string{"--override", "listeners=PLAINTEXT://:9092,OTHER://localhost:9092", "--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"}, nil, ErrInvalid, "same port"},
		{"advertise 0.0.0.0", []string{"--override", "advertised.listeners=PLAINTEXT://0.0.0.0:9092"}, nil, ErrInvalid, "meta-address"},
		{"bad role", []string{"--override", "process.roles=worker"}, nil, ErrInvalidValue, "process.roles"},
		{"duplicate log dir", []string{"--override", "log.dirs=/a,/a"}, nil, ErrInvalidValue, "duplicate"},
		{"empty log dirs", nil, []string{"KAFKA_LOG_DIRS="}, ErrInvalidValue, "log.dirs"},
		{"unknown flag", []string{"--nope"}, nil, ErrUsage, "nope"},
		{"override without =", []string{"--override", "num.partitions"}, nil, ErrUsage, "key=value"},
		{"two positional", []string{"a", "b"}, nil, ErrUsage, "unexpected"},
		{"help", []string{"-h"}, nil, ErrHelp, "help"},
		{"help long", []string{"--help"}, nil, ErrHelp, "help"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.args, tt.env)
			if !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %q, want it to contain %q", err, tt.msg)
			}
		})
	}
	if _, err := Load([]string{"--config", filepath.Join(t.TempDir(), "missing")}, nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// saslControllerEnv is Kafka 4.4's documented SASL controller listener,
// as a compose file sets it (kafka-docs "Authentication using SASL", KRaft
// controllers).
func saslControllerEnv() []string {
	return []string{
		"KAFKA_NODE_ID=1", "KAFKA_PROCESS_ROLES=broker,controller",
		"KAFKA_LISTENERS=PLAINTEXT://:9092,CONTROLLER://:9093",
		"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
		"KAFKA_CONTROLLER_QUORUM_VOTERS=1@localhost:9093",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"KAFKA_SASL_MECHANISM_CONTROLLER_PROTOCOL=PLAIN",
		"KAFKA_LISTENER_NAME_CONTROLLER_SASL_ENABLED_MECHANISMS=PLAIN",
		`KAFKA_LISTENER_NAME_CONTROLLER_PLAIN_SASL_JAAS_CONFIG=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`,
	}
}

// TestSecuredControllerListener: secured controller listeners load (they
// were refused before samsa's Raft transport went through them), with the
// mechanism and credentials this node logs in to the controllers with; a
// broker-only node, which does not list the controller listener, gets its
// client side from the same settings.
func TestSecuredControllerListener(t *testing.T) {
	c := mustLoad(t, nil, saslControllerEnv())
	ls := c.Security.Listeners["CONTROLLER"]
	if !ls.UsesSASL() || ls.UsesTLS() || c.Security.ControllerMechanism != "PLAIN" {
		t.Fatalf("controller listener %+v mechanism %s", ls, c.Security.ControllerMechanism)
	}
	if got := ls.SASL.Credentials["PLAIN"]; got.Username != "admin" || got.Password != "admin-secret" || ls.SASL.PlainUsers["admin"] != "admin-secret" {
		t.Fatalf("credentials %+v users %v", got, ls.SASL.PlainUsers)
	}
	env := []string{
		"KAFKA_NODE_ID=4", "KAFKA_PROCESS_ROLES=broker",
		"KAFKA_LISTENERS=PLAINTEXT://:9092", "KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092",
		"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
		"KAFKA_CONTROLLER_QUORUM_VOTERS=1@localhost:9093",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:SASL_SSL,PLAINTEXT:PLAINTEXT",
		"KAFKA_SASL_MECHANISM_CONTROLLER_PROTOCOL=SCRAM-SHA-512",
		"KAFKA_SSL_TRUSTSTORE_LOCATION=/certs/ca.pem",
		"KAFKA_SSL_KEYSTORE_LOCATION=/certs/node.pem",
		`KAFKA_LISTENER_NAME_CONTROLLER_SCRAM-SHA-512_SASL_JAAS_CONFIG=org.apache.kafka.common.security.scram.ScramLoginModule required username="ctl" password="ctl-secret";`,
	}
	b := mustLoad(t, nil, env)
	ls, ok := b.Security.Listeners["CONTROLLER"]
	if !ok || !ls.UsesSASL() || !ls.UsesTLS() || ls.SASL.Credentials["SCRAM-SHA-512"].Username != "ctl" || ls.TLS.TruststoreLocation != "/certs/ca.pem" {
		t.Fatalf("broker-only node's controller listener %+v", ls)
	}
	// Client TLS needs no keystore (no client certificate asked for).
	noKeystore := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "KAFKA_SSL_KEYSTORE_LOCATION=") })
	if nb := mustLoad(t, nil, noKeystore); nb.Security.Listeners["CONTROLLER"].TLS == nil {
		t.Fatal("broker-only node without a keystore: no client TLS for the controller listener")
	}
	// A controller serves TLS and SASL only on a listed controller listener.
	unlisted := append(saslControllerEnv(), "KAFKA_LISTENERS=PLAINTEXT://:9092")
	if _, err := Load(nil, unlisted); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not in listeners") {
		t.Fatalf("secured controller listener not in listeners: %v", err)
	}
	// bitnami's controller user is the controller listener's, and the
	// client users are not valid there.
	bit := append(saslControllerEnv(), `KAFKA_LISTENER_NAME_CONTROLLER_PLAIN_SASL_JAAS_CONFIG=org.apache.kafka.common.security.plain.PlainLoginModule required;`,
		"KAFKA_CONTROLLER_USER=controller_user", "KAFKA_CONTROLLER_PASSWORD=cpw", "KAFKA_CLIENT_USERS=alice", "KAFKA_CLIENT_PASSWORDS=apw")
	bc := mustLoad(t, nil, bit)
	cl := bc.Security.Listeners["CONTROLLER"]
	if cl.SASL.Credentials["PLAIN"].Username != "controller_user" || cl.SASL.PlainUsers["controller_user"] != "cpw" || cl.SASL.PlainUsers["alice"] != "" {
		t.Fatalf("bitnami controller listener %+v", cl.SASL)
	}
}

func TestBrokerIDAlias(t *testing.T) {
	c := mustLoad(t, []string{"--override", "broker.id=5"}, nil)
	if c.NodeID != 5 || c.Values["node.id"] != "5" {
		t.Fatalf("NodeID %d values %q", c.NodeID, c.Values["node.id"])
	}
}

func TestUnknownEnvIsNotAnError(t *testing.T) {
	c := mustLoad(t, nil, []string{"KAFKA_PORT=9092", "KAFKA_TOTALLY_MADE_UP=1"})
	if !reflect.DeepEqual(c.Ignored, []string{"port"}) || !reflect.DeepEqual(c.UnknownEnv, []string{"KAFKA_TOTALLY_MADE_UP"}) {
		t.Fatalf("Ignored %v UnknownEnv %v", c.Ignored, c.UnknownEnv)
	}
}

// TestUnknownEnvNamedAndSuggested is the regression test for issue 11 item
// 18: a KAFKA_* variable that is no Kafka setting at all (a typo such as
// KAFKA_NUM_PARTITION) was logged with the same "accepted but not
// implemented" line as a real Kafka setting samsa does not implement. It
// is now reported as unknown, naming the variable and the closest setting
// as a variable; a real but unimplemented setting keeps its own message;
// the image's own variables (KAFKA_HEAP_OPTS, ...) get only a DEBUG line;
// and none of them stops the broker.
func TestUnknownEnvNamedAndSuggested(t *testing.T) {
	c := mustLoad(t, nil, []string{
		"KAFKA_NUM_PARTITION=3",                 // typo of num.partitions
		"KAFKA_AUTO_LEADER_REBALANCE_ENABLED=x", // typo of an accepted-but-unimplemented setting
		"KAFKA_RETENTION_MS=1000",               // a topic setting given as a broker one
		"KAFKA_QQQQ_ZZZZ=1",                     // nothing close
		"KAFKA_SOCKET_LISTEN_BACKLOG_SIZE=64",   // real Kafka setting, not implemented
		"KAFKA_HEAP_OPTS=-Xmx1G", "KAFKA_JVM_PERFORMANCE_OPTS=-server", "KAFKA_OPTS=-Dx", "KAFKA_LOG4J_OPTS=-Dy",
		"KAFKA_GC_LOG_OPTS=-Xlog", "KAFKA_JMX_OPTS=-Dz", "KAFKA_DEBUG=y",
	})
	if want := []string{"KAFKA_NUM_PARTITION", "KAFKA_AUTO_LEADER_REBALANCE_ENABLED", "KAFKA_RETENTION_MS", "KAFKA_QQQQ_ZZZZ"}; !reflect.DeepEqual(c.UnknownEnv, want) {
		t.Errorf("UnknownEnv %v, want %v", c.UnknownEnv, want)
	}
	if !reflect.DeepEqual(c.Ignored, []string{"socket.listen.backlog.size"}) {
		t.Errorf("Ignored %v", c.Ignored)
	}
	all := strings.Join(c.Warnings, "\n")
	for _, want := range []string{
		"environment variable KAFKA_NUM_PARTITION: num.partition is not a Kafka setting; did you mean num.partitions (KAFKA_NUM_PARTITIONS)?",
		"KAFKA_AUTO_LEADER_REBALANCE_ENABLED: auto.leader.rebalance.enabled is not a Kafka setting; did you mean auto.leader.rebalance.enable (KAFKA_AUTO_LEADER_REBALANCE_ENABLE)?",
		"retention.ms is a topic setting, the broker default is log.retention.ms (KAFKA_LOG_RETENTION_MS)",
		"environment variable KAFKA_QQQQ_ZZZZ: qqqq.zzzz is not a Kafka setting\n",
		"ignoring socket.listen.backlog.size (env KAFKA_SOCKET_LISTEN_BACKLOG_SIZE): Kafka setting not implemented by samsa",
	} {
		if !strings.Contains(all+"\n", want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	if len(c.Warnings) != 5 {
		t.Errorf("%d warnings, want 5 (plumbing variables are not warned about):\n%s", len(c.Warnings), all)
	}
	levels := map[string]int{}
	for _, n := range c.Notices {
		levels[n.Level.String()+" "+n.Msg]++
	}
	if levels["WARN unknown setting in the environment, ignored"] != 4 || levels["WARN setting accepted but not implemented"] != 1 ||
		levels["DEBUG environment variable is not a setting (container image or Kubernetes), ignored"] != 7 || len(levels) != 3 {
		t.Errorf("notices %v", levels)
	}
}

func TestDefsAreConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range BrokerDefs {
		if seen[d.Name] {
			t.Errorf("%s defined twice", d.Name)
		}
		seen[d.Name] = true
		if d.Doc == "" {
			t.Errorf("%s has no doc", d.Name)
		}
		if d.HasDefault {
			if err := d.Validate(d.Default); err != nil {
				t.Errorf("%s: default %q invalid: %v", d.Name, d.Default, err)
			}
		}
		if isIgnoredKey(d.Name) && !strings.HasPrefix(d.Name, "log.cleaner.") {
			t.Logf("%s is implemented and also matches the ignored list; implemented wins", d.Name)
		}
	}
	for _, td := range TopicDefs() {
		if td.BrokerSynonym != "" && !seen[td.BrokerSynonym] {
			t.Errorf("topic %s: synonym %s is not a broker def", td.Name, td.BrokerSynonym)
		}
		if err := td.Validate(td.Default); err != nil {
			t.Errorf("topic %s: default %q invalid: %v", td.Name, td.Default, err)
		}
	}
}

func TestValidateTopicConfig(t *testing.T) {
	tests := []struct {
		overrides map[string]string
		ok        bool
	}{
		{map[string]string{"retention.ms": "-1"}, true},
		{map[string]string{"retention.ms": "-2"}, false},
		{map[string]string{"segment.bytes": "1"}, false},
		{map[string]string{"segment.bytes": "14"}, true},
		{map[string]string{"cleanup.policy": "compact,delete"}, true},
		{map[string]string{"cleanup.policy": "compact"}, true},
		{map[string]string{"cleanup.policy": "bogus"}, false},
		{map[string]string{"compression.type": "foo"}, false},
		{map[string]string{"compression.type": "uncompressed"}, true},
		{map[string]string{"compression.type": "producer"}, true},
		{map[string]string{"segment.ms": "0"}, false},
		{map[string]string{"min.insync.replicas": "2", "max.message.bytes": "100"}, true},
		{map[string]string{"min.cleanable.dirty.ratio": "1.5"}, false},
		{map[string]string{"message.timestamp.type": "LogAppendTime"}, true},
		{map[string]string{"preallocate": "maybe"}, false},
		{map[string]string{"no.such.config": "1"}, false},
		{map[string]string{"message.downconversion.enable": "true"}, false}, // removed in Kafka 4.0
		{nil, true},
	}
	for _, tt := range tests {
		err := ValidateTopicConfig(tt.overrides)
		if tt.ok {
			if err != nil {
				t.Errorf("%v: %v", tt.overrides, err)
			}
			continue
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Code != kerr.InvalidConfig.Code {
			t.Errorf("%v: err = %v, want INVALID_CONFIG", tt.overrides, err)
		}
	}
}

func TestTopicConfig(t *testing.T) {
	c := mustLoad(t, []string{"--override", "log.retention.hours=1", "--override", "log.cleanup.policy=compact"}, nil)
	tc := c.TopicConfig(nil)
	if tc.RetentionMs != 3600000 || !tc.CleanupPolicyCompact || tc.CleanupPolicyDelete || tc.SegmentBytes != 1073741824 {
		t.Fatalf("%+v", tc)
	}
	if tc.FlushMs != math.MaxInt64 || tc.FlushMessages != math.MaxInt64 || tc.SegmentMs != 168*3600000 || tc.MaxMessageBytes != 1048588 {
		t.Fatalf("%+v", tc)
	}
	if tc.CompressionType != "producer" || tc.MessageTimestampType != "CreateTime" || tc.MinCleanableDirtyRatio != 0.5 {
		t.Fatalf("%+v", tc)
	}
	tc = c.TopicConfig(map[string]string{"retention.ms": "-1", "segment.bytes": "100", "cleanup.policy": "compact,delete", "compression.type": "zstd"})
	if tc.RetentionMs != -1 || tc.SegmentBytes != 100 || !tc.CleanupPolicyCompact || !tc.CleanupPolicyDelete || tc.CompressionType != "zstd" {
		t.Fatalf("%+v", tc)
	}

	tests := []struct {
		name      string
		overrides map[string]string
		value     string
		source    Source
	}{
		{"retention.ms", nil, "3600000", SourceStatic},
		{"retention.ms", map[string]string{"retention.ms": "5"}, "5", SourceDynamicTopic},
		{"segment.bytes", nil, "1073741824", SourceDefault},
		{"cleanup.policy", nil, "compact", SourceStatic},
		{"remote.storage.enable", nil, "false", SourceDefault},
		{"flush.ms", nil, "9223372036854775807", SourceDefault},
	}
	for _, tt := range tests {
		v, s, ok := c.TopicConfigValue(tt.name, tt.overrides)
		if !ok || v != tt.value || s != tt.source {
			t.Errorf("TopicConfigValue(%s, %v) = %q, %v, %v; want %q, %v", tt.name, tt.overrides, v, s, ok, tt.value, tt.source)
		}
	}
	if _, _, ok := c.TopicConfigValue("nope", nil); ok {
		t.Errorf("unknown topic config found")
	}
}

func TestMarkdownTable(t *testing.T) {
	md := MarkdownTable()
	for _, want := range []string{"| Name | Default | Description |", "| `log.dirs` | null |", "| `log.dir` | `./samsa-data` |", "| `listeners` | `PLAINTEXT://localhost:9092` |"} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	if n := strings.Count(md, "\n"); n != len(BrokerDefs)+2 {
		t.Errorf("table has %d lines, want %d", n, len(BrokerDefs)+2)
	}
}

func TestUsage(t *testing.T) {
	u := Usage()
	// Regression (issue 17 item 5): --help did not show the defaults.
	for _, f := range []string{"--config", "--override", "-h, --help", "KAFKA_NUM_PARTITIONS", "PLAINTEXT://localhost:9092"} {
		if !strings.Contains(u, f) {
			t.Errorf("usage lacks %s:\n%s", f, u)
		}
	}
	for _, d := range BrokerDefs {
		if !strings.Contains(u, "  "+d.Name+" ") {
			t.Errorf("usage lacks setting %s", d.Name)
		}
	}
}

func TestEmptyAdvertisedMeansUnset(t *testing.T) {
	c := mustLoad(t, nil, []string{"KAFKA_ADVERTISED_LISTENERS="})
	if want := []Listener{{"PLAINTEXT", "localhost", 9092}}; !reflect.DeepEqual(c.AdvertisedListeners, want) {
		t.Fatalf("advertised %v", c.AdvertisedListeners)
	}
}

func TestBrokerIDSource(t *testing.T) {
	c := mustLoad(t, nil, []string{"KAFKA_BROKER_ID=4"})
	if c.NodeID != 4 || c.Sources["node.id"] != SourceStatic || c.Sources["broker.id"] != SourceStatic {
		t.Fatalf("NodeID %d sources %v %v", c.NodeID, c.Sources["node.id"], c.Sources["broker.id"])
	}
}

func TestThrottledReplicas(t *testing.T) {
	for v, ok := range map[string]bool{"*": true, "0:1,1:2": true, "": true, "x": false, "0:": false, "*,0:1": false} {
		err := ValidateTopicConfig(map[string]string{"leader.replication.throttled.replicas": v})
		if (err == nil) != ok {
			t.Errorf("%q: err %v, want ok=%v", v, err, ok)
		}
	}
}

func TestLogDirList(t *testing.T) {
	c := mustLoad(t, []string{"--override", "log.dir=/x, /y"}, nil)
	if !reflect.DeepEqual(c.LogDirs, []string{"/x", "/y"}) || c.MetadataLogDir != "/x" {
		t.Fatalf("LogDirs %v metadata %s", c.LogDirs, c.MetadataLogDir)
	}
}

func TestSamePortIPv4AndIPv6(t *testing.T) {
	c := mustLoad(t, []string{"--override", "listeners=PLAINTEXT://127.0.0.1:9092,V6://[::1]:9092",
		"--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,V6:PLAINTEXT"}, nil)
	if len(c.Listeners) != 2 || c.Listeners[1].Host != "::1" || c.Listeners[1].Addr() != "[::1]:9092" {
		t.Fatalf("%v", c.Listeners)
	}
}

// TestKafkaServerProperties loads a file with the keys of the
// server.properties that ships with Kafka 4.x (KRaft combined mode).
func TestKafkaServerProperties(t *testing.T) {
	file := writeFile(t, `
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
`)
	c := mustLoad(t, []string{file}, nil)
	// Kafka's own file advertises the controller listener; clients get only
	// the broker listener.
	if want := []Listener{{"PLAINTEXT", "localhost", 9092}}; !reflect.DeepEqual(c.AdvertisedListeners, want) {
		t.Fatalf("advertised %v", c.AdvertisedListeners)
	}
	if c.Values["advertised.listeners"] != "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093" {
		t.Errorf("advertised.listeners value %q", c.Values["advertised.listeners"])
	}
	// share.coordinator.state.topic.* are implemented (coordinator/share).
	want := []string{"num.recovery.threads.per.data.dir"}
	if !reflect.DeepEqual(c.Ignored, want) {
		t.Errorf("Ignored %v", c.Ignored)
	}
}

func TestTopicMarkdownTable(t *testing.T) {
	md := TopicMarkdownTable()
	if !strings.Contains(md, "| `retention.ms` | `log.retention.ms` | `604800000` |") {
		t.Errorf("table:\n%s", md)
	}
	if n := strings.Count(md, "\n"); n != len(TopicDefs())+2 {
		t.Errorf("table has %d lines", n)
	}
}

// TestDynamicMatchesKafka pins which implemented settings Kafka lets
// AlterConfigs change at runtime: those Kafka 4.4's DescribeConfigs of a
// broker reports with read_only false (checked against the real broker by
// compat-tests/diff). The coarser fallbacks (log.retention.hours and
// .minutes, log.roll.hours, log.roll.jitter.hours) and
// log.flush.scheduler.interval.ms and advertised.listeners are read-only
// there.
func TestDynamicMatchesKafka(t *testing.T) {
	want := map[string]bool{
		"listeners": true, "listener.security.protocol.map": true,
		"num.network.threads": true, "num.io.threads": true,
		"log.segment.bytes": true, "log.roll.ms": true,
		"log.roll.jitter.ms":  true,
		"log.retention.ms":    true,
		"log.retention.bytes": true, "log.flush.interval.messages": true, "log.flush.interval.ms": true,
		"log.index.interval.bytes": true,
		"log.index.size.max.bytes": true, "log.segment.delete.delay.ms": true, "log.cleanup.policy": true,
		"log.cleaner.delete.retention.ms": true, "log.cleaner.min.compaction.lag.ms": true,
		"log.cleaner.max.compaction.lag.ms": true, "log.cleaner.min.cleanable.ratio": true,
		"log.preallocate": true, "log.message.timestamp.type": true,
		"log.message.timestamp.before.max.ms": true, "log.message.timestamp.after.max.ms": true,
		"log.local.retention.ms": true, "log.local.retention.bytes": true,
		"log.remote.copy.lag.ms": true, "log.remote.copy.lag.bytes": true, "max.decompressed.message.bytes": true, "message.max.bytes": true,
		"compression.type": true, "compression.gzip.level": true, "compression.lz4.level": true,
		"compression.zstd.level": true, "min.insync.replicas": true, "unclean.leader.election.enable": true,
		"producer.id.expiration.ms": true, "cordoned.log.dirs": true,
		// Dynamic in Kafka; samsa stores them and reads them at start.
		"max.connections": true, "max.connections.per.ip": true, "max.connections.per.ip.overrides": true,
		"max.connection.creation.rate": true, "log.cleaner.backoff.ms": true, "log.cleaner.dedupe.buffer.size": true,
		"transaction.partition.verification.enable": true,
	}
	for _, d := range BrokerDefs {
		if d.Dynamic != want[d.Name] {
			t.Errorf("%s: Dynamic = %v, want %v", d.Name, d.Dynamic, want[d.Name])
		}
	}
	// Every broker synonym of a topic setting is dynamic in Kafka.
	for _, td := range TopicDefs() {
		if td.BrokerSynonym != "" && !want[td.BrokerSynonym] {
			t.Errorf("topic %s: synonym %s should be dynamic", td.Name, td.BrokerSynonym)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "abc", 0}, {"abc", "abd", 1}, {"abc", "ab", 1}, {"kitten", "sitting", 3}, {"a", "bcdef", 3}} {
		if got := editDistance(tt.a, tt.b, 3); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestWithDynamic(t *testing.T) {
	c := mustLoad(t, []string{"--override", "log.retention.hours=1", "--override", "num.partitions=3"}, nil)
	d, skipped, err := c.WithDynamic(
		map[string]string{"log.retention.ms": "1000", "message.max.bytes": "5000", "num.partitions": "7", "ssl.x": "y"},
		map[string]string{"message.max.bytes": "6000"},
	)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(skipped, []string{"num.partitions", "ssl.x"}) {
		t.Errorf("skipped %v", skipped)
	}
	if d.LogRetentionMs != 1000 || d.MessageMaxBytes != 6000 || d.NumPartitions != 3 {
		t.Errorf("retention %d max %d partitions %d", d.LogRetentionMs, d.MessageMaxBytes, d.NumPartitions)
	}
	if d.Sources["message.max.bytes"] != SourceDynamicBroker || d.Sources["log.retention.ms"] != SourceDynamicDefaultBroker {
		t.Errorf("sources %v %v", d.Sources["message.max.bytes"], d.Sources["log.retention.ms"])
	}
	if v, s, _ := d.TopicConfigValue("retention.ms", nil); v != "1000" || s != SourceDynamicDefaultBroker {
		t.Errorf("retention.ms %s %v", v, s)
	}
	if v, s, _ := d.TopicConfigValue("max.message.bytes", nil); v != "6000" || s != SourceDynamicBroker {
		t.Errorf("max.message.bytes %s %v", v, s)
	}
	// The original is untouched, and layering again starts from static.
	if c.MessageMaxBytes != 1048588 || c.Sources["message.max.bytes"] != SourceDefault {
		t.Errorf("original changed: %d %v", c.MessageMaxBytes, c.Sources["message.max.bytes"])
	}
	again, _, err := d.WithDynamic(nil, nil)
	if err != nil || again.LogRetentionMs != 3600000 || again.MessageMaxBytes != 1048588 {
		t.Errorf("again: %v %d %d", err, again.LogRetentionMs, again.MessageMaxBytes)
	}
	if _, _, err := c.WithDynamic(map[string]string{"log.segment.bytes": "10"}, nil); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("bad dynamic value: %v", err)
	}
	if _, _, err := c.WithDynamic(nil, map[string]string{"listeners": "SSL://:9093"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("dynamic SSL listener: %v", err)
	}
}

// TestOffsetMetadataMaxBytes is the regression test for issue 11 item 17:
// offset.metadata.max.bytes, a Kafka setting whose limit samsa enforces,
// was refused at start as an unknown setting.
func TestOffsetMetadataMaxBytes(t *testing.T) {
	if c := mustLoad(t, nil, nil); c.OffsetMetadataMaxBytes != 4096 {
		t.Errorf("default %d, want Kafka's 4096", c.OffsetMetadataMaxBytes)
	}
	c := mustLoad(t, []string{writeFile(t, "offset.metadata.max.bytes=100\n")}, []string{"KAFKA_OFFSET_METADATA_MAX_BYTES=200"})
	if c.OffsetMetadataMaxBytes != 200 || len(c.Warnings) != 0 {
		t.Errorf("got %d warnings %v, want 200 from the environment over the file", c.OffsetMetadataMaxBytes, c.Warnings)
	}
}

// TestQuorumVoters: the three-node KRaft compose environment is read, not
// ignored, and a controller missing from its own voter list is refused.
func TestQuorumVoters(t *testing.T) {
	c := mustLoad(t, nil, []string{
		"KAFKA_NODE_ID=2", "KAFKA_PROCESS_ROLES=broker,controller",
		"KAFKA_CONTROLLER_QUORUM_VOTERS=1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093",
		"KAFKA_LISTENERS=PLAINTEXT://:19092,CONTROLLER://:9093",
		"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
	})
	want := []QuorumVoter{{1, "kafka-1", 9093}, {2, "kafka-2", 9093}, {3, "kafka-3", 9093}}
	if !reflect.DeepEqual(c.QuorumVoters, want) || c.QuorumElectionTimeoutMs != 1000 {
		t.Fatalf("voters %v election timeout %d", c.QuorumVoters, c.QuorumElectionTimeoutMs)
	}
	for _, bad := range []string{"1@h", "x@h:1", "1@h:0", "1@h:1,1@g:2", "h:9093"} {
		if _, err := Load([]string{"--override", "controller.quorum.voters=" + bad}, nil); err == nil {
			t.Errorf("voters %q accepted", bad)
		}
	}
	if _, err := Load([]string{"--override", "node.id=4", "--override", "controller.quorum.voters=1@h:9093"}, nil); err == nil {
		t.Errorf("controller outside its voter list accepted")
	}
	if _, err := Load([]string{"--override", "node.id=4", "--override", "process.roles=broker", "--override", "controller.quorum.voters=1@h:9093"}, nil); err != nil {
		t.Errorf("broker-only node with a voter list: %v", err)
	}
}

// TestUnknownSettingWarns: a setting that is no Kafka setting, in the file
// or an --override, is a warning that names it, where it came from and the
// closest setting, never an error: Kafka 4.4 starts with one too (measured:
// confluent-kafka-python's broker config carries offsets.topic.min.isr,
// which Kafka 4.4 has no setting for, and it starts), and plugins read their
// own settings from the same file.
func TestUnknownSettingWarns(t *testing.T) {
	file := writeFile(t, "num.partitions=3\nfoo.bar=2\noffsets.topic.min.isr=1\n")
	c, err := Load([]string{"--config", file, "--override", "num.partition=2", "--override", "retention.ms=2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.NumPartitions != 3 {
		t.Errorf("num.partitions %d, want 3 (an unknown setting must not disturb the known ones)", c.NumPartitions)
	}
	if want := []string{"foo.bar", "offsets.topic.min.isr", "num.partition", "retention.ms"}; !reflect.DeepEqual(c.Unknown, want) {
		t.Errorf("Unknown %v, want %v", c.Unknown, want)
	}
	all := strings.Join(c.Warnings, "\n")
	for _, want := range []string{"config: unknown setting foo.bar (file ", "num.partition (--override), ignored; did you mean num.partitions?", "retention.ms (--override), ignored; retention.ms is a topic setting, the broker default is log.retention.ms"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings %q lack %q", all, want)
		}
	}
	warns := 0
	for _, n := range c.Notices {
		if n.Msg == "unknown setting, ignored" && n.Level == slog.LevelWarn {
			warns++
		}
	}
	if warns != 4 {
		t.Errorf("%d WARN notices for unknown settings, want 4: %v", warns, c.Notices)
	}
}

// TestRebalanceProtocolsDeprecationNotice: like Kafka 4.4, a node whose
// group.coordinator.rebalance.protocols leaves a group protocol out warns at
// start that the setting is deprecated, naming the protocols it disables;
// the default warns of nothing.
func TestRebalanceProtocolsDeprecationNotice(t *testing.T) {
	disabled := func(args ...string) string {
		t.Helper()
		c, err := Load(args, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range c.Notices {
			if strings.HasPrefix(n.Msg, "group.coordinator.rebalance.protocols is deprecated") {
				return fmt.Sprint(n.Args...)
			}
		}
		return ""
	}
	if got := disabled(); got != "" {
		t.Errorf("default: notice %q", got)
	}
	if got := disabled("--override", "group.coordinator.rebalance.protocols=classic,consumer"); got != "disabledstreams" {
		t.Errorf("classic,consumer: %q", got)
	}
	if got := disabled("--override", "group.coordinator.rebalance.protocols=classic"); got != "disabledconsumer,streams" {
		t.Errorf("classic: %q", got)
	}
}
