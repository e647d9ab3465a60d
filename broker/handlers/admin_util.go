package handlers

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
)

// Helpers shared by the admin handlers: CreateTopics (19), DeleteTopics (20),
// DescribeConfigs (32), AlterConfigs (33), CreatePartitions (37),
// IncrementalAlterConfigs (44), DescribeCluster (60), DescribeLogDirs (35).

// adminErrorMessage is the error_message of a per-resource result: nil on
// success, else msg, else the code's default description, the way Kafka's
// ApiError falls back to its Errors message.
func adminErrorMessage(code int16, msg string) *string {
	if code == 0 {
		return nil
	}
	if msg == "" {
		if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
			msg = e.Description
		}
	}
	return &msg
}

// findBrokerDef returns the broker setting called name: one samsa
// implements or any other setting of Kafka 4.4 (config.AllBrokerDefs).
func findBrokerDef(name string) (config.Def, bool) {
	return config.BrokerDef(name)
}

// brokerDefOrBase returns the setting called name, or for a
// listener-prefixed name (listener.name.<l>.ssl.keystore.location) the
// setting it overrides, which gives its type, as Kafka's configType looks
// through the synonyms. known is false for a name of neither kind.
func brokerDefOrBase(name string) (def config.Def, known bool) {
	if def, ok := config.BrokerDef(name); ok {
		return def, true
	}
	if base, ok := config.ListenerBaseSetting(name); ok {
		return config.BrokerDef(base)
	}
	return config.Def{}, false
}

// findTopicDef returns the topic setting called name.
func findTopicDef(name string) (config.TopicDef, bool) {
	defs := config.TopicDefs()
	i := sort.Search(len(defs), func(i int) bool { return defs[i].Name >= name })
	if i < len(defs) && defs[i].Name == name {
		return defs[i], true
	}
	return config.TopicDef{}, false
}

// sensitiveType is Kafka's KafkaConfig.maybeSensitive: passwords, and
// settings whose type is unknown, never have their value shown.
func sensitiveType(t config.Type, known bool) bool {
	return !known || t == config.Password
}

// wireConfigType maps a setting's type to DescribeConfigs' config_type;
// config.Type is numbered like the wire enum.
func wireConfigType(t config.Type, known bool) kmsg.ConfigType {
	if !known {
		return kmsg.ConfigTypeUnknown
	}
	return kmsg.ConfigType(t)
}

// configSynonym is one entry of a DescribeConfigs synonym list.
type configSynonym struct {
	name   string
	value  *string
	source kmsg.ConfigSource
}

// configEntry is one described setting, shared by DescribeConfigs and the
// v5+ CreateTopics response.
type configEntry struct {
	name      string
	value     *string
	readOnly  bool
	source    kmsg.ConfigSource
	sensitive bool
	synonyms  []configSynonym
	typ       kmsg.ConfigType
	doc       string
}

// retentionUnits lists, for the broker settings that fall back to coarser
// settings, each fallback and how many of the primary's units it counts, in
// Kafka's order of preference (log.retention.ms, then minutes, then hours).
func retentionUnits(primary string) []struct {
	name string
	mult int64
} {
	type unit = struct {
		name string
		mult int64
	}
	switch primary {
	case "log.retention.ms":
		return []unit{{"log.retention.ms", 1}, {"log.retention.minutes", 60_000}, {"log.retention.hours", 3_600_000}}
	case "log.roll.ms":
		return []unit{{"log.roll.ms", 1}, {"log.roll.hours", 3_600_000}}
	case "log.roll.jitter.ms":
		return []unit{{"log.roll.jitter.ms", 1}, {"log.roll.jitter.hours", 3_600_000}}
	case "log.flush.interval.ms":
		return []unit{{"log.flush.interval.ms", 1}, {"log.flush.scheduler.interval.ms", 1}}
	}
	return []unit{{primary, 1}}
}

// brokerLevels gives access to the layers of broker settings, most specific
// first: this node's dynamic configs, the cluster-wide dynamic default, the
// static configuration, and the built-in default.
type brokerLevels struct {
	cfg       *config.Config
	perBroker map[string]string
	clusterWD map[string]string
}

// newBrokerLevels reads the levels for this node from img.
func newBrokerLevels(d *Deps, img *controller.Image) brokerLevels {
	return brokerLevels{
		cfg:       d.Config,
		perBroker: img.BrokerConfigs[strconv.Itoa(int(d.Config.NodeID))],
		clusterWD: img.BrokerConfigs[""],
	}
}

// synonyms lists every level at which one of names is set, levels first
// and names in order within a level, then drops the entries before the
// first one named self, like Kafka's configSynonyms.
func (b brokerLevels) synonyms(self string, names []string, sensitive bool) []configSynonym {
	var out []configSynonym
	add := func(name, value string, src kmsg.ConfigSource) {
		s := configSynonym{name: name, source: src}
		if !sensitive {
			s.value = &value
		}
		out = append(out, s)
	}
	for _, n := range names {
		if v, ok := b.perBroker[n]; ok {
			add(n, v, kmsg.ConfigSourceDynamicBrokerConfig)
		}
	}
	for _, n := range names {
		if v, ok := b.clusterWD[n]; ok {
			add(n, v, kmsg.ConfigSourceDynamicDefaultBrokerConfig)
		}
	}
	for _, n := range names {
		if v, ok := b.static(n); ok {
			add(n, v, kmsg.ConfigSourceStaticBrokerConfig)
		}
	}
	for _, n := range names {
		// A setting Kafka requires (node.id, process.roles) shows no
		// default, as in Kafka, even where samsa has one.
		if def, ok := findBrokerDef(n); ok && def.HasDefault && !def.KafkaRequired {
			add(n, def.Default, kmsg.ConfigSourceDefaultConfig)
		}
	}
	// Like Kafka, drop the synonyms before the first one named like the
	// setting itself: log.retention.ms has no default of its own, so its
	// list is empty rather than showing log.retention.hours' default.
	for len(out) > 0 && out[0].name != self {
		out = out[1:]
	}
	return out
}

// static returns the value of setting name given in the static
// configuration (server.properties, environment, flags), implemented or
// only accepted.
func (b brokerLevels) static(name string) (string, bool) {
	if v, ok := b.cfg.Values[name]; ok && b.cfg.Sources[name] == config.SourceStatic {
		return v, true
	}
	v, ok := b.cfg.OtherValues[name]
	return v, ok
}

// dynamicTopicDefault returns the dynamic broker value that a topic setting
// with broker synonym primary falls back to, converted to the primary's
// unit, if one is set. TopicConfigValue knows only the static configuration;
// dynamic broker configs live in the controller image.
func (b brokerLevels) dynamicTopicDefault(primary string) (string, kmsg.ConfigSource, bool) {
	for _, level := range []struct {
		m   map[string]string
		src kmsg.ConfigSource
	}{{b.perBroker, kmsg.ConfigSourceDynamicBrokerConfig}, {b.clusterWD, kmsg.ConfigSourceDynamicDefaultBrokerConfig}} {
		for _, u := range retentionUnits(primary) {
			v, ok := level.m[u.name]
			if !ok {
				continue
			}
			if u.mult == 1 {
				return v, level.src, true
			}
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				continue
			}
			if n < 0 {
				return "-1", level.src, true
			}
			return strconv.FormatInt(n*u.mult, 10), level.src, true
		}
	}
	return "", 0, false
}

// topicConfigEntry describes topic setting def for a topic with overrides,
// following Kafka's ConfigHelper.createTopicConfigEntry: the value is the
// override, else the broker's effective value of the synonym; the synonym
// list is the override followed by the broker levels; topic settings are
// never read-only.
func topicConfigEntry(d *Deps, levels brokerLevels, def config.TopicDef, overrides map[string]string, withSynonyms bool) configEntry {
	sensitive := sensitiveType(def.Type, true)
	value, source, _ := d.Config.TopicConfigValue(def.Name, overrides)
	e := configEntry{
		name:      def.Name,
		sensitive: sensitive,
		source:    kmsg.ConfigSource(source),
		typ:       wireConfigType(def.Type, true),
		doc:       def.Doc,
	}
	if _, overridden := overrides[def.Name]; !overridden && def.BrokerSynonym != "" {
		if v, src, ok := levels.dynamicTopicDefault(def.BrokerSynonym); ok {
			value, e.source = v, src
		}
	}
	if !sensitive {
		e.value = &value
	}
	var brokerSyns []configSynonym
	if def.BrokerSynonym != "" {
		var names []string
		for _, u := range retentionUnits(def.BrokerSynonym) {
			names = append(names, u.name)
		}
		brokerSyns = levels.synonyms(def.BrokerSynonym, names, sensitive)
	}
	if _, overridden := overrides[def.Name]; !overridden {
		// Kafka takes the source from the first broker synonym left
		// after its dropWhile, so a topic falling back to a static
		// log.retention.hours=48 shows value 172800000 with source
		// DEFAULT_CONFIG and no synonyms; checked against Kafka 4.4.
		e.source = kmsg.ConfigSourceDefaultConfig
		if len(brokerSyns) > 0 {
			e.source = brokerSyns[0].source
		}
	}
	if withSynonyms {
		if v, ok := overrides[def.Name]; ok {
			s := configSynonym{name: def.Name, source: kmsg.ConfigSourceDynamicTopicConfig}
			if !sensitive {
				v := strings.TrimSpace(v)
				s.value = &v
			}
			e.synonyms = append(e.synonyms, s)
		}
		e.synonyms = append(e.synonyms, brokerSyns...)
	}
	return e
}

// brokerConfigEntry describes broker setting name as Kafka's
// createBrokerConfigEntry does. With perBroker false (the "" resource) only
// the cluster-wide dynamic level counts.
func brokerConfigEntry(levels brokerLevels, name string, perBroker, withSynonyms bool) configEntry {
	def, known := brokerDefOrBase(name)
	sensitive := sensitiveType(def.Type, known)
	// Every synonym of the setting, most specific first (Kafka's
	// brokerConfigSynonyms); synonyms then drops, like Kafka's dropWhile,
	// whatever comes before the first entry named name.
	names := config.BrokerSynonyms(name)
	if !slices.Contains(names, name) {
		names = []string{name}
	}
	all := levels.synonyms(name, names, sensitive)
	if !perBroker {
		kept := all[:0]
		for _, s := range all {
			if s.source == kmsg.ConfigSourceDynamicDefaultBrokerConfig {
				kept = append(kept, s)
			}
		}
		all = kept
	}
	exact, _ := findBrokerDef(name)
	e := configEntry{
		name:      name,
		readOnly:  !exact.Dynamic,
		sensitive: sensitive,
		source:    kmsg.ConfigSourceDefaultConfig,
		typ:       wireConfigType(def.Type, known),
		doc:       def.Doc,
	}
	// The source is the first synonym's, but the value is that of the first
	// level that sets name itself: a fallback like log.retention.hours does
	// not give log.retention.ms a value, which stays null, as in Kafka.
	if len(all) > 0 {
		e.source = all[0].source
	}
	for _, s := range all {
		if s.name == name {
			e.value = s.value
			break
		}
	}
	if v, ok := levels.cfg.Values[name]; ok && e.value == nil && perBroker && !sensitive && exact.KafkaRequired {
		// samsa's own default of a setting Kafka requires (node.id=1):
		// the value in use, without a DEFAULT_CONFIG synonym.
		e.value = &v
	}
	if withSynonyms {
		e.synonyms = all
	}
	return e
}

// brokerResource checks a BROKER resource name as Kafka does: "" is the
// cluster-wide default, anything else must be this node's id.
func brokerResource(d *Deps, name string) (perBroker bool, code int16, msg string) {
	if name == "" {
		return false, 0, ""
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return true, kerr.InvalidRequest.Code, fmt.Sprintf("Broker id must be an integer, but it is: %s", name)
	}
	if int32(id) != d.Config.NodeID {
		return true, kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %s", d.Config.NodeID, name)
	}
	return true, 0, ""
}

// brokerConfigValidator returns the check of a BROKER resource's dynamic
// configs: first a TLS listener's keystore and truststore settings
// (validateTLSConfigs); then the fail-closed security check
// (config.SecurityRefusal) of the others:
// a dynamic setting that would restrict access, such as
// ssl.client.auth=required or
// listener.name.plaintext.sasl.enabled.mechanisms, is INVALID_CONFIG with
// samsa's reason while samsa cannot enforce it, rather than stored and
// silently not applied (Kafka would apply it); then
// validateDynamicBrokerConfigs for resource (the cluster-wide default
// when ""); then Kafka's checks against this node's current values
// (reconfigurationRefusal, cordonedLogDirsRefusal) and a change of its
// listeners (listenerChangeRefusal).
func (d *Deps) brokerConfigValidator(resource string) func(map[string]string) (int16, string) {
	return func(configs map[string]string) (int16, string) {
		own := resource != "" && resource == strconv.Itoa(int(d.Config.NodeID))
		stored := d.Controller.Image().BrokerConfigs[resource]
		// served tells the listeners this node serves now (static or
		// added at runtime): their security settings are fixed, those of
		// another listener come with it when it is added
		// (listenerChangeRefusal checks them then).
		current, _, _ := d.Config.EffectiveListeners(stored)
		served := func(l string) bool {
			return slices.ContainsFunc(current, func(c config.Listener) bool { return strings.EqualFold(c.Name, l) })
		}
		if code, msg := d.validateTLSConfigs(resource, configs, served); code != 0 {
			return code, msg
		}
		for _, n := range sortedConfigNames(configs) {
			if l, _, ok := config.ReconfigurableTLSKey(n); ok && l != "" && d.ValidateListenerTLS != nil {
				continue // validateTLSConfigs
			}
			if l, ok := config.ListenerSettingOf(n); ok && resource != "" && config.IsListenerSecuritySetting(n) {
				if !own {
					continue // checked by the broker the resource is (forwarded here)
				}
				if old, had := stored[n]; !served(l) || had && old == configs[n] {
					continue
				}
			}
			if why := config.SecurityRefusal(n, configs[n], d.Config.Listeners); why != "" {
				return kerr.InvalidConfig.Code, fmt.Sprintf("Cannot set %s: %s", n, why)
			}
		}
		if code, msg := validateDynamicBrokerConfigs(configs, resource != ""); code != 0 {
			return code, msg
		}
		// The current values are this node's: a request for another
		// broker's resource, forwarded here, is not checked against them.
		if !own {
			return 0, ""
		}
		if why := reconfigurationRefusal(newBrokerLevels(d, d.Controller.Image()), configs); why != "" {
			return kerr.InvalidRequest.Code, why
		}
		if why := cordonedLogDirsRefusal(d.Config.LogDirs, configs); why != "" {
			return kerr.InvalidRequest.Code, why
		}
		return listenerChangeRefusal(d.Config, stored, configs, d.ValidateNewListeners)
	}
}

// validateTLSConfigs checks the runtime-changeable TLS settings among a
// BROKER resource's configs as Kafka 4.4 does: only per broker (not the
// cluster default) and only with a listener prefix, both INVALID_REQUEST;
// and the listener's new keystore and truststore must load and keep the
// certificate's subject and alternative names (SslFactory's validation),
// else INVALID_REQUEST with the reason. The settings of a listener not
// served yet are checked when it is added (listenerChangeRefusal).
func (d *Deps) validateTLSConfigs(name string, configs map[string]string, served func(listener string) bool) (int16, string) {
	if d.ValidateListenerTLS == nil {
		return 0, "" // refused by config.SecurityRefusal
	}
	var bare, prefixed []string
	for _, n := range sortedConfigNames(configs) {
		if l, _, ok := config.ReconfigurableTLSKey(n); ok {
			if l == "" {
				bare = append(bare, n)
			} else {
				prefixed = append(prefixed, n)
			}
		}
	}
	if len(bare) > 0 {
		return kerr.InvalidRequest.Code, "These security configs can be dynamically updated only per-listener using the listener prefix: [" + strings.Join(bare, ", ") + "]"
	}
	if len(prefixed) == 0 {
		return 0, ""
	}
	if name == "" {
		return kerr.InvalidRequest.Code, "Cannot update these configs at default cluster level, broker id must be specified: [" + strings.Join(prefixed, ", ") + "]"
	}
	if name != strconv.Itoa(int(d.Config.NodeID)) {
		return 0, "" // checked by the broker the resource is (forwarded here)
	}
	byListener := config.ListenerTLSOverrides(configs)
	for _, l := range slices.Sorted(maps.Keys(byListener)) {
		if !served(l) {
			continue
		}
		if err := d.ValidateListenerTLS(l, byListener[l]); err != nil {
			return kerr.InvalidRequest.Code, "Invalid value org.apache.kafka.common.config.ConfigException: Validation of dynamic config update of SSLFactory failed: " +
				err.Error() + " for configuration Invalid dynamic configuration"
		}
	}
	return 0, ""
}

// validateDynamicBrokerConfigs checks a broker resource's complete dynamic
// config map in the order of Kafka's DynamicBrokerConfig.validateConfigs,
// each failure INVALID_REQUEST as Kafka 4.4 answers (compat-tests/diff):
// settings that cannot change at runtime are refused together; then the
// keystore and truststore settings given without a listener prefix; then,
// on the cluster-wide default (perBroker false), the per-broker settings
// (listeners, listener-prefixed ones, ...); then each value must be valid.
// Names Kafka does not know are accepted and stored, like Kafka (custom
// settings of plugins).
func validateDynamicBrokerConfigs(configs map[string]string, perBroker bool) (int16, string) {
	names := sortedConfigNames(configs)
	var static, listenerOnly, brokerOnly []string
	for _, n := range names {
		def, ok := findBrokerDef(n)
		switch {
		case ok && !def.Dynamic:
			static = append(static, n)
		case ok && def.ListenerOnly:
			listenerOnly = append(listenerOnly, n)
		}
		if (ok && def.PerBroker) || strings.HasPrefix(n, "listener.name.") {
			brokerOnly = append(brokerOnly, n)
		}
	}
	switch {
	case len(static) > 0:
		return kerr.InvalidRequest.Code, "Cannot update these configs dynamically: [" + strings.Join(static, ", ") + "]"
	case len(listenerOnly) > 0:
		return kerr.InvalidRequest.Code, "These security configs can be dynamically updated only per-listener using the listener prefix: [" + strings.Join(listenerOnly, ", ") + "]"
	case !perBroker && len(brokerOnly) > 0:
		return kerr.InvalidRequest.Code, "Cannot update these configs at default cluster level, broker id must be specified: [" + strings.Join(brokerOnly, ", ") + "]"
	}
	for _, n := range names {
		def, ok := brokerDefOrBase(n)
		if !ok || def.Validate == nil {
			continue
		}
		if err := def.Validate(configs[n]); err != nil {
			return kerr.InvalidRequest.Code, fmt.Sprintf("Invalid value %s for configuration %s: %v", configs[n], n, err)
		}
	}
	return 0, ""
}

// configResourceKey identifies a config resource within one request.
type configResourceKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

// alterEachResource answers the resources of an AlterConfigs or
// IncrementalAlterConfigs request in request order: as in Kafka, every
// occurrence of a resource given more than once fails with INVALID_REQUEST
// "Each resource must appear at most once."; apply handles the others.
func alterEachResource[R any](rs []R, key func(R) configResourceKey, apply func(R) (int16, string), answer func(R, int16, string)) {
	count := make(map[configResourceKey]int, len(rs))
	for _, res := range rs {
		count[key(res)]++
	}
	for _, res := range rs {
		if count[key(res)] > 1 {
			answer(res, kerr.InvalidRequest.Code, "Each resource must appear at most once.")
			continue
		}
		code, msg := apply(res)
		answer(res, code, msg)
	}
}

// hasDuplicateNames reports whether names has a repeated element.
func hasDuplicateNames(names []string) bool {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			return true
		}
		seen[n] = true
	}
	return false
}

// clusterAuthorizedOperations is the bit field of the operations Kafka
// supports on the CLUSTER resource (ALTER, ALTER_CONFIGS, CLUSTER_ACTION,
// CREATE, DESCRIBE, DESCRIBE_CONFIGS, IDEMPOTENT_WRITE). Without an
// authorizer every one of them is allowed, which is what Kafka reports.
func clusterAuthorizedOperations() int32 {
	var bits int32
	for _, op := range []kmsg.ACLOperation{
		kmsg.ACLOperationCreate, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
		kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
	} {
		bits |= 1 << uint(op)
	}
	return bits
}
