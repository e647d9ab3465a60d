package diff

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// cmType is the CLIENT_METRICS config resource type (KIP-714).
const cmType = kmsg.ConfigResourceTypeClientMetrics

// cmConfig is one config of an IncrementalAlterConfigs resource; a nil
// value is a null on the wire.
type cmConfig struct {
	op    kmsg.IncrementalAlterConfigOp
	name  string
	value *string
}

func cmSet(name, value string) cmConfig {
	return cmConfig{kmsg.IncrementalAlterConfigOpSet, name, &value}
}

// cmIncremental builds an IncrementalAlterConfigs request with one
// CLIENT_METRICS resource per name, each with the same configs.
func cmIncremental(validateOnly bool, resources map[string][]cmConfig, order ...string) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	for _, name := range order {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = cmType, name
		for _, c := range resources[name] {
			rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			rc.Name, rc.Op, rc.Value = c.name, c.op, c.value
			r.Configs = append(r.Configs, rc)
		}
		req.Resources = append(req.Resources, r)
	}
	return req
}

// cmList lists the client metrics resources at version v.
func cmList(v int16) *kmsg.ListConfigResourcesRequest {
	req := kmsg.NewPtrListConfigResourcesRequest()
	if v >= 1 {
		req.ResourceTypes = []int8{int8(cmType)}
	}
	return req
}

// waitClientMetrics polls (unrecorded) until the client metrics resources
// are exactly want, at most 10 s: Kafka answers the alter APIs once its
// controller committed, and its broker applies the change a moment later.
func waitClientMetrics(s *Session, want ...string) {
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ; time.Now().Before(deadline); <-tick.C {
		resp, err := s.Quiet(1, cmList(1))
		if err != nil {
			return
		}
		got := map[string]bool{}
		for _, r := range resp.(*kmsg.ListConfigResourcesResponse).ConfigResources {
			got[r.Name] = true
		}
		same := len(got) == len(want)
		for _, w := range want {
			same = same && got[w]
		}
		if same {
			return
		}
	}
}

// settleClientMetrics polls (unrecorded) until a describe of subscription
// name shows exactly the configs of want as set, at most 10 s.
func settleClientMetrics(s *Session, name string, want map[string]string) {
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ; time.Now().Before(deadline); <-tick.C {
		resp, err := s.Quiet(4, describeConfigsReq(4, cmType, name))
		if err != nil {
			return
		}
		got := map[string]string{}
		for _, r := range resp.(*kmsg.DescribeConfigsResponse).Resources {
			for _, c := range r.Configs {
				if c.Source == kmsg.ConfigSourceClientMetricsConfig {
					got[c.Name] = deref(c.Value)
				}
			}
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
	}
}

// scriptClientMetrics covers KIP-714's client metrics subscriptions
// (config resources of type CLIENT_METRICS): created, changed and deleted
// with both alter APIs, invalid names and values, described (an existing
// subscription, one that does not exist, the empty name) and listed with
// both ListConfigResources versions. At most one subscription exists when
// one is listed: Kafka lists them in a hash set's order.
func scriptClientMetrics(s *Session) error {
	const sub = "diff-cm"
	each(kmsg.IncrementalAlterConfigs, func(v int16) {
		s.Do("cm-validate-only", v, cmIncremental(true, map[string][]cmConfig{
			sub: {cmSet("metrics", "org.apache.kafka.producer."), cmSet("interval.ms", "1000")},
		}, sub))
	})
	each(kmsg.ListConfigResources, func(v int16) { s.Do("cm-none", v, cmList(v)) })
	s.Do("cm-set", 1, cmIncremental(false, map[string][]cmConfig{
		sub: {cmSet("metrics", "org.apache.kafka.producer., org.apache.kafka.consumer.coordinator"),
			cmSet("interval.ms", "1000"), cmSet("match", "client_id=diff.*, client_software_name=kafka-java")},
	}, sub))
	waitClientMetrics(s, sub)
	each(kmsg.ListConfigResources, func(v int16) {
		s.Do("cm-one", v, cmList(v))
		if v >= 1 {
			req := kmsg.NewPtrListConfigResourcesRequest()
			req.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeBroker), int8(cmType)}
			s.Do("cm-and-broker", v, req)
		}
	})
	each(kmsg.DescribeConfigs, func(v int16) {
		s.Do("cm-existing", v, describeConfigsReq(v, cmType, sub))
		s.Do("cm-existing-named", v, describeConfigsReq(v, cmType, sub, "interval.ms", "no.such"))
		s.Do("cm-unknown", v, describeConfigsReq(v, cmType, "diff-cm-none"))
		s.Do("cm-empty-name", v, describeConfigsReq(v, cmType, ""))
	})

	// Invalid names and values, one resource each (a resource's result
	// does not depend on the others'), validate-only and not.
	bad := map[string][]cmConfig{
		"":                    {cmSet("interval.ms", "1000")},
		"diff-cm-unknown":     {cmSet("no.such.config", "1")},
		"diff-cm-int-low":     {cmSet("interval.ms", "99")},
		"diff-cm-int-min":     {cmSet("interval.ms", "100")},
		"diff-cm-int-high":    {cmSet("interval.ms", "3600001")},
		"diff-cm-int-nan":     {cmSet("interval.ms", "soon")},
		"diff-cm-int-empty":   {cmSet("interval.ms", "")},
		"diff-cm-match-noeq":  {cmSet("match", "client_id")},
		"diff-cm-match-key":   {cmSet("match", "client_name=x")},
		"diff-cm-match-regex": {cmSet("match", "client_id=[")},
		"diff-cm-match-2eq":   {cmSet("match", "client_id=a=b")},
		"diff-cm-match-all":   {cmSet("match", "client_instance_id=b69cc35a-7a54-4790-aa69-cc2bd4ee4538,client_id=1,client_software_name=2,client_software_version=3,client_source_address=127.0.0.1,client_source_port=1")},
		"diff-cm-metrics-dup": {cmSet("metrics", "a,a")},
		"diff-cm-metrics-all": {cmSet("metrics", "*")},
		"diff-cm-null":        {{kmsg.IncrementalAlterConfigOpSet, "metrics", nil}},
		"diff-cm-delete-none": {{kmsg.IncrementalAlterConfigOpDelete, "metrics", nil}},
		"diff-cm-append":      {{kmsg.IncrementalAlterConfigOpAppend, "metrics", kmsg.StringPtr("a")}},
		"diff-cm-append-int":  {{kmsg.IncrementalAlterConfigOpAppend, "interval.ms", kmsg.StringPtr("1")}},
		"diff-cm-bad-op":      {{kmsg.IncrementalAlterConfigOp(9), "metrics", kmsg.StringPtr("a")}},
	}
	order := []string{"", "diff-cm-unknown", "diff-cm-int-low", "diff-cm-int-min", "diff-cm-int-high", "diff-cm-int-nan",
		"diff-cm-int-empty", "diff-cm-match-noeq", "diff-cm-match-key", "diff-cm-match-regex", "diff-cm-match-2eq",
		"diff-cm-match-all", "diff-cm-metrics-dup", "diff-cm-metrics-all", "diff-cm-null", "diff-cm-delete-none",
		"diff-cm-append", "diff-cm-append-int", "diff-cm-bad-op"}
	each(kmsg.IncrementalAlterConfigs, func(v int16) {
		for _, name := range order {
			step := "cm-" + name
			if name == "" {
				step = "cm-empty-name"
			}
			s.Do(step, v, cmIncremental(true, bad, name))
		}
	})

	// Changes of the existing subscription: APPEND and SUBTRACT of its
	// lists, DELETE of one config, then the legacy API's replace-all.
	s.Do("cm-append", 1, cmIncremental(false, map[string][]cmConfig{
		sub: {{kmsg.IncrementalAlterConfigOpAppend, "metrics", kmsg.StringPtr("org.apache.kafka.producer.,org.apache.kafka.a")}},
	}, sub))
	s.Do("cm-subtract", 1, cmIncremental(false, map[string][]cmConfig{
		sub: {{kmsg.IncrementalAlterConfigOpSubtract, "match", kmsg.StringPtr("client_software_name=kafka-java")}},
	}, sub))
	s.Do("cm-delete-interval", 1, cmIncremental(false, map[string][]cmConfig{
		sub: {{kmsg.IncrementalAlterConfigOpDelete, "interval.ms", nil}},
	}, sub))
	settleClientMetrics(s, sub, map[string]string{
		"metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator",
		"match":   "client_id=diff.*,client_software_name=kafka-java"})
	s.Do("cm-after-incremental", 4, describeConfigsReq(4, cmType, sub))

	each(kmsg.AlterConfigs, func(v int16) {
		mk := func(validate bool, name string, kv ...string) *kmsg.AlterConfigsRequest {
			return alterConfigsReq(validate, cmType, name, kv...)
		}
		s.Do("cm-replace", v, mk(false, sub, "interval.ms", fmt.Sprint(2000+int(v))))
		s.Do("cm-bad-value", v, mk(false, sub, "interval.ms", "50"))
		s.Do("cm-unknown-name", v, mk(false, sub, "no.such.config", "1"))
		s.Do("cm-empty-name", v, mk(false, "", "interval.ms", "1000"))
		s.Do("cm-validate-only", v, mk(true, "diff-cm-vo", "match", "client_id=x"))
	})
	settleClientMetrics(s, sub, map[string]string{"interval.ms": fmt.Sprint(2000 + Advertised()[int16(kmsg.AlterConfigs)].Max)})
	s.Do("cm-after-replace", 4, describeConfigsReq(4, cmType, sub))

	// Deleting every config deletes the subscription.
	s.Do("cm-delete-all", 1, cmIncremental(false, map[string][]cmConfig{
		sub: {{kmsg.IncrementalAlterConfigOpDelete, "interval.ms", nil}},
	}, sub))
	waitClientMetrics(s)
	each(kmsg.ListConfigResources, func(v int16) { s.Do("cm-deleted", v, cmList(v)) })
	s.Do("cm-after-delete", 4, describeConfigsReq(4, cmType, sub))
	return nil
}
