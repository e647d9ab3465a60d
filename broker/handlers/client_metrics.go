package handlers

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
)

// Client metrics subscriptions (config resource type CLIENT_METRICS = 16,
// KIP-714), as Kafka 4.4's ClientMetricsConfigs defines them: a named
// subscription has three configs,
//
//   - metrics (LIST, default empty): metric name prefixes, "*" for all;
//   - interval.ms (INT, default 300000): the push interval, 100 to
//     3600000;
//   - match (LIST, default empty): client selectors key=regex, the keys
//     client_instance_id, client_id, client_software_name,
//     client_software_version, client_source_address and
//     client_source_port.
//
// They are kept in the controller's metadata (controller.Image
// .ClientMetrics, ConfigRecords of resource type 16, as Kafka's metadata
// log keeps them), so every node and a restart see them. A subscription
// exists while it has a config: deleting its last config removes it.
// samsa stores and serves the subscriptions for kafka-client-metrics.sh
// and the admin APIs; it does not serve GetTelemetrySubscriptions and
// PushTelemetry, which Kafka 4.4 advertises only with a metrics reporter
// plugin that implements ClientTelemetry (none by default).
//
// Validation follows ClientMetricsConfigs.validate on the resulting
// configs, in Kafka's order and with its codes (all checked against Kafka
// 4.4 by the differential suite):
//
//  1. an empty name: INVALID_REQUEST "Subscription name can't be empty";
//  2. an unknown config: INVALID_REQUEST "Unknown client metrics
//     configuration: N";
//  3. parsing in definition order (metrics, interval.ms, match): a list
//     with an empty item is INVALID_CONFIG "Configuration 'N' values must
//     not be empty.", an interval that is no int is INVALID_CONFIG
//     "Invalid value V for configuration interval.ms: Not a number of
//     type INT";
//  4. interval.ms out of range: INVALID_REQUEST "Invalid value V for
//     interval.ms, interval must be between 100 and 3600000 (1 hour)";
//  5. a match item that is not key=regex with a known key and a regex
//     that compiles: INVALID_CONFIG "Illegal client matching pattern: I".
//
// APPEND and SUBTRACT are INVALID_CONFIG "Can't APPEND to key N because
// its type is not LIST." even on the list configs, as in Kafka (its
// controller splits lists of topic and broker configs only).

// clientMetricsDef is one client metrics config.
type clientMetricsDef struct {
	name, dflt, doc string
	typ             config.Type
}

// clientMetricsDefs are Kafka 4.4's client metrics configs in its
// definition order, which is also the order values are parsed in.
var clientMetricsDefs = []clientMetricsDef{
	{name: "metrics", typ: config.List, dflt: "", doc: "Telemetry metric name prefix list"},
	{name: "interval.ms", typ: config.Int, dflt: "300000", doc: "Metrics push interval in milliseconds"},
	{name: "match", typ: config.List, dflt: "", doc: "Client match criteria"},
}

// clientMetricsMatchKeys are the client selectors a match item may name.
var clientMetricsMatchKeys = []string{"client_instance_id", "client_id", "client_software_name",
	"client_software_version", "client_source_address", "client_source_port"}

const (
	clientMetricsMinIntervalMs = 100
	clientMetricsMaxIntervalMs = 3600000
)

func findClientMetricsDef(name string) (clientMetricsDef, bool) {
	for _, d := range clientMetricsDefs {
		if d.name == name {
			return d, true
		}
	}
	return clientMetricsDef{}, false
}

// parseConfigList parses a LIST value as Kafka's ConfigDef does for a
// setting validated by ValidList: trimmed, split at commas with the
// spaces around them, duplicates dropped (Kafka 4.4 logs a warning and
// keeps the first of each), "" the empty list. ok is false when an item
// is empty.
func parseConfigList(v string) (items []string, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, true
	}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, false
		}
		if !slices.Contains(items, item) {
			items = append(items, item)
		}
	}
	return items, true
}

// validateClientMetrics checks a subscription's complete configs as Kafka
// 4.4's ClientMetricsConfigs.validate does (see the file comment).
func validateClientMetrics(name string, configs map[string]string) (int16, string) {
	if name == "" {
		return kerr.InvalidRequest.Code, "Subscription name can't be empty"
	}
	for _, n := range sortedConfigNames(configs) {
		if _, ok := findClientMetricsDef(n); !ok {
			return kerr.InvalidRequest.Code, "Unknown client metrics configuration: " + n
		}
	}
	var interval int64
	var match []string
	for _, def := range clientMetricsDefs {
		v, set := configs[def.name]
		if !set {
			continue
		}
		switch def.typ {
		case config.List:
			items, ok := parseConfigList(v)
			if !ok {
				return kerr.InvalidConfig.Code, fmt.Sprintf("Configuration '%s' values must not be empty.", def.name)
			}
			if def.name == "match" {
				match = items
			}
		case config.Int:
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return kerr.InvalidConfig.Code, fmt.Sprintf("Invalid value %s for configuration %s: Not a number of type INT", v, def.name)
			}
			interval = n
		}
	}
	if _, set := configs["interval.ms"]; set && (interval < clientMetricsMinIntervalMs || interval > clientMetricsMaxIntervalMs) {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Invalid value %d for interval.ms, interval must be between %d and %d (1 hour)",
			interval, clientMetricsMinIntervalMs, clientMetricsMaxIntervalMs)
	}
	for _, item := range match {
		if !validClientMatch(item) {
			return kerr.InvalidConfig.Code, "Illegal client matching pattern: " + item
		}
	}
	return 0, ""
}

// validClientMatch reports whether a match item is key=regex as Kafka
// reads it: split at every '=' (Java's String.split, which drops trailing
// empty parts) into exactly two parts, a known key and a pattern that
// java.util.regex compiles.
func validClientMatch(item string) bool {
	parts := strings.Split(item, "=")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) != 2 {
		return false
	}
	if !slices.Contains(clientMetricsMatchKeys, strings.TrimSpace(parts[0])) {
		return false
	}
	return javaRegexCompiles(strings.TrimSpace(parts[1]))
}

// javaRegexCompiles approximates java.util.regex.Pattern.compile's
// verdict with Go's RE2 parser: what RE2 refuses only because it does not
// implement it (backreferences, possessive quantifiers, lookaround and
// atomic groups, which Java has) is accepted; a '{' that starts no
// repetition, which RE2 takes literally, is refused, as Java refuses it.
// Corner cases of the two syntaxes may still differ (FINDINGS.md).
func javaRegexCompiles(re string) bool {
	if strayBrace(re) {
		return false
	}
	_, err := syntax.Parse(re, syntax.Perl)
	if err == nil {
		return true
	}
	var se *syntax.Error
	if e, ok := err.(*syntax.Error); ok {
		se = e
	}
	if se == nil {
		return false
	}
	switch se.Code {
	case syntax.ErrInvalidPerlOp: // (?=, (?!, (?>
		return true
	case syntax.ErrInvalidNamedCapture: // (?<= and (?<!
		return strings.HasPrefix(se.Expr, "(?<=") || strings.HasPrefix(se.Expr, "(?<!")
	case syntax.ErrInvalidRepeatOp:
		// A possessive quantifier (*+, ++, ?+, {n}+); a** is an error
		// in Java too.
		return strings.HasSuffix(se.Expr, "+")
	case syntax.ErrInvalidEscape:
		// \1..\9 and \k<name> are backreferences in Java.
		arg := strings.TrimPrefix(se.Expr, `\`)
		return arg != "" && (arg[0] >= '1' && arg[0] <= '9' || arg[0] == 'k')
	}
	return false
}

// strayBrace reports whether re has a '{' outside a character class, not
// escaped, that does not start a repetition {n}, {n,} or {n,m}.
func strayBrace(re string) bool {
	inClass := false
	for i := 0; i < len(re); i++ {
		switch c := re[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			if i+1 < len(re) && re[i+1] == ']' {
				i++ // a leading ']' is a member of the class
			}
		case c == '{':
			j := i + 1
			for j < len(re) && re[j] >= '0' && re[j] <= '9' {
				j++
			}
			if j == i+1 {
				return true
			}
			if j < len(re) && re[j] == ',' {
				j++
				for j < len(re) && re[j] >= '0' && re[j] <= '9' {
					j++
				}
			}
			if j >= len(re) || re[j] != '}' {
				return true
			}
			i = j
		}
	}
	return false
}

// clientMetricsValue is a stored value as Kafka 4.4 describes it: parsed
// and printed again (lists trimmed, without duplicates, joined with ",";
// an int without spaces or sign).
func clientMetricsValue(def clientMetricsDef, v string) string {
	switch def.typ {
	case config.List:
		items, _ := parseConfigList(v)
		return strings.Join(items, ",")
	case config.Int:
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err == nil {
			return strconv.FormatInt(n, 10)
		}
	}
	return v
}

// describeClientMetrics lists the three configs of a subscription, as
// Kafka 4.4's ConfigHelper: a set config with source CLIENT_METRICS_CONFIG
// and itself as its one synonym, the others with their default
// (DEFAULT_CONFIG, no synonyms). A subscription that does not exist is
// all defaults, not an error.
func describeClientMetrics(img *controller.Image, name string, withSynonyms bool) ([]configEntry, int16, string) {
	if name == "" {
		return nil, kerr.InvalidRequest.Code, "Client metrics subscription name must not be empty"
	}
	set := img.ClientMetrics[name]
	entries := make([]configEntry, 0, len(clientMetricsDefs))
	for _, def := range clientMetricsDefs {
		e := configEntry{name: def.name, typ: wireConfigType(def.typ, true), source: kmsg.ConfigSourceDefaultConfig, doc: def.doc}
		v := def.dflt
		if s, ok := set[def.name]; ok {
			v = clientMetricsValue(def, s)
			e.source = kmsg.ConfigSourceClientMetricsConfig
			if withSynonyms {
				sv := v
				e.synonyms = []configSynonym{{name: def.name, value: &sv, source: kmsg.ConfigSourceClientMetricsConfig}}
			}
		}
		e.value = &v
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b configEntry) int { return strings.Compare(a.name, b.name) })
	return entries, 0, ""
}

// alterClientMetrics applies IncrementalAlterConfigs operations to a
// subscription.
func alterClientMetrics(d *Deps, res kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (int16, string) {
	ops := make([]controller.ConfigOp, 0, len(res.Configs))
	for _, c := range res.Configs {
		if isListOp(c.Op) {
			return kerr.InvalidConfig.Code, fmt.Sprintf("Can't %s to key %s because its type is not LIST.", c.Op, c.Name)
		}
		ops = append(ops, controller.ConfigOp{Name: c.Name, Value: c.Value, Op: controller.OpType(c.Op)})
	}
	return d.Controller.AlterClientMetrics(res.ResourceName, ops, validateOnly, clientMetricsValidator(res.ResourceName))
}

// setClientMetrics replaces a subscription's configs (legacy
// AlterConfigs); an empty set removes the subscription.
func setClientMetrics(d *Deps, name string, configs map[string]string, validateOnly bool) (int16, string) {
	ops := replaceAllOps(d.Controller.Image().ClientMetrics[name], configs)
	return d.Controller.AlterClientMetrics(name, ops, validateOnly, clientMetricsValidator(name))
}

func clientMetricsValidator(name string) func(map[string]string) (int16, string) {
	return func(m map[string]string) (int16, string) { return validateClientMetrics(name, m) }
}

// clientMetricsNames names the subscriptions, sorted.
func clientMetricsNames(img *controller.Image) []string {
	names := make([]string, 0, len(img.ClientMetrics))
	for n := range img.ClientMetrics {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
