package broker

import (
	"encoding/base64"
	"sync"
	"time"

	"github.com/samsa-broker/samsa/controller"
)

// Delegation token logins (KIP-48). A client authenticates with SCRAM,
// the tokenauth=true extension, the token id as user name and the base64
// of the token's HMAC as password. The HMAC is HmacSHA512 of the token id
// under delegation.token.secret.key, so every node with the same secret
// derives the same password from the token in its metadata image; each
// node then makes a SCRAM credential of it with a salt of its own and
// 4096 iterations, for both mechanisms, as Kafka's
// DelegationTokenManager.prepareScramCredentials does.

// tokenCredentials derives and caches the SCRAM credentials of the tokens
// of the metadata image: PBKDF2 costs milliseconds, and a client may log
// in often with one token.
type tokenCredentials struct {
	secret string
	image  func() *controller.Image

	mu struct {
		sync.Mutex
		// creds holds each token's credential by id and mechanism; an
		// entry whose token left the image is dropped when it is looked
		// up, and all of them when the map outgrows the image's tokens.
		creds map[string]map[int8]controller.ScramCredential
	}
}

// newTokenCredentials returns the credentials of the tokens of image
// under secret; nil when secret is empty (tokens disabled: every token
// login fails).
func newTokenCredentials(secret string, image func() *controller.Image) *tokenCredentials {
	if secret == "" {
		return nil
	}
	t := &tokenCredentials{secret: secret, image: image}
	t.mu.creds = map[string]map[int8]controller.ScramCredential{}
	return t
}

// lookup returns the credential of token tokenID for mech. A token that
// is past its expiry but not yet removed by the controller's sweep still
// authenticates, with a session that has already ended (Kafka does the
// same: its session lifetime is then 0, and the connection's next request
// closes it).
func (t *tokenCredentials) lookup(tokenID string, mech int8) (TokenCredential, bool) {
	img := t.image()
	if img == nil {
		return TokenCredential{}, false
	}
	tok, ok := img.DelegationTokens[tokenID]
	if !ok || controller.ScramMechanismName(mech) == "" {
		t.mu.Lock()
		delete(t.mu.creds, tokenID)
		t.mu.Unlock()
		return TokenCredential{}, false
	}
	_, owner, _ := cutPrincipal(tok.Owner)
	out := TokenCredential{Owner: owner, Expiry: time.UnixMilli(tok.ExpiryTimestamp)}
	t.mu.Lock()
	cred, ok := t.mu.creds[tokenID][mech]
	t.mu.Unlock()
	if ok {
		out.Cred = cred
		return out, true
	}
	// Derived outside the lock: two logins may derive it twice, and
	// either credential is right.
	password := base64.StdEncoding.EncodeToString(controller.DelegationTokenHMAC(t.secret, tokenID))
	cred, err := scramFromPassword(mech, password, controller.ScramMinIterations)
	if err != nil {
		return TokenCredential{}, false
	}
	t.mu.Lock()
	if len(t.mu.creds) > 2*len(img.DelegationTokens)+16 {
		clear(t.mu.creds)
	}
	if t.mu.creds[tokenID] == nil {
		t.mu.creds[tokenID] = map[int8]controller.ScramCredential{}
	}
	t.mu.creds[tokenID][mech] = cred
	t.mu.Unlock()
	out.Cred = cred
	return out, true
}

// cutPrincipal splits "Type:name" at its first colon.
func cutPrincipal(p string) (typ, name string, ok bool) {
	for i := 0; i < len(p); i++ {
		if p[i] == ':' {
			return p[:i], p[i+1:], true
		}
	}
	return "", p, false
}
