package handlers

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterResource builds a legacy AlterConfigs resource from name/value
// pairs; a value "<null>" is sent as null.
func alterResource(typ kmsg.ConfigResourceType, name string, kv ...string) kmsg.AlterConfigsRequestResource {
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name = kv[i]
		if kv[i+1] != "<null>" {
			c.Value = strp(kv[i+1])
		}
		r.Configs = append(r.Configs, c)
	}
	return r
}

func TestAlterConfigs(t *testing.T) {
	for _, tc := range []struct {
		name         string
		resources    []kmsg.AlterConfigsRequestResource
		validateOnly bool
		codes        []int16
		msg          string // substring of the first result's message
		topicConfigs map[string]string
		brokerConfig map[string]string // the "1" broker resource afterwards
	}{
		{
			name:         "topic replace all",
			resources:    []kmsg.AlterConfigsRequestResource{alterResource(kmsg.ConfigResourceTypeTopic, "t", "segment.ms", "1000")},
			codes:        []int16{0},
			topicConfigs: map[string]string{"segment.ms": "1000"},
		},
		{
			name:         "topic validate only",
			resources:    []kmsg.AlterConfigsRequestResource{alterResource(kmsg.ConfigResourceTypeTopic, "t", "segment.ms", "1000")},
			validateOnly: true,
			codes:        []int16{0},
			topicConfigs: map[string]string{"retention.ms": "5000"},
		},
		{
			name:         "topic bad value",
			resources:    []kmsg.AlterConfigsRequestResource{alterResource(kmsg.ConfigResourceTypeTopic, "t", "segment.ms", "soon")},
			codes:        []int16{kerr.InvalidConfig.Code},
			topicConfigs: map[string]string{"retention.ms": "5000"},
		},
		{
			name:      "unknown topic",
			resources: []kmsg.AlterConfigsRequestResource{alterResource(kmsg.ConfigResourceTypeTopic, "nope", "segment.ms", "1")},
			codes:     []int16{kerr.UnknownTopicOrPartition.Code},
		},
		{
			// Kafka 4.4 judges the name first (compat-tests/diff fuzzing).
			name:      "illegal topic name",
			resources: []kmsg.AlterConfigsRequestResource{alterResource(kmsg.ConfigResourceTypeTopic, "..", "segment.ms", "1")},
			codes:     []int16{kerr.InvalidTopicException.Code},
		},
		{
			name:      "duplicate keys",
			resources: []kmsg.AlterConfigsRequestResource{alterResource(kmsg.ConfigResourceTypeTopic, "t", "segment.ms", "1", "segment.ms", "2")},
			codes:     []int16{kerr.InvalidRequest.Code},
			msg:       "Error due to duplicate config keys",
		},
		{
			name:      "null value",
			resources: []kmsg.AlterConfigsRequestResource{alterResource(kmsg.ConfigResourceTypeTopic, "t", "segment.ms", "<null>")},
			codes:     []int16{kerr.InvalidRequest.Code},
			msg:       "Null value not supported for : segment.ms",
		},
		{
			name: "duplicate resource",
			resources: []kmsg.AlterConfigsRequestResource{
				alterResource(kmsg.ConfigResourceTypeTopic, "t", "segment.ms", "1"),
				alterResource(kmsg.ConfigResourceTypeBroker, "1", "num.io.threads", "5"),
				alterResource(kmsg.ConfigResourceTypeTopic, "t", "segment.ms", "2"),
			},
			codes:        []int16{kerr.InvalidRequest.Code, 0, kerr.InvalidRequest.Code},
			msg:          "Each resource must appear at most once.",
			topicConfigs: map[string]string{"retention.ms": "5000"},
			brokerConfig: map[string]string{"num.io.threads": "5"},
		},
		{
			name:         "broker dynamic",
			resources:    []kmsg.AlterConfigsRequestResource{alterResource(kmsg.ConfigResourceTypeBroker, "1", "num.io.threads", "5")},
			codes:        []int16{0},
			brokerConfig: map[string]string{"num.io.threads": "5"},
		},
		{
			name:      "broker static",
			resources: []kmsg.AlterConfigsRequestResource{alterResource(kmsg.ConfigResourceTypeBroker, "1", "num.io.threads", "5", "node.id", "2")},
			codes:     []int16{kerr.InvalidRequest.Code},
			msg:       "Cannot update these configs dynamically: [node.id]",
		},
		{
			name:      "other broker",
			resources: []kmsg.AlterConfigsRequestResource{alterResource(kmsg.ConfigResourceTypeBroker, "2", "num.io.threads", "5")},
			codes:     []int16{kerr.InvalidRequest.Code},
		},
		{
			name:      "broker logger",
			resources: []kmsg.AlterConfigsRequestResource{alterResource(kmsg.ConfigResourceTypeBrokerLogger, "1", "kafka", "DEBUG")},
			codes:     []int16{kerr.InvalidRequest.Code},
		},
	} {
		for _, v := range []int16{0, 1, 2} {
			e := newAdminEnv(t)
			e.createTopic(t, "t", 1, map[string]string{"retention.ms": "5000"})
			req := kmsg.NewPtrAlterConfigsRequest()
			req.Resources, req.ValidateOnly = tc.resources, tc.validateOnly
			resp := e.call(t, req, v).(*kmsg.AlterConfigsResponse)
			if len(resp.Resources) != len(tc.codes) {
				t.Fatalf("%s v%d: %+v", tc.name, v, resp.Resources)
			}
			for i, code := range tc.codes {
				rr := resp.Resources[i]
				if rr.ErrorCode != code || (code != 0) != (rr.ErrorMessage != nil) {
					t.Errorf("%s v%d result %d: got %d %q, want %d", tc.name, v, i, rr.ErrorCode, deref(rr.ErrorMessage), code)
				}
				if rr.ResourceName != tc.resources[i].ResourceName || rr.ResourceType != tc.resources[i].ResourceType {
					t.Errorf("%s v%d result %d: resource %v %q", tc.name, v, i, rr.ResourceType, rr.ResourceName)
				}
			}
			if tc.msg != "" && !strings.Contains(deref(resp.Resources[0].ErrorMessage), tc.msg) {
				t.Errorf("%s v%d: message %q, want %q", tc.name, v, deref(resp.Resources[0].ErrorMessage), tc.msg)
			}
			img := e.d.Controller.Image()
			if tc.topicConfigs != nil && !equalConfigs(img.Topics["t"].Configs, tc.topicConfigs) {
				t.Errorf("%s v%d: topic configs %v, want %v", tc.name, v, img.Topics["t"].Configs, tc.topicConfigs)
			}
			if !equalConfigs(img.BrokerConfigs["1"], tc.brokerConfig) {
				t.Errorf("%s v%d: broker configs %v, want %v", tc.name, v, img.BrokerConfigs["1"], tc.brokerConfig)
			}
		}
	}
}

func TestAlterConfigsBrokerReplaceAll(t *testing.T) {
	e := newAdminEnv(t)
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Resources = []kmsg.AlterConfigsRequestResource{alterResource(kmsg.ConfigResourceTypeBroker, "", "num.io.threads", "5", "log.segment.bytes", "2000000")}
	if rr := e.call(t, req, 2).(*kmsg.AlterConfigsResponse).Resources[0]; rr.ErrorCode != 0 {
		t.Fatalf("first: %d %s", rr.ErrorCode, deref(rr.ErrorMessage))
	}
	req.Resources = []kmsg.AlterConfigsRequestResource{alterResource(kmsg.ConfigResourceTypeBroker, "", "log.segment.bytes", "3000000")}
	if rr := e.call(t, req, 2).(*kmsg.AlterConfigsResponse).Resources[0]; rr.ErrorCode != 0 {
		t.Fatalf("second: %d %s", rr.ErrorCode, deref(rr.ErrorMessage))
	}
	if got := e.d.Controller.Image().BrokerConfigs[""]; !equalConfigs(got, map[string]string{"log.segment.bytes": "3000000"}) {
		t.Fatalf("got %v", got)
	}
}

func equalConfigs(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
