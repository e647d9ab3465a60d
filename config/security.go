package config

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Security settings: what samsa implements, and what still fails closed.
//
// samsa serves PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL listeners
// (listener.security.protocol.map), configured with Kafka's ssl.* and sasl.*
// settings, each of which may be given per listener as
// listener.name.<listener>.<setting> (the listener name in lower case); the
// SASL JAAS configuration is per listener and mechanism only,
// listener.name.<listener>.<mechanism>.sasl.jaas.config, as on a Kafka broker.
// Load resolves them into Config.Security (one ListenerSecurity per
// listener); the broker reads keystores and truststores (PEM, PKCS#12 or
// JKS, a wrong ssl.keystore.password, ssl.key.password or
// ssl.truststore.password refusing to start) and builds its TLS and SASL
// servers from that.
//
// A Kafka setting that exists to restrict who may connect or what they may
// do, and that samsa does not implement, would, if only logged as "not
// implemented", leave a broker its operator believes protected open to
// everyone. So such a setting refuses to start, naming the setting and
// where it came from:
//
//   - authorizer.class.name naming another class than Kafka's
//     StandardAuthorizer (authorizer.go);
//   - a SASL listener whose enabled mechanisms include one samsa does not
//     implement (GSSAPI, which is Kafka's default), and OAUTHBEARER without
//     an explicitly chosen token validator (oauth.go);
//   - ssl.engine.factory.class (a custom TLS engine);
//   - ssl.* or sasl.* settings of a listener whose protocol does not use
//     them (listener.name.plaintext.ssl.client.auth=required on a PLAINTEXT
//     listener is ignored by Kafka; samsa refuses it rather than serve the
//     listener without the protection it asks for), and the broker-wide
//     ssl.client.auth=required or requested when no listener uses TLS;
//   - a SASL controller listener whose sasl.mechanism.controller.protocol
//     is GSSAPI (Kafka's default) or OAUTHBEARER, or whose JAAS
//     configuration has no username and password for it: controllers and
//     brokers could not log in to it (Kafka 4.4 fails the same way, at
//     start or on its first connection).
//
// Changing security settings at runtime (AlterConfigs of a BROKER resource)
// is refused with INVALID_CONFIG: samsa reads them at start only.

// Security is the resolved security configuration of the broker.
type Security struct {
	// Listeners holds the security of each listener of listeners, by name.
	Listeners map[string]ListenerSecurity
	// InterBrokerMechanism is sasl.mechanism.inter.broker.protocol, the
	// mechanism this broker uses on a SASL inter-broker listener.
	InterBrokerMechanism string
	// ControllerMechanism is sasl.mechanism.controller.protocol, the
	// mechanism this node uses on a SASL controller listener (its Raft
	// connections and its Kafka requests to the controllers).
	ControllerMechanism string
	// ReauthMs is connections.max.reauth.ms: 0 never asks clients to
	// re-authenticate (KIP-368).
	ReauthMs int64
	// ScramUsers are SCRAM users given in the environment (bitnami's
	// KAFKA_CLIENT_USERS / KAFKA_CLIENT_PASSWORDS and
	// KAFKA_INTER_BROKER_USER / KAFKA_INTER_BROKER_PASSWORD), valid for
	// every SCRAM mechanism in addition to the credentials stored in the
	// metadata log (the bitnami image adds them at storage format time).
	ScramUsers map[string]string
}

// ListenerSecurity is the security of one listener.
type ListenerSecurity struct {
	Listener string
	// Protocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
	Protocol string
	// TLS is set for SSL and SASL_SSL.
	TLS *TLSSettings
	// SASL is set for SASL_PLAINTEXT and SASL_SSL.
	SASL *SASLSettings
}

// TLSSettings are a listener's ssl.* settings, as given (files are read by
// the broker). Empty strings are unset.
type TLSSettings struct {
	KeystoreType             string // PEM, PKCS12 or JKS; "" sniffs the file
	KeystoreLocation         string
	KeystorePassword         string
	KeyPassword              string
	KeystoreCertificateChain string // inline PEM
	KeystoreKey              string // inline PEM
	TruststoreType           string
	TruststoreLocation       string
	TruststorePassword       string
	TruststoreCertificates   string // inline PEM
	// ClientAuth is ssl.client.auth: none, requested or required.
	ClientAuth string
	// EnabledProtocols is ssl.enabled.protocols (TLSv1.2, TLSv1.3, ...).
	EnabledProtocols []string
	// CipherSuites is ssl.cipher.suites (IANA names, as Java uses); empty
	// means the defaults.
	CipherSuites []string
	// PrincipalMappingRules is ssl.principal.mapping.rules.
	PrincipalMappingRules string
	// AllowDNChanges and AllowSANChanges are ssl.allow.dn.changes and
	// ssl.allow.san.changes: whether a reloaded keystore may carry a
	// certificate with another subject or other alternative names.
	AllowDNChanges  bool
	AllowSANChanges bool
	// EndpointIdentification is ssl.endpoint.identification.algorithm
	// ("https" checks the server's host name; "" does not), used when this
	// broker connects to the listener.
	EndpointIdentification string
}

// SASLSettings are a listener's SASL settings.
type SASLSettings struct {
	// Mechanisms are the enabled mechanisms, upper case
	// (sasl.enabled.mechanisms).
	Mechanisms []string
	// PlainUsers are the PLAIN users and passwords: the user_<name>
	// options of the listener's PlainLoginModule, and bitnami's users.
	PlainUsers map[string]string
	// OAuth is set when OAUTHBEARER is enabled (oauth.go).
	OAuth *OAuthSettings
	// Credentials are the username and password options of the
	// listener's JAAS login module for each mechanism: what this broker
	// sends when it connects to the listener as a client.
	Credentials map[string]SASLCredential
	// ReauthMs overrides Security.ReauthMs (connections.max.reauth.ms)
	// for a mechanism: listener.name.<l>.<mechanism>.connections.max.reauth.ms,
	// else listener.name.<l>.connections.max.reauth.ms, as Kafka's
	// SaslChannelBuilder looks them up.
	ReauthMs map[string]int64
}

// SASLCredential is a username and password.
type SASLCredential struct {
	Username string
	Password string
}

// UsesTLS reports whether the listener speaks TLS.
func (l ListenerSecurity) UsesTLS() bool { return l.TLS != nil }

// UsesSASL reports whether the listener authenticates with SASL.
func (l ListenerSecurity) UsesSASL() bool { return l.SASL != nil }

// Mechanisms samsa implements.
var implementedMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}

// tlsKeys are the ssl.* settings samsa implements (and those it accepts
// because they need nothing: the JVM's key and trust manager algorithms).
var tlsKeys = map[string]bool{
	"ssl.keystore.type": true, "ssl.keystore.location": true, "ssl.keystore.password": true,
	"ssl.key.password": true, "ssl.keystore.certificate.chain": true, "ssl.keystore.key": true,
	"ssl.truststore.type": true, "ssl.truststore.location": true, "ssl.truststore.password": true,
	"ssl.truststore.certificates": true, "ssl.client.auth": true, "ssl.enabled.protocols": true,
	"ssl.protocol": true, "ssl.cipher.suites": true, "ssl.principal.mapping.rules": true,
	"ssl.endpoint.identification.algorithm": true, "ssl.keymanager.algorithm": true,
	"ssl.trustmanager.algorithm": true, "ssl.secure.random.implementation": true,
	"ssl.provider": true, "ssl.allow.dn.changes": true, "ssl.allow.san.changes": true,
}

// saslKeys are the sasl.* settings samsa implements, besides the JAAS
// configuration (listener.name.<l>.<mechanism>.sasl.jaas.config).
var saslKeys = map[string]bool{
	"sasl.enabled.mechanisms": true, "sasl.mechanism.inter.broker.protocol": true,
	"sasl.mechanism.controller.protocol": true,
}

// isSecurityKey reports whether key is a security setting samsa
// implements: it is collected for Security instead of being warned about
// as not implemented.
func isSecurityKey(key string) bool {
	switch key {
	case "security.inter.broker.protocol", "connections.max.reauth.ms":
		return true
	}
	if tlsKeys[key] || saslKeys[key] || oauthKeys[key] {
		return true
	}
	rest, ok := strings.CutPrefix(key, "listener.name.")
	if !ok {
		return false
	}
	_, setting, ok := strings.Cut(rest, ".")
	if !ok {
		return false
	}
	if tlsKeys[setting] || saslKeys[setting] || oauthKeys[setting] || setting == "connections.max.reauth.ms" {
		return true
	}
	mech, after, ok := strings.Cut(setting, ".")
	if ok && after == "connections.max.reauth.ms" {
		return true
	}
	if ok && mech == "oauthbearer" && (oauthKeys[after] || after == "sasl.server.callback.handler.class") {
		return true
	}
	return ok && after == "sasl.jaas.config" && mech != ""
}

// securityRefusal returns why value of key, an ignored (not implemented)
// setting, must refuse to start, or "" when it may be ignored.
func securityRefusal(key, value string) string {
	v := strings.TrimSpace(value)
	setting := key
	if rest, ok := strings.CutPrefix(key, "listener.name."); ok {
		if _, s, ok := strings.Cut(rest, "."); ok {
			setting = s
		}
	}
	if setting == "ssl.engine.factory.class" && v != "" {
		return "a custom TLS engine cannot be loaded by samsa"
	}
	return ""
}

// SecurityRefusal returns why setting key to value at runtime must be
// refused (a non-empty reason), or "". AlterConfigs of BROKER resources
// uses it: samsa reads its security settings at start only (but for a TLS
// listener's keystore and truststore, tls_dynamic.go, which the caller
// handles before), so a change is refused rather than stored and silently
// not applied.
func SecurityRefusal(key, value string, listeners []Listener) string {
	if isSecurityKey(key) || strings.HasPrefix(key, "ssl.") || strings.HasPrefix(key, "sasl.") ||
		strings.HasPrefix(key, "listener.name.") && (strings.Contains(key, ".ssl.") || strings.Contains(key, ".sasl.")) {
		return "samsa reads listener security settings at start only; set it in the configuration and restart"
	}
	return securityRefusal(key, value)
}

// checkSecurity refuses the first (by name) setting of given, the ignored
// settings with their values and origins, that would restrict access.
func checkSecurity(given map[string]givenSetting) error {
	for _, k := range mapKeys(given) {
		g := given[k]
		if why := securityRefusal(k, g.value); why != "" {
			return refuse(k, g, why)
		}
	}
	return nil
}

func refuse(k string, g givenSetting, why string) error {
	return fmt.Errorf("%w: %s=%q (%s): %s; refusing to start rather than serve clients without the protection asked for",
		ErrUnsupported, k, redact(k, g.value), g.where, why)
}

// redact hides the value of a setting that holds a secret (a password, a
// private key, a JAAS configuration with passwords) in messages.
func redact(key, value string) string {
	for _, secret := range []string{"password", "jaas.config", "keystore.key"} {
		if strings.Contains(key, secret) {
			return "[hidden]"
		}
	}
	return value
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// givenSetting is the value of a setting and where it came from.
type givenSetting struct {
	value string
	where string
}

// bitnamiUsers are the bitnami image's SASL user variables.
type bitnamiUsers struct {
	clientUsers, clientPasswords   string
	clientListener                 string
	interBrokerUser, interBrokerPw string
	controllerUser, controllerPw   string
	// jaasFile is the JAAS file named by -Djava.security.auth.login.config
	// in KAFKA_OPTS, by section (read by Load), and where it came from.
	jaasFile     map[string][]JAASEntry
	jaasFilePath string
}

func bitnamiFromEnv(environ []string) bitnamiUsers {
	var b bitnamiUsers
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		switch name {
		case "KAFKA_CLIENT_USERS":
			b.clientUsers = value
		case "KAFKA_CLIENT_PASSWORDS":
			b.clientPasswords = value
		case "KAFKA_CLIENT_LISTENER_NAME":
			b.clientListener = strings.ToUpper(strings.TrimSpace(value))
		case "KAFKA_INTER_BROKER_USER":
			b.interBrokerUser = value
		case "KAFKA_INTER_BROKER_PASSWORD":
			b.interBrokerPw = value
		case "KAFKA_CONTROLLER_USER":
			b.controllerUser = value
		case "KAFKA_CONTROLLER_PASSWORD":
			b.controllerPw = value
		case "KAFKA_OPTS":
			for _, f := range strings.Fields(value) {
				if p, ok := strings.CutPrefix(f, "-Djava.security.auth.login.config="); ok {
					b.jaasFilePath = strings.Trim(p, `"'`)
				}
			}
		}
	}
	return b
}

// securityLookup finds security settings, listener-prefixed first.
type securityLookup map[string]givenSetting

// get returns listener.name.<listener>.<key> if given, else <key>.
func (g securityLookup) get(listener, key string) (string, givenSetting, bool) {
	pk := "listener.name." + strings.ToLower(listener) + "." + key
	if v, ok := g[pk]; ok {
		return pk, v, true
	}
	v, ok := g[key]
	return key, v, ok
}

func (g securityLookup) str(listener, key, dflt string) string {
	if _, v, ok := g.get(listener, key); ok {
		return strings.TrimSpace(v.value)
	}
	return dflt
}

// buildSecurity resolves the security settings given (implemented ones
// only) into c.Security and checks them against the listeners.
func buildSecurity(c *Config, given map[string]givenSetting, bit bitnamiUsers) error {
	g := securityLookup(given)
	sec := Security{Listeners: map[string]ListenerSecurity{}}
	if v, ok := given["connections.max.reauth.ms"]; ok {
		n, err := parseReauthMs("connections.max.reauth.ms", v)
		if err != nil {
			return err
		}
		sec.ReauthMs = n
	}
	sec.InterBrokerMechanism = strings.ToUpper(g.str("", "sasl.mechanism.inter.broker.protocol", "GSSAPI"))
	sec.ControllerMechanism = strings.ToUpper(g.str("", "sasl.mechanism.controller.protocol", "GSSAPI"))
	names := make([]string, 0, len(c.Listeners)+1)
	for _, l := range c.Listeners {
		names = append(names, l.Name)
	}
	if len(c.ControllerListenerNames) > 0 && !slices.Contains(names, c.ControllerListenerNames[0]) {
		// A broker-only node has no controller listener of its own but
		// connects to the controllers' with its settings, as Kafka's
		// RaftManager and NodeToControllerChannelManager do.
		// (A PLAINTEXT one is left out, as before: its settings stay
		// those of a listener this node does not have.)
		if p, ok := c.ListenerSecurityProtocolMap[c.ControllerListenerNames[0]]; ok && p != "PLAINTEXT" {
			names = append(names, c.ControllerListenerNames[0])
		}
	}
	for i, name := range names {
		clientMech := ""
		if i >= len(c.Listeners) {
			clientMech = sec.ControllerMechanism
		}
		proto := c.ListenerSecurityProtocolMap[name]
		if clientMech != "" && proto != "PLAINTEXT" && c.HasRole("controller") {
			// Kafka refuses a controller whose controller listener is not
			// in listeners; samsa binds a PLAINTEXT one from the voter
			// entry, but serves TLS and SASL only on a listed one.
			return fmt.Errorf("%w: the controller listener %s is %s but not in listeners; add it (e.g. %s://:9093)", ErrInvalid, name, proto, name)
		}
		ls := ListenerSecurity{Listener: name, Protocol: proto}
		if proto == "SSL" || proto == "SASL_SSL" {
			t, err := tlsSettings(g, name, clientMech != "" || i >= len(c.Listeners))
			if err != nil {
				return err
			}
			ls.TLS = t
		}
		if proto == "SASL_PLAINTEXT" || proto == "SASL_SSL" {
			s, err := saslSettings(g, name, bit.jaasFile, clientMech)
			if err != nil {
				return err
			}
			ls.SASL = s
		}
		sec.Listeners[name] = ls
	}
	if err := refuseUnused(c, given, sec); err != nil {
		return err
	}
	if err := applyBitnami(c, &sec, bit); err != nil {
		return err
	}
	if ib, ok := sec.Listeners[c.InterBrokerListenerName]; ok && ib.UsesSASL() && c.HasRole("broker") {
		if sec.InterBrokerMechanism == "OAUTHBEARER" {
			return fmt.Errorf("%w: sasl.mechanism.inter.broker.protocol=OAUTHBEARER: samsa brokers cannot fetch tokens to log in to each other; use PLAIN or SCRAM on the inter-broker listener %s",
				ErrUnsupported, ib.Listener)
		}
		if !slices.Contains(ib.SASL.Mechanisms, sec.InterBrokerMechanism) {
			return fmt.Errorf("%w: sasl.mechanism.inter.broker.protocol %s is not enabled on the inter-broker listener %s (enabled: %s)",
				ErrInvalid, sec.InterBrokerMechanism, ib.Listener, strings.Join(ib.SASL.Mechanisms, ","))
		}
	}
	if err := checkControllerSASL(c, sec, given); err != nil {
		return err
	}
	c.Security = sec
	return nil
}

// checkControllerSASL refuses a SASL controller listener this node could
// not log in to: sasl.mechanism.controller.protocol must be one samsa's
// nodes log in with (PLAIN or SCRAM; Kafka's default GSSAPI needs Kerberos,
// which samsa does not implement), enabled on the listener (a controller
// serves it), with a username and password in the listener's JAAS
// configuration for that mechanism. Kafka 4.4 checks none of this at start
// and fails on the first connection instead (GSSAPI without a Kerberos
// login: at start).
func checkControllerSASL(c *Config, sec Security, given map[string]givenSetting) error {
	if len(c.ControllerListenerNames) == 0 {
		return nil
	}
	name := c.ControllerListenerNames[0]
	ls, ok := sec.Listeners[name]
	if !ok || !ls.UsesSASL() {
		return nil
	}
	mech := sec.ControllerMechanism
	where := "Kafka's default"
	if g, ok := given["sasl.mechanism.controller.protocol"]; ok {
		where = g.where
	}
	switch mech {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		return fmt.Errorf("%w: sasl.mechanism.controller.protocol=%s (%s): the controller listener %s is %s, and samsa's controllers and brokers log in to it with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 only; set sasl.mechanism.controller.protocol (KAFKA_SASL_MECHANISM_CONTROLLER_PROTOCOL) to one of them",
			ErrUnsupported, mech, where, name, ls.Protocol)
	}
	if c.HasRole("controller") && !slices.Contains(ls.SASL.Mechanisms, mech) {
		return fmt.Errorf("%w: sasl.mechanism.controller.protocol %s is not enabled on the controller listener %s (enabled: %s); set listener.name.%s.sasl.enabled.mechanisms",
			ErrInvalid, mech, name, strings.Join(ls.SASL.Mechanisms, ","), strings.ToLower(name))
	}
	if cred, ok := ls.SASL.Credentials[mech]; !ok || cred.Username == "" {
		return fmt.Errorf("%w: the controller listener %s uses SASL %s but has no username and password for it: set listener.name.%s.%s.sasl.jaas.config with username and password options (what this node logs in to the controllers with)",
			ErrInvalid, name, mech, strings.ToLower(name), strings.ToLower(mech))
	}
	return nil
}

// tlsSettings resolves the ssl.* settings of listener. clientOnly: a
// listener this node only connects to (a broker-only node's controller
// listener), which needs no keystore (Kafka's client TLS: a client
// certificate only when the servers ask for one).
func tlsSettings(g securityLookup, listener string, clientOnly bool) (*TLSSettings, error) {
	t := &TLSSettings{
		KeystoreType:             strings.ToUpper(g.str(listener, "ssl.keystore.type", "")),
		KeystoreLocation:         g.str(listener, "ssl.keystore.location", ""),
		KeystorePassword:         g.str(listener, "ssl.keystore.password", ""),
		KeyPassword:              g.str(listener, "ssl.key.password", ""),
		KeystoreCertificateChain: g.str(listener, "ssl.keystore.certificate.chain", ""),
		KeystoreKey:              g.str(listener, "ssl.keystore.key", ""),
		TruststoreType:           strings.ToUpper(g.str(listener, "ssl.truststore.type", "")),
		TruststoreLocation:       g.str(listener, "ssl.truststore.location", ""),
		TruststorePassword:       g.str(listener, "ssl.truststore.password", ""),
		TruststoreCertificates:   g.str(listener, "ssl.truststore.certificates", ""),
		ClientAuth:               strings.ToLower(g.str(listener, "ssl.client.auth", "none")),
		EnabledProtocols:         parseList(g.str(listener, "ssl.enabled.protocols", "TLSv1.2,TLSv1.3")),
		CipherSuites:             parseList(g.str(listener, "ssl.cipher.suites", "")),
		PrincipalMappingRules:    g.str(listener, "ssl.principal.mapping.rules", "DEFAULT"),
		EndpointIdentification:   strings.ToLower(g.str(listener, "ssl.endpoint.identification.algorithm", "https")),
		AllowDNChanges:           strings.EqualFold(g.str(listener, "ssl.allow.dn.changes", "false"), "true"),
		AllowSANChanges:          strings.EqualFold(g.str(listener, "ssl.allow.san.changes", "false"), "true"),
	}
	switch t.ClientAuth {
	case "none", "requested", "required":
	default:
		k, v, _ := g.get(listener, "ssl.client.auth")
		return nil, fmt.Errorf("%w for %s=%q (%s): want none, requested or required", ErrInvalidValue, k, v.value, v.where)
	}
	for _, p := range t.EnabledProtocols {
		switch p {
		case "TLSv1.2", "TLSv1.3", "TLSv1.1", "TLSv1":
		default:
			k, v, _ := g.get(listener, "ssl.enabled.protocols")
			return nil, fmt.Errorf("%w for %s=%q (%s): unknown protocol %s (want TLSv1.2, TLSv1.3)", ErrInvalidValue, k, v.value, v.where, p)
		}
	}
	if t.KeystoreLocation == "" && t.KeystoreCertificateChain == "" && !clientOnly {
		return nil, fmt.Errorf("%w: listener %s uses TLS but has no keystore: set ssl.keystore.location (or listener.name.%s.ssl.keystore.location), or ssl.keystore.certificate.chain and ssl.keystore.key",
			ErrInvalid, listener, strings.ToLower(listener))
	}
	if (t.KeystoreCertificateChain == "") != (t.KeystoreKey == "") {
		return nil, fmt.Errorf("%w: listener %s: ssl.keystore.certificate.chain and ssl.keystore.key must be given together", ErrInvalid, listener)
	}
	if _, err := ParsePrincipalMappingRules(t.PrincipalMappingRules); err != nil {
		k, v, _ := g.get(listener, "ssl.principal.mapping.rules")
		return nil, fmt.Errorf("%w for %s=%q (%s): %v", ErrInvalidValue, k, v.value, v.where, err)
	}
	return t, nil
}

// saslSettings resolves the SASL settings of listener. clientMech is set
// for a listener this node only connects to (a broker-only node's
// controller listener): its mechanisms are that one, when samsa implements
// it (checkControllerSASL refuses the others), not sasl.enabled.mechanisms.
func saslSettings(g securityLookup, listener string, jaasFile map[string][]JAASEntry, clientMech string) (*SASLSettings, error) {
	s := &SASLSettings{PlainUsers: map[string]string{}, Credentials: map[string]SASLCredential{}}
	if clientMech != "" {
		if slices.Contains(implementedMechanisms, clientMech) && clientMech != "OAUTHBEARER" {
			s.Mechanisms = []string{clientMech}
		}
	} else {
		for _, m := range parseList(g.str(listener, "sasl.enabled.mechanisms", "GSSAPI")) {
			s.Mechanisms = append(s.Mechanisms, strings.ToUpper(m))
		}
	}
	k, v, _ := g.get(listener, "sasl.enabled.mechanisms")
	if len(s.Mechanisms) == 0 && clientMech == "" {
		return nil, fmt.Errorf("%w: listener %s uses SASL but sasl.enabled.mechanisms is empty", ErrInvalid, listener)
	}
	for _, m := range s.Mechanisms {
		if !slices.Contains(implementedMechanisms, m) {
			if v.where == "" {
				v.where = "Kafka's default"
			}
			return nil, refuse(k, givenSetting{value: strings.Join(s.Mechanisms, ","), where: v.where},
				fmt.Sprintf("SASL listener %s enables mechanism %s, which samsa does not implement (it implements %s)", listener, m, strings.Join(implementedMechanisms, ", ")))
		}
	}
	for _, m := range s.Mechanisms {
		want := ScramLoginModule
		switch m {
		case "PLAIN":
			want = PlainLoginModule
		case "OAUTHBEARER":
			want = OAuthBearerLoginModule
		}
		jk := "listener.name." + strings.ToLower(listener) + "." + strings.ToLower(m) + ".sasl.jaas.config"
		gv, ok := g[jk]
		var entries []JAASEntry
		if ok {
			var err error
			if entries, err = ParseJAAS(gv.value); err != nil {
				return nil, fmt.Errorf("%w for %s (%s): %v", ErrInvalidValue, jk, gv.where, err)
			}
		} else {
			// Kafka's fallback: the static JAAS file's section of the
			// listener, else KafkaServer; the module of the mechanism.
			section, ok := jaasFile[strings.ToLower(listener)+".KafkaServer"]
			if !ok {
				section = jaasFile["KafkaServer"]
			}
			for _, e := range section {
				if e.Module == want {
					entries = append(entries, e)
				}
			}
		}
		for _, e := range entries {
			if e.Module != want {
				return nil, fmt.Errorf("%w for %s (%s): login module %s does not serve %s (want %s)", ErrInvalidValue, jk, gv.where, e.Module, m, want)
			}
			if u, ok := e.Options["username"]; ok && m != "OAUTHBEARER" {
				s.Credentials[m] = SASLCredential{Username: u, Password: e.Options["password"]}
			}
			if m == "PLAIN" {
				for opt, pw := range e.Options {
					if name, ok := strings.CutPrefix(opt, "user_"); ok {
						s.PlainUsers[name] = pw
					}
				}
			}
		}
		if m == "OAUTHBEARER" {
			o, err := oauthSettings(g, listener, entries)
			if err != nil {
				return nil, err
			}
			s.OAuth = o
		}
		prefix := "listener.name." + strings.ToLower(listener) + "."
		for _, k := range []string{prefix + strings.ToLower(m) + ".connections.max.reauth.ms", prefix + "connections.max.reauth.ms"} {
			v, ok := g[k]
			if !ok {
				continue
			}
			n, err := parseReauthMs(k, v)
			if err != nil {
				return nil, err
			}
			if s.ReauthMs == nil {
				s.ReauthMs = map[string]int64{}
			}
			s.ReauthMs[m] = n
			break
		}
	}
	return s, nil
}

// parseReauthMs parses a connections.max.reauth.ms setting (Kafka's type
// long; a negative value behaves as 0, no re-authentication).
func parseReauthMs(key string, v givenSetting) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v.value), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w for %s=%q (%s): want a number", ErrInvalidValue, key, v.value, v.where)
	}
	return max(n, 0), nil
}

// refuseUnused refuses ssl.* and sasl.* settings of listeners that do not
// use them, and the broker-wide ssl.client.auth asking for client
// certificates when no listener speaks TLS.
func refuseUnused(c *Config, given map[string]givenSetting, sec Security) error {
	anyTLS := false
	for _, ls := range sec.Listeners {
		anyTLS = anyTLS || ls.UsesTLS()
	}
	for _, k := range mapKeys(given) {
		g := given[k]
		lower := strings.ToLower(strings.TrimSpace(g.value))
		if k == "ssl.client.auth" && !anyTLS && (lower == "required" || lower == "requested") {
			return refuse(k, g, "TLS client authentication would restrict who may connect, but no listener uses TLS (SSL or SASL_SSL)")
		}
		rest, ok := strings.CutPrefix(k, "listener.name.")
		if !ok {
			continue
		}
		name, setting, _ := strings.Cut(rest, ".")
		ls, ok := sec.Listeners[strings.ToUpper(name)]
		if !ok {
			continue // not a configured listener: ignored, as Kafka does
		}
		if _, after, ok := strings.Cut(setting, "."); ok && strings.HasPrefix(after, "sasl.") {
			setting = after
		}
		switch {
		case strings.HasPrefix(setting, "ssl.") && !ls.UsesTLS():
			return refuse(k, g, fmt.Sprintf("listener %s is %s, which does not use TLS", ls.Listener, ls.Protocol))
		case strings.HasPrefix(setting, "sasl.") && !ls.UsesSASL():
			return refuse(k, g, fmt.Sprintf("listener %s is %s, which does not use SASL", ls.Listener, ls.Protocol))
		}
	}
	return nil
}

// applyBitnami adds the bitnami image's users: KAFKA_CLIENT_USERS and
// KAFKA_CLIENT_PASSWORDS (comma-separated, paired by position) are PLAIN
// users of the client SASL listeners (KAFKA_CLIENT_LISTENER_NAME, or every
// SASL listener but the inter-broker one) and SCRAM users;
// KAFKA_INTER_BROKER_USER / _PASSWORD are the credentials of the
// inter-broker listener, for the broker's own connections and as a user.
func applyBitnami(c *Config, sec *Security, b bitnamiUsers) error {
	users, pws := parseList(b.clientUsers), parseList(b.clientPasswords)
	if len(users) != len(pws) {
		return fmt.Errorf("%w: KAFKA_CLIENT_USERS has %d users but KAFKA_CLIENT_PASSWORDS has %d passwords", ErrInvalid, len(users), len(pws))
	}
	add := func(ls ListenerSecurity, u, p string) {
		ls.SASL.PlainUsers[u] = p
		if sec.ScramUsers == nil {
			sec.ScramUsers = map[string]string{}
		}
		sec.ScramUsers[u] = p
	}
	for name, ls := range sec.Listeners {
		if !ls.UsesSASL() {
			continue
		}
		controllerListener := len(c.ControllerListenerNames) > 0 && name == c.ControllerListenerNames[0]
		client := name != c.InterBrokerListenerName && !controllerListener
		if b.clientListener != "" {
			client = name == b.clientListener
		}
		if client {
			for i, u := range users {
				add(ls, u, pws[i])
			}
		}
		if controllerListener && b.controllerUser != "" {
			// bitnami's KAFKA_CONTROLLER_USER / _PASSWORD: the user
			// controllers and brokers log in to the controller listener
			// as.
			add(ls, b.controllerUser, b.controllerPw)
			for _, m := range ls.SASL.Mechanisms {
				if _, ok := ls.SASL.Credentials[m]; !ok {
					ls.SASL.Credentials[m] = SASLCredential{Username: b.controllerUser, Password: b.controllerPw}
				}
			}
		}
		if name == c.InterBrokerListenerName && b.interBrokerUser != "" {
			add(ls, b.interBrokerUser, b.interBrokerPw)
			for _, m := range ls.SASL.Mechanisms {
				if _, ok := ls.SASL.Credentials[m]; !ok {
					ls.SASL.Credentials[m] = SASLCredential{Username: b.interBrokerUser, Password: b.interBrokerPw}
				}
			}
		}
	}
	return nil
}

// unusedSecurityKeys returns the given security settings that no listener
// uses (TLS settings without a TLS listener, settings of listeners that are
// not configured), sorted: Kafka ignores them, and so does samsa, with a
// warning.
func unusedSecurityKeys(given map[string]givenSetting, sec Security) []string {
	anyTLS, anySASL := false, false
	for _, ls := range sec.Listeners {
		anyTLS = anyTLS || ls.UsesTLS()
		anySASL = anySASL || ls.UsesSASL()
	}
	var out []string
	for _, k := range mapKeys(given) {
		switch {
		case k == "security.inter.broker.protocol" || k == "connections.max.reauth.ms":
		case strings.HasPrefix(k, "listener.name."):
			name, _, _ := strings.Cut(strings.TrimPrefix(k, "listener.name."), ".")
			if _, ok := sec.Listeners[strings.ToUpper(name)]; !ok {
				out = append(out, k)
			}
		case strings.HasPrefix(k, "ssl.") && !anyTLS, strings.HasPrefix(k, "sasl.") && !anySASL:
			out = append(out, k)
		}
	}
	return out
}
