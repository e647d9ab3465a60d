package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// OAUTHBEARER (RFC 7628, KIP-255) on the server side, as Kafka's
// OAuthBearerSaslServer.
//
// The client's one message is a GS2 header without channel binding ("n,"
// and an optional "a=<authzid>"), then ^A-separated key=value pairs ending
// in ^A^A: "auth=Bearer <token>" and any SASL extensions (KIP-342), which,
// as with Kafka's validator callback handlers, are accepted and unused:
//
//	n,a=alice,^Aauth=Bearer eyJhbGciOi...^Ahost=broker1^A^A
//
// A valid token authenticates its principal (the sub claim, or the claim
// sasl.oauthbearer.sub.claim.name names) and its expiry bounds the session
// (KIP-368: the session lifetime sent to the client is the shorter of the
// token's remaining life and connections.max.reauth.ms, as Kafka 4.4's
// SaslServerAuthenticator computes it). An invalid token is answered, as
// RFC 7628 says, with a server challenge {"status":"invalid_token"}; the
// client acknowledges with a lone ^A, and the server then fails the
// exchange with SASL_AUTHENTICATION_FAILED carrying that JSON as the
// message. A malformed message fails at once with Kafka's generic message.
//
// Token validation is jwtValidator (signed JWTs against a JWKS) or
// unsecuredValidator (Kafka's unsecured development tokens), in jwt.go.

// errOAuth marks a failed OAUTHBEARER exchange.
var errOAuth = errors.New("broker: OAUTHBEARER")

// oauthToken is a validated token.
type oauthToken struct {
	principal string
	expiry    time.Time
	scope     []string
}

// tokenValidator validates a bearer token at time now.
type tokenValidator interface {
	validate(token string, now time.Time) (oauthToken, error)
}

// oauthExchange is one connection's OAUTHBEARER exchange.
type oauthExchange struct {
	validator tokenValidator
	// errorJSON is the invalid_token challenge sent; the client's ^A
	// acknowledgement then fails the exchange with it.
	errorJSON string
	// reason is why the token of the invalid_token challenge was refused
	// (for the log).
	reason error
	// expiry is the authenticated token's expiry.
	expiry time.Time
}

// The client-first message, as RFC 7628 section 3.1 and Kafka's
// OAuthBearerClientInitialResponse define it: saslname is any 7-bit
// character but ',' and '=', or the escapes =2C and =3D.
var (
	oauthClientFirst = regexp.MustCompile(`^n,(?:a=((?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+))?,\x01((?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01$`)
	// The token is an RFC 6750 b64token.
	oauthAuthValue = regexp.MustCompile(`^(\w+) +([-_~+/.a-zA-Z0-9]+=*)$`)
)

// parseOAuthClientFirst returns the authorization id, the token and the
// extensions of a client-first message.
func parseOAuthClientFirst(msg []byte) (authzid, token string, extensions map[string]string, err error) {
	m := oauthClientFirst.FindSubmatch(msg)
	if m == nil {
		return "", "", nil, fmt.Errorf("%w: invalid client first message", errOAuth)
	}
	authzid = strings.NewReplacer("=2C", ",", "=3D", "=").Replace(string(m[1]))
	extensions = map[string]string{}
	var auth string
	hasAuth := false
	for _, kv := range bytes.Split(bytes.TrimSuffix(m[2], []byte{1}), []byte{1}) {
		if len(kv) == 0 {
			continue
		}
		k, v, _ := strings.Cut(string(kv), "=")
		if k == "auth" {
			auth, hasAuth = v, true
			continue
		}
		extensions[k] = v
	}
	if !hasAuth {
		return "", "", nil, fmt.Errorf("%w: invalid client first message: 'auth' not specified", errOAuth)
	}
	am := oauthAuthValue.FindStringSubmatch(auth)
	if am == nil {
		return "", "", nil, fmt.Errorf("%w: invalid 'auth' value in the client first message", errOAuth)
	}
	if !strings.EqualFold(am[1], "bearer") {
		return "", "", nil, fmt.Errorf("%w: invalid scheme %q in the client first message", errOAuth, am[1])
	}
	return authzid, am[2], extensions, nil
}

// next handles one client message: the server's answer, or the principal
// once authenticated (done).
func (o *oauthExchange) next(msg []byte, now time.Time) (out []byte, principal string, done bool, err error) {
	if len(msg) == 1 && msg[0] == 0x01 && o.errorJSON != "" {
		return nil, "", false, failedAuth{fmt.Errorf("%w: invalid token: %w", errOAuth, o.reason), o.errorJSON}
	}
	o.errorJSON = ""
	authzid, token, _, err := parseOAuthClientFirst(msg)
	if err != nil {
		return nil, "", false, err
	}
	tok, verr := o.validator.validate(token, now)
	if verr != nil {
		// The reason stays in the broker's log (the caller logs a failed
		// exchange); the client learns only the status, as from Kafka.
		o.errorJSON, o.reason = `{"status":"invalid_token"}`, verr
		return []byte(o.errorJSON), "", false, nil
	}
	if authzid != "" && authzid != tok.principal {
		msg := fmt.Sprintf("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", authzid, tok.principal)
		return nil, "", false, failedAuth{fmt.Errorf("%w: %s", errOAuth, msg), msg}
	}
	o.expiry = tok.expiry
	return []byte{}, tok.principal, true, nil
}

// jsonString decodes a JSON string claim.
func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}
