package handlers

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// TestReconfigurationRefusal pins the answers Kafka 4.4 gave to
// IncrementalAlterConfigs (validate_only) of broker 1 with its defaults:
// background.threads 10, num.io.threads 8, num.network.threads 3,
// num.replica.fetchers 1, num.recovery.threads.per.data.dir 2,
// log.cleaner.threads 1.
func TestReconfigurationRefusal(t *testing.T) {
	e := newAdminEnv(t)
	levels := newBrokerLevels(e.d, e.d.Controller.Image())
	for _, tc := range []struct {
		kv      [2]string
		refused bool
	}{
		{[2]string{"background.threads", "4"}, true},
		{[2]string{"background.threads", "5"}, false},
		{[2]string{"background.threads", "21"}, true},
		{[2]string{"background.threads", "20"}, false},
		{[2]string{"num.io.threads", "3"}, true},
		{[2]string{"num.io.threads", "17"}, true},
		{[2]string{"num.network.threads", "1"}, false},
		{[2]string{"num.network.threads", "7"}, true},
		{[2]string{"num.replica.fetchers", "3"}, true},
		{[2]string{"num.recovery.threads.per.data.dir", "4"}, false},
		{[2]string{"log.cleaner.threads", "3"}, true},
		{[2]string{"log.cleaner.threads", "2"}, false},
		{[2]string{"log.cleaner.threads", "0"}, true},
		{[2]string{"log.cleaner.io.buffer.size", "100"}, false},
		{[2]string{"log.cleaner.dedupe.buffer.size", "100"}, true},
		{[2]string{"message.max.bytes", "10"}, false},
	} {
		why := reconfigurationRefusal(levels, map[string]string{tc.kv[0]: tc.kv[1]})
		if (why != "") != tc.refused {
			t.Errorf("%s=%s: refusal %q, want refused %v", tc.kv[0], tc.kv[1], why, tc.refused)
		}
	}

	// The current value is the effective one: after background.threads=5
	// is stored for this broker, 3 is at least half of it.
	v := "5"
	if code, msg := e.d.Controller.AlterBrokerConfigs("1", []controller.ConfigOp{{Name: "background.threads", Value: &v, Op: controller.OpSet}}, false, nil); code != 0 {
		t.Fatal(code, msg)
	}
	levels = newBrokerLevels(e.d, e.d.Controller.Image())
	if why := reconfigurationRefusal(levels, map[string]string{"background.threads": "3"}); why != "" {
		t.Errorf("background.threads 5 -> 3: %s", why)
	}
	// Through the API: INVALID_REQUEST, as Kafka.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = true
	req.Resources = append(req.Resources, incResource(kmsg.ConfigResourceTypeBroker, "1", incOp{"background.threads", kmsg.IncrementalAlterConfigOpSet, strp("11")}))
	r := e.call(t, req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	if r.ErrorCode != 42 || !strings.Contains(deref(r.ErrorMessage), "double the current value 5") {
		t.Errorf("background.threads 5 -> 11: %d %q", r.ErrorCode, deref(r.ErrorMessage))
	}
}

// TestDescribeBrokerConfigsAcceptedSettings checks that Kafka settings
// samsa accepts without acting on them, and listener-prefixed security
// settings, show their static values like Kafka (originals), with
// secrets null.
func TestDescribeBrokerConfigsAcceptedSettings(t *testing.T) {
	const jaas = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
	e := newAdminEnv(t, "background.threads=4", "num.replica.fetchers=2",
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=PLAIN",
		jaas+`=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="secret";`)
	resp := e.call(t, describeConfigsReq(true, false, describeResource(kmsg.ConfigResourceTypeBroker, "1")), 3).(*kmsg.DescribeConfigsResponse)
	configs := resp.Resources[0].Configs
	c := findConfig(t, configs, "background.threads")
	if deref(c.Value) != "4" || c.Source != kmsg.ConfigSourceStaticBrokerConfig || len(c.ConfigSynonyms) != 2 ||
		c.ConfigSynonyms[1].Source != kmsg.ConfigSourceDefaultConfig || deref(c.ConfigSynonyms[1].Value) != "10" {
		t.Errorf("background.threads: %s %v %+v", deref(c.Value), c.Source, c.ConfigSynonyms)
	}
	c = findConfig(t, configs, "num.replica.fetchers")
	if deref(c.Value) != "2" || c.Source != kmsg.ConfigSourceStaticBrokerConfig || c.ReadOnly {
		t.Errorf("num.replica.fetchers: %+v", c)
	}
	c = findConfig(t, configs, jaas)
	if c.Value != nil || !c.IsSensitive || c.ConfigType != kmsg.ConfigTypePassword || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("listener-prefixed jaas: %+v", c)
	}
	for _, s := range c.ConfigSynonyms {
		if s.Value != nil {
			t.Errorf("synonym %s shows a secret", s.Name)
		}
	}
}
