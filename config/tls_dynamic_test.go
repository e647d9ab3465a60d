package config

import (
	"reflect"
	"testing"
)

// TestTLSOverrides: runtime TLS settings are found by listener and applied
// over the static ones; a keystore location replaces inline PEM.
func TestTLSOverrides(t *testing.T) {
	for key, want := range map[string][2]string{
		"listener.name.ssl.ssl.keystore.location": {"SSL", "ssl.keystore.location"},
		"ssl.keystore.location":                   {"", "ssl.keystore.location"},
		"listener.name.ssl.ssl.client.auth":       {"", ""},
		"log.retention.ms":                        {"", ""},
	} {
		l, s, ok := ReconfigurableTLSKey(key)
		if l != want[0] || s != want[1] || ok != (want[1] != "") {
			t.Errorf("%s: %q %q %v", key, l, s, ok)
		}
	}
	got := ListenerTLSOverrides(map[string]string{
		"listener.name.ssl.ssl.keystore.location": "/new.pem", "listener.name.ssl.ssl.key.password": "pw",
		"ssl.keystore.location": "/bare.pem", "log.retention.ms": "1",
	})
	if want := map[string]map[string]string{"SSL": {"ssl.keystore.location": "/new.pem", "ssl.key.password": "pw"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListenerTLSOverrides = %v", got)
	}
	base := TLSSettings{KeystoreCertificateChain: "chain", KeystoreKey: "key", ClientAuth: "required"}
	n, err := base.WithOverrides(got["SSL"])
	if err != nil || n.KeystoreLocation != "/new.pem" || n.KeystoreCertificateChain != "" || n.KeyPassword != "pw" || n.ClientAuth != "required" {
		t.Errorf("WithOverrides = %+v, %v", n, err)
	}
	if base.KeystoreLocation != "" {
		t.Error("WithOverrides changed its receiver")
	}
	if _, err := base.WithOverrides(map[string]string{"ssl.keystore.key": ""}); err == nil {
		t.Error("a chain without its key accepted")
	}
}
