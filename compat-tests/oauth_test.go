// This file runs OAUTHBEARER end to end against the samsa binary: tokens
// signed by a key whose JWKS an httptest TLS server serves (listener OAUTH)
// or a file holds (listener OAUTHFILE), and Kafka's unsecured development
// tokens on a listener that chose that validator explicitly (DEV). Keys
// and tokens are made per run.

package compattests

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// jwtKey signs test tokens (RS256 or ES256).
type jwtKey struct {
	alg, kid string
	key      crypto.Signer
}

func newJWTKey(t *testing.T, alg, kid string) jwtKey {
	t.Helper()
	var k crypto.Signer
	var err error
	if alg == "RS256" {
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	return jwtKey{alg: alg, kid: kid, key: k}
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func (k jwtKey) jwk() map[string]any {
	switch p := k.key.Public().(type) {
	case *rsa.PublicKey:
		return map[string]any{"kty": "RSA", "kid": k.kid, "alg": k.alg, "use": "sig", "n": b64url(p.N.Bytes()), "e": b64url([]byte{1, 0, 1})}
	case *ecdsa.PublicKey:
		pt, _ := p.Bytes()
		return map[string]any{"kty": "EC", "kid": k.kid, "alg": k.alg, "crv": "P-256", "x": b64url(pt[1:33]), "y": b64url(pt[33:])}
	}
	return nil
}

func jwksOf(keys ...jwtKey) []byte {
	var l []map[string]any
	for _, k := range keys {
		l = append(l, k.jwk())
	}
	b, _ := json.Marshal(map[string]any{"keys": l})
	return b
}

func (k jwtKey) sign(t *testing.T, claims map[string]any) string {
	t.Helper()
	hb, _ := json.Marshal(map[string]any{"alg": k.alg, "kid": k.kid, "typ": "JWT"})
	cb, _ := json.Marshal(claims)
	input := b64url(hb) + "." + b64url(cb)
	h := crypto.SHA256.New()
	h.Write([]byte(input))
	digest := h.Sum(nil)
	var sig []byte
	var err error
	switch p := k.key.(type) {
	case *rsa.PrivateKey:
		sig, err = rsa.SignPKCS1v15(rand.Reader, p, crypto.SHA256, digest)
	case *ecdsa.PrivateKey:
		r, s, e := ecdsa.Sign(rand.Reader, p, digest)
		sig, err = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...), e
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64url(sig)
}

// unsecuredToken is a Kafka development token (alg none).
func unsecuredToken(sub string, exp time.Time) string {
	hb, _ := json.Marshal(map[string]any{"alg": "none"})
	cb, _ := json.Marshal(map[string]any{"sub": sub, "iat": time.Now().Unix(), "exp": exp.Unix(), "scope": "kafka"})
	return b64url(hb) + "." + b64url(cb) + "."
}

// oauthBroker is a samsa process with three OAUTHBEARER listeners.
type oauthBroker struct {
	b                          *harness.Broker
	httpsAddr, fileAddr, dev   string
	jwksFile                   string
	key                        jwtKey // published by the HTTPS JWKS and the file
	fileKey                    jwtKey // published by the file only
	jwksServed                 *atomic.Pointer[[]byte]
	jwksHits                   *atomic.Int32
	audience, issuer, jwksPath string
}

func startOAuthBroker(t *testing.T) *oauthBroker {
	t.Helper()
	dir := t.TempDir()
	o := &oauthBroker{key: newJWTKey(t, "RS256", "rsa-1"), audience: "samsa-cluster", issuer: "https://idp.test",
		jwksServed: &atomic.Pointer[[]byte]{}, jwksHits: &atomic.Int32{}}
	doc := jwksOf(o.key)
	o.jwksServed.Store(&doc)
	idp := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.jwksHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(*o.jwksServed.Load())
	}))
	t.Cleanup(idp.Close)
	idpCA := filepath.Join(dir, "idp-ca.pem")
	if err := os.WriteFile(idpCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: idp.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	fileKey := newJWTKey(t, "ES256", "ec-1")
	o.jwksFile = filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(o.jwksFile, jwksOf(fileKey, o.key), 0o600); err != nil {
		t.Fatal(err)
	}
	port := func() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(loopbackPort(t))) }
	o.httpsAddr, o.fileAddr, o.dev = port(), port(), port()
	const module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	const jwtHandler = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	o.b = harness.Start(t, harness.Options{
		ListenersExtra: "OAUTH://" + o.httpsAddr + ",OAUTHFILE://" + o.fileAddr + ",DEV://" + o.dev,
		Env: []string{
			"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,OAUTH:SASL_PLAINTEXT,OAUTHFILE:SASL_PLAINTEXT,DEV:SASL_PLAINTEXT",
			"KAFKA_SASL_ENABLED_MECHANISMS=OAUTHBEARER",
			"KAFKA_SASL_OAUTHBEARER_EXPECTED_AUDIENCE=" + o.audience,
			"KAFKA_SASL_OAUTHBEARER_EXPECTED_ISSUER=" + o.issuer,
			"KAFKA_LISTENER_NAME_OAUTH_OAUTHBEARER_SASL_SERVER_CALLBACK_HANDLER_CLASS=" + jwtHandler,
			"KAFKA_LISTENER_NAME_OAUTH_OAUTHBEARER_SASL_OAUTHBEARER_JWKS_ENDPOINT_URL=" + idp.URL + "/jwks",
			"KAFKA_LISTENER_NAME_OAUTH_OAUTHBEARER_SASL_JAAS_CONFIG=" + module + ` required ssl.truststore.type="PEM" ssl.truststore.location="` + idpCA + `";`,
			"KAFKA_LISTENER_NAME_OAUTHFILE_OAUTHBEARER_SASL_SERVER_CALLBACK_HANDLER_CLASS=" + jwtHandler,
			"KAFKA_LISTENER_NAME_OAUTHFILE_OAUTHBEARER_SASL_OAUTHBEARER_JWKS_ENDPOINT_URL=file://" + o.jwksFile,
			"KAFKA_LISTENER_NAME_DEV_OAUTHBEARER_SASL_SERVER_CALLBACK_HANDLER_CLASS=org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler",
			"KAFKA_LISTENER_NAME_DEV_OAUTHBEARER_SASL_JAAS_CONFIG=" + module + ` required unsecuredValidatorRequiredScope="kafka";`,
		},
	})
	o.fileKey = fileKey
	return o
}

func (o *oauthBroker) claims(sub string, exp time.Time) map[string]any {
	return map[string]any{"sub": sub, "aud": o.audience, "iss": o.issuer, "iat": time.Now().Unix(), "exp": exp.Unix()}
}

// TestOAuthBearer: franz-go (pkg/sasl/oauth) authenticates with JWTs
// validated against a JWKS served over HTTPS and one read from a file, and
// with an unsecured token on the listener that chose the unsecured
// validator; expired tokens, a wrong audience or issuer, a bad signature and
// an unsigned token on a JWT listener are refused with
// SASL_AUTHENTICATION_FAILED, the message being Kafka's
// {"status":"invalid_token"}.
func TestOAuthBearer(t *testing.T) {
	t.Parallel()
	o := startOAuthBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, adm := newAdmin(t, o.b.Addr)
	topics := []string{"oauth-https", "oauth-file", "oauth-dev"}
	if r, err := adm.CreateTopics(ctx, 1, 1, nil, topics...); err != nil || r.Error() != nil {
		t.Fatalf("CreateTopics: %v %v", err, r.Error())
	}
	client := func(addr, token string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(oauth.Auth{Token: token}.AsMechanism())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	roundTrip := func(t *testing.T, addr, topic, token string) {
		cl := client(addr, token, kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("hello " + topic)}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil || len(fs.Records()) != 1 || string(fs.Records()[0].Value) != "hello "+topic {
			t.Fatalf("consume: %v %v", err, fs.Records())
		}
	}
	refused := func(t *testing.T, addr, token string) {
		t.Helper()
		cl := client(addr, token)
		err := cl.Ping(ctx)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), `{"status":"invalid_token"}`) {
			t.Fatalf("Ping: %v, want SASL_AUTHENTICATION_FAILED with invalid_token", err)
		}
	}
	hour := time.Now().Add(time.Hour)
	t.Run("JWKS over HTTPS", func(t *testing.T) { roundTrip(t, o.httpsAddr, "oauth-https", o.key.sign(t, o.claims("alice", hour))) })
	t.Run("JWKS file", func(t *testing.T) {
		roundTrip(t, o.fileAddr, "oauth-file", o.fileKey.sign(t, o.claims("alice", hour)))
	})
	t.Run("unsecured token on the DEV listener", func(t *testing.T) { roundTrip(t, o.dev, "oauth-dev", unsecuredToken("dev", hour)) })
	t.Run("kcat unsecured JWT on the DEV listener", func(t *testing.T) {
		kcat := lookTool(t, "kcat")
		args := []string{"-b", o.dev, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=OAUTHBEARER",
			"-X", "enable.sasl.oauthbearer.unsecure.jwt=true", "-X", "sasl.oauthbearer.config=principal=kcatdev scope=kafka"}
		run := func(stdin string, extra ...string) string {
			cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
			defer ccancel()
			cmd := exec.CommandContext(cctx, kcat, append(append([]string{}, args...), extra...)...)
			cmd.Stdin = strings.NewReader(stdin)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("kcat %v: %v\n%s", extra, err, out)
			}
			return string(out)
		}
		run("one\ntwo\n", "-P", "-t", "oauth-dev")
		if out := run("", "-C", "-t", "oauth-dev", "-o", "-2", "-c", "2", "-e"); !strings.Contains(out, "one\ntwo") {
			t.Fatalf("kcat consumed %q", out)
		}
	})
	t.Run("kafkajs", func(t *testing.T) {
		node := lookTool(t, "node")
		if _, err := os.Stat("scripts/js/node_modules/kafkajs/package.json"); err != nil {
			missingClient(t, "KafkaJS is not installed (run npm ci in compat-tests/scripts/js): %v", err)
		}
		runScript(t, nil, node, "scripts/js/oauth.js", o.httpsAddr, "oauth-https",
			o.key.sign(t, o.claims("jsuser", hour)), o.key.sign(t, o.claims("jsuser", time.Now().Add(-time.Minute))))
	})
	t.Run("kafka-python", func(t *testing.T) {
		py := pythonWith(t, "kafka")
		runScript(t, []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"}, py, "scripts/python/oauth_kafka_python.py",
			o.fileAddr, "oauth-file", o.fileKey.sign(t, o.claims("pyuser", hour)), o.fileKey.sign(t, o.claims("pyuser", time.Now().Add(-time.Minute))))
	})
	t.Run("session bounded by the token, franz-go re-authenticates", func(t *testing.T) {
		// Tokens live 6 s: the broker tells the client a session
		// lifetime of at most that (KIP-368), and franz-go logs in again
		// with a fresh token before it ends. It keeps producing across
		// two token lifetimes, and the broker never had to close a
		// connection for an expired session.
		var logins atomic.Int32
		mech := oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			logins.Add(1)
			return oauth.Auth{Token: o.key.sign(t, o.claims("alice", time.Now().Add(6*time.Second)))}, nil
		})
		cl, err := kgo.NewClient(kgo.SeedBrokers(o.httpsAddr), kgo.SASL(mech), kgo.DefaultProduceTopic("oauth-https"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		start := time.Now()
		for time.Since(start) < 13*time.Second {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("across token lifetimes")}).FirstErr(); err != nil {
				t.Fatalf("produce %v after the first login: %v", time.Since(start).Round(time.Millisecond), err)
			}
			select {
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(500 * time.Millisecond):
			}
		}
		if out := o.b.Output(); strings.Contains(out, "session expired") {
			t.Errorf("the broker closed an expired session: franz-go did not re-authenticate in time")
		}
		if n := logins.Load(); n < 3 {
			t.Errorf("%d logins in 13 s with 6 s tokens: no re-authentication", n)
		}
		t.Logf("%d logins in %v", logins.Load(), time.Since(start).Round(time.Millisecond))
	})
	t.Run("expired", func(t *testing.T) {
		refused(t, o.httpsAddr, o.key.sign(t, o.claims("alice", time.Now().Add(-time.Minute))))
	})
	t.Run("wrong audience", func(t *testing.T) {
		c := o.claims("alice", hour)
		c["aud"] = "another-cluster"
		refused(t, o.httpsAddr, o.key.sign(t, c))
	})
	t.Run("wrong issuer", func(t *testing.T) {
		c := o.claims("alice", hour)
		c["iss"] = "https://evil.test"
		refused(t, o.fileAddr, o.fileKey.sign(t, c))
	})
	t.Run("bad signature", func(t *testing.T) {
		refused(t, o.httpsAddr, newJWTKey(t, "RS256", "rsa-1").sign(t, o.claims("alice", hour)))
	})
	t.Run("key of the file only, on the HTTPS listener", func(t *testing.T) {
		refused(t, o.httpsAddr, o.fileKey.sign(t, o.claims("alice", hour)))
	})
	t.Run("unsecured token on a JWT listener", func(t *testing.T) { refused(t, o.httpsAddr, unsecuredToken("alice", hour)) })
	t.Run("unsecured token without the required scope", func(t *testing.T) {
		hb, _ := json.Marshal(map[string]any{"alg": "none"})
		cb, _ := json.Marshal(map[string]any{"sub": "dev", "exp": hour.Unix()})
		refused(t, o.dev, b64url(hb)+"."+b64url(cb)+".")
	})
	t.Run("key rotated in at the provider", func(t *testing.T) {
		next := newJWTKey(t, "ES256", "ec-rotated")
		doc := jwksOf(o.key, next)
		o.jwksServed.Store(&doc)
		// The broker fetches the set again for the unknown kid (at most
		// once per 10 s): poll until it has.
		deadline := time.Now().Add(45 * time.Second)
		for {
			cl, err := kgo.NewClient(kgo.SeedBrokers(o.httpsAddr), kgo.SASL(oauth.Auth{Token: next.sign(t, o.claims("alice", hour))}.AsMechanism()))
			if err != nil {
				t.Fatal(err)
			}
			err = cl.Ping(ctx)
			cl.Close()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a token of the rotated-in key is still refused: %v", err)
			}
			select {
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(time.Second):
			}
		}
	})
}

// javaOAuthChecks are the checks of samsa.compat.OAuthChecks.
var javaOAuthChecks = []string{"oauth-unsecured-login", "oauth-jwt-token-file", "oauth-expired-jwt"}

// TestJavaOAuthBearer runs samsa.compat.OAuthChecks (kafka-clients 4.4.0):
// the unsecured OAUTHBEARER login against the DEV listener, a signed JWT
// from a token file (OAuthBearerLoginCallbackHandler) against the JWKS
// listener, and an expired JWT refused.
func TestJavaOAuthBearer(t *testing.T) {
	t.Parallel()
	cp := javaClasspath(t)
	o := startOAuthBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, adm := newAdmin(t, o.b.Addr)
	if r, err := adm.CreateTopics(ctx, 1, 1, nil, "java-oauth-dev", "java-oauth-jwt"); err != nil || r.Error() != nil {
		t.Fatalf("CreateTopics: %v %v", err, r.Error())
	}
	dir := t.TempDir()
	token := filepath.Join(dir, "token.jwt")
	expired := filepath.Join(dir, "expired.jwt")
	if err := os.WriteFile(token, []byte(o.key.sign(t, o.claims("javauser", time.Now().Add(time.Hour)))), 0o600); err != nil {
		t.Fatal(err)
	}
	past := o.claims("javauser", time.Now().Add(-time.Hour))
	past["iat"] = time.Now().Add(-2 * time.Hour).Unix()
	if err := os.WriteFile(expired, []byte(o.key.sign(t, past)), 0o600); err != nil {
		t.Fatal(err)
	}
	reportJavaChecks(t, runJavaChecks(t, cp, "samsa.compat.OAuthChecks", o.dev, o.httpsAddr, token, expired, "java-oauth", "all"), javaOAuthChecks)
}
