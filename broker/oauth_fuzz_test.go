package broker

import (
	"testing"
	"time"
)

// FuzzOAuthClientFirst: the OAUTHBEARER client message and the token
// decoders never panic on client bytes.
func FuzzOAuthClientFirst(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer abc.def.ghi\x01\x01"))
	f.Add([]byte("n,a=alice,\x01auth=Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIiwiZXhwIjoxfQ.\x01host=b\x01\x01"))
	f.Add([]byte("\x01"))
	v := &jwtValidator{set: staticJWKS([]byte(`{"keys":[]}`)), subClaim: "sub", scopeClaim: "scope"}
	u := &unsecuredValidator{principalClaim: "sub", scopeClaim: "scope"}
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, msg []byte) {
		_, token, _, err := parseOAuthClientFirst(msg)
		if err != nil {
			token = string(msg)
		}
		v.validate(token, now)
		u.validate(token, now)
		x := &oauthExchange{validator: u}
		x.next(msg, now)
		x.next([]byte{1}, now)
	})
}

// FuzzJWKS: a key set document from the network never panics the parser.
func FuzzJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"},{"kty":"EC","crv":"P-256","x":"AA","y":"AA"},{"kty":"OKP","crv":"Ed25519","x":"AA"}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		parseJWKS(doc)
	})
}
