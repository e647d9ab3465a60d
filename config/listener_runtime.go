package config

import (
	"fmt"
	"slices"
	"strings"
)

// Listeners at runtime (Kafka 4.4's DynamicListenerConfig): listeners and
// listener.security.protocol.map are per-broker dynamic settings. The
// broker binds the listeners whose names a change adds and closes the ones
// it removes; a listener that keeps its name keeps its socket, even when
// the change gives it another address (the stored address is bound at the
// next start only when the listener is not in the static listeners,
// because the static ones are bound first). The listener's own
// listener.name.<l>.* security settings come with it in the same
// per-broker resource.

// EffectiveListeners returns the listeners and the protocol map a node
// runs with given its per-broker dynamic configs (the BROKER resource of
// its id): the stored listeners and listener.security.protocol.map where
// set, else the static ones. A stored value that does not parse (an older
// image) falls back to the static value, with the error.
func (c *Config) EffectiveListeners(dynamic map[string]string) (listeners []Listener, protocols map[string]string, err error) {
	listeners, protocols = c.Listeners, c.ListenerSecurityProtocolMap
	if raw, ok := dynamic["listeners"]; ok {
		ls, perr := parseListeners(raw)
		if perr != nil {
			err = fmt.Errorf("stored listeners=%q: %w", raw, perr)
		} else {
			listeners = ls
		}
	}
	if raw, ok := dynamic["listener.security.protocol.map"]; ok {
		m, perr := parseProtocolMap(raw)
		if perr != nil && err == nil {
			err = fmt.Errorf("stored listener.security.protocol.map=%q: %w", raw, perr)
		} else if perr == nil {
			protocols = m
		}
	}
	return listeners, protocols, err
}

// IsControllerListener reports whether name is one of
// controller.listener.names.
func (c *Config) IsControllerListener(name string) bool {
	return slices.ContainsFunc(c.ControllerListenerNames, func(n string) bool { return strings.EqualFold(n, name) })
}

// ListenerSettingOf returns the listener name (upper case) of a
// listener.name.<l>.<setting> key, and whether key has that form.
func ListenerSettingOf(key string) (listener string, ok bool) {
	rest, ok := strings.CutPrefix(key, "listener.name.")
	if !ok {
		return "", false
	}
	l, _, ok := strings.Cut(rest, ".")
	if !ok || l == "" {
		return "", false
	}
	return strings.ToUpper(l), true
}

// IsListenerSecuritySetting reports whether key is a listener-prefixed
// security setting samsa implements (TLS, SASL, OAUTHBEARER, a JAAS
// configuration): the settings a listener added at runtime may bring.
func IsListenerSecuritySetting(key string) bool {
	_, ok := ListenerSettingOf(key)
	return ok && isSecurityKey(key)
}

// RuntimeListenerSecurity resolves the security of a listener added at
// runtime: the static settings (listener-prefixed first, then the
// broker-wide ssl.* and sasl.*, as at start) with the listener's own
// listener.name.<l>.* settings among dynamic (the node's per-broker dynamic
// configs) over them. The JAAS file of the static configuration is the
// fallback of a SASL mechanism without a sasl.jaas.config, as at start.
// bitnami's KAFKA_CLIENT_USERS are not added (they belong to the listeners
// the node started with).
func (c *Config) RuntimeListenerSecurity(name, protocol string, dynamic map[string]string) (ListenerSecurity, error) {
	name = strings.ToUpper(name)
	g := securityLookup{}
	for k, v := range c.OtherValues {
		if isSecurityKey(k) {
			g[k] = givenSetting{value: v, where: "static configuration"}
		}
	}
	for k, v := range dynamic {
		if l, ok := ListenerSettingOf(k); ok && l == name && isSecurityKey(k) {
			g[k] = givenSetting{value: v, where: "dynamic broker config"}
		}
	}
	ls := ListenerSecurity{Listener: name, Protocol: protocol}
	switch protocol {
	case "PLAINTEXT":
	case "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		return ls, fmt.Errorf("%w: listener %s: unknown security protocol %q", ErrInvalid, name, protocol)
	}
	if protocol == "SSL" || protocol == "SASL_SSL" {
		t, err := tlsSettings(g, name, false)
		if err != nil {
			return ls, err
		}
		ls.TLS = t
	}
	if protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL" {
		s, err := saslSettings(g, name, c.jaasFile, "")
		if err != nil {
			return ls, err
		}
		ls.SASL = s
	}
	return ls, nil
}
