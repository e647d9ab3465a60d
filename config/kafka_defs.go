package config

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The registry of broker settings: every setting Apache Kafka 4.4 defines,
// with Kafka's type, default, dynamic-update mode and synonyms, read from
// kafka_broker_configs.tsv, which config/kafkadefs/gen.sh generates from
// the Kafka 4.4.0 jars (AbstractKafkaConfig.CONFIG_DEF and
// DynamicBrokerConfig; compat-tests/kafka-ref resolves them from Maven
// Central). BrokerDefs, the settings samsa implements, take their update
// mode from it; the other Kafka settings are accepted, listed by
// DescribeConfigs with their values, and not acted on (Def.Ignored).
//
// Adding a setting samsa implements: one line in brokerDefs (defs.go), with
// samsa's validator and doc; if it is a Kafka setting, its type and default
// must equal the table's (TestBrokerDefsMatchKafka) unless the difference
// is deliberate and listed there. A new Kafka version: run gen.sh.

//go:embed kafka_broker_configs.tsv
var kafkaBrokerTable string

// UpdateMode is how AlterConfigs may change a broker setting at runtime,
// Kafka's DynamicBrokerConfig update modes.
type UpdateMode int8

// Update modes, as Kafka's documentation names them.
const (
	ReadOnly    UpdateMode = iota // static: server.properties only
	PerBroker                     // dynamic, on a broker's own resource only
	ClusterWide                   // dynamic, per broker or as the cluster-wide default
)

// String returns Kafka's name of the mode.
func (m UpdateMode) String() string {
	switch m {
	case PerBroker:
		return "per-broker"
	case ClusterWide:
		return "cluster-wide"
	}
	return "read-only"
}

// kafkaDef is one line of kafka_broker_configs.tsv.
type kafkaDef struct {
	name         string
	typ          Type
	dflt         string
	hasDefault   bool // false for a null default or none ("<required>")
	required     bool // Kafka has no default: the setting must be given
	mode         UpdateMode
	internal     bool // Kafka does not list it in DescribeConfigs
	validator    string
	synonyms     []string
	listenerOnly bool
}

// kafkaDefs is the parsed table, by name.
var kafkaDefs = mustParseKafkaDefs(kafkaBrokerTable)

func mustParseKafkaDefs(s string) map[string]kafkaDef {
	defs, err := parseKafkaDefs(s)
	if err != nil {
		panic(err) // the embedded table is part of the build
	}
	return defs
}

// parseKafkaDefs reads the table format that gen.sh writes.
func parseKafkaDefs(s string) (map[string]kafkaDef, error) {
	out := map[string]kafkaDef{}
	for i, line := range strings.Split(s, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 8 {
			return nil, fmt.Errorf("%w: kafka_broker_configs.tsv:%d: %d fields, want 8", ErrInvalid, i+1, len(f))
		}
		k := kafkaDef{name: f[0], dflt: f[2], validator: f[5], internal: f[4] == "true", listenerOnly: f[7] == "true"}
		switch f[2] {
		case "<null>":
			k.dflt = ""
		case "<required>":
			k.dflt, k.required = "", true
		default:
			k.hasDefault = true
		}
		typ, ok := typeByName[f[1]]
		if !ok {
			return nil, fmt.Errorf("%w: kafka_broker_configs.tsv:%d: type %q", ErrInvalid, i+1, f[1])
		}
		k.typ = typ
		switch f[3] {
		case "read-only":
		case "per-broker":
			k.mode = PerBroker
		case "cluster-wide":
			k.mode = ClusterWide
		default:
			return nil, fmt.Errorf("%w: kafka_broker_configs.tsv:%d: mode %q", ErrInvalid, i+1, f[3])
		}
		if f[6] != "" {
			k.synonyms = strings.Split(f[6], ",")
		}
		out[k.name] = k
	}
	return out, nil
}

var typeByName = map[string]Type{
	"BOOLEAN": Boolean, "STRING": String, "INT": Int, "SHORT": Short, "LONG": Long,
	"DOUBLE": Double, "LIST": List, "CLASS": Class, "PASSWORD": Password,
}

// withKafkaModes sets, on each of samsa's settings that Kafka also has,
// Kafka's update mode, listing and synonyms; samsa's own settings (and
// those Kafka no longer has) are unlisted and read-only unless marked
// dynamic in defs.go.
func withKafkaModes(defs []Def) []Def {
	for i := range defs {
		d := &defs[i]
		k, ok := kafkaDefs[d.Name]
		if !ok {
			d.Unlisted = true
			d.Synonyms = []string{d.Name}
			continue
		}
		d.Dynamic = k.mode != ReadOnly
		d.PerBroker = k.mode == PerBroker
		d.ListenerOnly = k.listenerOnly
		d.Unlisted = k.internal
		d.KafkaRequired = k.required
		d.Synonyms = k.synonyms
	}
	return defs
}

// ignoredDoc is the description of the Kafka settings samsa does not act on.
const ignoredDoc = "Kafka setting accepted and listed; samsa does not act on it."

// allBrokerDefs is BrokerDefs plus every other Kafka broker setting,
// sorted by name.
var allBrokerDefs, brokerDefIndex = buildRegistry()

func buildRegistry() ([]Def, map[string]int) {
	all := slices.Clone(BrokerDefs)
	have := map[string]bool{}
	for _, d := range all {
		have[d.Name] = true
	}
	for name, k := range kafkaDefs {
		if have[name] {
			continue
		}
		all = append(all, Def{
			Name: name, Type: k.typ, Default: k.dflt, HasDefault: k.hasDefault,
			Doc: ignoredDoc, Dynamic: k.mode != ReadOnly, PerBroker: k.mode == PerBroker,
			ListenerOnly: k.listenerOnly, Unlisted: k.internal, KafkaRequired: k.required,
			Ignored: true, Synonyms: k.synonyms, Validate: kafkaValidator(k.typ, k.validator),
		})
	}
	slices.SortFunc(all, func(a, b Def) int { return strings.Compare(a.Name, b.Name) })
	index := make(map[string]int, len(all))
	for i, d := range all {
		index[d.Name] = i
	}
	return all, index
}

// AllBrokerDefs returns every broker setting, sorted by name: those samsa
// implements (BrokerDefs) and the other settings of Kafka 4.4, which samsa
// accepts and lists but does not act on (Ignored). The slice is a copy.
func AllBrokerDefs() []Def { return slices.Clone(allBrokerDefs) }

// BrokerDef returns the broker setting called name, implemented or not.
func BrokerDef(name string) (Def, bool) {
	i, ok := brokerDefIndex[name]
	if !ok {
		return Def{}, false
	}
	return allBrokerDefs[i], true
}

// isKafkaSetting reports whether name is a broker setting of Kafka 4.4.
func isKafkaSetting(name string) bool {
	_, ok := kafkaDefs[name]
	return ok
}

// listenerPrefix is the prefix of per-listener settings:
// listener.name.<listener>.<setting>.
const listenerPrefix = "listener.name."

// BrokerSynonyms returns the names a broker setting falls back to, most
// specific first and name itself included, like Kafka's
// brokerConfigSynonyms: log.retention.ms, log.retention.minutes,
// log.retention.hours for any of the three; for a listener-prefixed
// setting (listener.name.<l>.ssl.keystore.location,
// listener.name.<l>.<mechanism>.sasl.jaas.config) the prefixed name, then
// the setting without the prefix.
func BrokerSynonyms(name string) []string {
	if d, ok := BrokerDef(name); ok && len(d.Synonyms) > 0 {
		return slices.Clone(d.Synonyms)
	}
	if base, ok := ListenerBaseSetting(name); ok {
		return []string{name, base}
	}
	return []string{name}
}

// ListenerBaseSetting returns the setting a listener-prefixed name
// overrides: ssl.keystore.location for
// listener.name.ssl.ssl.keystore.location, sasl.jaas.config for
// listener.name.sasl_ssl.plain.sasl.jaas.config. ok is false when name has
// no listener prefix or names no known setting after it.
func ListenerBaseSetting(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, listenerPrefix)
	if !ok {
		return "", false
	}
	_, rest, ok = strings.Cut(rest, ".")
	if !ok {
		return "", false
	}
	if _, known := BrokerDef(rest); known {
		return rest, true
	}
	if _, mech, ok := strings.Cut(rest, "."); ok {
		if _, known := BrokerDef(mech); known && strings.HasPrefix(mech, "sasl.") {
			return mech, true
		}
	}
	return "", false
}

// kafkaValidator turns the description of a Kafka ConfigDef validator, as
// the table holds it, into a validator: ranges "[lo,...]", "[lo,...,hi]"
// (optionally "or -1"), value sets "[a, b]" (items of a LIST each in the
// set; "(case insensitive)" ignores case), "non-empty string", "non-empty
// list". A description it does not know checks the type only.
func kafkaValidator(t Type, desc string) validator {
	desc = strings.TrimSpace(desc)
	base := typeOnly(t)
	switch desc {
	case "":
		return base
	case "non-empty string":
		return func(s string) error {
			if strings.TrimSpace(s) == "" {
				return errors.New("string may not be empty")
			}
			return nil
		}
	case "non-empty list":
		return func(s string) error {
			if len(parseList(s)) == 0 {
				return errors.New("empty list not allowed")
			}
			return nil
		}
	}
	orMinusOne := false
	if d, ok := strings.CutSuffix(desc, " or -1"); ok {
		desc, orMinusOne = d, true
	}
	fold := false
	if d, ok := strings.CutPrefix(desc, "(case insensitive) "); ok {
		desc, fold = d, true
	}
	inner, ok := strings.CutPrefix(desc, "[")
	if !ok {
		return base
	}
	if inner, ok = strings.CutSuffix(inner, "]"); !ok {
		return base
	}
	if strings.Contains(inner, "...") {
		return rangeValidator(t, inner, orMinusOne, base)
	}
	var allowed []string
	for _, a := range strings.Split(inner, ",") {
		allowed = append(allowed, strings.TrimSpace(a))
	}
	match := func(item string) bool {
		for _, a := range allowed {
			if item == a || (fold && strings.EqualFold(item, a)) {
				return true
			}
		}
		return false
	}
	return func(s string) error {
		items := []string{strings.TrimSpace(s)}
		if t == List {
			items = parseList(s)
		}
		for _, it := range items {
			if !match(it) {
				return fmt.Errorf("string must be one of: %s", strings.Join(allowed, ", "))
			}
		}
		return nil
	}
}

// rangeValidator parses "lo,...", "lo,...,hi" or "...,hi".
func rangeValidator(t Type, inner string, orMinusOne bool, base validator) validator {
	parts := strings.Split(inner, ",")
	lo, hi := "", ""
	switch {
	case len(parts) == 2 && parts[1] == "...":
		lo = parts[0]
	case len(parts) == 2 && parts[0] == "...":
		hi = parts[1]
	case len(parts) == 3 && parts[1] == "...":
		lo, hi = parts[0], parts[2]
	default:
		return base
	}
	if t == Double {
		l, h := math.Inf(-1), math.Inf(1)
		if lo != "" {
			l, _ = strconv.ParseFloat(lo, 64)
		}
		if hi != "" {
			h, _ = strconv.ParseFloat(hi, 64)
		}
		return doubleRange(l, h)
	}
	bits := 64
	minV, maxV := int64(math.MinInt64), int64(math.MaxInt64)
	switch t {
	case Int:
		bits, minV, maxV = 32, math.MinInt32, math.MaxInt32
	case Short:
		bits, minV, maxV = 16, math.MinInt16, math.MaxInt16
	case Long:
	default:
		return base
	}
	l, h := minV, maxV
	var err error
	if lo != "" {
		if l, err = strconv.ParseInt(lo, 10, bits); err != nil {
			return base
		}
	}
	if hi != "" {
		if h, err = strconv.ParseInt(hi, 10, bits); err != nil {
			return base
		}
	}
	v := intRange(t, l, h)
	if orMinusOne {
		return anyOf(v, intRange(t, -1, -1))
	}
	return v
}
