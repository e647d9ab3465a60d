package handlers

import (
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
)

// DescribeConfigs, key 32, versions 0-4.
//
//   - v0: resources (TOPIC=2 or BROKER=4) with config names; null or empty
//     names mean every setting. Each entry has value, read_only, is_default
//     and is_sensitive; sensitive values (passwords, unknown types) are null.
//   - v1: include_synonyms; entries have config_source (DYNAMIC_TOPIC_CONFIG=1,
//     DYNAMIC_BROKER_CONFIG=2, DYNAMIC_DEFAULT_BROKER_CONFIG=3,
//     STATIC_BROKER_CONFIG=4, DEFAULT_CONFIG=5) in place of is_default, and
//     synonyms when asked: for a topic, its override, then the broker
//     synonym at each level that sets it (per-broker dynamic, cluster-wide
//     dynamic, static, default).
//   - v2: throttle_time_ms after the response (always 0).
//   - v3: include_documentation; entries have config_type (BOOLEAN=1 ...
//     PASSWORD=9) and documentation when asked.
//   - v4: flexible.
//
// A topic must have a legal name (else INVALID_TOPIC_EXCEPTION) and exist
// (else UNKNOWN_TOPIC_OR_PARTITION). A BROKER resource is "" (the
// cluster-wide dynamic defaults only) or this node's id (every broker
// setting); another id is INVALID_REQUEST, as in Kafka, which answers
// only for itself. A BROKER_LOGGER resource lists samsa's one logger,
// root (broker_logger.go). A GROUP resource lists the group configs
// (group_configs.go). A CLIENT_METRICS resource lists the three configs
// of a client metrics subscription (client_metrics.go): those set with
// source CLIENT_METRICS_CONFIG, the others with their defaults; one that
// does not exist is all defaults, the empty name INVALID_REQUEST. Other
// resource types are INVALID_REQUEST "Unsupported resource type".
// Settings are listed sorted by name; names we do not know are left out.
func handleDescribeConfigs(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	v := r.Header.APIVersion
	withSynonyms := v >= 1 && req.IncludeSynonyms
	withDocs := v >= 3 && req.IncludeDocumentation
	img := d.Controller.Image()
	levels := newBrokerLevels(d, img)

	if msg, bad := describeConfigsUnknownType(req); bad {
		// Kafka 4.4 (ConfigHelper.handleDescribeConfigsRequest, javap)
		// throws while it sorts the resources for authorization, so
		// the whole request fails: every resource INVALID_REQUEST
		// (compat-tests/diff fuzzing).
		for _, res := range req.Resources {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
			rr.ErrorCode, rr.ErrorMessage = kerr.InvalidRequest.Code, ptrTo(msg)
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil
	}
	for _, res := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType = res.ResourceType
		rr.ResourceName = res.ResourceName
		var entries []configEntry
		code, msg := int16(0), ""
		switch res.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			entries, code, msg = describeTopicConfigs(d, img, levels, res.ResourceName, withSynonyms)
		case kmsg.ConfigResourceTypeBroker:
			entries, code, msg = describeBrokerConfigs(d, levels, res.ResourceName, res.ConfigNames, withSynonyms)
		case kmsg.ConfigResourceTypeBrokerLogger:
			entries, code, msg = describeBrokerLoggers(d, res.ResourceName)
		case kmsg.ConfigResourceTypeGroupConfig:
			entries, code, msg = describeGroupConfigs(d, img, res.ResourceName, withSynonyms) // group_configs.go
		case kmsg.ConfigResourceTypeClientMetrics:
			entries, code, msg = describeClientMetrics(img, res.ResourceName, withSynonyms) // client_metrics.go
		default:
			code, msg = kerr.InvalidRequest.Code, fmt.Sprintf("Unsupported resource type: %s", res.ResourceType)
		}
		rr.ErrorCode = code
		rr.ErrorMessage = adminErrorMessage(code, msg)
		if code == 0 {
			// Kafka 4.4 leaves a described resource's message at its
			// default, "" (KafkaJS's describeConfigs test expects null).
			rr.ErrorMessage = ptrTo("")
			rr.Configs = filterConfigEntries(entries, res.ConfigNames, withDocs)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

// describeTopicConfigs lists every topic setting of topic name.
func describeTopicConfigs(d *Deps, img *controller.Image, levels brokerLevels, name string, withSynonyms bool) ([]configEntry, int16, string) {
	if code, msg := controller.ValidateTopicName(name); code != 0 {
		return nil, code, msg
	}
	t := img.Topics[name]
	if t == nil {
		return nil, kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("Topic '%s' does not exist.", name)
	}
	defs := config.TopicDefs()
	entries := make([]configEntry, 0, len(defs))
	for _, def := range defs {
		entries = append(entries, topicConfigEntry(d, levels, def, t.Configs, withSynonyms))
	}
	return entries, 0, ""
}

// describeBrokerConfigs lists the settings of BROKER resource name: for
// this node, like Kafka's listing of its originals and non-internal
// settings, every setting of Kafka 4.4 (config.AllBrokerDefs, implemented
// or only accepted) but the unlisted ones (Kafka's internal settings,
// samsa's own), plus any setting given statically (listener-prefixed ones
// too), the listener-prefixed ones stored for the broker, and any known
// one asked for by name; for "", only the cluster-wide dynamic ones.
func describeBrokerConfigs(d *Deps, levels brokerLevels, name string, asked []string, withSynonyms bool) ([]configEntry, int16, string) {
	perBroker, code, msg := brokerResource(d, name)
	if code != 0 {
		return nil, code, msg
	}
	var names []string
	if perBroker {
		seen := map[string]bool{}
		add := func(n string) {
			// The authorizer's own settings are not listed, as Kafka's.
			if !seen[n] && !config.AuthorizerPluginSetting(n) {
				seen[n] = true
				names = append(names, n)
			}
		}
		for _, def := range config.AllBrokerDefs() {
			if _, given := levels.static(def.Name); !def.Unlisted || given || slices.Contains(asked, def.Name) {
				add(def.Name)
			}
		}
		for n := range levels.cfg.OtherValues {
			add(n)
		}
		// Listener-prefixed settings stored at runtime (a listener's
		// security settings, listener_change.go), as Kafka lists them.
		for n := range levels.perBroker {
			if _, ok := config.ListenerSettingOf(n); ok {
				add(n)
			}
		}
	} else {
		for n := range levels.clusterWD {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	entries := make([]configEntry, 0, len(names))
	for _, n := range names {
		entries = append(entries, brokerConfigEntry(levels, n, perBroker, withSynonyms))
	}
	return entries, 0, ""
}

// filterConfigEntries keeps the entries named in names (all of them when
// names is null or empty, like Kafka) and converts them to the wire form.
func filterConfigEntries(entries []configEntry, names []string, withDocs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var want map[string]bool
	if len(names) > 0 {
		want = make(map[string]bool, len(names))
		for _, n := range names {
			want[n] = true
		}
	}
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(entries))
	for _, e := range entries {
		if want != nil && !want[e.name] {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = e.name
		c.Value = e.value
		c.ReadOnly = e.readOnly
		c.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig
		c.Source = e.source
		c.IsSensitive = e.sensitive
		c.ConfigType = e.typ
		if withDocs && e.doc != "" {
			doc := e.doc
			c.Documentation = &doc
		}
		for _, s := range e.synonyms {
			cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			cs.Name = s.name
			cs.Value = s.value
			cs.Source = s.source
			c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
		}
		out = append(out, c)
	}
	return out
}

// describeConfigsUnknownType reports whether a resource of req has a type
// DescribeConfigs does not know, with Kafka 4.4's message for the first.
func describeConfigsUnknownType(req *kmsg.DescribeConfigsRequest) (string, bool) {
	for _, res := range req.Resources {
		switch res.ResourceType {
		case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger,
			kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigResourceTypeClientMetrics:
		default:
			return "Unexpected resource type UNKNOWN for resource " + res.ResourceName, true
		}
	}
	return "", false
}
