package config

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicDef describes one topic-level setting: Kafka's name and type, the
// broker setting that supplies its default (BrokerSynonym, "" if none), and a
// validator that checks type and range.
type TopicDef struct {
	Name          string
	Type          Type
	BrokerSynonym string
	Default       string // Kafka's default when the broker synonym is unset too
	Doc           string
	Validate      func(string) error
}

// ConfigError is a topic config rejected with a Kafka error code, for
// CreateTopics, AlterConfigs and IncrementalAlterConfigs responses.
type ConfigError struct {
	Code    int16
	Message string
}

// Error returns the message.
func (e *ConfigError) Error() string { return "config: " + e.Message }

// topicDefs is the immutable table behind TopicDefs.
var topicDefs = buildTopicDefs()

// TopicDefs returns Kafka's topic settings that samsa accepts, sorted by
// name. The slice is a copy.
func TopicDefs() []TopicDef {
	return append([]TopicDef(nil), topicDefs...)
}

func buildTopicDefs() []TopicDef {
	t := func(name string, typ Type, synonym, dflt, doc string, v validator) TopicDef {
		if v == nil {
			v = typeOnly(typ)
		}
		return TopicDef{Name: name, Type: typ, BrokerSynonym: synonym, Default: dflt, Doc: doc, Validate: v}
	}
	maxLong := strconv.FormatInt(math.MaxInt64, 10)
	defs := []TopicDef{
		t("cleanup.policy", List, "log.cleanup.policy", "delete", "delete, compact, both, or neither (empty: segments are kept forever).", listOrEmptyOf("compact", "delete")),
		t("compression.type", String, "compression.type", "producer", "Compression of stored data.", oneOf(compressionTypes...)),
		t("compression.gzip.level", Int, "compression.gzip.level", "-1", "gzip level.", anyOf(intRange(Int, -1, -1), intRange(Int, 1, 9))),
		t("compression.lz4.level", Int, "compression.lz4.level", "9", "lz4 level.", intRange(Int, 1, 17)),
		t("compression.zstd.level", Int, "compression.zstd.level", "3", "zstd level.", intRange(Int, -131072, 22)),
		t("delete.retention.ms", Long, "log.cleaner.delete.retention.ms", "86400000", "How long tombstones are kept.", atLeast(Long, 0)),
		t("errors.deadletterqueue.group.enable", Boolean, "", "false", "Lets share groups use this topic as a dead-letter queue; accepted, no effect (samsa has no share groups).", nil),
		t("file.delete.delay.ms", Long, "log.segment.delete.delay.ms", "60000", "Delay before a deleted segment file is removed.", atLeast(Long, 0)),
		t("flush.messages", Long, "log.flush.interval.messages", maxLong, "Messages between fsyncs.", atLeast(Long, 1)),
		t("flush.ms", Long, "log.flush.interval.ms", maxLong, "Time between fsyncs.", atLeast(Long, 0)),
		t("follower.replication.throttled.replicas", List, "", "", "Throttled replicas (partition:broker,... or *); accepted, no effect.", validateThrottledReplicas),
		t("index.interval.bytes", Int, "log.index.interval.bytes", "4096", "Bytes between offset index entries.", atLeast(Int, 0)),
		t("leader.replication.throttled.replicas", List, "", "", "Throttled replicas (partition:broker,... or *); accepted, no effect.", validateThrottledReplicas),
		t("local.retention.bytes", Long, "log.local.retention.bytes", "-2", "Local retention bytes with tiered storage.", atLeast(Long, -2)),
		t("local.retention.ms", Long, "log.local.retention.ms", "-2", "Local retention with tiered storage.", atLeast(Long, -2)),
		t("max.compaction.lag.ms", Long, "log.cleaner.max.compaction.lag.ms", maxLong, "Largest time a message stays uncompacted.", atLeast(Long, 1)),
		t("max.decompressed.message.bytes", Int, "max.decompressed.message.bytes", "2147483639", "Largest decompressed record; accepted, not enforced yet.", atLeast(Int, 1)),
		t("max.message.bytes", Int, "message.max.bytes", "1048588", "Largest record batch size.", atLeast(Int, 0)),
		t("message.timestamp.after.max.ms", Long, "log.message.timestamp.after.max.ms", "3600000", "Largest lead of a timestamp ahead of the broker clock.", atLeast(Long, 0)),
		t("message.timestamp.before.max.ms", Long, "log.message.timestamp.before.max.ms", maxLong, "Largest age of a timestamp behind the broker clock.", atLeast(Long, 0)),
		t("message.timestamp.type", String, "log.message.timestamp.type", "CreateTime", "CreateTime or LogAppendTime.", oneOf("CreateTime", "LogAppendTime")),
		t("min.cleanable.dirty.ratio", Double, "log.cleaner.min.cleanable.ratio", "0.5", "Least dirty ratio for cleaning.", doubleRange(0, 1)),
		t("min.compaction.lag.ms", Long, "log.cleaner.min.compaction.lag.ms", "0", "Least time a message stays uncompacted.", atLeast(Long, 0)),
		t("min.insync.replicas", Int, "min.insync.replicas", "1", "Least in-sync replicas for acks=all.", atLeast(Int, 1)),
		t("preallocate", Boolean, "log.preallocate", "false", "Preallocate segment files.", nil),
		t("remote.copy.lag.bytes", Long, "log.remote.copy.lag.bytes", "-1", "Tiered storage upload lag in bytes; accepted, no effect.", atLeast(Long, -1)),
		t("remote.copy.lag.ms", Long, "log.remote.copy.lag.ms", "0", "Tiered storage upload lag in time; accepted, no effect.", atLeast(Long, -1)),
		t("remote.log.copy.disable", Boolean, "", "false", "Tiered storage; accepted, no effect.", nil),
		t("remote.log.delete.on.disable", Boolean, "", "false", "Tiered storage; accepted, no effect.", nil),
		t("remote.storage.enable", Boolean, "", "false", "Tiered storage; only false is supported.", oneOfBool(false)),
		t("retention.bytes", Long, "log.retention.bytes", "-1", "Largest partition size before deletion; -1 unlimited.", typeOnly(Long)),
		t("retention.ms", Long, "log.retention.ms", "604800000", "How long to keep data; -1 forever.", atLeast(Long, -1)),
		t("segment.bytes", Int, "log.segment.bytes", "1073741824", "Largest segment file size.", atLeast(Int, 14)),
		t("segment.index.bytes", Int, "log.index.size.max.bytes", "10485760", "Largest index file size.", atLeast(Int, 4)),
		t("segment.jitter.ms", Long, "log.roll.jitter.ms", "0", "Random jitter subtracted from segment.ms.", atLeast(Long, 0)),
		t("segment.ms", Long, "log.roll.ms", "604800000", "Largest age of the active segment.", atLeast(Long, 1)),
		t("unclean.leader.election.enable", Boolean, "unclean.leader.election.enable", "false", "Allow out-of-sync leaders.", nil),
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	return defs
}

// validateThrottledReplicas accepts "*" or a list of partition:broker pairs,
// like Kafka's ThrottledReplicaListValidator.
func validateThrottledReplicas(s string) error {
	items := parseList(s)
	if len(items) == 1 && items[0] == "*" {
		return nil
	}
	for _, it := range items {
		p, b, ok := strings.Cut(it, ":")
		_, perr := strconv.ParseUint(strings.TrimSpace(p), 10, 31)
		_, berr := strconv.ParseUint(strings.TrimSpace(b), 10, 31)
		if !ok || perr != nil || berr != nil {
			return fmt.Errorf("must be * or a list of partitionId:brokerId, got %q", it)
		}
	}
	return nil
}

func oneOfBool(want bool) validator {
	return func(s string) error {
		b, err := parseBool(s)
		if err != nil {
			return err
		}
		if b != want {
			return fmt.Errorf("only %t is supported", want)
		}
		return nil
	}
}

func topicDef(name string) (TopicDef, bool) {
	i := sort.Search(len(topicDefs), func(i int) bool { return topicDefs[i].Name >= name })
	if i < len(topicDefs) && topicDefs[i].Name == name {
		return topicDefs[i], true
	}
	return TopicDef{}, false
}

// ValidateTopicConfig checks a set of topic overrides. It returns a
// *ConfigError with kerr.InvalidConfig for an unknown name or a bad value,
// like Kafka. Keys are checked in sorted order so the error is deterministic.
func ValidateTopicConfig(overrides map[string]string) error {
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d, ok := topicDef(k)
		if !ok {
			return &ConfigError{Code: kerr.InvalidConfig.Code, Message: "Unknown topic config name: " + k}
		}
		if err := d.Validate(overrides[k]); err != nil {
			return &ConfigError{Code: kerr.InvalidConfig.Code, Message: fmt.Sprintf("Invalid value %s for configuration %s: %v", overrides[k], k, err)}
		}
	}
	return nil
}

// TopicConfig is the effective configuration of one topic.
type TopicConfig struct {
	CleanupPolicyDelete, CleanupPolicyCompact                                 bool
	CompressionType                                                           string
	RetentionMs, RetentionBytes, SegmentBytes, SegmentMs, SegmentJitterMs     int64
	FlushMessages, FlushMs, FileDeleteDelayMs, DeleteRetentionMs              int64
	MinCompactionLagMs, MaxCompactionLagMs                                    int64
	MinCleanableDirtyRatio                                                    float64
	IndexIntervalBytes, SegmentIndexBytes, MaxMessageBytes, MinInsyncReplicas int32
	MessageTimestampType                                                      string
	MessageTimestampBeforeMaxMs, MessageTimestampAfterMaxMs                   int64
	Preallocate, UncleanLeaderElectionEnable                                  bool
}

// TopicConfig resolves a topic's effective configuration: each override, else
// the broker synonym's effective value, else Kafka's default. Overrides must
// have passed ValidateTopicConfig; invalid values fall back to the broker's.
func (c *Config) TopicConfig(overrides map[string]string) TopicConfig {
	get := func(name string) string {
		v, _, _ := c.TopicConfigValue(name, overrides)
		return v
	}
	i64 := func(name string) int64 {
		n, err := parseInt(get(name), 64)
		if err != nil {
			n, _ = parseInt(c.brokerTopicValue(name), 64)
		}
		return n
	}
	i32 := func(name string) int32 {
		n, err := parseInt(get(name), 32)
		if err != nil {
			n, _ = parseInt(c.brokerTopicValue(name), 32)
		}
		return int32(n)
	}
	boolean := func(name string) bool {
		b, err := parseBool(get(name))
		if err != nil {
			b, _ = parseBool(c.brokerTopicValue(name))
		}
		return b
	}
	tc := TopicConfig{
		CompressionType:             strings.TrimSpace(get("compression.type")),
		RetentionMs:                 i64("retention.ms"),
		RetentionBytes:              i64("retention.bytes"),
		SegmentBytes:                i64("segment.bytes"),
		SegmentMs:                   i64("segment.ms"),
		SegmentJitterMs:             i64("segment.jitter.ms"),
		FlushMessages:               i64("flush.messages"),
		FlushMs:                     i64("flush.ms"),
		FileDeleteDelayMs:           i64("file.delete.delay.ms"),
		DeleteRetentionMs:           i64("delete.retention.ms"),
		MinCompactionLagMs:          i64("min.compaction.lag.ms"),
		MaxCompactionLagMs:          i64("max.compaction.lag.ms"),
		IndexIntervalBytes:          i32("index.interval.bytes"),
		SegmentIndexBytes:           i32("segment.index.bytes"),
		MaxMessageBytes:             i32("max.message.bytes"),
		MinInsyncReplicas:           i32("min.insync.replicas"),
		MessageTimestampType:        strings.TrimSpace(get("message.timestamp.type")),
		MessageTimestampBeforeMaxMs: i64("message.timestamp.before.max.ms"),
		MessageTimestampAfterMaxMs:  i64("message.timestamp.after.max.ms"),
		Preallocate:                 boolean("preallocate"),
		UncleanLeaderElectionEnable: boolean("unclean.leader.election.enable"),
	}
	if tc.RetentionMs < 0 {
		tc.RetentionMs = -1
	}
	if f, err := parseDouble(get("min.cleanable.dirty.ratio")); err == nil {
		tc.MinCleanableDirtyRatio = f
	}
	for _, p := range parseList(get("cleanup.policy")) {
		switch p {
		case "delete":
			tc.CleanupPolicyDelete = true
		case "compact":
			tc.CleanupPolicyCompact = true
		}
	}
	return tc
}

// TopicConfigValue returns one topic setting's effective value and source for
// DescribeConfigs: SourceDynamicTopic for an override, else the most
// specific level (dynamic broker, dynamic cluster default, static) that sets
// the broker synonym or a setting it falls back to, like
// log.retention.hours, else SourceDefault. ok is false for an unknown name.
func (c *Config) TopicConfigValue(name string, overrides map[string]string) (value string, source Source, ok bool) {
	d, ok := topicDef(name)
	if !ok {
		return "", SourceUnknown, false
	}
	if v, set := overrides[name]; set {
		return strings.TrimSpace(v), SourceDynamicTopic, true
	}
	if d.BrokerSynonym == "" {
		return d.Default, SourceDefault, true
	}
	// The source is the most specific level that sets any of the synonyms:
	// per-broker dynamic, then cluster-wide dynamic, static, default (the
	// Source values 2..5 are in that order).
	source = SourceDefault
	for _, s := range brokerSynonyms(d.BrokerSynonym) {
		if got, ok := c.Sources[s]; ok && got >= SourceDynamicBroker && got < source {
			source = got
		}
	}
	return c.brokerTopicValue(name), source, true
}

// brokerSynonyms lists the broker settings that decide a broker synonym's
// effective value, most specific first, like Kafka's synonym lists in
// DescribeConfigs.
func brokerSynonyms(synonym string) []string {
	switch synonym {
	case "log.retention.ms":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	case "log.roll.ms":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	}
	return []string{synonym}
}

// brokerTopicValue is the broker-level effective value for topic setting name.
func (c *Config) brokerTopicValue(name string) string {
	d, _ := topicDef(name)
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	switch d.BrokerSynonym {
	case "":
		return d.Default
	case "log.retention.ms":
		return itoa(c.LogRetentionMs)
	case "log.roll.ms":
		return itoa(c.LogRollMs)
	case "log.roll.jitter.ms":
		return itoa(c.LogRollJitterMs)
	case "log.flush.interval.ms":
		return itoa(c.LogFlushIntervalMs)
	}
	if v, ok := c.Values[d.BrokerSynonym]; ok {
		return v
	}
	return d.Default
}
