package broker

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testSigner signs JWTs with one key and publishes it as a JWK.
type testSigner struct {
	alg string
	kid string
	key crypto.Signer
}

func newTestSigner(t testing.TB, alg, kid string) testSigner {
	t.Helper()
	var (
		k   crypto.Signer
		err error
	)
	switch alg[:2] {
	case "RS", "PS":
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES":
		curve := map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()}[alg]
		k, err = ecdsa.GenerateKey(curve, rand.Reader)
	case "Ed":
		_, k, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	return testSigner{alg: alg, kid: kid, key: k}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// jwk returns the signer's public key as a JWK.
func (s testSigner) jwk() map[string]any {
	m := map[string]any{"kid": s.kid, "use": "sig", "alg": s.alg}
	switch k := s.key.Public().(type) {
	case *rsa.PublicKey:
		m["kty"], m["n"], m["e"] = "RSA", b64(k.N.Bytes()), b64([]byte{1, 0, 1})
	case *ecdsa.PublicKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		pt, _ := k.Bytes()
		m["kty"], m["crv"], m["x"], m["y"] = "EC", k.Curve.Params().Name, b64(pt[1:1+size]), b64(pt[1+size:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", b64(k)
		m["alg"] = "EdDSA"
	}
	return m
}

// jwksJSON is a key set of the given signers.
func jwksJSON(signers ...testSigner) []byte {
	var keys []map[string]any
	for _, s := range signers {
		keys = append(keys, s.jwk())
	}
	b, _ := json.Marshal(map[string]any{"keys": keys})
	return b
}

// sign returns a compact JWS of claims.
func (s testSigner) sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	hb, _ := json.Marshal(map[string]any{"alg": s.alg, "kid": s.kid, "typ": "JWT"})
	cb, _ := json.Marshal(claims)
	input := b64(hb) + "." + b64(cb)
	var sig []byte
	var err error
	switch k := s.key.(type) {
	case ed25519.PrivateKey:
		sig = ed25519.Sign(k, []byte(input))
	default:
		h := jwsHashes[s.alg]
		hh := h.New()
		hh.Write([]byte(input))
		digest := hh.Sum(nil)
		switch s.alg[:2] {
		case "RS":
			sig, err = rsa.SignPKCS1v15(rand.Reader, k.(*rsa.PrivateKey), h, digest)
		case "PS":
			sig, err = rsa.SignPSS(rand.Reader, k.(*rsa.PrivateKey), h, digest, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		case "ES":
			ek := k.(*ecdsa.PrivateKey)
			r, ss, e := ecdsa.Sign(rand.Reader, ek, digest)
			size := (ek.Curve.Params().BitSize + 7) / 8
			sig = append(r.FillBytes(make([]byte, size)), ss.FillBytes(make([]byte, size))...)
			err = e
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64(sig)
}

func staticJWKS(doc []byte) *jwksKeys {
	return &jwksKeys{source: func(context.Context) ([]byte, error) { return doc, nil }, refresh: time.Hour}
}

// TestJWTValidator: every signature algorithm verifies with its JWK, and
// each check of Kafka's BrokerJwtValidator refuses what it should.
func TestJWTValidator(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var signers []testSigner
	for _, alg := range []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"} {
		signers = append(signers, newTestSigner(t, alg, "k-"+alg))
	}
	v := &jwtValidator{set: staticJWKS(jwksJSON(signers...)), audience: []string{"kafka"}, issuer: "https://idp", subClaim: "sub", scopeClaim: "scope", skew: 30 * time.Second}
	good := func() map[string]any {
		return map[string]any{"sub": "alice", "aud": []string{"other", "kafka"}, "iss": "https://idp", "iat": now.Unix() - 10, "exp": now.Unix() + 600, "scope": "read write"}
	}
	for _, s := range signers {
		tok, err := v.validate(s.sign(t, good()), now)
		if err != nil || tok.principal != "alice" || !tok.expiry.Equal(now.Add(600*time.Second)) || strings.Join(tok.scope, ",") != "read,write" {
			t.Errorf("%s: %+v %v", s.alg, tok, err)
		}
	}
	rs := signers[0]
	stranger := newTestSigner(t, "RS256", "k-RS256") // same kid, another key
	for _, tc := range []struct {
		name   string
		token  func() string
		reason string
	}{
		{"expired", func() string { c := good(); c["exp"] = now.Unix() - 31; return rs.sign(t, c) }, "expired"},
		{"wrong audience", func() string { c := good(); c["aud"] = "elsewhere"; return rs.sign(t, c) }, "audience"},
		{"no audience", func() string { c := good(); delete(c, "aud"); return rs.sign(t, c) }, "audience"},
		{"wrong issuer", func() string { c := good(); c["iss"] = "https://evil"; return rs.sign(t, c) }, "issuer"},
		{"bad signature", func() string { return stranger.sign(t, good()) }, "signature"},
		{"tampered claims", func() string {
			parts := strings.Split(rs.sign(t, good()), ".")
			c := good()
			c["sub"] = "admin"
			cb, _ := json.Marshal(c)
			return parts[0] + "." + b64(cb) + "." + parts[2]
		}, "signature"},
		{"alg none", func() string {
			hb, _ := json.Marshal(map[string]any{"alg": "none"})
			cb, _ := json.Marshal(good())
			return b64(hb) + "." + b64(cb) + "."
		}, "algorithm"},
		{"HS256", func() string {
			hb, _ := json.Marshal(map[string]any{"alg": "HS256", "kid": rs.kid})
			cb, _ := json.Marshal(good())
			return b64(hb) + "." + b64(cb) + ".c2ln"
		}, "algorithm"},
		{"no exp", func() string { c := good(); delete(c, "exp"); return rs.sign(t, c) }, "exp"},
		{"no iat", func() string { c := good(); delete(c, "iat"); return rs.sign(t, c) }, "iat"},
		{"not yet valid", func() string { c := good(); c["nbf"] = now.Unix() + 60; return rs.sign(t, c) }, "not valid before"},
		{"no sub", func() string { c := good(); delete(c, "sub"); return rs.sign(t, c) }, "sub"},
		{"unknown kid", func() string { return newTestSigner(t, "ES256", "k-new").sign(t, good()) }, "kid"},
		{"not a JWS", func() string { return "abc.def" }, "3 parts"},
	} {
		if tc.token == nil {
			continue
		}
		_, err := v.validate(tc.token(), now)
		if !errors.Is(err, errJWT) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: %v, want an error about %s", tc.name, err, tc.reason)
		}
	}
	c := good()
	c["exp"] = now.Unix() - 20
	if _, err := v.validate(rs.sign(t, c), now); err != nil {
		t.Errorf("expired 20s ago, within the 30s clock skew: %v", err)
	}
	c = good()
	c["client_id"] = "svc-1"
	delete(c, "sub")
	v2 := *v
	v2.subClaim = "client_id"
	if tok, err := v2.validate(rs.sign(t, c), now); err != nil || tok.principal != "svc-1" {
		t.Errorf("sasl.oauthbearer.sub.claim.name=client_id: %+v %v", tok, err)
	}
}

// TestJWKSRefresh: the key set is fetched when first needed, again once
// it is older than the refresh interval, and at once (rate-limited) for a
// token naming an unknown key, so a key rotated in at the provider works.
func TestJWKSRefresh(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	oldKey, newKey := newTestSigner(t, "RS256", "old"), newTestSigner(t, "ES256", "new")
	var doc atomic.Pointer[[]byte]
	first := jwksJSON(oldKey)
	doc.Store(&first)
	var fetches atomic.Int32
	set := &jwksKeys{refresh: time.Minute, source: func(context.Context) ([]byte, error) {
		fetches.Add(1)
		return *doc.Load(), nil
	}}
	v := &jwtValidator{set: set, subClaim: "sub", scopeClaim: "scope"}
	claims := map[string]any{"sub": "alice", "iat": now.Unix(), "exp": now.Unix() + 3600}
	if _, err := v.validate(oldKey.sign(t, claims), now); err != nil || fetches.Load() != 1 {
		t.Fatalf("first token: %v, %d fetches", err, fetches.Load())
	}
	if _, err := v.validate(oldKey.sign(t, claims), now.Add(30*time.Second)); err != nil || fetches.Load() != 1 {
		t.Fatalf("within the refresh interval: %v, %d fetches", err, fetches.Load())
	}
	// Rotation: the provider now publishes both keys.
	both := jwksJSON(oldKey, newKey)
	doc.Store(&both)
	if _, err := v.validate(newKey.sign(t, claims), now.Add(31*time.Second)); err != nil || fetches.Load() != 2 {
		t.Fatalf("token of a rotated-in key: %v, %d fetches", err, fetches.Load())
	}
	// Unknown kids do not refetch more than once per backoff.
	bogus := newTestSigner(t, "RS256", "bogus")
	for range 5 {
		if _, err := v.validate(bogus.sign(t, claims), now.Add(32*time.Second)); err == nil {
			t.Fatal("token of an unknown key accepted")
		}
	}
	if fetches.Load() != 2 {
		t.Fatalf("unknown kids refetched the key set: %d fetches", fetches.Load())
	}
	// Periodic refresh: a key removed at the provider stops verifying.
	only := jwksJSON(newKey)
	doc.Store(&only)
	if err := set.refreshIfStale(context.Background(), now.Add(2*time.Minute)); err != nil || fetches.Load() != 3 {
		t.Fatalf("refresh: %v, %d fetches", err, fetches.Load())
	}
	if _, err := v.validate(oldKey.sign(t, claims), now.Add(2*time.Minute)); err == nil {
		t.Fatal("token of a key removed from the set accepted after the refresh")
	}
}

// TestOAuthClientFirst parses RFC 7628 client-first messages as Kafka's
// OAuthBearerClientInitialResponse.
func TestOAuthClientFirst(t *testing.T) {
	for _, tc := range []struct {
		msg, authz, token string
		ok                bool
	}{
		{"n,,\x01auth=Bearer abc.def.ghi\x01\x01", "", "abc.def.ghi", true},
		{"n,a=alice,\x01auth=bearer abc.def.\x01host=b1\x01port=9092\x01\x01", "alice", "abc.def.", true},
		{"n,a=a=2Cb,\x01auth=Bearer t\x01\x01", "a,b", "t", true},
		{"n,,\x01auth=Bearer a~b+c/d==\x01\x01", "", "a~b+c/d==", true},
		{"y,,\x01auth=Bearer t\x01\x01", "", "", false},
		{"n,,\x01auth=Basic dXNlcg\x01\x01", "", "", false},
		{"n,,\x01host=b1\x01\x01", "", "", false},
		{"n,,\x01auth=Bearer t\x01", "", "", false},
		{"n,,auth=Bearer t\x01\x01", "", "", false},
		{"n,,\x01auth=Bearer a b\x01\x01", "", "", false},
	} {
		authz, token, _, err := parseOAuthClientFirst([]byte(tc.msg))
		if (err == nil) != tc.ok || authz != tc.authz || token != tc.token {
			t.Errorf("%q: authz %q token %q err %v", tc.msg, authz, token, err)
		}
	}
}

// TestOAuthBearerExchange runs OAUTHBEARER through the SASL state machine:
// a good token authenticates its sub with a session bounded by its expiry;
// a bad one gets the {"status":"invalid_token"} challenge, and the client's
// ^A acknowledgement then SASL_AUTHENTICATION_FAILED with that message; an
// authorization id other than the principal is refused.
func TestOAuthBearerExchange(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	signer := newTestSigner(t, "ES256", "k1")
	v := &jwtValidator{set: staticJWKS(jwksJSON(signer)), subClaim: "sub", scopeClaim: "scope"}
	claims := map[string]any{"sub": "alice", "iat": now.Unix(), "exp": now.Unix() + 120}
	login := func(srv *SASLServer, authz, token string) (*saslConn, *kmsg.SASLAuthenticateResponse) {
		s := newSASLConn(srv)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = "OAUTHBEARER"
		if _, handled, err := saslRequest(t, s, hs, 1); !handled || err != nil || s.closeAfter {
			t.Fatalf("handshake: %v %v", handled, err)
		}
		a := kmsg.NewPtrSASLAuthenticateRequest()
		a.SASLAuthBytes = []byte("n," + authz + ",\x01auth=Bearer " + token + "\x01\x01")
		out, _, err := saslRequest(t, s, a, 2)
		if err != nil {
			t.Fatal(err)
		}
		return s, authResponse(t, out, 2)
	}
	srv := &SASLServer{Mechanisms: []string{"OAUTHBEARER"}, OAuth: v, Now: func() time.Time { return now }}
	s, r := login(srv, "", signer.sign(t, claims))
	if r.ErrorCode != 0 || s.principal != "User:alice" || r.SessionLifetimeMillis != 120_000 || len(r.SASLAuthBytes) != 0 {
		t.Fatalf("good token: %+v principal %q", r, s.principal)
	}
	// connections.max.reauth.ms shorter than the token: it wins.
	srv.Reauth = 30 * time.Second
	if _, r := login(srv, "a=alice", signer.sign(t, claims)); r.ErrorCode != 0 || r.SessionLifetimeMillis != 30_000 {
		t.Fatalf("with connections.max.reauth.ms: %+v", r)
	}
	srv.Reauth = 0

	// Expired: the invalid_token challenge, then the failure.
	expired := map[string]any{"sub": "alice", "iat": now.Unix() - 600, "exp": now.Unix() - 60}
	s, r = login(srv, "", signer.sign(t, expired))
	if r.ErrorCode != 0 || string(r.SASLAuthBytes) != `{"status":"invalid_token"}` || s.authenticated() {
		t.Fatalf("expired token: %+v", r)
	}
	ack := kmsg.NewPtrSASLAuthenticateRequest()
	ack.SASLAuthBytes = []byte{1}
	out, _, err := saslRequest(t, s, ack, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r := authResponse(t, out, 2); r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil || *r.ErrorMessage != `{"status":"invalid_token"}` || !s.closeAfter || !strings.Contains(s.failure.Error(), "expired") {
		t.Fatalf("after the acknowledgement: %+v (failure %v)", r, s.failure)
	}

	s, r = login(srv, "a=bob", signer.sign(t, claims))
	if r.ErrorCode != kerr.SaslAuthenticationFailed.Code || !strings.Contains(*r.ErrorMessage, "different from the token's principal name") || s.authenticated() {
		t.Fatalf("authorization id bob for alice's token: %+v", r)
	}
	// A malformed message fails at once with Kafka's generic message.
	s = newSASLConn(srv)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "OAUTHBEARER"
	saslRequest(t, s, hs, 1)
	bad := kmsg.NewPtrSASLAuthenticateRequest()
	bad.SASLAuthBytes = []byte("n,,auth=Bearer x")
	out, _, _ = saslRequest(t, s, bad, 2)
	if r := authResponse(t, out, 2); r.ErrorCode != kerr.SaslAuthenticationFailed.Code || !strings.Contains(*r.ErrorMessage, "invalid credentials with SASL mechanism OAUTHBEARER") {
		t.Fatalf("malformed message: %+v", r)
	}

	// The session ends with the token: a request after exp closes the
	// connection unless the client re-authenticated.
	s, _ = login(srv, "", signer.sign(t, claims))
	now = now.Add(121 * time.Second)
	if _, handled, err := saslRequest(t, s, kmsg.NewPtrMetadataRequest(), 12); !handled || !errors.Is(err, errSASL) {
		t.Fatalf("request after the token expired: %v %v", handled, err)
	}
}

// TestUnsecuredValidator: Kafka's development tokens, alg none.
func TestUnsecuredValidator(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	u := &unsecuredValidator{principalClaim: "sub", scopeClaim: "scope", requiredScope: []string{"kafka"}}
	tok := func(header, claims map[string]any) string {
		hb, _ := json.Marshal(header)
		cb, _ := json.Marshal(claims)
		return b64(hb) + "." + b64(cb) + "."
	}
	none := map[string]any{"alg": "none"}
	if got, err := u.validate(tok(none, map[string]any{"sub": "dev", "exp": now.Unix() + 60, "iat": now.Unix(), "scope": []string{"kafka"}}), now); err != nil || got.principal != "dev" {
		t.Fatalf("good unsecured token: %+v %v", got, err)
	}
	for name, token := range map[string]string{
		"expired":       tok(none, map[string]any{"sub": "dev", "exp": now.Unix() - 1, "scope": "kafka"}),
		"missing scope": tok(none, map[string]any{"sub": "dev", "exp": now.Unix() + 60, "scope": "other"}),
		"no principal":  tok(none, map[string]any{"exp": now.Unix() + 60, "scope": "kafka"}),
		"signed":        tok(map[string]any{"alg": "RS256"}, map[string]any{"sub": "dev", "exp": now.Unix() + 60, "scope": "kafka"}) + "c2ln",
		"alg RS256":     tok(map[string]any{"alg": "RS256"}, map[string]any{"sub": "dev", "exp": now.Unix() + 60, "scope": "kafka"}),
	} {
		if _, err := u.validate(token, now); !errors.Is(err, errJWT) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestJWKSFailedFetchBackoff: after a failed fetch the key set is not
// fetched again before sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms,
// so an unreachable provider is not hammered by every login.
func TestJWKSFailedFetchBackoff(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	key := newTestSigner(t, "ES256", "k")
	var fetches atomic.Int32
	var up atomic.Bool
	set := &jwksKeys{refresh: time.Hour, failBackoff: 5 * time.Second, source: func(context.Context) ([]byte, error) {
		fetches.Add(1)
		if !up.Load() {
			return nil, errors.New("connection refused")
		}
		return jwksJSON(key), nil
	}}
	v := &jwtValidator{set: set, subClaim: "sub", scopeClaim: "scope"}
	tok := key.sign(t, map[string]any{"sub": "a", "iat": now.Unix(), "exp": now.Unix() + 3600})
	for i := range 3 {
		if _, err := v.validate(tok, now.Add(time.Duration(i)*time.Second)); err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("provider down: %v", err)
		}
	}
	if fetches.Load() != 1 {
		t.Fatalf("%d fetches within the backoff, want 1", fetches.Load())
	}
	up.Store(true)
	if _, err := v.validate(tok, now.Add(6*time.Second)); err != nil || fetches.Load() != 2 {
		t.Fatalf("after the backoff: %v, %d fetches", err, fetches.Load())
	}
}
