package handlers

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller/acl"
)

// TestValidateClientMetrics checks the verdicts and messages Kafka 4.4
// gave the same configs (its answers to the differential suite's
// cm-* steps and to more probes of the same kind, 2026-12-07).
func TestValidateClientMetrics(t *testing.T) {
	for _, tc := range []struct {
		name    string
		configs map[string]string
		code    int16
		msg     string
	}{
		{"", map[string]string{"interval.ms": "1000"}, kerr.InvalidRequest.Code, "Subscription name can't be empty"},
		{"s", map[string]string{}, 0, ""},
		{"s", map[string]string{"metrics": "org.apache.kafka.producer., org.apache.kafka.consumer.coordinator", "interval.ms": "1000",
			"match": "client_id=diff.*, client_software_name=kafka-java"}, 0, ""},
		{"s", map[string]string{"no.such.config": "1"}, kerr.InvalidRequest.Code, "Unknown client metrics configuration: no.such.config"},
		{"s", map[string]string{"interval.ms": "5", "no.such": "bad"}, kerr.InvalidRequest.Code, "Unknown client metrics configuration: no.such"},
		{"s", map[string]string{"interval.ms": "99"}, kerr.InvalidRequest.Code, "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"s", map[string]string{"interval.ms": "-5"}, kerr.InvalidRequest.Code, "Invalid value -5 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"s", map[string]string{"interval.ms": "3600001"}, kerr.InvalidRequest.Code, "Invalid value 3600001 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"s", map[string]string{"interval.ms": "100"}, 0, ""},
		{"s", map[string]string{"interval.ms": "+500"}, 0, ""},
		{"s", map[string]string{"interval.ms": " 1000 "}, 0, ""},
		{"s", map[string]string{"interval.ms": "soon"}, kerr.InvalidConfig.Code, "Invalid value soon for configuration interval.ms: Not a number of type INT"},
		{"s", map[string]string{"interval.ms": ""}, kerr.InvalidConfig.Code, "Invalid value  for configuration interval.ms: Not a number of type INT"},
		{"s", map[string]string{"interval.ms": "99999999999"}, kerr.InvalidConfig.Code, "Invalid value 99999999999 for configuration interval.ms: Not a number of type INT"},
		// Parse errors come before the range and the match patterns.
		{"s", map[string]string{"interval.ms": "soon", "match": "bad"}, kerr.InvalidConfig.Code, "Invalid value soon for configuration interval.ms: Not a number of type INT"},
		{"s", map[string]string{"interval.ms": "5", "match": "bad"}, kerr.InvalidRequest.Code, "Invalid value 5 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"s", map[string]string{"metrics": "a,,b", "interval.ms": "soon"}, kerr.InvalidConfig.Code, "Configuration 'metrics' values must not be empty."},
		{"s", map[string]string{"metrics": "a,"}, kerr.InvalidConfig.Code, "Configuration 'metrics' values must not be empty."},
		{"s", map[string]string{"metrics": " "}, 0, ""},
		{"s", map[string]string{"metrics": "a,a"}, 0, ""},
		{"s", map[string]string{"metrics": "*"}, 0, ""},
		{"s", map[string]string{"match": "client_id=a,,client_id=b"}, kerr.InvalidConfig.Code, "Configuration 'match' values must not be empty."},
		{"s", map[string]string{"match": "client_id"}, kerr.InvalidConfig.Code, "Illegal client matching pattern: client_id"},
		{"s", map[string]string{"match": "client_id="}, kerr.InvalidConfig.Code, "Illegal client matching pattern: client_id="},
		{"s", map[string]string{"match": "=x"}, kerr.InvalidConfig.Code, "Illegal client matching pattern: =x"},
		{"s", map[string]string{"match": "client_name=x"}, kerr.InvalidConfig.Code, "Illegal client matching pattern: client_name=x"},
		{"s", map[string]string{"match": "client_id=["}, kerr.InvalidConfig.Code, "Illegal client matching pattern: client_id=["},
		{"s", map[string]string{"match": "client_id=a=b"}, kerr.InvalidConfig.Code, "Illegal client matching pattern: client_id=a=b"},
		{"s", map[string]string{"match": "client_id=(?=a)"}, kerr.InvalidConfig.Code, "Illegal client matching pattern: client_id=(?=a)"},
		{"s", map[string]string{"match": "client_id=a{"}, kerr.InvalidConfig.Code, "Illegal client matching pattern: client_id=a{"},
		{"s", map[string]string{"match": "client_id=(a)\\1"}, 0, ""},
		{"s", map[string]string{"match": "client_id=a*+"}, 0, ""},
		{"s", map[string]string{"match": "client_id=(?<n>a)"}, 0, ""},
		{"s", map[string]string{"match": "client_id=a,client_id=b"}, 0, ""},
		{"s", map[string]string{"match": " client_id = x "}, 0, ""},
		{"s", map[string]string{"match": "client_instance_id=b69cc35a-7a54-4790-aa69-cc2bd4ee4538,client_id=1,client_software_name=2," +
			"client_software_version=3,client_source_address=127.0.0.1,client_source_port=1"}, 0, ""},
	} {
		code, msg := validateClientMetrics(tc.name, tc.configs)
		if code != tc.code || msg != tc.msg {
			t.Errorf("%q %v: got %d %q, want %d %q", tc.name, tc.configs, code, msg, tc.code, tc.msg)
		}
	}
}

func TestJavaRegexCompiles(t *testing.T) {
	for re, want := range map[string]bool{
		"a.*": true, "[": false, "a{": false, "a{2}": true, "a{2,}": true, "a{2,3}": true, "{": false, "a{x}": false,
		`a\{`: true, "[{]": true, "[]{]": true, `(a)\1`: true, "a*+": true, "a++": true, "(?>a)": true, "(?<n>a)": true,
		"(?<!a)b": true, "(?<=a)b": true, "a**": false, `\q`: false, "(": false, "a)": false, "": true,
	} {
		if got := javaRegexCompiles(re); got != want {
			t.Errorf("javaRegexCompiles(%q) = %v, want %v", re, got, want)
		}
	}
}

// cmAlter is an IncrementalAlterConfigs request for one CLIENT_METRICS
// resource; ops are op, name, value triples (value "<null>" is null).
func cmAlter(name string, validateOnly bool, ops ...any) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
	for i := 0; i+2 < len(ops)+1; i += 3 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name = ops[i].(kmsg.IncrementalAlterConfigOp), ops[i+1].(string)
		if v := ops[i+2].(string); v != "<null>" {
			c.Value = &v
		}
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	return req
}

func listClientMetrics(t *testing.T, e *adminEnv, v int16) []string {
	req := kmsg.NewPtrListConfigResourcesRequest()
	if v >= 1 {
		req.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeClientMetrics)}
	}
	resp := e.call(t, req, v).(*kmsg.ListConfigResourcesResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("ListConfigResources v%d: %d", v, resp.ErrorCode)
	}
	return listed(resp)
}

// TestClientMetricsLifecycle creates, describes, lists, changes and
// deletes a subscription through the APIs, as kafka-client-metrics.sh
// does, and checks Kafka 4.4's answers.
func TestClientMetricsLifecycle(t *testing.T) {
	e := newAdminEnv(t)
	set := kmsg.IncrementalAlterConfigOpSet
	del := kmsg.IncrementalAlterConfigOpDelete
	alter := func(req *kmsg.IncrementalAlterConfigsRequest) (int16, string) {
		t.Helper()
		rr := e.call(t, req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		return rr.ErrorCode, deref(rr.ErrorMessage)
	}
	describe := func(name string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
		t.Helper()
		rr := e.call(t, describeConfigsReq(true, true, describeResource(kmsg.ConfigResourceTypeClientMetrics, name)), 4).(*kmsg.DescribeConfigsResponse).Resources[0]
		if rr.ErrorCode != 0 {
			t.Fatalf("describe %q: %d %s", name, rr.ErrorCode, deref(rr.ErrorMessage))
		}
		out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
		for _, c := range rr.Configs {
			out[c.Name] = c
		}
		return out
	}

	if code, msg := alter(cmAlter("sub", true, set, "interval.ms", "1000")); code != 0 {
		t.Fatalf("validate-only: %d %s", code, msg)
	}
	if got := listClientMetrics(t, e, 0); len(got) != 0 {
		t.Fatalf("validate-only created %v", got)
	}
	if code, msg := alter(cmAlter("sub", false, set, "metrics", " a , a , b ", set, "interval.ms", " 1000 ", set, "match", "client_id=x")); code != 0 {
		t.Fatalf("set: %d %s", code, msg)
	}
	for _, v := range []int16{0, 1} {
		if got := listClientMetrics(t, e, v); fmt.Sprint(got) != "[16:sub]" {
			t.Errorf("v%d list: %v", v, got)
		}
	}
	got := describe("sub")
	for _, w := range []struct {
		name, value string
		typ         kmsg.ConfigType
	}{{"metrics", "a,b", kmsg.ConfigTypeList}, {"interval.ms", "1000", kmsg.ConfigTypeInt}, {"match", "client_id=x", kmsg.ConfigTypeList}} {
		c := got[w.name]
		if deref(c.Value) != w.value || c.Source != kmsg.ConfigSourceClientMetricsConfig || c.ConfigType != w.typ ||
			len(c.ConfigSynonyms) != 1 || deref(c.ConfigSynonyms[0].Value) != w.value || c.Documentation == nil {
			t.Errorf("%s: %+v", w.name, c)
		}
	}
	// APPEND and SUBTRACT are refused even on the list configs.
	if code, msg := alter(cmAlter("sub", false, kmsg.IncrementalAlterConfigOpAppend, "metrics", "c")); code != kerr.InvalidConfig.Code ||
		msg != "Can't APPEND to key metrics because its type is not LIST." {
		t.Errorf("append: %d %q", code, msg)
	}
	if code, _ := alter(cmAlter("sub", false, del, "interval.ms", "<null>")); code != 0 {
		t.Fatalf("delete interval.ms: %d", code)
	}
	if c := describe("sub")["interval.ms"]; deref(c.Value) != "300000" || c.Source != kmsg.ConfigSourceDefaultConfig || len(c.ConfigSynonyms) != 0 {
		t.Errorf("deleted interval.ms: %+v", c)
	}

	// The legacy API replaces every config.
	legacy := kmsg.NewPtrAlterConfigsRequest()
	lr := kmsg.NewAlterConfigsRequestResource()
	lr.ResourceType, lr.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "sub"
	lc := kmsg.NewAlterConfigsRequestResourceConfig()
	lc.Name, lc.Value = "interval.ms", kmsg.StringPtr("2000")
	lr.Configs = append(lr.Configs, lc)
	legacy.Resources = append(legacy.Resources, lr)
	if rr := e.call(t, legacy, 2).(*kmsg.AlterConfigsResponse).Resources[0]; rr.ErrorCode != 0 {
		t.Fatalf("AlterConfigs: %d %s", rr.ErrorCode, deref(rr.ErrorMessage))
	}
	if got := e.d.Controller.Image().ClientMetrics["sub"]; fmt.Sprint(got) != "map[interval.ms:2000]" {
		t.Errorf("after AlterConfigs: %v", got)
	}

	// Deleting the last config deletes the subscription.
	if code, _ := alter(cmAlter("sub", false, del, "interval.ms", "<null>")); code != 0 {
		t.Fatal("delete")
	}
	if got := listClientMetrics(t, e, 1); len(got) != 0 {
		t.Errorf("deleted subscription still listed: %v", got)
	}
	if c := describe("sub")["metrics"]; deref(c.Value) != "" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("deleted subscription: %+v", c)
	}

	// An operation Kafka does not know: UNKNOWN_SERVER_ERROR, as Kafka.
	if code, _ := alter(cmAlter("sub", false, kmsg.IncrementalAlterConfigOp(9), "metrics", "a")); code != kerr.UnknownServerError.Code {
		t.Errorf("unknown op: %d", code)
	}
}

// TestClientMetricsAuthz: subscriptions are authorized on the CLUSTER
// (DESCRIBE_CONFIGS to describe, ALTER_CONFIGS to alter), as Kafka 4.4's
// ConfigHelper and ConfigAdminManager do.
func TestClientMetricsAuthz(t *testing.T) {
	e := newAdminEnv(t)
	e.d.Authz = &Authz{Authorizer: acl.Authorizer{SuperUsers: []string{"User:admin"}}}
	describe := describeConfigsReq(false, false, describeResource(kmsg.ConfigResourceTypeClientMetrics, "sub"))
	if rr := e.callAs(t, "User:bob", describe, 4).(*kmsg.DescribeConfigsResponse).Resources[0]; rr.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("describe without DESCRIBE_CONFIGS: %d", rr.ErrorCode)
	}
	alter := cmAlter("sub", false, kmsg.IncrementalAlterConfigOpSet, "interval.ms", "1000")
	if rr := e.callAs(t, "User:bob", alter, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; rr.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alter without ALTER_CONFIGS: %d", rr.ErrorCode)
	}
	if e.d.Controller.Image().ClientMetrics["sub"] != nil {
		t.Error("a refused alteration was applied")
	}
	alter = cmAlter("sub", false, kmsg.IncrementalAlterConfigOpSet, "interval.ms", "1000")
	if rr := e.callAs(t, "User:admin", alter, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; rr.ErrorCode != 0 {
		t.Errorf("alter as a super user: %d", rr.ErrorCode)
	}
}
