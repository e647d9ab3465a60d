package config

import (
	"errors"
	"testing"
)

// TestRuntimeListenerSecurity: a listener added at runtime takes its
// listener.name.<l>.* settings from the dynamic configs over the static
// ssl.* / sasl.* settings, and is refused as at start when it cannot be
// served (no keystore, a SASL mechanism samsa does not implement).
func TestRuntimeListenerSecurity(t *testing.T) {
	c, err := Load([]string{"--override", "log.dirs=" + t.TempDir(), "--override", "ssl.truststore.location=/static/ca.pem",
		"--override", "ssl.truststore.type=PEM"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dynamic := map[string]string{
		"listeners": "PLAINTEXT://:9092,SECURE://:9094,SASLX://:9095",
		"listener.name.secure.ssl.keystore.location":  "/dyn/server.pem",
		"listener.name.secure.ssl.client.auth":        "required",
		"listener.name.saslx.sasl.enabled.mechanisms": "PLAIN",
		"listener.name.saslx.plain.sasl.jaas.config":  `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a-pw";`,
		"listener.name.other.ssl.keystore.location":   "/other.pem",
	}
	ls, err := c.RuntimeListenerSecurity("secure", "SSL", dynamic)
	if err != nil {
		t.Fatal(err)
	}
	if ls.TLS == nil || ls.TLS.KeystoreLocation != "/dyn/server.pem" || ls.TLS.ClientAuth != "required" || ls.TLS.TruststoreLocation != "/static/ca.pem" || ls.SASL != nil {
		t.Errorf("SECURE: %+v %+v", ls, ls.TLS)
	}
	ls, err = c.RuntimeListenerSecurity("SASLX", "SASL_PLAINTEXT", dynamic)
	if err != nil {
		t.Fatal(err)
	}
	if ls.TLS != nil || ls.SASL == nil || ls.SASL.PlainUsers["alice"] != "a-pw" || len(ls.SASL.Mechanisms) != 1 {
		t.Errorf("SASLX: %+v %+v", ls, ls.SASL)
	}
	if ls, err := c.RuntimeListenerSecurity("EXTRA", "PLAINTEXT", dynamic); err != nil || ls.UsesTLS() || ls.UsesSASL() {
		t.Errorf("EXTRA: %+v %v", ls, err)
	}
	if _, err := c.RuntimeListenerSecurity("NOKEY", "SSL", dynamic); !errors.Is(err, ErrInvalid) {
		t.Errorf("SSL without a keystore: %v", err)
	}
	// Kafka's default mechanism, GSSAPI, is not implemented.
	if _, err := c.RuntimeListenerSecurity("GSS", "SASL_PLAINTEXT", dynamic); !errors.Is(err, ErrUnsupported) {
		t.Errorf("SASL with GSSAPI: %v", err)
	}
	if _, err := c.RuntimeListenerSecurity("X", "BOGUS", dynamic); err == nil {
		t.Error("unknown protocol accepted")
	}
	got, protocols, err := c.EffectiveListeners(dynamic)
	if err != nil || len(got) != 3 || got[1].Name != "SECURE" || protocols["PLAINTEXT"] != "PLAINTEXT" {
		t.Errorf("EffectiveListeners: %v %v %v", got, protocols, err)
	}
	if got, _, err := c.EffectiveListeners(map[string]string{"listeners": "bad"}); err == nil || len(got) != len(c.Listeners) {
		t.Errorf("EffectiveListeners of a bad stored value: %v %v", got, err)
	}
}
