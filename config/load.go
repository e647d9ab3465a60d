package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Config is the typed, validated broker configuration. Fields hold effective
// values after fallbacks (log.dirs over log.dir, log.retention.ms over
// minutes over hours, ...). Values and Sources describe every setting by its
// Kafka name, for DescribeConfigs.
type Config struct {
	NodeID                      int32
	ClusterID                   string
	ProcessRoles                []string
	BrokerRack                  string
	Listeners                   []Listener
	AdvertisedListeners         []Listener
	ListenerSecurityProtocolMap map[string]string
	ControllerListenerNames     []string
	QuorumVoters                []QuorumVoter
	QuorumBootstrapServers      []string
	QuorumElectionTimeoutMs     int32
	BrokerHeartbeatIntervalMs   int32
	BrokerSessionTimeoutMs      int32
	InterBrokerListenerName     string
	// Security is the TLS and SASL configuration of each listener
	// (security.go), resolved from the ssl.* and sasl.* settings.
	Security Security
	// Authorizer is authorizer.class.name, super.users and
	// allow.everyone.if.no.acl.found (authorizer.go).
	Authorizer Authorizer
	// DelegationTokens are the delegation.token.* settings
	// (delegation_token.go).
	DelegationTokens      DelegationTokens
	NumNetworkThreads     int32
	NumIOThreads          int32
	SocketRequestMaxBytes int32
	// SocketSendBufferBytes is socket.send.buffer.bytes (<= 0: the OS
	// default).
	SocketSendBufferBytes int32
	// SocketReceiveBufferBytes is socket.receive.buffer.bytes (<= 0: the
	// OS default).
	SocketReceiveBufferBytes int32
	QueuedMaxRequestBytes    int64
	ConnectionsMaxIdleMs     int64
	MaxConnections           int32
	MaxConnectionsPerIP      int32
	// MaxConnectionCreationRate is max.connection.creation.rate.
	MaxConnectionCreationRate int32
	// MaxConnectionsPerIPOverrides maps an IP address or host name to its
	// connection limit (max.connections.per.ip.overrides).
	MaxConnectionsPerIPOverrides map[string]int32
	FetchMaxBytes                int32

	// Client quota windows (quota.window.*, controller.quota.window.*).
	QuotaWindowNum                   int32
	QuotaWindowSizeSeconds           int32
	ControllerQuotaWindowNum         int32
	ControllerQuotaWindowSizeSeconds int32

	LogDirs                     []string
	CordonedLogDirs             []string // of LogDirs (cordoned.log.dirs, * resolved)
	MetadataLogDir              string
	LogSegmentBytes             int64
	LogRollMs                   int64
	LogRollJitterMs             int64
	LogRetentionMs              int64
	LogRetentionBytes           int64
	LogRetentionCheckIntervalMs int64
	LogDirFailureTimeoutMs      int64
	LogFlushIntervalMessages    int64
	LogFlushIntervalMs          int64
	LogFlushSchedulerIntervalMs int64
	LogIndexIntervalBytes       int32
	LogIndexSizeMaxBytes        int32
	LogSegmentDeleteDelayMs     int64
	LogCleanupPolicy            []string
	LogCleanerEnable            bool
	LogCleanerBackoffMs         int64
	LogCleanerDedupeBufferSize  int64
	LogMessageTimestampType     string
	CompressionType             string
	MessageMaxBytes             int32

	NumPartitions               int32
	DefaultReplicationFactor    int16
	AutoCreateTopicsEnable      bool
	DeleteTopicEnable           bool
	MinInsyncReplicas           int32
	UncleanLeaderElectionEnable bool
	// UncleanLeaderElectionIntervalMs is how often the active controller
	// elects unclean leaders of leaderless partitions whose topic allows
	// it (unclean.leader.election.interval.ms).
	UncleanLeaderElectionIntervalMs int64
	ReplicaLagTimeMaxMs             int64
	// ReplicaFetchMaxBytes (replica.fetch.max.bytes) and
	// ReplicaFetchResponseMaxBytes (replica.fetch.response.max.bytes)
	// size a follower's fetches; ReplicaFetchWaitMaxMs and
	// ReplicaFetchBackoffMs time them.
	ReplicaFetchMaxBytes, ReplicaFetchResponseMaxBytes int32
	ReplicaFetchWaitMaxMs, ReplicaFetchBackoffMs       int32
	// ReplicaSocketReceiveBufferBytes is replica.socket.receive.buffer.bytes,
	// the SO_RCVBUF of the replica fetchers' connections (<= 0: the OS
	// default).
	ReplicaSocketReceiveBufferBytes int32
	// ReplicaSelectorClass is replica.selector.class ("" when unset).
	ReplicaSelectorClass string
	// AutoLeaderRebalanceEnable and LeaderImbalanceCheckIntervalSeconds:
	// preferred-leader balancing by the active controller.
	AutoLeaderRebalanceEnable           bool
	LeaderImbalanceCheckIntervalSeconds int64
	// MaxIncrementalFetchSessionCacheSlots is max.incremental.fetch.session.cache.slots.
	MaxIncrementalFetchSessionCacheSlots int32
	// GroupShare* are the share-partition leaders' settings (broker/share):
	// group.share.record.lock.duration.ms, group.share.delivery.count.limit,
	// group.share.partition.max.record.locks, group.share.max.share.sessions.
	GroupShareRecordLockDurationMs, GroupShareDeliveryCountLimit  int32
	GroupSharePartitionMaxRecordLocks, GroupShareMaxShareSessions int32

	OffsetsTopicNumPartitions       int32
	OffsetsTopicReplicationFactor   int16
	OffsetsCommitTimeoutMs          int32
	OffsetsRetentionMinutes         int64
	OffsetsRetentionCheckIntervalMs int64
	OffsetMetadataMaxBytes          int32
	GroupInitialRebalanceDelayMs    int64
	GroupMinSessionTimeoutMs        int32
	GroupMaxSessionTimeoutMs        int32
	GroupMaxSize                    int32

	GroupCoordinatorRebalanceProtocols  []string
	GroupConsumerSessionTimeoutMs       int32
	GroupConsumerMinSessionTimeoutMs    int32
	GroupConsumerMaxSessionTimeoutMs    int32
	GroupConsumerHeartbeatIntervalMs    int32
	GroupConsumerMinHeartbeatMs         int32
	GroupConsumerMaxHeartbeatMs         int32
	GroupConsumerMaxSize                int32
	GroupConsumerAssignors              []string
	GroupConsumerMigrationPolicy        string
	GroupShareSessionTimeoutMs          int32
	GroupShareMinSessionTimeoutMs       int32
	GroupShareMaxSessionTimeoutMs       int32
	GroupShareHeartbeatIntervalMs       int32
	GroupShareMinHeartbeatMs            int32
	GroupShareMaxHeartbeatMs            int32
	GroupShareMaxSize                   int32
	GroupStreamsSessionTimeoutMs        int32
	GroupStreamsMinSessionTimeoutMs     int32
	GroupStreamsMaxSessionTimeoutMs     int32
	GroupStreamsHeartbeatIntervalMs     int32
	GroupStreamsMinHeartbeatMs          int32
	GroupStreamsMaxHeartbeatMs          int32
	GroupStreamsMaxStandbyReplicas      int32
	GroupStreamsMaxSize                 int32
	GroupStreamsNumStandbyReplicas      int32
	GroupStreamsAcceptableRecoveryLag   int64
	GroupStreamsTaskOffsetIntervalMs    int32
	GroupStreamsInitialRebalanceDelayMs int32

	TransactionMaxTimeoutMs             int32
	TransactionalIDExpirationMs         int32
	ProducerIDExpirationMs              int32
	ProducerIDExpirationCheckIntervalMs int32

	TransactionStateLogNumPartitions       int32
	TransactionStateLogReplicationFactor   int16
	TransactionStateLogMinISR              int32
	TransactionStateLogSegmentBytes        int32
	TransactionAbortTimedOutIntervalMs     int32
	TransactionRemoveExpiredIntervalMs     int32
	TransactionPartitionVerificationEnable bool

	// HTTPListener is samsa.http.listener as host:port ("" when off).
	HTTPListener string
	// LogFormat is samsa.log.format: "text" or "json".
	LogFormat string
	// LogLevel is samsa.log.level: DEBUG, INFO, WARN or ERROR.
	LogLevel string

	// Values holds every implemented setting that has a value (its default
	// or what was given), by Kafka name. Settings that are null in Kafka and
	// were not given are absent. Fallback-derived settings keep their own
	// value: log.retention.ms stays absent if only log.retention.hours is set.
	Values map[string]string
	// Sources tells, for each key of Values, whether it is a default or was
	// set statically (file, environment or flag).
	Sources map[string]Source
	// OtherValues holds, by name, the static values of the settings given
	// that are not in BrokerDefs: Kafka settings samsa accepts without
	// acting on them, and the ssl.* and sasl.* settings (listener-prefixed
	// too), for DescribeConfigs. They may be secrets: never log them.
	OtherValues map[string]string
	// Ignored lists Kafka settings that were given but that samsa does not
	// implement, sorted. Warnings has one human-readable line per ignored
	// setting, for the caller to log.
	Ignored  []string
	Warnings []string
	// UnknownEnv names the KAFKA_* environment variables that map to no
	// Kafka setting (typos), in environment order; each has a Warnings line.
	UnknownEnv []string
	// Unknown names the settings of the file and the --override flags that
	// are no Kafka setting (a typo, or a plugin's own setting), in the order
	// given; each has a Warnings line and a WARN notice. Kafka 4.4 starts with
	// them too (they reach plugins through the broker's original settings).
	Unknown []string
	// Notices are what the caller should log about the configuration, with
	// levels: a WARN per setting accepted but not implemented and per
	// unknown KAFKA_* variable (with the closest setting), a DEBUG per
	// image plumbing variable (KAFKA_HEAP_OPTS, ...) skipped.
	Notices []Notice

	// staticValues and staticSources are Values and Sources as Load built
	// them, before WithDynamic layered anything on top.
	staticValues  map[string]string
	staticSources map[string]Source
	// jaasFile is the static JAAS file (KAFKA_OPTS
	// -Djava.security.auth.login.config) by section: the fallback of a
	// listener added at runtime without its own sasl.jaas.config
	// (RuntimeListenerSecurity), as at start.
	jaasFile map[string][]JAASEntry
}

// Usage returns the command line help.
func Usage() string {
	fs, _, _, _ := newFlagSet()
	return "Usage: samsa [server.properties] [--config file] [--override key=value]...\n\n" + fs.FlagUsages() + `
Settings use Kafka's names (see the README). Precedence, lowest first:
defaults, the properties file, the environment, --override.
Environment: KAFKA_<NAME> or KAFKA_CFG_<NAME>, where NAME is the setting in
upper case with "." -> "_", "_" -> "__", "-" -> "___" (KAFKA_LOG_DIRS sets
log.dirs); CLUSTER_ID sets cluster.id.
` + settingsUsage()
}

func newFlagSet() (fs *pflag.FlagSet, configFile *string, overrides *[]string, help *bool) {
	fs = pflag.NewFlagSet("samsa", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.Usage = func() {}
	configFile = fs.String("config", "", "Kafka server.properties file to read")
	overrides = fs.StringArray("override", nil, "set a setting, key=value (repeatable; wins over file and environment)")
	help = fs.BoolP("help", "h", false, "print this help")
	return fs, configFile, overrides, help
}

// Load builds the configuration from, in increasing precedence: defaults, a
// server.properties file (--config, or a single positional argument like
// kafka-server-start), KAFKA_* / KAFKA_CFG_* environment variables, and
// --override flags. args excludes the program name; environ is like
// os.Environ(). The only IO is reading the properties file. The result is
// validated. -h or --help returns an error wrapping ErrHelp; print Usage().
func Load(args []string, environ []string) (*Config, error) {
	fs, configFile, overrides, help := newFlagSet()
	fs.SetOutput(discard{})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, ErrHelp
		}
		return nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if *help {
		return nil, ErrHelp
	}
	file := *configFile
	switch rest := fs.Args(); {
	case len(rest) == 1 && file == "":
		file = rest[0]
	case len(rest) > 0:
		return nil, fmt.Errorf("%w: unexpected arguments %q", ErrUsage, rest)
	}

	var fileProps []property
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("config: reading %s: %w", file, err)
		}
		fileProps, err = parseProperties(string(data))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, file, err)
		}
	}
	var overrideProps []property
	for _, o := range *overrides {
		k, v, ok := strings.Cut(o, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%w: --override %q: want key=value", ErrUsage, o)
		}
		overrideProps = append(overrideProps, property{Key: strings.TrimSpace(k), Value: v})
	}
	env, envSkipped := envSettings(environ)
	if dirs, ok := imageLogDirs(environ, fileProps, env, overrideProps); ok {
		env = append(env, dirs)
	}
	extra := bitnamiFromEnv(environ)
	if extra.jaasFilePath != "" {
		data, err := os.ReadFile(extra.jaasFilePath)
		if err != nil {
			return nil, fmt.Errorf("config: reading the JAAS file of KAFKA_OPTS -Djava.security.auth.login.config: %w", err)
		}
		if extra.jaasFile, err = ParseJAASFile(string(data)); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, extra.jaasFilePath, err)
		}
	}
	return load(loadInput{file: file, fileProps: fileProps, env: env, envSkipped: envSkipped, overrides: overrideProps, bitnami: extra})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

type loadInput struct {
	file       string
	fileProps  []property
	env        []envSetting
	envSkipped []string
	overrides  []property
	bitnami    bitnamiUsers
}

// Notice is one structured log line about the configuration.
type Notice struct {
	Level slog.Level
	Msg   string
	Args  []any // slog key-value pairs
}

// load layers the sources in viper and decodes the result. viper's key
// delimiter is set to one that never occurs in Kafka names, so "log.dir" and
// "log.dirs" stay flat keys instead of nesting.
func load(in loadInput) (*Config, error) {
	defs := BrokerDefs
	known := make(map[string]Def, len(defs))
	for _, d := range defs {
		known[d.Name] = d
	}
	v := viper.NewWithOptions(viper.KeyDelimiter("\x00"))
	for _, d := range defs {
		if d.HasDefault {
			v.SetDefault(d.Name, d.Default)
		}
	}
	// origins records where each static value came from ("file
	// server.properties:12", "env KAFKA_LOG_DIRS", "--override").
	origins := map[string]string{}
	ignored := map[string]string{}
	ignoredGiven := map[string]givenSetting{}  // the winning value of each ignored setting
	securityGiven := map[string]givenSetting{} // the winning value of each security setting (security.go)
	var warnings []string
	var unknown []string // file and --override settings that are no Kafka setting
	var notices []Notice

	// accept sorts one given setting into implemented, ignored or unknown.
	accept := func(key, value, where string, strict bool) (bool, error) {
		key = strings.TrimSpace(key)
		if _, ok := known[key]; ok {
			// Validated once layered: only the winning value matters.
			origins[key] = where
			return true, nil
		}
		if isSecurityKey(key) {
			securityGiven[key] = givenSetting{value: value, where: where}
			return false, nil
		}
		if isIgnoredKey(key) {
			if _, dup := ignored[key]; !dup {
				warnings = append(warnings, fmt.Sprintf("config: ignoring %s (%s): Kafka setting not implemented by samsa", key, where))
			}
			ignored[key] = where
			ignoredGiven[key] = givenSetting{value: value, where: where}
			return false, nil
		}
		if !strict {
			return false, nil
		}
		// Kafka 4.4 starts with a setting it does not know in the file or an
		// override (a plugin may read it); so does samsa, with a warning
		// that names the closest setting.
		hint := suggest(defs, key)
		warnings = append(warnings, fmt.Sprintf("config: unknown setting %s (%s), ignored%s", key, where, hint))
		unknown = append(unknown, key)
		args := []any{"setting", key, "from", where}
		if hint != "" {
			args = append(args, "hint", strings.TrimPrefix(hint, "; "))
		}
		notices = append(notices, Notice{Level: slog.LevelWarn, Msg: "unknown setting, ignored", Args: args})
		return false, nil
	}
	// unknownEnv notes a KAFKA_* variable that names no Kafka setting (a
	// typo such as KAFKA_NUM_PARTITION): a warning naming the variable and
	// the closest setting, never an error, since a compose file may set it.
	var unknownEnv []string
	noteUnknownEnv := func(e envSetting) {
		unknownEnv = append(unknownEnv, e.Var)
		line := fmt.Sprintf("config: ignoring environment variable %s: %s is not a Kafka setting", e.Var, e.Key)
		args := []any{"variable", e.Var, "setting", e.Key}
		if td, ok := topicDef(e.Key); ok && td.BrokerSynonym != "" {
			line += fmt.Sprintf("; %s is a topic setting, the broker default is %s (%s)", e.Key, td.BrokerSynonym, KeyToEnv(td.BrokerSynonym))
			args = append(args, "did_you_mean", KeyToEnv(td.BrokerSynonym))
		} else if best := closestSetting(defs, e.Key); best != "" {
			line += fmt.Sprintf("; did you mean %s (%s)?", best, KeyToEnv(best))
			args = append(args, "did_you_mean", KeyToEnv(best))
		}
		warnings = append(warnings, line)
		notices = append(notices, Notice{Level: slog.LevelWarn, Msg: "unknown setting in the environment, ignored", Args: args})
	}

	fileMap := map[string]any{}
	for _, p := range in.fileProps {
		ok, err := accept(p.Key, p.Value, fmt.Sprintf("file %s:%d", in.file, p.Line), true)
		if err != nil {
			return nil, err
		}
		if ok {
			fileMap[p.Key] = p.Value
		}
	}
	if err := v.MergeConfigMap(fileMap); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	// The environment of a container is shared with unrelated tools
	// (Kubernetes injects KAFKA_PORT for a service named kafka), so unknown
	// KAFKA_* variables are warnings, never errors.
	envMap := map[string]any{}
	for _, e := range in.env {
		if k := strings.TrimSpace(e.Key); known[k].Name == "" && !isIgnoredKey(k) && !isSecurityKey(k) {
			noteUnknownEnv(e)
			continue
		}
		ok, err := accept(e.Key, e.Value, "env "+e.Var, false)
		if err != nil {
			return nil, err
		}
		if ok {
			envMap[e.Key] = e.Value
		}
	}
	if err := v.MergeConfigMap(envMap); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	for _, p := range in.overrides {
		ok, err := accept(p.Key, p.Value, "--override", true)
		if err != nil {
			return nil, err
		}
		if ok {
			v.Set(p.Key, p.Value)
		}
	}

	values := map[string]string{}
	sources := map[string]Source{}
	for _, d := range defs {
		raw := v.Get(d.Name)
		if raw == nil {
			continue
		}
		values[d.Name] = strings.TrimSpace(fmt.Sprint(raw))
		sources[d.Name] = SourceDefault
		if where, ok := origins[d.Name]; ok {
			sources[d.Name] = SourceStatic
			if err := d.Validate(values[d.Name]); err != nil {
				return nil, fmt.Errorf("%w for %s=%q (%s): %v", ErrInvalidValue, d.Name, values[d.Name], where, err)
			}
		}
	}
	c, err := decode(values, sources)
	if err != nil {
		return nil, err
	}
	if p := strings.ToUpper(strings.TrimSpace(securityGiven["security.inter.broker.protocol"].value)); p != "" {
		// Kafka: security.inter.broker.protocol names the listener of that
		// name; it cannot be combined with inter.broker.listener.name.
		if sources["inter.broker.listener.name"] == SourceStatic {
			return nil, fmt.Errorf("%w: only one of inter.broker.listener.name and security.inter.broker.protocol should be set", ErrInvalid)
		}
		c.InterBrokerListenerName = p
	}
	if err := buildSecurity(c, securityGiven, in.bitnami); err != nil {
		return nil, err
	}
	c.jaasFile = in.bitnami.jaasFile
	for _, k := range unusedSecurityKeys(securityGiven, c.Security) {
		where := securityGiven[k].where
		warnings = append(warnings, fmt.Sprintf("config: ignoring %s (%s): no listener uses it", k, where))
		ignored[k] = where
	}
	for k := range ignored {
		c.Ignored = append(c.Ignored, k)
	}
	// Kafka refuses to start on a bad value of any of its settings, so
	// the ones samsa accepts without acting on them are checked too, with
	// Kafka's validators.
	for _, k := range mapKeys(ignoredGiven) {
		if def, ok := BrokerDef(k); ok && def.Ignored {
			if err := def.Validate(ignoredGiven[k].value); err != nil {
				return nil, fmt.Errorf("%w for %s=%q (%s): %v", ErrInvalidValue, k, redact(k, ignoredGiven[k].value), ignoredGiven[k].where, err)
			}
		}
	}
	c.OtherValues = map[string]string{}
	for _, given := range []map[string]givenSetting{securityGiven, ignoredGiven} {
		for k, g := range given {
			c.OtherValues[k] = strings.TrimSpace(g.value)
		}
	}
	sort.Strings(c.Ignored)
	c.Warnings = warnings
	c.UnknownEnv = unknownEnv
	c.Unknown = unknown
	for _, k := range c.Ignored {
		notices = append(notices, Notice{Level: slog.LevelWarn, Msg: "setting accepted but not implemented", Args: []any{"setting", k, "from", ignored[k]}})
	}
	for _, name := range in.envSkipped {
		notices = append(notices, Notice{Level: slog.LevelDebug, Msg: "environment variable is not a setting (container image or Kubernetes), ignored", Args: []any{"variable", name}})
	}
	// Kafka 4.4 warns at start when group.coordinator.rebalance.protocols
	// leaves a group protocol out: the setting is deprecated, and from Kafka
	// 5.0 every protocol is on, switched by the feature versions alone
	// (KafkaConfig, seen on kafka-ref with classic,consumer).
	var off []string
	for _, p := range []string{"classic", "consumer", "streams"} {
		if !slices.ContainsFunc(c.GroupCoordinatorRebalanceProtocols, func(q string) bool { return strings.EqualFold(strings.TrimSpace(q), p) }) {
			off = append(off, p)
		}
	}
	if len(off) > 0 {
		notices = append(notices, Notice{Level: slog.LevelWarn,
			Msg:  "group.coordinator.rebalance.protocols is deprecated (Kafka 5.0 enables every group protocol and leaves them to the feature versions group.version, streams.version and share.version); it disables some",
			Args: []any{"disabled", strings.Join(off, ",")}})
	}
	c.Notices = notices
	c.staticValues, c.staticSources = copyMap(c.Values), copyMap(c.Sources)
	if err := verifyGroupSettings(c.kafkaSetting); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := checkSecurity(ignoredGiven); err != nil {
		return nil, err
	}

	return c, nil
}

// decoder reads already validated values; a failure here is a bug in a
// Def's validator, reported as an invalid value all the same.
type decoder struct {
	values map[string]string
	err    error
}

func (d *decoder) has(name string) bool { _, ok := d.values[name]; return ok }

func (d *decoder) str(name string) string { return d.values[name] }

func (d *decoder) num(name string, bits int) int64 {
	n, err := parseInt(d.values[name], bits)
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("%w for %s=%q: %v", ErrInvalidValue, name, d.values[name], err)
	}
	return n
}

func (d *decoder) i32(name string) int32 { return int32(d.num(name, 32)) }
func (d *decoder) i64(name string) int64 { return d.num(name, 64) }
func (d *decoder) boolean(name string) bool {
	b, err := parseBool(d.values[name])
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("%w for %s=%q: %v", ErrInvalidValue, name, d.values[name], err)
	}
	return b
}

func (d *decoder) listeners(name string) []Listener {
	ls, err := parseListeners(d.values[name])
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("%w for %s: %v", ErrInvalidValue, name, err)
	}
	return ls
}

// hoursOrMs returns msName if set, else unitName × unit, saturating.
func (d *decoder) hoursOrMs(msName string, units ...unitSetting) int64 {
	if d.has(msName) {
		return d.i64(msName)
	}
	for _, u := range units {
		if d.has(u.name) {
			return mulSaturate(d.i64(u.name), u.ms)
		}
	}
	return 0
}

type unitSetting struct {
	name string
	ms   int64
}

func mulSaturate(n, by int64) int64 {
	if n > 0 && n > math.MaxInt64/by {
		return math.MaxInt64
	}
	if n < 0 && n < math.MinInt64/by {
		return math.MinInt64
	}
	return n * by
}

func decode(values map[string]string, sources map[string]Source) (*Config, error) {
	d := &decoder{values: values}
	c := &Config{Values: values, Sources: sources}

	c.NodeID = d.i32("node.id")
	if sources["node.id"] != SourceStatic && sources["broker.id"] == SourceStatic {
		c.NodeID = d.i32("broker.id")
	} else if sources["node.id"] == SourceStatic && sources["broker.id"] == SourceStatic && d.i32("broker.id") != c.NodeID {
		return nil, fmt.Errorf("%w: node.id=%d and broker.id=%d disagree", ErrInvalid, c.NodeID, d.i32("broker.id"))
	}
	c.ClusterID = d.str("cluster.id")
	c.Authorizer = decodeAuthorizer(d)
	c.DelegationTokens = decodeDelegationTokens(d)
	c.ProcessRoles = parseList(d.str("process.roles"))
	c.BrokerRack = d.str("broker.rack")
	c.Listeners = d.listeners("listeners")
	c.ControllerListenerNames = upperAll(parseList(d.str("controller.listener.names")))
	c.QuorumVoters, _ = parseVoters(d.str("controller.quorum.voters")) // validated by its Def
	c.QuorumBootstrapServers = parseList(d.str("controller.quorum.bootstrap.servers"))
	c.QuorumElectionTimeoutMs = d.i32("controller.quorum.election.timeout.ms")
	c.BrokerHeartbeatIntervalMs = d.i32("broker.heartbeat.interval.ms")
	c.BrokerSessionTimeoutMs = d.i32("broker.session.timeout.ms")
	if sources["listeners"] != SourceStatic && strings.TrimSpace(d.str("advertised.listeners")) != "" {
		c.Listeners = deriveListeners(c, d.listeners("advertised.listeners"))
		values["listeners"] = joinListeners(c.Listeners)
	}
	// An empty advertised.listeners (KAFKA_ADVERTISED_LISTENERS= in a
	// compose file) means unset, rather than "advertise nothing".
	if strings.TrimSpace(d.str("advertised.listeners")) != "" {
		// Kafka's own server.properties advertises the controller listener
		// too (for KRaft's dynamic quorum); clients must never be given it,
		// so it is dropped here, as Kafka's broker registration does.
		for _, l := range d.listeners("advertised.listeners") {
			if !contains(c.ControllerListenerNames, l.Name) {
				c.AdvertisedListeners = append(c.AdvertisedListeners, l)
			}
		}
	} else {
		for _, l := range c.Listeners {
			if !contains(c.ControllerListenerNames, l.Name) {
				c.AdvertisedListeners = append(c.AdvertisedListeners, l)
			}
		}
	}
	m, err := parseProtocolMap(d.str("listener.security.protocol.map"))
	if err != nil {
		return nil, fmt.Errorf("%w for listener.security.protocol.map: %v", ErrInvalidValue, err)
	}
	c.ListenerSecurityProtocolMap = m
	c.InterBrokerListenerName = strings.ToUpper(d.str("inter.broker.listener.name"))
	if c.InterBrokerListenerName == "" {
		for _, l := range c.Listeners {
			if l.Name == "PLAINTEXT" {
				c.InterBrokerListenerName = l.Name
			}
		}
	}
	if c.InterBrokerListenerName == "" {
		for _, l := range c.Listeners {
			if !contains(c.ControllerListenerNames, l.Name) {
				c.InterBrokerListenerName = l.Name
				break
			}
		}
	}
	c.NumNetworkThreads = d.i32("num.network.threads")
	c.NumIOThreads = d.i32("num.io.threads")
	c.SocketRequestMaxBytes = d.i32("socket.request.max.bytes")
	c.SocketSendBufferBytes = d.i32("socket.send.buffer.bytes")
	c.SocketReceiveBufferBytes = d.i32("socket.receive.buffer.bytes")
	c.QueuedMaxRequestBytes = d.i64("queued.max.request.bytes")
	if sources["queued.max.request.bytes"] == SourceStatic && c.QueuedMaxRequestBytes > 0 && c.QueuedMaxRequestBytes < int64(c.SocketRequestMaxBytes) {
		// Kafka's rule: the budget must hold at least one largest request.
		return nil, fmt.Errorf("%w: queued.max.request.bytes (%d) must be -1 or at least socket.request.max.bytes (%d)", ErrInvalid, c.QueuedMaxRequestBytes, c.SocketRequestMaxBytes)
	}
	c.ConnectionsMaxIdleMs = d.i64("connections.max.idle.ms")
	c.MaxConnections = d.i32("max.connections")
	c.MaxConnectionCreationRate = d.i32("max.connection.creation.rate")
	c.MaxConnectionsPerIP = d.i32("max.connections.per.ip")
	c.QuotaWindowNum = d.i32("quota.window.num")
	c.QuotaWindowSizeSeconds = d.i32("quota.window.size.seconds")
	c.ControllerQuotaWindowNum = d.i32("controller.quota.window.num")
	c.ControllerQuotaWindowSizeSeconds = d.i32("controller.quota.window.size.seconds")
	c.MaxConnectionsPerIPOverrides, _ = parseConnectionOverrides(d.str("max.connections.per.ip.overrides"))
	if c.MaxConnectionsPerIP == 0 && len(c.MaxConnectionsPerIPOverrides) == 0 {
		return nil, fmt.Errorf("%w: max.connections.per.ip can be 0 only if max.connections.per.ip.overrides is set", ErrInvalid)
	}
	c.FetchMaxBytes = d.i32("fetch.max.bytes")

	if d.has("log.dirs") {
		c.LogDirs = parseList(d.str("log.dirs"))
	}
	if len(c.LogDirs) == 0 {
		c.LogDirs = parseList(d.str("log.dir"))
	}
	cordoned, err := cordonedDirs(parseList(d.str("cordoned.log.dirs")), c.LogDirs)
	if err != nil {
		return nil, err
	}
	c.CordonedLogDirs = cordoned
	c.MetadataLogDir = d.str("metadata.log.dir")
	if c.MetadataLogDir == "" {
		c.MetadataLogDir = c.LogDirs[0]
	}
	c.LogSegmentBytes = d.i64("log.segment.bytes")
	c.LogRollMs = d.hoursOrMs("log.roll.ms", unitSetting{"log.roll.hours", 3600000})
	c.LogRollJitterMs = d.hoursOrMs("log.roll.jitter.ms", unitSetting{"log.roll.jitter.hours", 3600000})
	c.LogRetentionMs = d.hoursOrMs("log.retention.ms", unitSetting{"log.retention.minutes", 60000}, unitSetting{"log.retention.hours", 3600000})
	if c.LogRetentionMs < 0 {
		c.LogRetentionMs = -1 // Kafka: any negative retention is unlimited
	}
	c.LogRetentionBytes = d.i64("log.retention.bytes")
	c.LogRetentionCheckIntervalMs = d.i64("log.retention.check.interval.ms")
	c.LogDirFailureTimeoutMs = d.i64("log.dir.failure.timeout.ms")
	c.LogFlushIntervalMessages = d.i64("log.flush.interval.messages")
	c.LogFlushSchedulerIntervalMs = d.i64("log.flush.scheduler.interval.ms")
	c.LogFlushIntervalMs = c.LogFlushSchedulerIntervalMs
	if d.has("log.flush.interval.ms") {
		c.LogFlushIntervalMs = d.i64("log.flush.interval.ms")
	}
	c.LogIndexIntervalBytes = d.i32("log.index.interval.bytes")
	c.LogIndexSizeMaxBytes = d.i32("log.index.size.max.bytes")
	c.LogSegmentDeleteDelayMs = d.i64("log.segment.delete.delay.ms")
	c.LogCleanupPolicy = parseList(d.str("log.cleanup.policy"))
	c.LogCleanerEnable = d.boolean("log.cleaner.enable")
	c.LogCleanerBackoffMs = d.i64("log.cleaner.backoff.ms")
	c.LogCleanerDedupeBufferSize = d.i64("log.cleaner.dedupe.buffer.size")
	c.LogMessageTimestampType = d.str("log.message.timestamp.type")
	c.CompressionType = d.str("compression.type")
	c.MessageMaxBytes = d.i32("message.max.bytes")

	c.NumPartitions = d.i32("num.partitions")
	c.DefaultReplicationFactor = int16(d.num("default.replication.factor", 16))
	c.AutoCreateTopicsEnable = d.boolean("auto.create.topics.enable")
	c.DeleteTopicEnable = d.boolean("delete.topic.enable")
	c.MinInsyncReplicas = d.i32("min.insync.replicas")
	c.UncleanLeaderElectionEnable = d.boolean("unclean.leader.election.enable")
	c.UncleanLeaderElectionIntervalMs = d.i64("unclean.leader.election.interval.ms")
	c.ReplicaLagTimeMaxMs = d.i64("replica.lag.time.max.ms")
	c.ReplicaFetchMaxBytes = d.i32("replica.fetch.max.bytes")
	c.ReplicaFetchResponseMaxBytes = d.i32("replica.fetch.response.max.bytes")
	c.ReplicaFetchWaitMaxMs = d.i32("replica.fetch.wait.max.ms")
	c.ReplicaFetchBackoffMs = d.i32("replica.fetch.backoff.ms")
	c.ReplicaSocketReceiveBufferBytes = d.i32("replica.socket.receive.buffer.bytes")
	c.ReplicaSelectorClass = d.str("replica.selector.class")
	if int64(c.ReplicaFetchWaitMaxMs) > c.ReplicaLagTimeMaxMs {
		// Kafka's KafkaConfig requirement, with its wording.
		return nil, fmt.Errorf("%w: replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms to prevent frequent changes in ISR", ErrInvalid)
	}
	c.AutoLeaderRebalanceEnable = d.boolean("auto.leader.rebalance.enable")
	c.LeaderImbalanceCheckIntervalSeconds = d.i64("leader.imbalance.check.interval.seconds")
	c.MaxIncrementalFetchSessionCacheSlots = d.i32("max.incremental.fetch.session.cache.slots")
	c.GroupShareRecordLockDurationMs = d.i32("group.share.record.lock.duration.ms")
	c.GroupShareDeliveryCountLimit = d.i32("group.share.delivery.count.limit")
	c.GroupSharePartitionMaxRecordLocks = d.i32("group.share.partition.max.record.locks")
	c.GroupShareMaxShareSessions = d.i32("group.share.max.share.sessions")
	// Kafka's ShareGroupConfig requirements, with its wording: the broker
	// does not start otherwise.
	if minLock := d.i32("group.share.min.record.lock.duration.ms"); c.GroupShareRecordLockDurationMs < minLock {
		return nil, fmt.Errorf("%w: group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms", ErrInvalid)
	}
	if maxLock := d.i32("group.share.max.record.lock.duration.ms"); maxLock < c.GroupShareRecordLockDurationMs {
		return nil, fmt.Errorf("%w: group.share.max.record.lock.duration.ms must be greater than or equal to group.share.record.lock.duration.ms", ErrInvalid)
	}
	if c.GroupShareMaxShareSessions < d.i32("group.share.max.size") {
		return nil, fmt.Errorf("%w: group.share.max.share.sessions must be greater than or equal to group.share.max.size", ErrInvalid)
	}

	c.OffsetsTopicNumPartitions = d.i32("offsets.topic.num.partitions")
	c.OffsetsTopicReplicationFactor = int16(d.num("offsets.topic.replication.factor", 16))
	c.OffsetsCommitTimeoutMs = d.i32("offsets.commit.timeout.ms")
	c.OffsetsRetentionMinutes = d.i64("offsets.retention.minutes")
	c.OffsetsRetentionCheckIntervalMs = d.i64("offsets.retention.check.interval.ms")
	c.OffsetMetadataMaxBytes = d.i32("offset.metadata.max.bytes")
	c.GroupInitialRebalanceDelayMs = d.i64("group.initial.rebalance.delay.ms")
	c.GroupMinSessionTimeoutMs = d.i32("group.min.session.timeout.ms")
	c.GroupMaxSessionTimeoutMs = d.i32("group.max.session.timeout.ms")
	c.GroupMaxSize = d.i32("group.max.size")
	c.GroupCoordinatorRebalanceProtocols = parseList(d.str("group.coordinator.rebalance.protocols"))
	c.GroupConsumerSessionTimeoutMs = d.i32("group.consumer.session.timeout.ms")
	c.GroupConsumerMinSessionTimeoutMs = d.i32("group.consumer.min.session.timeout.ms")
	c.GroupConsumerMaxSessionTimeoutMs = d.i32("group.consumer.max.session.timeout.ms")
	c.GroupConsumerHeartbeatIntervalMs = d.i32("group.consumer.heartbeat.interval.ms")
	c.GroupConsumerMinHeartbeatMs = d.i32("group.consumer.min.heartbeat.interval.ms")
	c.GroupConsumerMaxHeartbeatMs = d.i32("group.consumer.max.heartbeat.interval.ms")
	c.GroupConsumerMaxSize = d.i32("group.consumer.max.size")
	c.GroupConsumerAssignors = parseList(d.str("group.consumer.assignors"))
	c.GroupConsumerMigrationPolicy = strings.ToLower(strings.TrimSpace(d.str("group.consumer.migration.policy")))
	c.GroupShareSessionTimeoutMs = d.i32("group.share.session.timeout.ms")
	c.GroupShareMinSessionTimeoutMs = d.i32("group.share.min.session.timeout.ms")
	c.GroupShareMaxSessionTimeoutMs = d.i32("group.share.max.session.timeout.ms")
	c.GroupShareHeartbeatIntervalMs = d.i32("group.share.heartbeat.interval.ms")
	c.GroupShareMinHeartbeatMs = d.i32("group.share.min.heartbeat.interval.ms")
	c.GroupShareMaxHeartbeatMs = d.i32("group.share.max.heartbeat.interval.ms")
	c.GroupShareMaxSize = d.i32("group.share.max.size")
	c.GroupStreamsSessionTimeoutMs = d.i32("group.streams.session.timeout.ms")
	c.GroupStreamsMinSessionTimeoutMs = d.i32("group.streams.min.session.timeout.ms")
	c.GroupStreamsMaxSessionTimeoutMs = d.i32("group.streams.max.session.timeout.ms")
	c.GroupStreamsHeartbeatIntervalMs = d.i32("group.streams.heartbeat.interval.ms")
	c.GroupStreamsMinHeartbeatMs = d.i32("group.streams.min.heartbeat.interval.ms")
	c.GroupStreamsMaxHeartbeatMs = d.i32("group.streams.max.heartbeat.interval.ms")
	c.GroupStreamsMaxStandbyReplicas = d.i32("group.streams.max.standby.replicas")
	c.GroupStreamsMaxSize = d.i32("group.streams.max.size")
	c.GroupStreamsNumStandbyReplicas = d.i32("group.streams.num.standby.replicas")
	c.GroupStreamsAcceptableRecoveryLag = d.i64("group.streams.acceptable.recovery.lag")
	c.GroupStreamsTaskOffsetIntervalMs = d.i32("group.streams.task.offset.interval.ms")
	c.GroupStreamsInitialRebalanceDelayMs = d.i32("group.streams.initial.rebalance.delay.ms")

	c.TransactionMaxTimeoutMs = d.i32("transaction.max.timeout.ms")
	c.TransactionalIDExpirationMs = d.i32("transactional.id.expiration.ms")
	c.ProducerIDExpirationMs = d.i32("producer.id.expiration.ms")
	c.ProducerIDExpirationCheckIntervalMs = d.i32("producer.id.expiration.check.interval.ms")
	c.TransactionStateLogNumPartitions = d.i32("transaction.state.log.num.partitions")
	c.TransactionStateLogReplicationFactor = int16(d.num("transaction.state.log.replication.factor", 16))
	c.TransactionStateLogMinISR = d.i32("transaction.state.log.min.isr")
	c.TransactionStateLogSegmentBytes = d.i32("transaction.state.log.segment.bytes")
	c.TransactionAbortTimedOutIntervalMs = d.i32("transaction.abort.timed.out.transaction.cleanup.interval.ms")
	c.TransactionRemoveExpiredIntervalMs = d.i32("transaction.remove.expired.transaction.cleanup.interval.ms")
	c.TransactionPartitionVerificationEnable = d.boolean("transaction.partition.verification.enable")
	c.HTTPListener, _ = parseHTTPListener(d.str("samsa.http.listener")) // validated by its Def
	c.LogFormat = d.str("samsa.log.format")
	c.LogLevel = d.str("samsa.log.level")
	if d.err != nil {
		return nil, d.err
	}
	// In KRaft broker.id always equals node.id; both report the source of
	// the one that decided it.
	if sources["broker.id"] == SourceStatic {
		sources["node.id"] = SourceStatic
	}
	if sources["node.id"] == SourceStatic {
		sources["broker.id"] = SourceStatic
	}
	values["node.id"] = strconv.Itoa(int(c.NodeID))
	values["broker.id"] = values["node.id"]
	return c, nil
}

func upperAll(ss []string) []string {
	for i := range ss {
		ss[i] = strings.ToUpper(ss[i])
	}
	return ss
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
