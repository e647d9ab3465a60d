package handlers

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
)

// TestAlterListeners: a change of the broker's listeners or
// listener.security.protocol.map gets Kafka 4.4's INVALID_REQUEST answers
// where Kafka refuses it (kafka-ref, sessions 32 and 33: a listener without
// a security protocol, two listeners on one port, a controller without its
// controller listener, advertised.listeners naming a removed listener, a
// listener kept with another protocol); a change Kafka applies (a listener
// added, removed, or kept with another address) is stored, after the node
// checked that what it adds can be served (Deps.ValidateNewListeners:
// INVALID_CONFIG with its reason otherwise). Until session 33 samsa refused
// the changes Kafka applies with INVALID_CONFIG ("samsa does not add,
// remove or move listeners at runtime"): it now binds and closes listeners
// at runtime (broker/listener_runtime.go, TestRuntimeListeners).
func TestAlterListeners(t *testing.T) {
	e := newAdminEnv(t, "listeners=PLAINTEXT://127.0.0.1:37417,CONTROLLER://127.0.0.1:58685",
		"advertised.listeners=PLAINTEXT://127.0.0.1:37417", "controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTRA:PLAINTEXT")
	var checked []string
	e.d.ValidateNewListeners = func(added, removed []config.Listener, protocols, dynamic map[string]string) error {
		for _, l := range added {
			checked = append(checked, l.String()+" "+protocols[l.Name])
			if l.Port == 29999 {
				return errors.New("listener BUSY cannot bind 127.0.0.1:29999: address already in use")
			}
		}
		return nil
	}
	alter := func(kv ...string) kmsg.IncrementalAlterConfigsResponseResource {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
		for i := 0; i+1 < len(kv); i += 2 {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
			res.Configs = append(res.Configs, c)
		}
		req.Resources = append(req.Resources, res)
		return e.call(t, req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	}
	stored := func() string { return e.d.Controller.Image().BrokerConfigs["1"]["listeners"] }
	for _, tc := range []struct {
		name string
		kv   []string
		code int16
		msg  string
	}{
		{"no security protocol", []string{"listeners", "PLAINTEXT://127.0.0.1:37417,CONTROLLER://127.0.0.1:58685,OTHER://127.0.0.1:29494"}, kerr.InvalidRequest.Code,
			"Error creating broker listeners from '[PLAINTEXT://127.0.0.1:37417, CONTROLLER://127.0.0.1:58685, OTHER://127.0.0.1:29494]': No security protocol defined for listener OTHER"},
		{"port of another listener", []string{"listeners", "PLAINTEXT://127.0.0.1:37417,CONTROLLER://127.0.0.1:58685,EXTRA://127.0.0.1:58685"}, kerr.InvalidRequest.Code,
			"Error creating broker listeners from '[PLAINTEXT://127.0.0.1:37417, CONTROLLER://127.0.0.1:58685, EXTRA://127.0.0.1:58685]': If you have two listeners on the same port then one needs to be IPv4 and the other IPv6, listeners: [PLAINTEXT://127.0.0.1:37417, CONTROLLER://127.0.0.1:58685, EXTRA://127.0.0.1:58685], port: 58685"},
		{"controller listener removed", []string{"listeners", "PLAINTEXT://127.0.0.1:37417,EXTRA://127.0.0.1:29494"}, kerr.InvalidRequest.Code,
			"requirement failed: controller.listener.names must contain at least one value appearing in the 'listeners' configuration when running the KRaft controller role"},
		{"advertised listener removed", []string{"listeners", "CONTROLLER://127.0.0.1:58685"}, kerr.InvalidRequest.Code,
			"requirement failed: advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found PLAINTEXT. The valid options based on the current configuration are CONTROLLER"},
		{"protocol of a listener kept", []string{"listener.security.protocol.map", "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT"}, kerr.InvalidRequest.Code,
			"Invalid value org.apache.kafka.common.config.ConfigException: Security protocol cannot be updated for existing listener ListenerName(PLAINTEXT) for configuration Invalid dynamic configuration"},
		{"listener that cannot be served", []string{"listeners", "PLAINTEXT://127.0.0.1:37417,CONTROLLER://127.0.0.1:58685,BUSY://127.0.0.1:29999", "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,BUSY:PLAINTEXT"}, kerr.InvalidConfig.Code,
			"Cannot add the listener: listener BUSY cannot bind 127.0.0.1:29999: address already in use"},
	} {
		r := alter(tc.kv...)
		if r.ErrorCode != tc.code || r.ErrorMessage == nil || *r.ErrorMessage != tc.msg {
			t.Errorf("%s: %v %v, want %v %q", tc.name, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, kerr.ErrorForCode(tc.code), tc.msg)
		}
		if got := stored(); got != "" {
			t.Fatalf("%s: stored listeners=%q", tc.name, got)
		}
	}
	if r := alter("listeners", "PLAINTEXT://127.0.0.1:37417,CONTROLLER://127.0.0.1:58685", "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"); r.ErrorCode != 0 {
		t.Fatalf("the current listeners: %+v", r)
	}
	// Applied by Kafka 4.4, stored by samsa for the node to apply.
	added := "PLAINTEXT://127.0.0.1:37417,CONTROLLER://127.0.0.1:58685,EXTRA://127.0.0.1:29494"
	checked = nil
	if r := alter("listeners", added, "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTRA:SASL_PLAINTEXT",
		"listener.name.extra.sasl.enabled.mechanisms", "PLAIN"); r.ErrorCode != 0 || stored() != added {
		t.Fatalf("listener added: %v %v, stored %q", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, stored())
	}
	if len(checked) != 1 || checked[0] != "EXTRA://127.0.0.1:29494 SASL_PLAINTEXT" {
		t.Errorf("checked before storing: %q", checked)
	}
	// EXTRA is a listener of the node now: its protocol and its security
	// settings are fixed (Kafka: "Security protocol cannot be updated").
	if r := alter("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTRA:PLAINTEXT"); r.ErrorCode != kerr.InvalidRequest.Code ||
		!strings.Contains(*r.ErrorMessage, "Security protocol cannot be updated for existing listener ListenerName(EXTRA)") {
		t.Errorf("protocol of a listener added at runtime: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	if r := alter("listener.name.extra.sasl.enabled.mechanisms", "SCRAM-SHA-256"); r.ErrorCode != kerr.InvalidConfig.Code {
		t.Errorf("mechanisms of a listener added at runtime: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	// Other settings change beside the stored listeners.
	if r := alter("log.retention.ms", "3600000"); r.ErrorCode != 0 {
		t.Fatalf("another setting with a listener added: %+v", r)
	}
	moved := "PLAINTEXT://127.0.0.1:37418,CONTROLLER://127.0.0.1:58685,EXTRA://127.0.0.1:29494"
	if r := alter("listeners", moved); r.ErrorCode != 0 || stored() != moved {
		t.Fatalf("listener kept with another address: %v %v, stored %q", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, stored())
	}
	removed := "PLAINTEXT://127.0.0.1:37417,CONTROLLER://127.0.0.1:58685"
	if r := alter("listeners", removed); r.ErrorCode != 0 || stored() != removed {
		t.Fatalf("listener removed: %v %v, stored %q", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, stored())
	}
	// At the cluster default, as Kafka: per broker only.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeBroker
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "listeners", kmsg.StringPtr(added)
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	if r := e.call(t, req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; r.ErrorCode != kerr.InvalidRequest.Code ||
		r.ErrorMessage == nil || *r.ErrorMessage != "Cannot update these configs at default cluster level, broker id must be specified: [listeners]" {
		t.Errorf("listeners at the cluster default: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
}

// TestAlterListenersInterBroker: without a static advertised.listeners
// (advertised as listeners), a change that drops the inter-broker listener
// is refused with Kafka 4.4's requirement (kafka-ref, session 33).
func TestAlterListenersInterBroker(t *testing.T) {
	e := newAdminEnv(t, "listeners=PLAINTEXT://127.0.0.1:37417,CONTROLLER://127.0.0.1:58685", "controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTRA:PLAINTEXT")
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "listeners", kmsg.StringPtr("CONTROLLER://127.0.0.1:58685,EXTRA://127.0.0.1:29611")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	r := e.call(t, req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	const want = "requirement failed: inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are EXTRA"
	if r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != want {
		t.Errorf("inter-broker listener removed: %v %v, want %q", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, want)
	}
}

// TestDescribeRuntimeListenerSettings: the listener-prefixed settings stored
// with a listener added at runtime are described, as Kafka 4.4 lists them
// (kafka-configs --describe, session 33: the value as DYNAMIC_BROKER_CONFIG,
// then the base setting's default; a JAAS configuration sensitive).
func TestDescribeRuntimeListenerSettings(t *testing.T) {
	e := newAdminEnv(t)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	for _, kv := range [][2]string{
		{"listener.name.saslx.sasl.enabled.mechanisms", "PLAIN"},
		{"listener.name.saslx.plain.sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a";`},
	} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	if r := e.call(t, req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; r.ErrorCode != 0 {
		t.Fatalf("storing the settings of a listener to add: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dres := kmsg.NewDescribeConfigsRequestResource()
	dres.ResourceType, dres.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	dreq.Resources = append(dreq.Resources, dres)
	dreq.IncludeSynonyms = true
	got := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range e.call(t, dreq, 4).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		got[c.Name] = c
	}
	m, ok := got["listener.name.saslx.sasl.enabled.mechanisms"]
	if !ok || m.Value == nil || *m.Value != "PLAIN" || m.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("mechanisms: %+v", m)
	}
	if len(m.ConfigSynonyms) != 2 || m.ConfigSynonyms[1].Name != "sasl.enabled.mechanisms" || m.ConfigSynonyms[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("mechanisms synonyms: %+v", m.ConfigSynonyms)
	}
	if j, ok := got["listener.name.saslx.plain.sasl.jaas.config"]; !ok || j.Value != nil || !j.IsSensitive {
		t.Errorf("JAAS configuration: %+v", j)
	}
}
