package config

import (
	"fmt"
	"sort"
	"strings"
)

// Dynamic TLS updates: the keystore and truststore settings of a TLS
// listener may be changed at runtime with AlterConfigs or
// IncrementalAlterConfigs of this broker's BROKER resource, prefixed with
// the listener (listener.name.<l>.ssl.keystore.location, ...), as Kafka's
// SslFactory reconfiguration allows (SslConfigs.RECONFIGURABLE_CONFIGS).
// The broker validates a new keystore before accepting it and applies the
// stored values over the listener's static settings.

// reconfigurableTLS are the ssl.* settings a listener may change at runtime.
var reconfigurableTLS = map[string]bool{
	"ssl.keystore.type": true, "ssl.keystore.location": true, "ssl.keystore.password": true,
	"ssl.key.password": true, "ssl.keystore.certificate.chain": true, "ssl.keystore.key": true,
	"ssl.truststore.type": true, "ssl.truststore.location": true, "ssl.truststore.password": true,
	"ssl.truststore.certificates": true,
}

// ReconfigurableTLSKey reports whether key is a runtime-changeable TLS
// setting: listener is its listener (upper case) when it is prefixed
// (listener.name.<l>.<setting>), "" for the bare setting, which Kafka
// accepts only with a listener prefix.
func ReconfigurableTLSKey(key string) (listener, setting string, ok bool) {
	if reconfigurableTLS[key] {
		return "", key, true
	}
	rest, found := strings.CutPrefix(key, "listener.name.")
	if !found {
		return "", "", false
	}
	name, s, found := strings.Cut(rest, ".")
	if !found || !reconfigurableTLS[s] {
		return "", "", false
	}
	return strings.ToUpper(name), s, true
}

// ListenerTLSOverrides returns, by listener, the runtime TLS settings among
// a broker resource's dynamic configs (listener-prefixed keys only).
func ListenerTLSOverrides(configs map[string]string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for k, v := range configs {
		l, s, ok := ReconfigurableTLSKey(k)
		if !ok || l == "" {
			continue
		}
		if out[l] == nil {
			out[l] = map[string]string{}
		}
		out[l][s] = v
	}
	return out
}

// WithOverrides returns a copy of t with the runtime settings applied.
func (t TLSSettings) WithOverrides(overrides map[string]string) (*TLSSettings, error) {
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := strings.TrimSpace(overrides[k])
		switch k {
		case "ssl.keystore.type":
			t.KeystoreType = strings.ToUpper(v)
		case "ssl.keystore.location":
			t.KeystoreLocation = v
			t.KeystoreCertificateChain, t.KeystoreKey = "", ""
		case "ssl.keystore.password":
			t.KeystorePassword = v
		case "ssl.key.password":
			t.KeyPassword = v
		case "ssl.keystore.certificate.chain":
			t.KeystoreCertificateChain = v
		case "ssl.keystore.key":
			t.KeystoreKey = v
		case "ssl.truststore.type":
			t.TruststoreType = strings.ToUpper(v)
		case "ssl.truststore.location":
			t.TruststoreLocation = v
			t.TruststoreCertificates = ""
		case "ssl.truststore.password":
			t.TruststorePassword = v
		case "ssl.truststore.certificates":
			t.TruststoreCertificates = v
		default:
			return nil, fmt.Errorf("%w: %s cannot be changed at runtime", ErrInvalid, k)
		}
	}
	if (t.KeystoreCertificateChain == "") != (t.KeystoreKey == "") {
		return nil, fmt.Errorf("%w: ssl.keystore.certificate.chain and ssl.keystore.key must be given together", ErrInvalid)
	}
	return &t, nil
}
