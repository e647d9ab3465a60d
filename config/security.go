package config

import (
	"fmt"
	"sort"
	"strings"
)

// Security settings fail closed.
//
// samsa serves anonymous PLAINTEXT clients only: it has no TLS, no SASL and
// no authorizer yet. A Kafka setting that exists to restrict who may connect
// or what they may do would, if it were only logged as "not implemented",
// leave a broker its operator believes protected open to everyone. So until
// samsa implements it, such a setting refuses to start, naming the setting
// and where it came from:
//
//   - authorizer.class.name (non-empty), super.users (non-empty) and
//     allow.everyone.if.no.acl.found=false: authorization;
//   - ssl.client.auth=required or requested, also per listener
//     (listener.name.<l>.ssl.client.auth): TLS client authentication;
//   - security.inter.broker.protocol other than PLAINTEXT;
//   - any listener.name.<l>.ssl.* or listener.name.<l>.sasl.* (including
//     listener.name.<l>.<mechanism>.sasl.jaas.config) for a listener <l>
//     of listeners: per-listener security of a listener samsa serves;
//   - SSL, SASL_PLAINTEXT and SASL_SSL listeners are refused by Validate.
//
// Settings that do not restrict access on a PLAINTEXT listener (a keystore
// path, ssl.client.auth=none, per-listener settings of a listener that is
// not configured, and the broker-wide sasl.enabled.mechanisms, which Kafka
// applies to SASL listeners only and samsa has none) stay accepted with the
// "not implemented" warning, as Kafka itself ignores them there. The
// broker-wide ssl.client.auth=required is refused all the same: it says
// plainly that the operator expects clients to be authenticated.

// securityRefusal returns why value of key, given where, must refuse to
// start, or "" when it may be ignored. listeners are the names (upper case)
// of the configured listeners.
func securityRefusal(key, value string, listeners []string) string {
	v := strings.TrimSpace(value)
	lower := strings.ToLower(v)
	switch key {
	case "authorizer.class.name":
		if v != "" {
			return "an authorizer would restrict what clients may do, but samsa has no authorization yet"
		}
	case "super.users":
		if v != "" {
			return "super users only mean something with an authorizer, and samsa has no authorization yet"
		}
	case "allow.everyone.if.no.acl.found":
		if lower == "false" {
			return "it denies access to resources without ACLs, but samsa has no authorization yet"
		}
	case "ssl.client.auth":
		if lower == "required" || lower == "requested" {
			return "TLS client authentication would restrict who may connect, but samsa has no TLS yet"
		}
	case "security.inter.broker.protocol":
		if v != "" && !strings.EqualFold(v, "PLAINTEXT") {
			return "samsa speaks only PLAINTEXT between brokers"
		}
	}
	rest, ok := strings.CutPrefix(key, "listener.name.")
	if !ok {
		return ""
	}
	name, setting, ok := strings.Cut(rest, ".")
	if !ok || !contains(listeners, strings.ToUpper(name)) {
		return ""
	}
	// listener.name.<l>.<mechanism>.sasl.jaas.config names a mechanism first.
	if _, afterMech, ok := strings.Cut(setting, "."); ok && strings.HasPrefix(afterMech, "sasl.") {
		setting = afterMech
	}
	switch {
	case setting == "ssl.client.auth":
		if lower == "required" || lower == "requested" {
			return fmt.Sprintf("TLS client authentication on listener %s would restrict who may connect, but samsa has no TLS yet", strings.ToUpper(name))
		}
		return ""
	case strings.HasPrefix(setting, "ssl."), strings.HasPrefix(setting, "sasl."):
		return fmt.Sprintf("it configures the security of listener %s, which samsa serves as anonymous PLAINTEXT (no TLS or SASL yet)", strings.ToUpper(name))
	}
	return ""
}

// SecurityRefusal returns why setting key to value must be refused while
// samsa has no security (a non-empty reason names what it would restrict),
// or "" when it restricts nothing on the given listeners. AlterConfigs of
// BROKER resources uses it so that security fails closed at runtime too.
func SecurityRefusal(key, value string, listeners []Listener) string {
	names := make([]string, 0, len(listeners))
	for _, l := range listeners {
		names = append(names, l.Name)
	}
	return securityRefusal(key, value, names)
}

// checkSecurity refuses the first (by name) setting of given, the ignored
// settings with their values and origins, that would restrict access.
func checkSecurity(given map[string]givenSetting, c *Config) error {
	listeners := make([]string, 0, len(c.Listeners))
	for _, l := range c.Listeners {
		listeners = append(listeners, l.Name)
	}
	keys := make([]string, 0, len(given))
	for k := range given {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g := given[k]
		if why := securityRefusal(k, g.value, listeners); why != "" {
			return fmt.Errorf("%w: %s=%q (%s): %s; refusing to start rather than serve every client unauthenticated. Remove the setting to run samsa without access control",
				ErrUnsupported, k, g.value, g.where, why)
		}
	}
	return nil
}

// givenSetting is the value of an ignored setting and where it came from.
type givenSetting struct {
	value string
	where string
}
