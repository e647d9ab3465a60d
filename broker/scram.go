package broker

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"

	"github.com/samsa-broker/samsa/controller"
)

// SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's
// ScramSaslServer: no channel binding (gs2 header "n,," or "y,,"), no
// authorization id other than the user name, and the credentials come
// from the metadata log (controller.ScramCredential: salt, stored key,
// server key, iterations).

// errScram is a failed SCRAM exchange; the message is for the log, the
// client only learns that authentication failed.
var errScram = errors.New("broker: SCRAM")

func scramHash(mech int8) func() hash.Hash { return controller.ScramHash(mech) }

func hmacSum(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// scramFromPassword computes a credential from a password with a random
// salt, for users given in the configuration.
func scramFromPassword(mech int8, password string, iterations int32) (controller.ScramCredential, error) {
	salt := make([]byte, 16)
	rand.Read(salt)
	salted, err := pbkdf2.Key(scramHash(mech), password, salt, int(iterations), scramHash(mech)().Size())
	if err != nil {
		return controller.ScramCredential{}, err
	}
	return controller.ScramCredentialFromSalted(mech, salt, salted, iterations), nil
}

// TokenCredential is what a SCRAM login with a delegation token needs:
// the SCRAM credential derived from the token's HMAC, the name of the
// token's owner (the principal the connection gets, as User:<name>) and
// the token's expiry, which bounds the session.
type TokenCredential struct {
	Cred   controller.ScramCredential
	Owner  string
	Expiry time.Time
}

// scramServer is one SCRAM exchange on the server side.
type scramServer struct {
	mech   int8
	lookup func(user string, mech int8) (controller.ScramCredential, bool)
	// tokens finds a delegation token's credential by token id (nil:
	// token logins fail).
	tokens func(tokenID string, mech int8) (TokenCredential, bool)

	step int
	// user is the authenticated user: the SCRAM user name, or for a
	// token login the token's owner; token is set for a token login,
	// with the token's expiry.
	user            string
	token           bool
	tokenExpiry     time.Time
	cred            controller.ScramCredential
	gs2Header       string
	clientFirstBare string
	serverFirst     string
	nonce           string
}

// saslName decodes a SCRAM user name ("=2C" is ',' and "=3D" is '=').
func saslName(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("%w: bad escape in user name", errScram)
		}
		i += 2
	}
	return b.String(), nil
}

// next handles one client message and returns the server's answer; done
// is true once the client is authenticated.
func (s *scramServer) next(msg []byte) (out []byte, done bool, err error) {
	switch s.step {
	case 0:
		s.step++
		return s.clientFirst(string(msg))
	case 1:
		s.step++
		return s.clientFinal(string(msg))
	}
	return nil, false, fmt.Errorf("%w: unexpected message after the exchange", errScram)
}

func (s *scramServer) clientFirst(m string) ([]byte, bool, error) {
	// gs2-header: cbind-flag "," [authzid] ","
	parts := strings.SplitN(m, ",", 3)
	if len(parts) != 3 {
		return nil, false, fmt.Errorf("%w: malformed client-first message", errScram)
	}
	switch {
	case parts[0] == "n" || parts[0] == "y":
	case strings.HasPrefix(parts[0], "p="):
		return nil, false, fmt.Errorf("%w: channel binding is not supported", errScram)
	default:
		return nil, false, fmt.Errorf("%w: malformed gs2 header", errScram)
	}
	s.gs2Header = parts[0] + "," + parts[1] + ","
	s.clientFirstBare = parts[2]
	var user, clientNonce string
	tokenAuth := false
	for _, attr := range strings.Split(parts[2], ",") {
		k, v, ok := strings.Cut(attr, "=")
		if !ok {
			return nil, false, fmt.Errorf("%w: malformed attribute %q", errScram, attr)
		}
		switch k {
		case "n":
			name, err := saslName(v)
			if err != nil {
				return nil, false, err
			}
			user = name
		case "r":
			clientNonce = v
		case "m":
			return nil, false, fmt.Errorf("%w: mandatory extension not supported", errScram)
		case "tokenauth":
			// Kafka's SCRAM extension for delegation tokens
			// (ScramExtensions.tokenAuthentication: Boolean.parseBoolean).
			tokenAuth = strings.EqualFold(v, "true")
		default:
			// Other SCRAM extensions are ignored, as Kafka does.
		}
	}
	if user == "" || clientNonce == "" {
		return nil, false, fmt.Errorf("%w: client-first message without user or nonce", errScram)
	}
	if authz, ok := strings.CutPrefix(parts[1], "a="); ok && authz != "" {
		name, err := saslName(authz)
		if err != nil || name != user {
			return nil, false, fmt.Errorf("%w: authorization id %q differs from user %q", errScram, authz, user)
		}
	}
	if tokenAuth {
		// The user name is the token id; the connection becomes the
		// token's owner (Kafka's DelegationTokenCredentialCallback).
		var tc TokenCredential
		ok := s.tokens != nil
		if ok {
			tc, ok = s.tokens(user, s.mech)
		}
		if !ok {
			return nil, false, fmt.Errorf("%w: token authentication failed: invalid token id %q", errScram, user)
		}
		s.user, s.cred, s.token, s.tokenExpiry = tc.Owner, tc.Cred, true, tc.Expiry
	} else {
		cred, ok := s.lookup(user, s.mech)
		if !ok {
			return nil, false, fmt.Errorf("%w: unknown user %q for %s", errScram, user, controller.ScramMechanismName(s.mech))
		}
		s.user, s.cred = user, cred
	}
	cred := s.cred
	var nb [24]byte
	rand.Read(nb[:])
	s.nonce = clientNonce + base64.RawStdEncoding.EncodeToString(nb[:])
	s.serverFirst = fmt.Sprintf("r=%s,s=%s,i=%d", s.nonce, base64.StdEncoding.EncodeToString(cred.Salt), cred.Iterations)
	return []byte(s.serverFirst), false, nil
}

func (s *scramServer) clientFinal(m string) ([]byte, bool, error) {
	i := strings.LastIndex(m, ",p=")
	if i < 0 {
		return nil, false, fmt.Errorf("%w: client-final message without proof", errScram)
	}
	withoutProof, proofB64 := m[:i], m[i+3:]
	var cbind, nonce string
	for _, attr := range strings.Split(withoutProof, ",") {
		k, v, _ := strings.Cut(attr, "=")
		switch k {
		case "c":
			cbind = v
		case "r":
			nonce = v
		}
	}
	if want := base64.StdEncoding.EncodeToString([]byte(s.gs2Header)); cbind != want {
		return nil, false, fmt.Errorf("%w: channel binding %q does not match the gs2 header", errScram, cbind)
	}
	// Kafka's ScramSaslServer only checks that the nonce ends with the
	// one it sent: librdkafka (2.0 at least) sends its client nonce
	// twice, and works with Kafka, so it must work here.
	if !strings.HasSuffix(nonce, s.nonce) {
		return nil, false, fmt.Errorf("%w: nonce mismatch (got %q, sent %q)", errScram, nonce, s.nonce)
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil {
		return nil, false, fmt.Errorf("%w: proof is not base64", errScram)
	}
	h := scramHash(s.mech)
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + withoutProof
	clientSig := hmacSum(h, s.cred.StoredKey, authMessage)
	if len(proof) != len(clientSig) {
		return nil, false, fmt.Errorf("%w: invalid credentials of user %q", errScram, s.user)
	}
	clientKey := make([]byte, len(proof))
	subtle.XORBytes(clientKey, proof, clientSig)
	sum := h()
	sum.Write(clientKey)
	if subtle.ConstantTimeCompare(sum.Sum(nil), s.cred.StoredKey) != 1 {
		return nil, false, fmt.Errorf("%w: invalid credentials of user %q", errScram, s.user)
	}
	serverSig := hmacSum(h, s.cred.ServerKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), true, nil
}
