package handlers

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDynamicSecurityConfigsFailClosed extends issue 11 item 16 to the
// runtime: a BROKER AlterConfigs or IncrementalAlterConfigs that sets a
// restricting security setting (ssl.client.auth=required, SASL on a
// configured listener, an authorizer) was accepted and stored with no
// effect, so access stayed open while the operator believed it closed. It
// is INVALID_CONFIG naming the setting. Since samsa implements TLS and SASL
// (read at start only), every change of the security of a listener served
// is INVALID_CONFIG too (a listener added at runtime brings its own).
func TestDynamicSecurityConfigsFailClosed(t *testing.T) {
	e := newAdminEnv(t)
	legacy := func(kv ...string) int16 {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Resources = append(req.Resources, alterResource(kmsg.ConfigResourceTypeBroker, "", kv...))
		return e.call(t, req, 2).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode
	}
	incremental := func(name, value string) (int16, string) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = append(req.Resources, incResource(kmsg.ConfigResourceTypeBroker, "1", incOp{name, kmsg.IncrementalAlterConfigOpSet, strp(value)}))
		r := e.call(t, req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		return r.ErrorCode, deref(r.ErrorMessage)
	}
	if code := legacy("ssl.client.auth", "required"); code != kerr.InvalidConfig.Code {
		t.Errorf("legacy ssl.client.auth=required: %d, want INVALID_CONFIG", code)
	}
	for _, kv := range [][2]string{
		{"ssl.client.auth", "requested"},
		{"listener.name.plaintext.sasl.enabled.mechanisms", "PLAIN"},
		{"listener.name.plaintext.ssl.keystore.location", "/ks.jks"},
	} {
		if code, msg := incremental(kv[0], kv[1]); code != kerr.InvalidConfig.Code || msg == "" {
			t.Errorf("incremental %s=%s: %d %q, want INVALID_CONFIG with a message", kv[0], kv[1], code, msg)
		}
	}
	// The authorizer settings are read-only broker settings now that samsa
	// implements them: refused as Kafka refuses any read-only setting.
	if code, msg := incremental("authorizer.class.name", "x"); code != kerr.InvalidRequest.Code || msg == "" {
		t.Errorf("incremental authorizer.class.name=x: %d %q, want INVALID_REQUEST with a message", code, msg)
	}
	// Listener security is read at start only, so any change to it is
	// refused rather than stored without effect, even one that would not
	// restrict access; other settings are still stored.
	if code := legacy("ssl.client.auth", "none", "log.segment.bytes", "2000000"); code != kerr.InvalidConfig.Code {
		t.Errorf("ssl.client.auth=none at runtime: %d, want INVALID_CONFIG", code)
	}
	// The settings of a listener this node does not serve are stored: they
	// come with the listener when it is added at runtime, and are checked
	// then (TestAlterListeners). Kafka 4.4 stores them too (code 0,
	// kafka-ref, session 33).
	if code, msg := incremental("listener.name.external.ssl.keystore.location", "/ks.jks"); code != 0 {
		t.Errorf("keystore of a listener not served: %d %q, want 0", code, msg)
	}
	if code := legacy("log.segment.bytes", "2000000"); code != 0 {
		t.Errorf("harmless values: %d", code)
	}
	cfg := e.d.Controller.Image().BrokerConfigs
	for _, res := range cfg {
		for n, v := range res {
			if n == "ssl.client.auth" && v != "none" || n == "authorizer.class.name" || n == "listener.name.plaintext.sasl.enabled.mechanisms" {
				t.Errorf("stored %s=%s", n, v)
			}
		}
	}
}

// TestDynamicListenerKeystore: with a TLS validator (the node's), a TLS
// listener's keystore settings may change at runtime as on Kafka 4.4: per
// broker and listener-prefixed only (INVALID_REQUEST otherwise), refused
// with INVALID_REQUEST and the reason when the keystore does not validate,
// stored when it does.
func TestDynamicListenerKeystore(t *testing.T) {
	// An SSL listener served (its keystore is read by the node, not here).
	e := newAdminEnv(t, "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT",
		"listener.name.ssl.ssl.keystore.location=/ks.pem")
	var asked []string
	e.d.ValidateListenerTLS = func(l string, o map[string]string) error {
		asked = append(asked, l+" "+o["ssl.keystore.location"])
		if o["ssl.keystore.location"] == "/bad.pem" {
			return errors.New("Failed to load PEM SSL keystore /bad.pem")
		}
		return nil
	}
	incremental := func(resource, name, value string) (int16, string) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = append(req.Resources, incResource(kmsg.ConfigResourceTypeBroker, resource, incOp{name, kmsg.IncrementalAlterConfigOpSet, strp(value)}))
		r := e.call(t, req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		return r.ErrorCode, deref(r.ErrorMessage)
	}
	for _, tc := range []struct {
		resource, name, value string
		code                  int16
		msg                   string
	}{
		{"1", "ssl.keystore.location", "/ks.pem", kerr.InvalidRequest.Code, "only per-listener using the listener prefix: [ssl.keystore.location]"},
		{"", "listener.name.ssl.ssl.keystore.location", "/ks.pem", kerr.InvalidRequest.Code, "Cannot update these configs at default cluster level, broker id must be specified"},
		{"1", "listener.name.ssl.ssl.keystore.location", "/bad.pem", kerr.InvalidRequest.Code, "Validation of dynamic config update of SSLFactory failed: Failed to load PEM SSL keystore /bad.pem"},
		{"1", "listener.name.ssl.ssl.keystore.location", "/ks.pem", 0, ""},
		// Other listener security stays read at start.
		{"1", "listener.name.ssl.ssl.client.auth", "required", kerr.InvalidConfig.Code, ""},
	} {
		code, msg := incremental(tc.resource, tc.name, tc.value)
		if code != tc.code || !strings.Contains(msg, tc.msg) {
			t.Errorf("%q %s=%s: %d %q, want %d %q", tc.resource, tc.name, tc.value, code, msg, tc.code, tc.msg)
		}
	}
	if got := e.d.Controller.Image().BrokerConfigs["1"]["listener.name.ssl.ssl.keystore.location"]; got != "/ks.pem" {
		t.Errorf("stored keystore location %q", got)
	}
	if len(asked) == 0 || asked[0] != "SSL /bad.pem" {
		t.Errorf("validator calls %v", asked)
	}
}
