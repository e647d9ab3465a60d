package broker

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
)

// ListenerSecurity is how a listener secures its connections: TLS (nil for
// PLAINTEXT and SASL_PLAINTEXT) and SASL (nil for PLAINTEXT and SSL).
type ListenerSecurity struct {
	TLS *tls.Config
	// PrincipalRules are ssl.principal.mapping.rules, which turn a client
	// certificate's subject into the principal name.
	PrincipalRules []config.PrincipalMappingRule
	SASL           *SASLServer
	// reloader re-reads the listener's keystore and truststore when they
	// change (security_reload.go); nil without TLS.
	reloader *tlsReloader
}

// tlsHandshakeTimeout bounds a TLS handshake (Kafka has no such setting;
// a client that opens a TLS connection and sends nothing is idle).
const tlsHandshakeTimeout = 30 * time.Second

// listenerSecurity builds the security of each listener that has any,
// reading keystores and truststores. image is the metadata image: scram
// finds SCRAM credentials in it (the users of cfg.Security.ScramUsers come
// after it), and delegation token logins the tokens.
func listenerSecurity(cfg *config.Config, image func() *controller.Image) (map[string]*ListenerSecurity, *securityBuilder, error) {
	b, err := newSecurityBuilder(cfg, image)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]*ListenerSecurity{}
	for name, ls := range cfg.Security.Listeners {
		if !ls.UsesTLS() && !ls.UsesSASL() || !servesListener(cfg, name) {
			continue
		}
		sec, err := b.build(name, ls)
		if err != nil {
			return nil, nil, err
		}
		out[name] = sec
	}
	return out, b, nil
}

// securityBuilder turns a listener's settings into its ListenerSecurity,
// with the credential lookups every SASL listener shares: at start, and
// for a listener added at runtime (listener_runtime.go).
type securityBuilder struct {
	cfg    *config.Config
	lookup func(user string, mech int8) (controller.ScramCredential, bool)
	tokens func(string, int8) (TokenCredential, bool)
}

func newSecurityBuilder(cfg *config.Config, image func() *controller.Image) (*securityBuilder, error) {
	scram := imageScram(image)
	b := &securityBuilder{cfg: cfg}
	if tc := newTokenCredentials(cfg.DelegationTokens.SecretKey, image); tc != nil {
		b.tokens = tc.lookup
	}
	static := map[string]map[int8]controller.ScramCredential{}
	for user, pw := range cfg.Security.ScramUsers {
		static[user] = map[int8]controller.ScramCredential{}
		for _, m := range []int8{controller.ScramSHA256, controller.ScramSHA512} {
			cred, err := scramFromPassword(m, pw, controller.ScramMinIterations)
			if err != nil {
				return nil, fmt.Errorf("broker: SCRAM credential of %s: %w", user, err)
			}
			static[user][m] = cred
		}
	}
	b.lookup = func(user string, mech int8) (controller.ScramCredential, bool) {
		if scram != nil {
			if c, ok := scram(user, mech); ok {
				return c, true
			}
		}
		c, ok := static[user][mech]
		return c, ok
	}
	return b, nil
}

// build reads the listener's keystore and truststore and sets up its SASL
// server; nil for a PLAINTEXT listener.
func (b *securityBuilder) build(name string, ls config.ListenerSecurity) (*ListenerSecurity, error) {
	if !ls.UsesTLS() && !ls.UsesSASL() {
		return nil, nil
	}
	sec := &ListenerSecurity{}
	if ls.UsesTLS() {
		r, err := newTLSReloader(name, ls.TLS)
		if err != nil {
			return nil, err
		}
		sec.reloader, sec.TLS = r, r.config()
		rules, err := config.ParsePrincipalMappingRules(ls.TLS.PrincipalMappingRules)
		if err != nil {
			return nil, fmt.Errorf("%w: listener %s: %w", errTLSConfig, name, err)
		}
		sec.PrincipalRules = rules
	}
	if ls.UsesSASL() {
		sec.SASL = &SASLServer{
			Mechanisms: ls.SASL.Mechanisms,
			PlainUsers: ls.SASL.PlainUsers,
			Scram:      b.lookup,
			Tokens:     b.tokens,
			Reauth:     time.Duration(b.cfg.Security.ReauthMs) * time.Millisecond,
		}
		for mech, ms := range ls.SASL.ReauthMs {
			if sec.SASL.ReauthByMechanism == nil {
				sec.SASL.ReauthByMechanism = map[string]time.Duration{}
			}
			sec.SASL.ReauthByMechanism[mech] = time.Duration(ms) * time.Millisecond
		}
		if ls.SASL.OAuth != nil {
			v, err := newTokenValidator(ls.SASL.OAuth)
			if err != nil {
				return nil, fmt.Errorf("broker: listener %s OAUTHBEARER: %w", name, err)
			}
			sec.SASL.OAuth = v
		}
	}
	return sec, nil
}

// servesListener reports whether this node serves listener (it is in
// listeners): a broker-only node's controller listener is only connected
// to (controller_security.go), with the client TLS of its settings.
func servesListener(cfg *config.Config, listener string) bool {
	for _, l := range cfg.Listeners {
		if l.Name == listener {
			return true
		}
	}
	return false
}

// imageScram finds SCRAM credentials in the latest metadata image.
func imageScram(image func() *controller.Image) func(user string, mech int8) (controller.ScramCredential, bool) {
	return func(user string, mech int8) (controller.ScramCredential, bool) {
		img := image()
		if img == nil {
			return controller.ScramCredential{}, false
		}
		c, ok := img.ScramCredentials[user][mech]
		return c, ok
	}
}

// secure sets up a new connection's security: the TLS server side (the
// connection becomes a *tls.Conn) and the SASL state.
func (c *conn) secure(sec *ListenerSecurity) {
	if sec == nil {
		return
	}
	c.sec = sec
	if sec.TLS != nil && findTLS(c.nc) == nil {
		// (A connection of a TLS controller listener arrives with its
		// handshake done by the quorum listener.)
		c.nc = tls.Server(c.nc, sec.TLS)
	}
	if sec.SASL != nil {
		c.sasl = newSASLConn(sec.SASL)
	}
}

// handshake completes the TLS handshake of a TLS connection and takes the
// principal from the client certificate. A client that does not speak TLS
// fails here and is disconnected.
func (c *conn) handshake() error {
	tc := findTLS(c.nc)
	if tc == nil {
		return nil
	}
	timeout := tlsHandshakeTimeout
	if idle := c.srv.opts.ConnectionsMaxIdle; idle > 0 && idle < timeout {
		timeout = idle
	}
	ctx, cancel := context.WithTimeout(c.srv.ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	p, err := tlsPrincipal(tc.ConnectionState(), c.sec.PrincipalRules)
	if err != nil {
		return fmt.Errorf("TLS principal: %w", err)
	}
	c.tlsPrincipal = p
	return nil
}

// securityProtocol is the security protocol of the connection's listener.
func (c *conn) securityProtocol() string {
	switch {
	case c.sec == nil:
		return "PLAINTEXT"
	case c.sasl != nil && c.sec.TLS != nil:
		return "SASL_SSL"
	case c.sasl != nil:
		return "SASL_PLAINTEXT"
	}
	return "SSL"
}

// principal is the authenticated principal of the connection: the SASL
// user, else the TLS client certificate's, else User:ANONYMOUS.
func (c *conn) principal() string {
	if c.sasl != nil && c.sasl.authenticated() {
		return c.sasl.principal
	}
	if c.tlsPrincipal != "" {
		return c.tlsPrincipal
	}
	return anonymous
}
