package broker

import (
	"bytes"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/wire"
)

// SASL authentication of a connection, as Kafka's SaslServerAuthenticator.
//
// On a SASL_PLAINTEXT or SASL_SSL listener a connection starts
// unauthenticated and may send only ApiVersions and SaslHandshake (17);
// any other request closes it. SaslHandshake names the mechanism: one the
// listener does not enable is answered UNSUPPORTED_SASL_MECHANISM (with the
// enabled list) and the connection is closed. After SaslHandshake v1 the
// client sends its tokens in SaslAuthenticate (36) requests; after v0 it
// sends them as bare size-prefixed frames and gets bare frames back (the
// pre-KIP-152 protocol). A failed authentication is answered
// SASL_AUTHENTICATION_FAILED with a message, then the connection closes.
// Once authenticated, requests go to the dispatch table, where SaslHandshake
// and SaslAuthenticate answer ILLEGAL_SASL_STATE, except that a session
// with an expiry (connections.max.reauth.ms, or the credential's expiry)
// lets a SaslHandshake start a re-authentication (KIP-368), at most one a
// second, as Kafka 4.4's KafkaChannel.maybeBeginServerReauthentication;
// SaslAuthenticate v1+ tells the client its session lifetime. A request
// other than a re-authenticating SaslHandshake arriving after the session
// has expired closes the connection (Kafka's SocketServer Processor: "Disconnecting
// expired channel"), and so does any request other than SaslAuthenticate
// while a re-authentication is under way. A re-authentication keeps the
// principal and the mechanism: another principal is answered
// SASL_AUTHENTICATION_FAILED ("Cannot change principals during
// re-authentication from User.alice: User.bob"), another enabled mechanism
// gets a SaslHandshake answer without error and the connection closes on
// the SaslAuthenticate that follows, without an answer (Kafka's
// REAUTH_BAD_MECHANISM state); a mechanism not enabled closes it on the
// SaslHandshake, without an answer. Kafka answers a request other than
// SaslAuthenticate during a re-authentication with that request's error
// response before closing; samsa closes without one.

// errSASL marks a SASL protocol violation that closes the connection.
var errSASL = errors.New("broker: SASL")

// SASLServer is the SASL configuration of one listener.
type SASLServer struct {
	// Mechanisms are the enabled mechanisms (PLAIN, SCRAM-SHA-256,
	// SCRAM-SHA-512).
	Mechanisms []string
	// PlainUsers are the PLAIN users and their passwords.
	PlainUsers map[string]string
	// Scram finds a user's SCRAM credential.
	Scram func(user string, mech int8) (controller.ScramCredential, bool)
	// Tokens finds a delegation token's SCRAM credential by token id, for
	// SCRAM logins with tokenauth=true (delegation_tokens.go); nil:
	// token logins fail.
	Tokens func(tokenID string, mech int8) (TokenCredential, bool)
	// OAuth validates OAUTHBEARER tokens (oauth.go, jwt.go); set when the
	// mechanism is enabled.
	OAuth tokenValidator
	// Reauth is connections.max.reauth.ms (0: sessions do not expire,
	// unless the credential does: an OAUTHBEARER token's expiry).
	Reauth time.Duration
	// ReauthByMechanism overrides Reauth for a mechanism
	// (listener.name.<l>.<mechanism>.connections.max.reauth.ms).
	ReauthByMechanism map[string]time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	stats saslStats
}

// reauthFor is connections.max.reauth.ms for mechanism.
func (s *SASLServer) reauthFor(mechanism string) time.Duration {
	if d, ok := s.ReauthByMechanism[mechanism]; ok {
		return d
	}
	return s.Reauth
}

// saslStats counts the re-authentications of a listener's connections
// (Kafka's successful-reauthentication-total and
// expired-connections-killed-count).
type saslStats struct {
	reauthentications atomic.Int64
	expiredKilled     atomic.Int64
}

func (s *SASLServer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

type saslPhase int

const (
	saslWaitHandshake saslPhase = iota // ApiVersions or SaslHandshake
	saslAuthenticate                   // SaslAuthenticate requests
	saslRawTokens                      // bare tokens after SaslHandshake v0
	saslAuthenticated
)

// saslConn is the SASL state of one connection. Only the connection's
// process goroutine uses it.
type saslConn struct {
	srv   *SASLServer
	phase saslPhase
	mech  string
	scram *scramServer
	oauth *oauthExchange
	// reauth: the exchange under way re-authenticates an authenticated
	// session (requests keep flowing meanwhile).
	reauth bool
	// lastReauth is when the last re-authentication began: Kafka refuses
	// to begin another within a second (the SaslHandshake then goes to
	// the API, which answers ILLEGAL_SASL_STATE).
	lastReauth time.Time
	// badMechanism: the re-authentication's SaslHandshake named another
	// mechanism; the SaslAuthenticate that follows closes the connection.
	badMechanism error
	principal    string
	// token: the session authenticated with a delegation token.
	token  bool
	expiry time.Time // zero: none
	// lifetimeMs is the session lifetime computed at authentication,
	// sent in SaslAuthenticate v1+.
	lifetimeMs int64
	// closeAfter: the response just produced is the last one; failure
	// says why, for the log.
	closeAfter bool
	failure    error
}

func newSASLConn(srv *SASLServer) *saslConn { return &saslConn{srv: srv} }

// authenticated reports whether the connection may use the broker's APIs.
func (s *saslConn) authenticated() bool { return s.principal != "" }

// tokenAuthenticated reports whether the connection authenticated with a
// delegation token (Kafka's KafkaPrincipal.tokenAuthenticated).
func (s *saslConn) tokenAuthenticated() bool { return s.authenticated() && s.token }

// rawToken handles a frame that is a bare token (after SaslHandshake v0):
// it returns the bare response frame, or an error that closes the
// connection, as Kafka does for a failed v0 authentication.
func (s *saslConn) rawToken(token []byte) ([]byte, error) {
	out, err := s.step(token)
	if err != nil {
		return nil, err
	}
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(out)))
	return append(frame, out...), nil
}

// intercept handles hdr/req when SASL owns it; handled is false for
// requests the dispatch table should answer. A returned error closes the
// connection.
func (s *saslConn) intercept(hdr wire.RequestHeader, req kmsg.Request) (out []byte, handled bool, err error) {
	key := kmsg.Key(hdr.APIKey)
	switch s.phase {
	case saslWaitHandshake:
		switch key {
		case kmsg.ApiVersions:
			return nil, false, nil
		case kmsg.SASLHandshake:
			return s.handshake(hdr, req.(*kmsg.SASLHandshakeRequest)), true, nil
		}
		return nil, true, fmt.Errorf("%w: %s request before SASL authentication", errSASL, kmsg.NameForKey(hdr.APIKey))
	case saslAuthenticate:
		if key == kmsg.SASLAuthenticate {
			if s.badMechanism != nil {
				return nil, true, s.badMechanism
			}
			return s.authenticate(hdr, req.(*kmsg.SASLAuthenticateRequest)), true, nil
		}
		return nil, true, fmt.Errorf("%w: %s request during SASL %s", errSASL, kmsg.NameForKey(hdr.APIKey), s.authenticationText())
	}
	// Authenticated.
	now := s.srv.now()
	if key == kmsg.SASLHandshake && !s.expiry.IsZero() && (s.lastReauth.IsZero() || now.Sub(s.lastReauth) >= time.Second) {
		s.reauth, s.lastReauth = true, now
		hs := req.(*kmsg.SASLHandshakeRequest)
		if !slices.Contains(s.srv.Mechanisms, hs.Mechanism) {
			// Kafka 4.4 closes a re-authentication naming a mechanism
			// the listener does not enable without answering it.
			return nil, true, fmt.Errorf("%w: re-authentication with mechanism %q, which is not enabled", errSASL, hs.Mechanism)
		}
		return s.handshake(hdr, hs), true, nil
	}
	if !s.expiry.IsZero() && now.After(s.expiry) {
		s.srv.stats.expiredKilled.Add(1)
		return nil, true, fmt.Errorf("%w: session of %s expired at %s (connections.max.reauth.ms or the credential's expiry) and the client did not re-authenticate; disconnecting on its %s request",
			errSASL, s.principal, s.expiry.UTC().Format(time.RFC3339Nano), kmsg.NameForKey(hdr.APIKey))
	}
	return nil, false, nil
}

func (s *saslConn) handshake(hdr wire.RequestHeader, req *kmsg.SASLHandshakeRequest) []byte {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = slices.Clone(s.srv.Mechanisms)
	switch {
	case !slices.Contains(s.srv.Mechanisms, req.Mechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		s.closeAfter, s.failure = true, fmt.Errorf("%w: mechanism %q is not enabled", errSASL, req.Mechanism)
	case s.reauth && req.Mechanism != s.mech:
		// A re-authentication keeps the mechanism. Kafka 4.4 answers the
		// handshake and fails the SaslAuthenticate that follows by
		// closing the connection, without an answer.
		s.badMechanism = fmt.Errorf("%w: SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'", errSASL, req.Mechanism, s.mech)
		s.phase = saslAuthenticate
	default:
		s.mech = req.Mechanism
		s.scram, s.oauth = nil, nil
		if m := controller.ScramMechanismByName(req.Mechanism); m != 0 {
			s.scram = &scramServer{mech: m, lookup: s.lookupScram, tokens: s.srv.Tokens}
		}
		if req.Mechanism == "OAUTHBEARER" {
			s.oauth = &oauthExchange{validator: s.srv.OAuth}
		}
		s.phase = saslAuthenticate
		if hdr.APIVersion == 0 {
			s.phase = saslRawTokens
		}
	}
	return wire.AppendResponse(nil, hdr, resp)
}

func (s *saslConn) lookupScram(user string, mech int8) (controller.ScramCredential, bool) {
	if s.srv.Scram == nil {
		return controller.ScramCredential{}, false
	}
	return s.srv.Scram(user, mech)
}

func (s *saslConn) authenticate(hdr wire.RequestHeader, req *kmsg.SASLAuthenticateRequest) []byte {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	out, err := s.step(req.SASLAuthBytes)
	if err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := err.Error()
		var fe failedAuth
		if errors.As(err, &fe) {
			msg = fe.clientMessage
		}
		resp.ErrorMessage = &msg
		s.closeAfter, s.failure = true, err
		return wire.AppendResponse(nil, hdr, resp)
	}
	resp.SASLAuthBytes = out
	// Kafka 4.4 answers a successful step with an empty, not a null,
	// error message (the schema's default).
	resp.ErrorMessage = kmsg.StringPtr("")
	if s.phase == saslAuthenticated {
		resp.SessionLifetimeMillis = s.lifetimeMs
	}
	return wire.AppendResponse(nil, hdr, resp)
}

// failedAuth is an authentication failure with the message Kafka gives the
// client (the error itself, with details, is logged).
type failedAuth struct {
	err           error
	clientMessage string
}

func (f failedAuth) Error() string { return f.err.Error() }
func (f failedAuth) Unwrap() error { return f.err }

// step runs one token of the mechanism; on success of the last step the
// connection is authenticated.
func (s *saslConn) step(token []byte) ([]byte, error) {
	var (
		out  []byte
		user string
		done bool
		err  error
	)
	var credExpiry time.Time
	switch {
	case s.scram != nil:
		out, done, err = s.scram.next(token)
		user = s.scram.user
		if s.scram.token {
			// A token's expiry bounds the session, as an OAUTHBEARER
			// token's does (Kafka's ScramSaslServer negotiates it as the
			// credential lifetime).
			credExpiry = s.scram.tokenExpiry
		}
		if err != nil {
			err = failedAuth{err, "Authentication failed during authentication due to invalid credentials with SASL mechanism " + s.mech}
		}
	case s.oauth != nil:
		if s.oauth.validator == nil {
			return nil, fmt.Errorf("%w: OAUTHBEARER has no token validator", errSASL)
		}
		out, user, done, err = s.oauth.next(token, s.srv.now())
		credExpiry = s.oauth.expiry
		var fe failedAuth
		if err != nil && !errors.As(err, &fe) {
			err = failedAuth{err, "Authentication failed during authentication due to invalid credentials with SASL mechanism " + s.mech}
		}
	case s.mech == "PLAIN":
		user, err = s.plain(token)
		done = err == nil
	default:
		return nil, fmt.Errorf("%w: mechanism %q has no server", errSASL, s.mech)
	}
	if err != nil {
		return nil, err
	}
	if !done {
		return out, nil
	}
	principal := "User:" + user
	if s.reauth && principal != s.principal {
		// Kafka's ReauthInfo.ensurePrincipalUnchanged writes a principal
		// as type.name.
		dotted := func(p string) string { return strings.Replace(p, ":", ".", 1) }
		return nil, failedAuth{fmt.Errorf("%w: re-authentication as %s of a session of %s", errSASL, principal, s.principal),
			"Cannot change principals during re-authentication from " + dotted(s.principal) + ": " + dotted(principal)}
	}
	if s.reauth {
		s.srv.stats.reauthentications.Add(1)
	}
	s.principal, s.phase, s.reauth = principal, saslAuthenticated, false
	s.token = s.scram != nil && s.scram.token
	now := s.srv.now()
	s.expiry = sessionExpiry(now, credExpiry, s.srv.reauthFor(s.mech))
	s.lifetimeMs = 0
	if !s.expiry.IsZero() {
		s.lifetimeMs = max(0, s.expiry.Sub(now).Milliseconds())
	}
	return out, nil
}

// authenticationText names the exchange under way in errors, as Kafka's
// ReauthInfo.authenticationOrReauthenticationText.
func (s *saslConn) authenticationText() string {
	if s.reauth {
		return "re-authentication"
	}
	return "authentication"
}

// plain checks a PLAIN token: authzid NUL authcid NUL password (RFC 4616).
func (s *saslConn) plain(token []byte) (string, error) {
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		msg := fmt.Sprintf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(parts))
		return "", failedAuth{fmt.Errorf("%w: %s", errSASL, msg), msg}
	}
	authz, user, pw := string(parts[0]), string(parts[1]), parts[2]
	fail := func(msg string) (string, error) {
		return "", failedAuth{fmt.Errorf("%w: PLAIN user %q: %s", errSASL, user, msg), "Authentication failed: " + msg}
	}
	switch {
	case user == "":
		return fail("username not specified")
	case len(pw) == 0:
		return fail("password not specified")
	case authz != "" && authz != user:
		return fail("Client requested an authorization id that is different from username")
	}
	want, ok := s.srv.PlainUsers[user]
	if !ok || subtle.ConstantTimeCompare([]byte(want), pw) != 1 {
		return fail("Invalid username or password")
	}
	return user, nil
}

// sessionExpiry is when a session authenticated at now ends (zero: never),
// as Kafka's SaslServerAuthenticator: the credential's expiry (an
// OAUTHBEARER token's exp) bounds it even when connections.max.reauth.ms
// (reauth) is 0, and the shorter of the two wins when both are set.
func sessionExpiry(now, credExpiry time.Time, reauth time.Duration) time.Time {
	switch {
	case credExpiry.IsZero() && reauth <= 0:
		return time.Time{}
	case credExpiry.IsZero():
		return now.Add(reauth)
	case reauth <= 0:
		return credExpiry
	}
	return minTime(credExpiry, now.Add(reauth))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
