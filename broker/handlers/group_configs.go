package handlers

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
)

// Group configs (ConfigResource type GROUP = 32; KIP-848, KIP-932): the
// per-group overrides of the broker's group.* settings, as Kafka 4.4's
// GroupConfig defines them. They are stored in the controller's metadata
// like topic configs (controller.Image.GroupConfigs) and read by the group
// coordinator (consumer.*, share.session/heartbeat, streams.session/heartbeat/
// num.standby.replicas/initial.rebalance.delay) and the share-partition
// leaders (share.record.lock.duration.ms, share.auto.offset.reset,
// share.isolation.level, share.delivery.count.limit, ...).
//
// A value is checked in two steps, as Kafka does: first the definition's
// own bound ("Invalid value X for configuration N: Value must be at least
// L"), then the broker's min/max settings ("N must be in the range A to B
// inclusive."). A group needs not exist to be described or altered; a
// group without overrides lists every name with its default
// (DEFAULT_CONFIG).

// groupConfigDef is one group config: its type, the broker setting that
// gives its default, and its bounds.
type groupConfigDef struct {
	name string
	typ  config.Type
	// broker is the broker setting whose value is the default; dflt is
	// Kafka's default of that setting, used when samsa does not define
	// the setting itself.
	broker string
	dflt   string
	// least is the definition's own lower bound (Kafka's ConfigDef
	// validator), hasLeast when there is one.
	least    int64
	hasLeast bool
	// minSetting and maxSetting name the broker settings bounding the
	// value (empty: none), with Kafka's defaults.
	minSetting, minDefault string
	maxSetting, maxDefault string
	// valid checks a string value (share.auto.offset.reset,
	// share.isolation.level); it returns the message after "Invalid value
	// X for configuration N: ".
	valid func(string) string
}

func atLeastDef(name, broker, dflt string, least int64, minSetting, minDefault, maxSetting, maxDefault string) groupConfigDef {
	return groupConfigDef{name: name, typ: config.Int, broker: broker, dflt: dflt, least: least, hasLeast: true,
		minSetting: minSetting, minDefault: minDefault, maxSetting: maxSetting, maxDefault: maxDefault}
}

// groupConfigDefs are Kafka 4.4's group configs, sorted by name.
var groupConfigDefs = func() []groupConfigDef {
	defs := []groupConfigDef{
		atLeastDef("consumer.session.timeout.ms", "group.consumer.session.timeout.ms", "45000", 1, "group.consumer.min.session.timeout.ms", "45000", "group.consumer.max.session.timeout.ms", "60000"),
		atLeastDef("consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms", "5000", 1, "group.consumer.min.heartbeat.interval.ms", "5000", "group.consumer.max.heartbeat.interval.ms", "15000"),
		atLeastDef("consumer.assignment.interval.ms", "group.consumer.assignment.interval.ms", "1000", 0, "group.consumer.min.assignment.interval.ms", "0", "group.consumer.max.assignment.interval.ms", "15000"),
		atLeastDef("share.session.timeout.ms", "group.share.session.timeout.ms", "45000", 1, "group.share.min.session.timeout.ms", "45000", "group.share.max.session.timeout.ms", "60000"),
		atLeastDef("share.heartbeat.interval.ms", "group.share.heartbeat.interval.ms", "5000", 1, "group.share.min.heartbeat.interval.ms", "5000", "group.share.max.heartbeat.interval.ms", "15000"),
		atLeastDef("share.record.lock.duration.ms", "group.share.record.lock.duration.ms", "30000", 1000, "group.share.min.record.lock.duration.ms", "15000", "group.share.max.record.lock.duration.ms", "60000"),
		atLeastDef("share.delivery.count.limit", "group.share.delivery.count.limit", "5", 2, "group.share.min.delivery.count.limit", "2", "group.share.max.delivery.count.limit", "10"),
		atLeastDef("share.partition.max.record.locks", "group.share.partition.max.record.locks", "2000", 100, "group.share.min.partition.max.record.locks", "100", "group.share.max.partition.max.record.locks", "4000"),
		atLeastDef("share.assignment.interval.ms", "group.share.assignment.interval.ms", "1000", 0, "group.share.min.assignment.interval.ms", "0", "group.share.max.assignment.interval.ms", "15000"),
		{name: "share.auto.offset.reset", typ: config.String, dflt: "latest", valid: validShareAutoOffsetReset},
		{name: "share.isolation.level", typ: config.String, dflt: "read_uncommitted", valid: func(v string) string {
			if v == "read_committed" || v == "read_uncommitted" {
				return ""
			}
			return "String must be one of: read_committed, read_uncommitted"
		}},
		{name: "share.renew.acknowledge.enable", typ: config.Boolean, dflt: "true", valid: validBoolean},
		atLeastDef("streams.session.timeout.ms", "group.streams.session.timeout.ms", "45000", 1, "group.streams.min.session.timeout.ms", "45000", "group.streams.max.session.timeout.ms", "60000"),
		atLeastDef("streams.heartbeat.interval.ms", "group.streams.heartbeat.interval.ms", "5000", 1, "group.streams.min.heartbeat.interval.ms", "5000", "group.streams.max.heartbeat.interval.ms", "15000"),
		atLeastDef("streams.num.standby.replicas", "group.streams.num.standby.replicas", "0", 0, "", "", "group.streams.max.standby.replicas", "2"),
		atLeastDef("streams.initial.rebalance.delay.ms", "group.streams.initial.rebalance.delay.ms", "3000", 0, "", "", "", ""),
		atLeastDef("streams.assignment.interval.ms", "group.streams.assignment.interval.ms", "1000", 0, "group.streams.min.assignment.interval.ms", "0", "group.streams.max.assignment.interval.ms", "15000"),
		{name: "streams.assignor.name", typ: config.String, broker: "group.streams.assignors", dflt: "sticky"},
		{name: "streams.rack.aware.assignment.tags", typ: config.List, broker: "group.streams.rack.aware.assignment.tags", dflt: ""},
		{name: "errors.deadletterqueue.topic.name", typ: config.String, dflt: ""},
		{name: "errors.deadletterqueue.copy.record.enable", typ: config.Boolean, dflt: "false", valid: validBoolean},
	}
	slices.SortFunc(defs, func(a, b groupConfigDef) int { return strings.Compare(a.name, b.name) })
	return defs
}()

func findGroupConfigDef(name string) (groupConfigDef, bool) {
	i, ok := slices.BinarySearchFunc(groupConfigDefs, name, func(d groupConfigDef, n string) int { return strings.Compare(d.name, n) })
	if !ok {
		return groupConfigDef{}, false
	}
	return groupConfigDefs[i], true
}

func validBoolean(v string) string {
	if strings.EqualFold(v, "true") || strings.EqualFold(v, "false") {
		return ""
	}
	return "Expected value to be either true or false"
}

// isoDuration matches the ISO-8601 durations Java's Duration.parse takes
// (PnDTnHnMn.nS, with an optional sign).
var isoDuration = regexp.MustCompile(`^[-+]?P(?:[-+]?[0-9]+D)?(?:T(?:[-+]?[0-9]+H)?(?:[-+]?[0-9]+M)?(?:[-+]?[0-9]+(?:[.,][0-9]{0,9})?S)?)?$`)

// validShareAutoOffsetReset checks share.auto.offset.reset: latest,
// earliest or by_duration:<ISO-8601 duration> (not negative).
func validShareAutoOffsetReset(v string) string {
	msg := fmt.Sprintf("Invalid value `%s` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.", v)
	lower := strings.ToLower(v)
	switch {
	case lower == "latest" || lower == "earliest":
		return ""
	case strings.HasPrefix(lower, "by_duration:"):
		d := strings.TrimSpace(v[len("by_duration:"):])
		if d == "" || strings.HasPrefix(d, "-") || !isoDuration.MatchString(strings.ToUpper(d)) || strings.HasSuffix(strings.ToUpper(d), "T") || strings.ToUpper(d) == "P" {
			return msg
		}
		return ""
	}
	return msg
}

// brokerSetting returns a broker setting's value: samsa's own (static,
// then cluster-wide and per-broker dynamic levels do not apply to these
// read-only settings), else one given statically that samsa only accepts,
// else dflt.
func brokerSetting(d *Deps, name, dflt string) string {
	if d == nil || d.Config == nil || name == "" {
		return dflt
	}
	if v, ok := d.Config.Values[name]; ok {
		return v
	}
	if v, ok := d.Config.OtherValues[name]; ok {
		return v
	}
	return dflt
}

// groupConfigDefault is a group config's value when the group does not
// override it.
func groupConfigDefault(d *Deps, def groupConfigDef) string {
	return brokerSetting(d, def.broker, def.dflt)
}

// describeGroupConfigs lists every group config of group with its value.
// Synonyms are, as Kafka lists them, the group's override (GROUP_CONFIG)
// and the default (DEFAULT_CONFIG) under the broker setting's name (the
// group config's own name when no broker setting gives it).
func describeGroupConfigs(d *Deps, img *controller.Image, group string, withSynonyms bool) ([]configEntry, int16, string) {
	overrides := img.GroupConfig(group)
	entries := make([]configEntry, 0, len(groupConfigDefs))
	for _, def := range groupConfigDefs {
		e := configEntry{name: def.name, typ: wireConfigType(def.typ, true), source: kmsg.ConfigSourceDefaultConfig, doc: groupConfigDoc(def.name)}
		dflt := groupConfigDefault(d, def)
		v := dflt
		o, overridden := overrides[def.name]
		if overridden {
			v = o
			e.source = kmsg.ConfigSourceGroupConfig
		}
		e.value = &v
		if withSynonyms {
			if overridden {
				ov := o
				e.synonyms = append(e.synonyms, configSynonym{name: def.name, value: &ov, source: kmsg.ConfigSourceGroupConfig})
			}
			name := def.broker
			if name == "" {
				name = def.name
			}
			dv := dflt
			e.synonyms = append(e.synonyms, configSynonym{name: name, value: &dv, source: kmsg.ConfigSourceDefaultConfig})
		}
		entries = append(entries, e)
	}
	return entries, 0, ""
}

// groupConfigDoc is the documentation DescribeConfigs v3 gives for a
// group config.
func groupConfigDoc(name string) string {
	kind, rest, _ := strings.Cut(name, ".")
	switch rest {
	case "session.timeout.ms":
		return "The timeout to detect failed members of a " + kind + " group; overrides group." + kind + ".session.timeout.ms for this group."
	case "heartbeat.interval.ms":
		return "The heartbeat interval given to the members of a " + kind + " group; overrides group." + kind + ".heartbeat.interval.ms for this group."
	case "assignment.interval.ms":
		return "The least time between two assignment computations of a " + kind + " group."
	}
	switch name {
	case "share.record.lock.duration.ms":
		return "How long a share consumer holds the records it acquired before they become available to others again."
	case "share.delivery.count.limit":
		return "How many times a record may be delivered to the share group before it is archived."
	case "share.partition.max.record.locks":
		return "The most records a share-partition keeps acquired at once."
	case "share.auto.offset.reset":
		return "Where a share-partition without state starts: latest, earliest, or by_duration:<ISO-8601 duration> (the first record at most that old)."
	case "share.isolation.level":
		return "read_committed to deliver only committed transactional records to the share group, read_uncommitted for all."
	case "share.renew.acknowledge.enable":
		return "Whether share consumers may renew the acquisition lock of records they hold."
	case "streams.num.standby.replicas":
		return "The number of standby replicas of each task of a streams group."
	case "streams.initial.rebalance.delay.ms":
		return "How long a new streams group waits for more members before its first assignment."
	case "streams.assignor.name":
		return "The task assignor of a streams group, by name."
	case "streams.rack.aware.assignment.tags":
		return "Client tag keys used to spread standby replicas of a streams group."
	case "errors.deadletterqueue.topic.name":
		return "The dead-letter queue topic of a share group, empty for none."
	case "errors.deadletterqueue.copy.record.enable":
		return "Whether records written to the dead-letter queue copy the original record."
	}
	return ""
}

// groupConfigValidator checks a group's complete override map as Kafka
// 4.4's GroupConfig does.
func (d *Deps) groupConfigValidator() func(map[string]string) (int16, string) {
	return func(m map[string]string) (int16, string) {
		for _, name := range sortedConfigNames(m) {
			if code, msg := validateGroupConfig(d, name, m[name]); code != 0 {
				return code, msg
			}
		}
		// A heartbeat interval must be below the session timeout.
		for _, kind := range []string{"consumer", "share", "streams"} {
			hbDef, _ := findGroupConfigDef(kind + ".heartbeat.interval.ms")
			stDef, _ := findGroupConfigDef(kind + ".session.timeout.ms")
			hb, hbSet := m[hbDef.name]
			st, stSet := m[stDef.name]
			if !hbSet && !stSet {
				continue
			}
			if !hbSet {
				hb = groupConfigDefault(d, hbDef)
			}
			if !stSet {
				st = groupConfigDefault(d, stDef)
			}
			h, _ := strconv.ParseInt(hb, 10, 64)
			s, _ := strconv.ParseInt(st, 10, 64)
			if h >= s {
				return kerr.InvalidConfig.Code, fmt.Sprintf("%s must be less than %s", hbDef.name, stDef.name)
			}
		}
		return 0, ""
	}
}

// validateGroupConfig checks one group config value.
func validateGroupConfig(d *Deps, name, value string) (int16, string) {
	def, ok := findGroupConfigDef(name)
	if !ok {
		return kerr.InvalidConfig.Code, "Unknown group config name: " + name
	}
	invalid := func(why string) (int16, string) {
		return kerr.InvalidConfig.Code, fmt.Sprintf("Invalid value %s for configuration %s: %s", value, name, why)
	}
	switch def.typ {
	case config.Int:
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
		if err != nil {
			return invalid("Not a number of type INT")
		}
		if def.hasLeast && n < def.least {
			return invalid(fmt.Sprintf("Value must be at least %d", def.least))
		}
		lo, hi := int64(-1), int64(-1)
		if def.minSetting != "" {
			lo, _ = strconv.ParseInt(brokerSetting(d, def.minSetting, def.minDefault), 10, 64)
		}
		if def.maxSetting != "" {
			hi, _ = strconv.ParseInt(brokerSetting(d, def.maxSetting, def.maxDefault), 10, 64)
		}
		switch {
		case def.minSetting != "" && def.maxSetting != "" && (n < lo || n > hi):
			return kerr.InvalidConfig.Code, fmt.Sprintf("%s must be in the range %d to %d inclusive.", name, lo, hi)
		case def.minSetting == "" && def.maxSetting != "" && n > hi:
			return kerr.InvalidConfig.Code, fmt.Sprintf("%s must be less than or equal to %d.", name, hi)
		}
	default:
		if def.valid != nil {
			if why := def.valid(value); why != "" {
				return invalid(why)
			}
		}
	}
	return 0, ""
}

// alterGroupConfigs applies incremental operations to a group's overrides.
func alterGroupConfigs(d *Deps, res kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (int16, string) {
	if res.ResourceName == "" {
		return kerr.InvalidRequest.Code, "Group name must not be empty"
	}
	ops := make([]controller.ConfigOp, 0, len(res.Configs))
	for _, c := range res.Configs {
		def, ok := findGroupConfigDef(c.Name)
		if !ok {
			return kerr.InvalidConfig.Code, "Unknown group config name: " + c.Name
		}
		if isListOp(c.Op) && def.typ != config.List {
			return kerr.InvalidConfig.Code, fmt.Sprintf("Can't %s to key %s because its type is not LIST.", c.Op, c.Name)
		}
		ops = append(ops, controller.ConfigOp{Name: c.Name, Value: c.Value, Op: controller.OpType(c.Op)})
	}
	return d.Controller.AlterGroupConfigs(res.ResourceName, ops, validateOnly, d.groupConfigValidator())
}

// setGroupConfigs replaces a group's overrides (legacy AlterConfigs).
func setGroupConfigs(d *Deps, group string, configs map[string]string, validateOnly bool) (int16, string) {
	if group == "" {
		return kerr.InvalidRequest.Code, "Group name must not be empty"
	}
	ops := replaceAllOps(d.Controller.Image().GroupConfig(group), configs)
	return d.Controller.AlterGroupConfigs(group, ops, validateOnly, d.groupConfigValidator())
}
