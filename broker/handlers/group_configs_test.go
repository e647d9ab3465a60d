package handlers

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeGroupConfigsResp(t *testing.T, e *adminEnv, group string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = []kmsg.DescribeConfigsRequestResource{res}
	rr := e.call(t, req, 4).(*kmsg.DescribeConfigsResponse).Resources[0]
	if rr.ErrorCode != 0 {
		t.Fatalf("describe group configs: %d %v", rr.ErrorCode, rr.ErrorMessage)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range rr.Configs {
		out[c.Name] = c
	}
	return out
}

// TestGroupConfigs: a group (existing or not) lists Kafka 4.4's 21 group
// configs with the broker's defaults; IncrementalAlterConfigs validates
// values in Kafka's two steps with its messages, stores overrides in the
// controller's image (Image.GroupConfig) and deletes them; AlterConfigs
// replaces them.
func TestGroupConfigs(t *testing.T) {
	e := newAdminEnv(t, "group.share.heartbeat.interval.ms=6000")
	got := describeGroupConfigsResp(t, e, "g")
	if len(got) != 21 {
		t.Fatalf("%d group configs listed, want 21: %v", len(got), got)
	}
	for name, want := range map[string]string{
		"share.auto.offset.reset": "latest", "share.record.lock.duration.ms": "30000", "share.delivery.count.limit": "5",
		"share.isolation.level": "read_uncommitted", "share.heartbeat.interval.ms": "6000", "consumer.session.timeout.ms": "45000",
	} {
		c := got[name]
		if c.Value == nil || *c.Value != want || c.Source != kmsg.ConfigSourceDefaultConfig || c.ReadOnly {
			t.Errorf("%s: %+v, want default %s", name, c, want)
		}
	}

	alter := func(validateOnly bool, ops ...incOp) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{incResource(kmsg.ConfigResourceTypeGroupConfig, "g", ops...)}
		rr := e.call(t, req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		msg := ""
		if rr.ErrorMessage != nil {
			msg = *rr.ErrorMessage
		}
		return rr.ErrorCode, msg
	}
	set := kmsg.IncrementalAlterConfigOpSet
	for _, tc := range []struct{ name, value, msg string }{
		{"share.auto.offset.reset", "bogus", "Invalid value bogus for configuration share.auto.offset.reset: Invalid value `bogus` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{"share.auto.offset.reset", "by_duration:1h", "Invalid value by_duration:1h for configuration share.auto.offset.reset: Invalid value `by_duration:1h` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{"share.record.lock.duration.ms", "999", "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"},
		{"share.record.lock.duration.ms", "60001", "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{"share.delivery.count.limit", "1", "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"},
		{"share.delivery.count.limit", "11", "share.delivery.count.limit must be in the range 2 to 10 inclusive."},
		{"share.heartbeat.interval.ms", "4999", "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."},
		{"share.session.timeout.ms", "44999", "share.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{"share.isolation.level", "read_whatever", "Invalid value read_whatever for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{"share.partition.max.record.locks", "99", "Invalid value 99 for configuration share.partition.max.record.locks: Value must be at least 100"},
		{"share.no.such.config", "1", "Unknown group config name: share.no.such.config"},
	} {
		code, msg := alter(true, incOp{tc.name, set, strp(tc.value)})
		if code != kerr.InvalidConfig.Code || msg != tc.msg {
			t.Errorf("%s=%s: %d %q, want INVALID_CONFIG %q", tc.name, tc.value, code, msg, tc.msg)
		}
	}
	for _, v := range []string{"earliest", "latest", "by_duration:PT1H", "by_duration:P1DT2H3M4.5S"} {
		if code, msg := alter(true, incOp{"share.auto.offset.reset", set, strp(v)}); code != 0 {
			t.Errorf("share.auto.offset.reset=%s refused: %d %s", v, code, msg)
		}
	}
	if img := e.d.Controller.Image(); img.GroupConfig("g") != nil {
		t.Fatalf("validateOnly stored %v", img.GroupConfig("g"))
	}

	if code, msg := alter(false, incOp{"share.auto.offset.reset", set, strp("earliest")}, incOp{"share.record.lock.duration.ms", set, strp("20000")}); code != 0 {
		t.Fatalf("alter: %d %s", code, msg)
	}
	if g := e.d.Controller.Image().GroupConfig("g"); g["share.auto.offset.reset"] != "earliest" || g["share.record.lock.duration.ms"] != "20000" || len(g) != 2 {
		t.Fatalf("Image.GroupConfig: %v", g)
	}
	got = describeGroupConfigsResp(t, e, "g")
	if c := got["share.auto.offset.reset"]; *c.Value != "earliest" || c.Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("after alter: %+v", c)
	}
	syn := kmsg.NewPtrDescribeConfigsRequest()
	syn.IncludeSynonyms = true
	sr := kmsg.NewDescribeConfigsRequestResource()
	sr.ResourceType, sr.ResourceName, sr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, "g", []string{"share.auto.offset.reset", "share.session.timeout.ms"}
	syn.Resources = []kmsg.DescribeConfigsRequestResource{sr}
	for _, c := range e.call(t, syn, 1).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		var names []string
		for _, s := range c.ConfigSynonyms {
			names = append(names, s.Name+"/"+s.Source.String())
		}
		want := map[string]string{
			"share.auto.offset.reset":  "[share.auto.offset.reset/GROUP_CONFIG share.auto.offset.reset/DEFAULT_CONFIG]",
			"share.session.timeout.ms": "[group.share.session.timeout.ms/DEFAULT_CONFIG]",
		}[c.Name]
		if got := fmt.Sprint(names); got != want {
			t.Errorf("%s synonyms %s, want %s", c.Name, got, want)
		}
	}
	if c := describeGroupConfigsResp(t, e, "other")["share.auto.offset.reset"]; *c.Value != "latest" {
		t.Fatalf("another group sees the override: %+v", c)
	}
	if code, _ := alter(false, incOp{"share.auto.offset.reset", kmsg.IncrementalAlterConfigOpDelete, nil}); code != 0 {
		t.Fatalf("delete: %d", code)
	}
	if g := e.d.Controller.Image().GroupConfig("g"); len(g) != 1 {
		t.Fatalf("after delete: %v", g)
	}

	// Legacy AlterConfigs replaces the overrides.
	ac := kmsg.NewPtrAlterConfigsRequest()
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
	res.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "share.isolation.level", Value: strp("read_committed")}}
	ac.Resources = []kmsg.AlterConfigsRequestResource{res}
	if rr := e.call(t, ac, 2).(*kmsg.AlterConfigsResponse).Resources[0]; rr.ErrorCode != 0 {
		t.Fatalf("AlterConfigs: %d %v", rr.ErrorCode, rr.ErrorMessage)
	}
	if g := e.d.Controller.Image().GroupConfig("g"); len(g) != 1 || g["share.isolation.level"] != "read_committed" {
		t.Fatalf("after AlterConfigs: %v", g)
	}
}
