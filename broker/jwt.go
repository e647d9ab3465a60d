package broker

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/samsa-broker/samsa/config"
)

// JWT validation for OAUTHBEARER, as Kafka's BrokerJwtValidator (jose4j):
// a JWS in compact form signed with RS256/384/512, PS256/384/512,
// ES256/384/512 or EdDSA by a key of the JSON Web Key Set at
// sasl.oauthbearer.jwks.endpoint.url (chosen by the token's kid); exp and
// iat required, exp and nbf checked with sasl.oauthbearer.clock.skew.seconds
// of tolerance; aud must hold one of sasl.oauthbearer.expected.audience and
// iss equal sasl.oauthbearer.expected.issuer when those are set; the
// principal is the (string, non-blank) claim sasl.oauthbearer.sub.claim.name.
//
// The key set is fetched when first needed and again once it is older than
// sasl.oauthbearer.jwks.endpoint.refresh.ms (by the node's security loop,
// security_reload.go, and on use), and at once, at most every
// jwksUnknownKidBackoff, when a token names a key id the set does not hold
// (a key rotated in at the provider). A file: URL is re-read on the same
// schedule. Only the standard library is used.

// errJWT is an invalid token (the reason is logged, never sent).
var errJWT = errors.New("broker: JWT")

// jwksUnknownKidBackoff bounds re-fetches for tokens naming unknown keys,
// so that a client with a bogus kid cannot make the broker hammer the
// identity provider.
const jwksUnknownKidBackoff = 10 * time.Second

// jwksFailedFetchBackoff is how long after a failed fetch the next one
// waits when sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms is not
// given (Kafka's default, 10 s).
const jwksFailedFetchBackoff = 10 * time.Second

// jwksFetchTimeout bounds one fetch of the key set.
const jwksFetchTimeout = 10 * time.Second

// jwk is one verification key of a key set.
type jwk struct {
	kid string
	alg string // "" when the key does not name one
	key crypto.PublicKey
}

// jwtValidator validates signed JWTs against a key set.
type jwtValidator struct {
	set        *jwksKeys
	audience   []string
	issuer     string
	subClaim   string
	scopeClaim string
	skew       time.Duration
}

func newJWTValidator(o *config.OAuthSettings) (*jwtValidator, error) {
	src, err := newJWKSSource(o)
	if err != nil {
		return nil, err
	}
	return &jwtValidator{
		set: &jwksKeys{source: src, refresh: time.Duration(o.JWKSRefreshMs) * time.Millisecond,
			failBackoff: time.Duration(o.JWKSRetryBackoffMaxMs) * time.Millisecond},
		audience:   o.ExpectedAudience,
		issuer:     o.ExpectedIssuer,
		subClaim:   o.SubClaim,
		scopeClaim: o.ScopeClaim,
		skew:       time.Duration(o.ClockSkewSeconds) * time.Second,
	}, nil
}

// jwtParts decodes a compact JWS: header and claims JSON, the signing input
// and the signature.
func jwtParts(token string) (header map[string]json.RawMessage, claims map[string]json.RawMessage, signed, sig []byte, err error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, nil, nil, nil, fmt.Errorf("%w: a JWS has 3 parts, this token %d", errJWT, len(parts))
	}
	dec := func(s, what string) ([]byte, error) {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not base64url: %v", errJWT, what, err)
		}
		return b, nil
	}
	hb, err := dec(parts[0], "header")
	if err != nil {
		return nil, nil, nil, nil, err
	}
	cb, err := dec(parts[1], "payload")
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if sig, err = dec(parts[2], "signature"); err != nil {
		return nil, nil, nil, nil, err
	}
	if err := json.Unmarshal(hb, &header); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("%w: header: %v", errJWT, err)
	}
	d := json.NewDecoder(bytes.NewReader(cb))
	d.UseNumber()
	if err := d.Decode(&claims); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("%w: claims: %v", errJWT, err)
	}
	return header, claims, []byte(parts[0] + "." + parts[1]), sig, nil
}

func (v *jwtValidator) validate(token string, now time.Time) (oauthToken, error) {
	header, claims, signed, sig, err := jwtParts(token)
	if err != nil {
		return oauthToken{}, err
	}
	alg, _ := jsonString(header["alg"])
	kid, _ := jsonString(header["kid"])
	if _, ok := jwsHashes[alg]; !ok && alg != "EdDSA" {
		return oauthToken{}, fmt.Errorf("%w: algorithm %q is not accepted", errJWT, alg)
	}
	keys, err := v.set.candidates(kid, now)
	if err != nil {
		return oauthToken{}, err
	}
	verified := false
	for _, k := range keys {
		if k.alg != "" && k.alg != alg {
			continue
		}
		if verifyJWS(alg, k.key, signed, sig) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return oauthToken{}, fmt.Errorf("%w: the signature (%s, kid %q) does not verify with any key of the key set", errJWT, alg, kid)
	}
	return v.checkClaims(claims, now)
}

// checkClaims checks the registered claims and extracts the principal.
func (v *jwtValidator) checkClaims(claims map[string]json.RawMessage, now time.Time) (oauthToken, error) {
	exp, ok := numericDate(claims["exp"])
	if !ok {
		return oauthToken{}, fmt.Errorf("%w: no exp (expiration time) claim", errJWT)
	}
	if _, ok := numericDate(claims["iat"]); !ok {
		return oauthToken{}, fmt.Errorf("%w: no iat (issued at) claim", errJWT)
	}
	if !now.Before(exp.Add(v.skew)) {
		return oauthToken{}, fmt.Errorf("%w: the token expired at %s (now %s, clock skew %s)", errJWT, exp.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), v.skew)
	}
	if raw, present := claims["nbf"]; present {
		nbf, ok := numericDate(raw)
		if !ok {
			return oauthToken{}, fmt.Errorf("%w: nbf is not a number", errJWT)
		}
		if now.Add(v.skew).Before(nbf) {
			return oauthToken{}, fmt.Errorf("%w: the token is not valid before %s", errJWT, nbf.UTC().Format(time.RFC3339))
		}
	}
	if len(v.audience) > 0 {
		aud, ok := stringOrList(claims["aud"])
		if !ok || !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(v.audience, a) }) {
			return oauthToken{}, fmt.Errorf("%w: audience %v is none of the expected %v", errJWT, aud, v.audience)
		}
	}
	if v.issuer != "" {
		if iss, _ := jsonString(claims["iss"]); iss != v.issuer {
			return oauthToken{}, fmt.Errorf("%w: issuer %q is not the expected %q", errJWT, iss, v.issuer)
		}
	}
	sub, _ := jsonString(claims[v.subClaim])
	if strings.TrimSpace(sub) == "" {
		return oauthToken{}, fmt.Errorf("%w: no %s claim naming the principal", errJWT, v.subClaim)
	}
	scope, _ := scopeClaim(claims[v.scopeClaim])
	return oauthToken{principal: strings.TrimSpace(sub), expiry: exp, scope: scope}, nil
}

// numericDate decodes a JWT NumericDate (seconds since the epoch, maybe
// fractional).
func numericDate(raw json.RawMessage) (time.Time, bool) {
	if raw == nil {
		return time.Time{}, false
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(f * 1000)), true
}

// stringOrList decodes a claim that is a string or a list of strings.
func stringOrList(raw json.RawMessage) ([]string, bool) {
	if s, ok := jsonString(raw); ok {
		return []string{s}, true
	}
	var l []string
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, false
	}
	return l, true
}

// scopeClaim decodes a scope: a space-separated string or a list.
func scopeClaim(raw json.RawMessage) ([]string, bool) {
	if raw == nil {
		return nil, false
	}
	if s, ok := jsonString(raw); ok {
		return strings.Fields(s), true
	}
	return stringOrList(raw)
}

// jwsHashes are the hashes of the RSA and ECDSA JWS algorithms (RFC 7518).
var jwsHashes = map[string]crypto.Hash{
	"RS256": crypto.SHA256, "RS384": crypto.SHA384, "RS512": crypto.SHA512,
	"PS256": crypto.SHA256, "PS384": crypto.SHA384, "PS512": crypto.SHA512,
	"ES256": crypto.SHA256, "ES384": crypto.SHA384, "ES512": crypto.SHA512,
}

// verifyJWS checks sig over signed with key for alg.
func verifyJWS(alg string, key crypto.PublicKey, signed, sig []byte) error {
	if alg == "EdDSA" {
		k, ok := key.(ed25519.PublicKey)
		if !ok || !ed25519.Verify(k, signed, sig) {
			return errJWT
		}
		return nil
	}
	h := jwsHashes[alg]
	hh := h.New()
	hh.Write(signed)
	digest := hh.Sum(nil)
	switch alg[0] {
	case 'R':
		k, ok := key.(*rsa.PublicKey)
		if !ok {
			return errJWT
		}
		return rsa.VerifyPKCS1v15(k, h, digest, sig)
	case 'P':
		k, ok := key.(*rsa.PublicKey)
		if !ok {
			return errJWT
		}
		return rsa.VerifyPSS(k, h, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	case 'E':
		k, ok := key.(*ecdsa.PublicKey)
		if !ok {
			return errJWT
		}
		size := (k.Curve.Params().BitSize + 7) / 8
		// ES256 goes with P-256 and so on (RFC 7518 3.4).
		if want := map[string]int{"ES256": 32, "ES384": 48, "ES512": 66}[alg]; size != want || len(sig) != 2*size {
			return errJWT
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		if !ecdsa.Verify(k, digest, r, s) {
			return errJWT
		}
		return nil
	}
	return errJWT
}

// parseJWKS reads the verification keys of a JSON Web Key Set (RFC 7517):
// RSA, EC (P-256, P-384, P-521) and OKP Ed25519 keys whose use, if given,
// is "sig". Keys of other kinds are skipped, as jose4j does.
func parseJWKS(data []byte) ([]jwk, error) {
	var set struct {
		Keys []map[string]json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("%w: JWKS: %v", errJWT, err)
	}
	var out []jwk
	for _, m := range set.Keys {
		str := func(k string) string { s, _ := jsonString(m[k]); return s }
		b64 := func(k string) []byte {
			b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(str(k), "="))
			if err != nil {
				return nil
			}
			return b
		}
		if use := str("use"); use != "" && use != "sig" {
			continue
		}
		k := jwk{kid: str("kid"), alg: str("alg")}
		switch str("kty") {
		case "RSA":
			n, e := b64("n"), b64("e")
			// jose4j, which Kafka uses, refuses RSA keys under 2048 bits.
			if len(n) < 256 || len(e) == 0 || len(e) > 4 {
				continue
			}
			k.key = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		case "EC":
			var curve elliptic.Curve
			switch str("crv") {
			case "P-256":
				curve = elliptic.P256()
			case "P-384":
				curve = elliptic.P384()
			case "P-521":
				curve = elliptic.P521()
			default:
				continue
			}
			x, y := b64("x"), b64("y")
			size := (curve.Params().BitSize + 7) / 8
			if len(x) != size || len(y) != size {
				continue
			}
			// Uncompressed point, parsed (and checked to be on the curve)
			// by crypto/ecdh-backed ecdsa.ParseUncompressedPublicKey.
			pt := append(append([]byte{4}, x...), y...)
			pub, err := ecdsa.ParseUncompressedPublicKey(curve, pt)
			if err != nil {
				continue
			}
			k.key = pub
		case "OKP":
			x := b64("x")
			if str("crv") != "Ed25519" || len(x) != ed25519.PublicKeySize {
				continue
			}
			k.key = ed25519.PublicKey(x)
		default:
			continue
		}
		out = append(out, k)
	}
	return out, nil
}

// jwksSource fetches the key set document.
type jwksSource func(ctx context.Context) ([]byte, error)

func newJWKSSource(o *config.OAuthSettings) (jwksSource, error) {
	if path, ok := o.JWKSFilePath(); ok {
		return func(context.Context) ([]byte, error) { return os.ReadFile(path) }, nil
	}
	// Trust the system roots and the configured truststore, if any.
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	extra, err := loadTruststoreCerts(o)
	if err != nil {
		return nil, fmt.Errorf("%w: the JWKS client's truststore (OAuthBearerLoginModule ssl.truststore.*): %w", errTLSConfig, err)
	}
	for _, c := range extra {
		pool.AddCert(c)
	}
	client := &http.Client{
		Timeout:   jwksFetchTimeout,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
	url := o.JWKSURL
	return func(ctx context.Context) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	}, nil
}

// loadTruststoreCerts returns the certificates of the JWKS client's
// configured truststore.
func loadTruststoreCerts(o *config.OAuthSettings) ([]*x509.Certificate, error) {
	switch {
	case o.JWKSTruststoreCerts != "":
		return pemCertificates([]byte(o.JWKSTruststoreCerts))
	case o.JWKSTruststoreLocation != "":
		data, err := os.ReadFile(o.JWKSTruststoreLocation)
		if err != nil {
			return nil, err
		}
		switch storeKind(o.JWKSTruststoreType, data) {
		case "PEM":
			return pemCertificates(data)
		case "JKS":
			return jksCertificates(data, o.JWKSTruststorePassword)
		}
		return pkcs12Certificates(data, o.JWKSTruststorePassword)
	}
	return nil, nil
}

// jwksKeys is a key set with its refresh schedule.
type jwksKeys struct {
	source  jwksSource
	refresh time.Duration
	// failBackoff spaces fetches after a failed one (0:
	// jwksFailedFetchBackoff).
	failBackoff time.Duration
	// fetchMu serializes fetches; mu guards the fields below it. A fetch
	// holds fetchMu but never mu, so validations with a fresh set do not
	// wait for the network.
	fetchMu sync.Mutex
	mu      struct {
		sync.Mutex
		keys        []jwk
		fetched     time.Time // last successful fetch
		lastAttempt time.Time
		err         error // of the last attempt
	}
}

// stale reports whether the set should be fetched again at now.
func (j *jwksKeys) stale(now time.Time) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	backoff := j.failBackoff
	if backoff <= 0 {
		backoff = jwksFailedFetchBackoff
	}
	if j.mu.err != nil && now.Sub(j.mu.lastAttempt) < backoff {
		return false // the last attempt failed: back off
	}
	return j.mu.fetched.IsZero() || j.refresh > 0 && now.Sub(j.mu.fetched) >= j.refresh
}

// fetch reads the key set and installs it; on failure the previous keys
// stay in use. REQUIRES: j.fetchMu held.
func (j *jwksKeys) fetchLocked(ctx context.Context, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
	defer cancel()
	data, err := j.source(ctx)
	var keys []jwk
	if err == nil {
		keys, err = parseJWKS(data)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.mu.lastAttempt, j.mu.err = now, err
	if err != nil {
		return fmt.Errorf("%w: fetching the JWKS: %w", errJWT, err)
	}
	j.mu.keys, j.mu.fetched = keys, now
	return nil
}

// refreshIfStale fetches the key set when it is due.
func (j *jwksKeys) refreshIfStale(ctx context.Context, now time.Time) error {
	if !j.stale(now) {
		return nil
	}
	j.fetchMu.Lock()
	defer j.fetchMu.Unlock()
	if !j.stale(now) {
		return nil // another caller fetched it meanwhile
	}
	return j.fetchLocked(ctx, now)
}

// candidates returns the keys that may have signed a token naming kid:
// that key, or every key when the token names none.
func (j *jwksKeys) candidates(kid string, now time.Time) ([]jwk, error) {
	ctx := context.Background() // a connection's authentication: bounded by jwksFetchTimeout
	ferr := j.refreshIfStale(ctx, now)
	pick := func() []jwk {
		j.mu.Lock()
		defer j.mu.Unlock()
		var out []jwk
		for _, k := range j.mu.keys {
			if kid == "" || k.kid == kid {
				out = append(out, k)
			}
		}
		return out
	}
	keys := pick()
	if len(keys) == 0 && kid != "" {
		// An unknown key id: the provider may have rotated keys.
		j.fetchMu.Lock()
		j.mu.Lock()
		due := now.Sub(j.mu.lastAttempt) >= jwksUnknownKidBackoff
		j.mu.Unlock()
		if due {
			ferr = j.fetchLocked(ctx, now)
		}
		j.fetchMu.Unlock()
		keys = pick()
	}
	if len(keys) == 0 {
		if ferr == nil {
			j.mu.Lock()
			ferr = j.mu.err
			j.mu.Unlock()
		}
		if ferr != nil {
			return nil, fmt.Errorf("%w: no key with kid %q (last JWKS fetch: %w)", errJWT, kid, ferr)
		}
		return nil, fmt.Errorf("%w: no key with kid %q in the JWKS", errJWT, kid)
	}
	return keys, nil
}

// unsecuredValidator is Kafka's OAuthBearerUnsecuredValidatorCallbackHandler:
// tokens are unsigned JWS (header alg "none", empty signature); the
// principal claim is required, exp is required and checked, iat if present
// must not be in the future, and every required scope must be granted, all
// with unsecuredValidatorAllowableClockSkewMs of tolerance. For
// development: anyone can mint such a token for any principal.
type unsecuredValidator struct {
	principalClaim string
	scopeClaim     string
	requiredScope  []string
	skew           time.Duration
}

func (u *unsecuredValidator) validate(token string, now time.Time) (oauthToken, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[2] != "" {
		return oauthToken{}, fmt.Errorf("%w: an unsecured JWS has 3 parts and no signature", errJWT)
	}
	header, claims, _, _, err := jwtParts(token)
	if err != nil {
		return oauthToken{}, err
	}
	if alg, _ := jsonString(header["alg"]); alg != "none" {
		return oauthToken{}, fmt.Errorf("%w: unsecured token with alg %q (want none)", errJWT, alg)
	}
	principal, ok := jsonString(claims[u.principalClaim])
	if !ok || strings.TrimSpace(principal) == "" {
		return oauthToken{}, fmt.Errorf("%w: no %s claim naming the principal", errJWT, u.principalClaim)
	}
	exp, ok := numericDate(claims["exp"])
	if !ok {
		return oauthToken{}, fmt.Errorf("%w: no exp (expiration time) claim", errJWT)
	}
	if !now.Add(-u.skew).Before(exp) {
		return oauthToken{}, fmt.Errorf("%w: the token expired at %s", errJWT, exp.UTC().Format(time.RFC3339))
	}
	if raw, present := claims["iat"]; present {
		iat, ok := numericDate(raw)
		if !ok || iat.After(now.Add(u.skew)) {
			return oauthToken{}, fmt.Errorf("%w: iat is not a number or lies in the future", errJWT)
		}
		if exp.Before(iat) {
			return oauthToken{}, fmt.Errorf("%w: the token expires before it was issued", errJWT)
		}
	}
	scope, _ := scopeClaim(claims[u.scopeClaim])
	for _, want := range u.requiredScope {
		if !slices.Contains(scope, want) {
			return oauthToken{}, fmt.Errorf("%w: the token's scope %v lacks the required %q", errJWT, scope, want)
		}
	}
	return oauthToken{principal: principal, expiry: exp, scope: scope}, nil
}

// newTokenValidator builds a listener's validator.
func newTokenValidator(o *config.OAuthSettings) (tokenValidator, error) {
	if o.Unsecured {
		return &unsecuredValidator{
			principalClaim: o.UnsecuredPrincipalClaim, scopeClaim: o.UnsecuredScopeClaim,
			requiredScope: o.UnsecuredRequiredScope, skew: time.Duration(o.UnsecuredClockSkewMs) * time.Millisecond,
		}, nil
	}
	return newJWTValidator(o)
}
