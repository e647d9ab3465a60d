package broker

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-broker/samsa/controller"
)

// tokenLogin runs a SCRAM exchange of franz-go's client with IsToken
// (the tokenauth=true extension) through a saslConn and returns its
// SaslAuthenticate answers' last response.
func tokenLogin(t *testing.T, s *saslConn, mech string, auth scram.Auth) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = mech
	if _, handled, err := saslRequest(t, s, hs, 1); !handled || err != nil {
		t.Fatalf("handshake: %v %v", handled, err)
	}
	m := auth.AsSha512Mechanism()
	if mech == "SCRAM-SHA-256" {
		m = auth.AsSha256Mechanism()
	}
	session, msg, err := m.Authenticate(context.Background(), "host")
	if err != nil {
		t.Fatal(err)
	}
	for {
		a := kmsg.NewPtrSASLAuthenticateRequest()
		a.SASLAuthBytes = msg
		out, handled, err := saslRequest(t, s, a, 2)
		if !handled || err != nil {
			t.Fatalf("authenticate: %v %v", handled, err)
		}
		r := authResponse(t, out, 2)
		if r.ErrorCode != 0 {
			return r
		}
		done, next, cerr := session.Challenge(r.SASLAuthBytes)
		if cerr != nil {
			t.Fatalf("client rejected the server: %v", cerr)
		}
		if done {
			return r
		}
		msg = next
	}
}

// TestSASLTokenLogin: a SCRAM login with tokenauth=true, the token id as
// user name and the base64 HMAC as password authenticates as the token's
// owner, flagged token-authenticated, with a session that ends at the
// token's expiry; a wrong HMAC or an unknown token fails, and without
// tokenauth the token id is an unknown SCRAM user.
func TestSASLTokenLogin(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	img := controller.EmptyImage("c", 1)
	img.DelegationTokens = map[string]controller.DelegationToken{
		"tok1": {TokenID: "tok1", Owner: "User:alice", Requester: "User:alice", IssueTimestamp: 1_000_000, MaxTimestamp: 9_000_000, ExpiryTimestamp: 4_000_000},
	}
	tc := newTokenCredentials("secret", func() *controller.Image { return img })
	srv := &SASLServer{Mechanisms: []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}, Tokens: tc.lookup, Now: func() time.Time { return now }}
	pw := base64.StdEncoding.EncodeToString(controller.DelegationTokenHMAC("secret", "tok1"))
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		s := newSASLConn(srv)
		r := tokenLogin(t, s, mech, scram.Auth{User: "tok1", Pass: pw, IsToken: true})
		if r.ErrorCode != 0 || s.principal != "User:alice" || !s.tokenAuthenticated() || r.SessionLifetimeMillis != 3_000_000 {
			t.Fatalf("%s: %+v principal %q token %v", mech, r, s.principal, s.tokenAuthenticated())
		}
		for _, bad := range []scram.Auth{
			{User: "tok1", Pass: "bm9wZQ==", IsToken: true},
			{User: "tok2", Pass: pw, IsToken: true},
			{User: "tok1", Pass: pw},
		} {
			s := newSASLConn(srv)
			if r := tokenLogin(t, s, mech, bad); r.ErrorCode != kerr.SaslAuthenticationFailed.Code || s.authenticated() {
				t.Fatalf("%s %+v: %+v", mech, bad, r)
			}
		}
	}
	// A token past its expiry that the sweep has not removed yet logs in
	// with a session that is already over (Kafka: lifetime 0).
	now = time.UnixMilli(5_000_000)
	s := newSASLConn(srv)
	if r := tokenLogin(t, s, "SCRAM-SHA-512", scram.Auth{User: "tok1", Pass: pw, IsToken: true}); r.ErrorCode != 0 || r.SessionLifetimeMillis != 0 {
		t.Fatalf("expired token: %+v", r)
	}
	now = now.Add(time.Millisecond)
	if _, handled, err := saslRequest(t, s, kmsg.NewPtrMetadataRequest(), 12); !handled || !errors.Is(err, errSASL) {
		t.Fatalf("request in an expired token session: %v %v", handled, err)
	}
	// The token removed: the login fails and the cached credential goes.
	img = controller.EmptyImage("c", 1)
	if r := tokenLogin(t, newSASLConn(srv), "SCRAM-SHA-512", scram.Auth{User: "tok1", Pass: pw, IsToken: true}); r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("removed token: %+v", r)
	}
	if len(tc.mu.creds) != 0 {
		t.Fatalf("cache keeps %d removed tokens", len(tc.mu.creds))
	}
}

// TestDelegationTokensNode drives the four token APIs and a token login
// through a node's listeners with franz-go: tokens are asked for over
// SASL (PLAIN) and mutual TLS, refused over PLAINTEXT and over a
// connection authenticated with a token; a token authenticates SCRAM
// logins until it is expired.
func TestDelegationTokensNode(t *testing.T) {
	s := startSecureNode(t, "delegation.token.secret.key=node-secret", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512,SCRAM-SHA-256")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(1), kgo.RetryTimeout(5*time.Second))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	alice := client(kgo.SeedBrokers(s.saslPlaintext), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	plaintext := client(kgo.SeedBrokers(s.plain))
	mtls := client(kgo.SeedBrokers(s.ssl), kgo.DialTLSConfig(s.tls(true)))

	create := func(cl *kgo.Client, renewers ...string) *kmsg.CreateDelegationTokenResponse {
		t.Helper()
		req := kmsg.NewPtrCreateDelegationTokenRequest()
		for _, r := range renewers {
			rn := kmsg.NewCreateDelegationTokenRequestRenewer()
			rn.PrincipalType, rn.PrincipalName, _ = strings.Cut(r, ":")
			req.Renewers = append(req.Renewers, rn)
		}
		req.MaxLifetimeMillis = -1
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	describe := func(cl *kgo.Client) *kmsg.DescribeDelegationTokenResponse {
		t.Helper()
		resp, err := kmsg.NewPtrDescribeDelegationTokenRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	if r := create(plaintext); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code || r.IssueTimestamp != -1 || r.PrincipalName != "ANONYMOUS" {
		t.Fatalf("create over PLAINTEXT: %+v", r)
	}
	if r := describe(plaintext); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("describe over PLAINTEXT: %+v", r)
	}
	if r := create(alice, "Group:g"); r.ErrorCode != kerr.InvalidPrincipalType.Code {
		t.Fatalf("group renewer: %+v", r)
	}
	tok := create(alice, "User:bob")
	if tok.ErrorCode != 0 || tok.PrincipalType != "User" || tok.PrincipalName != "alice" || tok.TokenRequesterPrincipalName != "alice" ||
		len(tok.TokenID) != 22 || tok.ExpiryTimestamp-tok.IssueTimestamp != 86400000 || tok.MaxTimestamp-tok.IssueTimestamp != 604800000 {
		t.Fatalf("create: %+v", tok)
	}
	byCert := create(mtls)
	if byCert.ErrorCode != 0 || byCert.PrincipalName != "CN=alice,O=example" {
		t.Fatalf("create over mTLS: %+v", byCert)
	}
	d := describe(alice)
	if d.ErrorCode != 0 || len(d.TokenDetails) != 2 || d.TokenDetails[0].TokenID != tok.TokenID || string(d.TokenDetails[0].HMAC) != string(tok.HMAC) ||
		len(d.TokenDetails[0].Renewers) != 1 || d.TokenDetails[0].Renewers[0].PrincipalName != "bob" {
		t.Fatalf("describe: %+v", d)
	}

	// Log in with the token, both mechanisms, and produce and consume.
	tokenAuth := func(mech string, hmac []byte) sasl.Mechanism {
		a := scram.Auth{User: tok.TokenID, Pass: base64.StdEncoding.EncodeToString(hmac), IsToken: true}
		if mech == "SCRAM-SHA-256" {
			return a.AsSha256Mechanism()
		}
		return a.AsSha512Mechanism()
	}
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		if err := roundTrip(t, "token-"+strings.ToLower(mech), kgo.SeedBrokers(s.saslPlaintext), kgo.SASL(tokenAuth(mech, tok.HMAC))); err != nil {
			t.Fatalf("%s token login: %v", mech, err)
		}
	}
	if err := requestErr(kgo.SeedBrokers(s.saslPlaintext), kgo.SASL(tokenAuth("SCRAM-SHA-512", []byte("wrong")))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong HMAC: %v", err)
	}
	// A connection authenticated with a token asks for none.
	byToken := client(kgo.SeedBrokers(s.saslPlaintext), kgo.SASL(tokenAuth("SCRAM-SHA-512", tok.HMAC)))
	if r := create(byToken); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code || r.PrincipalName != "alice" {
		t.Fatalf("create over a token session: %+v", r)
	}
	renewReq := kmsg.NewPtrRenewDelegationTokenRequest()
	renewReq.HMAC, renewReq.RenewTimeMillis = tok.HMAC, 60000
	if r, err := renewReq.RequestWith(ctx, byToken); err != nil || r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code || r.ExpiryTimestamp != -1 {
		t.Fatalf("renew over a token session: %+v %v", r, err)
	}
	if r, err := renewReq.RequestWith(ctx, mtls); err != nil || r.ErrorCode != kerr.DelegationTokenOwnerMismatch.Code {
		t.Fatalf("renew by a stranger: %+v %v", r, err)
	}
	if r, err := renewReq.RequestWith(ctx, alice); err != nil || r.ErrorCode != 0 || r.ExpiryTimestamp <= tok.IssueTimestamp || r.ExpiryTimestamp > time.Now().UnixMilli()+60000 {
		t.Fatalf("renew: %+v %v", r, err)
	}
	// Expire at once: the token is gone, and logins with it fail.
	expReq := kmsg.NewPtrExpireDelegationTokenRequest()
	expReq.HMAC, expReq.ExpiryPeriodMillis = tok.HMAC, -1
	if r, err := expReq.RequestWith(ctx, alice); err != nil || r.ErrorCode != 0 {
		t.Fatalf("expire: %+v %v", r, err)
	}
	if r, err := expReq.RequestWith(ctx, alice); err != nil || r.ErrorCode != kerr.DelegationTokenNotFound.Code {
		t.Fatalf("expire again: %+v %v", r, err)
	}
	if err := requestErr(kgo.SeedBrokers(s.saslPlaintext), kgo.SASL(tokenAuth("SCRAM-SHA-512", tok.HMAC))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("login with an expired token: %v", err)
	}
	if d := describe(alice); len(d.TokenDetails) != 1 || d.TokenDetails[0].TokenID != byCert.TokenID {
		t.Fatalf("describe after expire: %+v", d)
	}
}

// TestDelegationTokensDisabled: without delegation.token.secret.key the
// APIs answer DELEGATION_TOKEN_AUTH_DISABLED.
func TestDelegationTokensDisabled(t *testing.T) {
	s := startSecureNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.saslPlaintext), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	c, err := kmsg.NewPtrCreateDelegationTokenRequest().RequestWith(ctx, cl)
	if err != nil || c.ErrorCode != kerr.DelegationTokenAuthDisabled.Code || c.PrincipalName != "alice" {
		t.Fatalf("create: %+v %v", c, err)
	}
	d, err := kmsg.NewPtrDescribeDelegationTokenRequest().RequestWith(ctx, cl)
	if err != nil || d.ErrorCode != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("describe: %+v %v", d, err)
	}
}

// TestDelegationTokensForwarded: on a node that is not the active
// controller, CreateDelegationToken, Renew and Expire are forwarded (in an
// Envelope with the client's principal, which becomes the owner), and the
// refusal of a token-authenticated connection is answered by that node
// itself: forwarded, the controller (which trusts the forwarding node's
// checks) would have created the token.
func TestDelegationTokensForwarded(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`
	c := startTestCluster(t, 2,
		"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config="+jaas,
		"delegation.token.secret.key=forwarded-secret")
	leader := c.activeController(20 * time.Second)
	follower := 1 - leader
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := func(m sasl.Mechanism) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr(follower)), kgo.SASL(m), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	// seed sends to the follower itself.
	seed := func(cl *kgo.Client, req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	alice := client(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	var tok *kmsg.CreateDelegationTokenResponse
	// NOT_CONTROLLER until the follower reaches the active controller.
	if !poll(20*time.Second, func() bool {
		tok = seed(alice, kmsg.NewPtrCreateDelegationTokenRequest()).(*kmsg.CreateDelegationTokenResponse)
		return tok.ErrorCode != kerr.NotController.Code
	}) || tok.ErrorCode != 0 || tok.PrincipalName != "alice" {
		t.Fatalf("forwarded create: %+v", tok)
	}
	if got := c.nodes[leader].ctrl.Image().DelegationTokens[tok.TokenID]; got.Owner != "User:alice" {
		t.Fatalf("token on the active controller: %+v", got)
	}
	if !poll(10*time.Second, func() bool { _, ok := c.nodes[follower].ctrl.Image().DelegationTokens[tok.TokenID]; return ok }) {
		t.Fatal("the follower never saw the token")
	}
	byToken := client(scram.Auth{User: tok.TokenID, Pass: base64.StdEncoding.EncodeToString(tok.HMAC), IsToken: true}.AsSha512Mechanism())
	if r := seed(byToken, kmsg.NewPtrCreateDelegationTokenRequest()).(*kmsg.CreateDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("create over a token session on the follower: %+v", r)
	}
	exp := kmsg.NewPtrExpireDelegationTokenRequest()
	exp.HMAC, exp.ExpiryPeriodMillis = tok.HMAC, -1
	if r := seed(byToken, exp).(*kmsg.ExpireDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("expire over a token session on the follower: %+v", r)
	}
	if n := len(c.nodes[leader].ctrl.Image().DelegationTokens); n != 1 {
		t.Fatalf("%d tokens on the active controller, want 1", n)
	}
	if r := seed(alice, exp).(*kmsg.ExpireDelegationTokenResponse); r.ErrorCode != 0 {
		t.Fatalf("forwarded expire: %+v", r)
	}
	if n := len(c.nodes[leader].ctrl.Image().DelegationTokens); n != 0 {
		t.Fatalf("%d tokens after the expire, want 0", n)
	}
}

// TestSASLTokenReauthentication: with connections.max.reauth.ms set, a
// token session lasts the shorter of the setting and the token's
// remaining life; the re-authentication renews it while the token is
// valid, and once the token is gone (expired and swept, or deleted) the
// re-authentication fails and the connection closes.
func TestSASLTokenReauthentication(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	img := controller.EmptyImage("c", 1)
	img.DelegationTokens = map[string]controller.DelegationToken{
		"tok1": {TokenID: "tok1", Owner: "User:alice", Requester: "User:alice", IssueTimestamp: 1_000_000, MaxTimestamp: 9_000_000, ExpiryTimestamp: 1_015_000},
	}
	tc := newTokenCredentials("secret", func() *controller.Image { return img })
	srv := &SASLServer{Mechanisms: []string{"SCRAM-SHA-512"}, Tokens: tc.lookup, Reauth: 10 * time.Second, Now: func() time.Time { return now }}
	auth := scram.Auth{User: "tok1", Pass: base64.StdEncoding.EncodeToString(controller.DelegationTokenHMAC("secret", "tok1")), IsToken: true}
	s := newSASLConn(srv)
	if r := tokenLogin(t, s, "SCRAM-SHA-512", auth); r.ErrorCode != 0 || r.SessionLifetimeMillis != 10_000 {
		t.Fatalf("login: %+v, want the 10 s of connections.max.reauth.ms", r)
	}
	now = now.Add(9 * time.Second)
	if r := tokenLogin(t, s, "SCRAM-SHA-512", auth); r.ErrorCode != 0 || r.SessionLifetimeMillis != 6_000 {
		t.Fatalf("re-authentication: %+v, want the token's remaining 6 s", r)
	}
	now = now.Add(5 * time.Second)
	img = controller.EmptyImage("c", 1) // the token expired and was swept
	if r := tokenLogin(t, s, "SCRAM-SHA-512", auth); r.ErrorCode != kerr.SaslAuthenticationFailed.Code || !s.closeAfter {
		t.Fatalf("re-authentication with the token gone: %+v", r)
	}
}
