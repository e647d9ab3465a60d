package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
)

func describeConfigsReq(synonyms, docs bool, resources ...kmsg.DescribeConfigsRequestResource) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Resources = resources
	req.IncludeSynonyms = synonyms
	req.IncludeDocumentation = docs
	return req
}

func describeResource(typ kmsg.ConfigResourceType, name string, names ...string) kmsg.DescribeConfigsRequestResource {
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, names
	return r
}

func findConfig(t *testing.T, configs []kmsg.DescribeConfigsResponseResourceConfig, name string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	for _, c := range configs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("config %s not described", name)
	return kmsg.DescribeConfigsResponseResourceConfig{}
}

func TestDescribeConfigsResourceErrors(t *testing.T) {
	e := newAdminEnv(t)
	e.createTopic(t, "t", 1, nil)
	for _, tc := range []struct {
		typ  kmsg.ConfigResourceType
		name string
		code int16
	}{
		{kmsg.ConfigResourceTypeTopic, "t", 0},
		{kmsg.ConfigResourceTypeTopic, "missing", kerr.UnknownTopicOrPartition.Code},
		{kmsg.ConfigResourceTypeTopic, "bad/name", kerr.InvalidTopicException.Code},
		{kmsg.ConfigResourceTypeTopic, "", kerr.InvalidTopicException.Code},
		{kmsg.ConfigResourceTypeBroker, "1", 0},
		{kmsg.ConfigResourceTypeBroker, "", 0},
		{kmsg.ConfigResourceTypeBroker, "2", kerr.InvalidRequest.Code},
		{kmsg.ConfigResourceTypeBroker, "x", kerr.InvalidRequest.Code},
		{kmsg.ConfigResourceTypeBrokerLogger, "1", 0},
		{kmsg.ConfigResourceTypeBrokerLogger, "", kerr.InvalidRequest.Code},
		// A client metrics subscription that does not exist is described
		// with its defaults; the empty name is INVALID_REQUEST (Kafka 4.4,
		// differential suite steps cm-unknown and cm-empty-name).
		{kmsg.ConfigResourceTypeClientMetrics, "m", 0},
		{kmsg.ConfigResourceTypeClientMetrics, "", kerr.InvalidRequest.Code},
		{kmsg.ConfigResourceType(3), "1", kerr.InvalidRequest.Code},
	} {
		for _, v := range []int16{0, 1, 2, 3, 4} {
			resp := e.call(t, describeConfigsReq(false, false, describeResource(tc.typ, tc.name)), v).(*kmsg.DescribeConfigsResponse)
			rr := resp.Resources[0]
			if rr.ErrorCode != tc.code || rr.ResourceName != tc.name || rr.ResourceType != tc.typ {
				t.Errorf("v%d %v %q: got %d %q", v, tc.typ, tc.name, rr.ErrorCode, deref(rr.ErrorMessage))
			}
			// A message with an error; "" (not null) without, as Kafka 4.4.
			if rr.ErrorMessage == nil || (rr.ErrorCode != 0) != (*rr.ErrorMessage != "") {
				t.Errorf("v%d %v %q: code %d message %v", v, tc.typ, tc.name, rr.ErrorCode, rr.ErrorMessage)
			}
			if rr.ErrorCode != 0 && len(rr.Configs) != 0 {
				t.Errorf("v%d: configs with an error", v)
			}
		}
	}
}

// An unknown resource type next to others fails the whole request, as in
// Kafka 4.4 (ConfigHelper throws while sorting the resources for
// authorization; compat-tests/diff fuzzing found it).
func TestDescribeConfigsUnknownTypeFailsAll(t *testing.T) {
	e := newAdminEnv(t)
	e.createTopic(t, "t", 1, nil)
	req := describeConfigsReq(false, false,
		describeResource(kmsg.ConfigResourceTypeBroker, "1"),
		describeResource(kmsg.ConfigResourceType(3), "x"),
		describeResource(kmsg.ConfigResourceTypeTopic, "t"))
	resp := e.call(t, req, 4).(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 3 {
		t.Fatalf("%d resources, want 3", len(resp.Resources))
	}
	for _, rr := range resp.Resources {
		if rr.ErrorCode != kerr.InvalidRequest.Code || len(rr.Configs) != 0 ||
			deref(rr.ErrorMessage) != "Unexpected resource type UNKNOWN for resource x" {
			t.Errorf("%v %q: code %d message %q, %d configs", rr.ResourceType, rr.ResourceName, rr.ErrorCode, deref(rr.ErrorMessage), len(rr.Configs))
		}
	}
}

func TestDescribeTopicConfigs(t *testing.T) {
	e := newAdminEnv(t, "log.retention.hours=48")
	e.createTopic(t, "t", 1, map[string]string{"cleanup.policy": "compact"})

	resp := e.call(t, describeConfigsReq(true, true, describeResource(kmsg.ConfigResourceTypeTopic, "t")), 4).(*kmsg.DescribeConfigsResponse)
	configs := resp.Resources[0].Configs
	if len(configs) != len(config.TopicDefs()) {
		t.Fatalf("%d configs, want every topic setting (%d)", len(configs), len(config.TopicDefs()))
	}
	for _, tc := range []struct {
		name     string
		value    string
		source   kmsg.ConfigSource
		typ      kmsg.ConfigType
		synonyms []kmsg.ConfigSource
	}{
		{"cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigTypeList,
			[]kmsg.ConfigSource{kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigSourceDefaultConfig}},
		// Kafka 4.4 with a static log.retention.hours=48 answers
		// exactly this (checked against the real broker): the value
		// follows the fallback, but its dropWhile leaves no synonym
		// before log.retention.ms, so the source is DEFAULT_CONFIG.
		{"retention.ms", "172800000", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong, nil},
		{"segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeInt,
			[]kmsg.ConfigSource{kmsg.ConfigSourceDefaultConfig}},
	} {
		c := findConfig(t, configs, tc.name)
		if deref(c.Value) != tc.value || c.Source != tc.source || c.ConfigType != tc.typ || c.ReadOnly || c.IsSensitive || c.Documentation == nil {
			t.Errorf("%s: got value %s source %v type %v ro %v doc %v", tc.name, deref(c.Value), c.Source, c.ConfigType, c.ReadOnly, c.Documentation != nil)
		}
		var got []kmsg.ConfigSource
		for _, s := range c.ConfigSynonyms {
			got = append(got, s.Source)
		}
		if len(got) != len(tc.synonyms) {
			t.Errorf("%s synonyms: got %v, want %v", tc.name, got, tc.synonyms)
			continue
		}
		for i := range got {
			if got[i] != tc.synonyms[i] {
				t.Errorf("%s synonyms: got %v, want %v", tc.name, got, tc.synonyms)
			}
		}
	}

	// Named configs only, unknown names left out; v0 has is_default.
	resp = e.call(t, describeConfigsReq(false, false, describeResource(kmsg.ConfigResourceTypeTopic, "t", "segment.bytes", "cleanup.policy", "nope")), 0).(*kmsg.DescribeConfigsResponse)
	configs = resp.Resources[0].Configs
	if len(configs) != 2 {
		t.Fatalf("filtered: %+v", configs)
	}
	if c := findConfig(t, configs, "segment.bytes"); !c.IsDefault || len(c.ConfigSynonyms) != 0 {
		t.Errorf("v0 segment.bytes: %+v", c)
	}
	if c := findConfig(t, configs, "cleanup.policy"); c.IsDefault {
		t.Errorf("v0 cleanup.policy: %+v", c)
	}
}

func TestDescribeTopicConfigsDynamicBrokerDefault(t *testing.T) {
	e := newAdminEnv(t)
	e.createTopic(t, "t", 1, nil)
	v := "2000000"
	if code, msg := e.d.Controller.AlterBrokerConfigs("", []controller.ConfigOp{{Name: "log.segment.bytes", Value: &v, Op: controller.OpSet}}, false, nil); code != 0 {
		t.Fatal(code, msg)
	}
	resp := e.call(t, describeConfigsReq(true, false, describeResource(kmsg.ConfigResourceTypeTopic, "t", "segment.bytes")), 1).(*kmsg.DescribeConfigsResponse)
	c := findConfig(t, resp.Resources[0].Configs, "segment.bytes")
	if deref(c.Value) != v || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("got %s %v", deref(c.Value), c.Source)
	}
	if len(c.ConfigSynonyms) == 0 || c.ConfigSynonyms[0].Name != "log.segment.bytes" || c.ConfigSynonyms[0].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("synonyms %+v", c.ConfigSynonyms)
	}
}

func TestDescribeBrokerConfigs(t *testing.T) {
	e := newAdminEnv(t, "num.io.threads=4")
	v := "16"
	if code, msg := e.d.Controller.AlterBrokerConfigs("1", []controller.ConfigOp{{Name: "num.io.threads", Value: &v, Op: controller.OpSet}}, false, nil); code != 0 {
		t.Fatal(code, msg)
	}
	w := "3000000"
	if code, msg := e.d.Controller.AlterBrokerConfigs("", []controller.ConfigOp{{Name: "log.segment.bytes", Value: &w, Op: controller.OpSet}}, false, nil); code != 0 {
		t.Fatal(code, msg)
	}

	resp := e.call(t, describeConfigsReq(true, false, describeResource(kmsg.ConfigResourceTypeBroker, "1")), 3).(*kmsg.DescribeConfigsResponse)
	configs := resp.Resources[0].Configs
	// Every setting Kafka 4.4 lists (350), implemented or only accepted;
	// samsa's own and Kafka's internal ones only when named or given.
	listed := 0
	for _, def := range config.AllBrokerDefs() {
		if !def.Unlisted {
			listed++
		}
	}
	if len(configs) != listed || listed != 350 {
		t.Fatalf("%d configs, want %d (350 in Kafka 4.4)", len(configs), listed)
	}
	c := findConfig(t, configs, "background.threads")
	if deref(c.Value) != "10" || c.Source != kmsg.ConfigSourceDefaultConfig || c.ReadOnly || c.ConfigType != kmsg.ConfigTypeInt {
		t.Errorf("background.threads (accepted, not acted on): %+v", c)
	}
	c = findConfig(t, configs, "ssl.keystore.password")
	if c.Value != nil || !c.IsSensitive || c.ConfigType != kmsg.ConfigTypePassword || c.ReadOnly {
		t.Errorf("ssl.keystore.password: %+v", c)
	}
	for _, own := range []string{"samsa.log.level", "cluster.id", "producer.id.expiration.check.interval.ms"} {
		for _, c := range configs {
			if c.Name == own {
				t.Errorf("%s is listed; Kafka does not list it", own)
			}
		}
	}
	named := e.call(t, describeConfigsReq(true, false, describeResource(kmsg.ConfigResourceTypeBroker, "1", "samsa.log.level")), 3).(*kmsg.DescribeConfigsResponse)
	if cs := named.Resources[0].Configs; len(cs) != 1 || deref(cs[0].Value) != "INFO" {
		t.Errorf("samsa.log.level asked by name: %+v", cs)
	}
	c = findConfig(t, configs, "num.io.threads")
	if deref(c.Value) != "16" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig || c.ReadOnly || len(c.ConfigSynonyms) != 3 {
		t.Errorf("num.io.threads: %s %v ro=%v %+v", deref(c.Value), c.Source, c.ReadOnly, c.ConfigSynonyms)
	}
	c = findConfig(t, configs, "node.id")
	if deref(c.Value) != "1" || !c.ReadOnly || c.ConfigType != kmsg.ConfigTypeInt {
		t.Errorf("node.id: %+v", c)
	}
	c = findConfig(t, configs, "log.segment.bytes")
	if deref(c.Value) != w || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("log.segment.bytes: %s %v", deref(c.Value), c.Source)
	}
	c = findConfig(t, configs, "log.retention.ms")
	if c.Value != nil {
		t.Errorf("log.retention.ms should be null: %q", deref(c.Value))
	}

	// The cluster-wide resource lists only its dynamic settings.
	resp = e.call(t, describeConfigsReq(true, false, describeResource(kmsg.ConfigResourceTypeBroker, "")), 4).(*kmsg.DescribeConfigsResponse)
	configs = resp.Resources[0].Configs
	if len(configs) != 1 || configs[0].Name != "log.segment.bytes" || deref(configs[0].Value) != w ||
		configs[0].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || len(configs[0].ConfigSynonyms) != 1 {
		t.Fatalf("cluster default: %+v", configs)
	}
}
