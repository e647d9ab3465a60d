package compattests

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// Delegation tokens (KIP-48) against Kafka 4.4: the same requests, over a
// SASL_PLAINTEXT listener (PLAIN users admin, alice, bob and carol; SCRAM
// for token logins) with the StandardAuthorizer, to samsa and to Kafka,
// and every answer compared.

// dtUsers are the PLAIN users of the token tests.
var dtUsers = map[string]string{"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}

const (
	dtSecret = "dt-secret-key"
	dtTopic  = "dt-topic"
)

func dtJAAS(withClient bool) string {
	var b strings.Builder
	b.WriteString("org.apache.kafka.common.security.plain.PlainLoginModule required")
	if withClient {
		b.WriteString(` username="admin" password="admin-secret"`)
	}
	for _, u := range []string{"admin", "alice", "bob", "carol"} {
		fmt.Fprintf(&b, ` user_%s="%s"`, u, dtUsers[u])
	}
	b.WriteString(";")
	return b.String()
}

// startTokenBrokers starts samsa (a SASL_PLAINTEXT listener next to its
// PLAINTEXT one) and Kafka (its PLAINTEXT listener mapped to
// SASL_PLAINTEXT) with delegation tokens enabled and authorization on, and
// returns the SASL listener of each. An empty secret leaves tokens
// disabled.
func startTokenBrokers(t *testing.T, secret string) (samsaAddr, kafkaAddr string) {
	kafkaref.Require(t)
	var wg sync.WaitGroup
	wg.Go(func() {
		samsaAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(loopbackPort(t)))
		harness.Start(t, harness.Options{
			ListenersExtra: "SASL_PLAINTEXT://" + samsaAddr,
			Env: []string{
				"KAFKA_AUTHORIZER_CLASS_NAME=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
				"KAFKA_SUPER_USERS=User:admin",
				"KAFKA_SASL_ENABLED_MECHANISMS=PLAIN,SCRAM-SHA-512,SCRAM-SHA-256",
				"KAFKA_LISTENER_NAME_SASL__PLAINTEXT_PLAIN_SASL_JAAS_CONFIG=" + dtJAAS(false),
				"KAFKA_DELEGATION_TOKEN_SECRET_KEY=" + secret,
			},
		})
	})
	wg.Go(func() {
		scramJAAS := "org.apache.kafka.common.security.scram.ScramLoginModule required;"
		kafkaAddr = kafkaref.Start(t, kafkaref.Options{Overrides: []string{
			"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
			"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512,SCRAM-SHA-256",
			"sasl.mechanism.inter.broker.protocol=PLAIN",
			"listener.name.plaintext.plain.sasl.jaas.config=" + dtJAAS(true),
			"listener.name.plaintext.scram-sha-512.sasl.jaas.config=" + scramJAAS,
			"listener.name.plaintext.scram-sha-256.sasl.jaas.config=" + scramJAAS,
			"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users=User:admin;User:ANONYMOUS",
			"delegation.token.secret.key=" + secret,
		}}).Bootstrap()
	})
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return samsaAddr, kafkaAddr
}

// dtClient is a client of addr authenticated by m, sending to the seed
// broker itself (no retries).
func dtClient(t *testing.T, addr string, m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(m), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func dtPlain(user string) sasl.Mechanism {
	return plain.Auth{User: user, Pass: dtUsers[user]}.AsMechanism()
}

// dtToken is the SCRAM mechanism of a token login (tokenauth=true).
func dtToken(mech, tokenID string, hmac []byte) sasl.Mechanism {
	a := scram.Auth{User: tokenID, Pass: base64.StdEncoding.EncodeToString(hmac), IsToken: true}
	if mech == "SCRAM-SHA-256" {
		return a.AsSha256Mechanism()
	}
	return a.AsSha512Mechanism()
}

// tokenProbe runs the token script against one broker and returns one
// line per answer, with timestamps as durations (expiry and max minus
// issue) and token ids and HMACs as lengths, so that the two brokers'
// lines compare.
func tokenProbe(t *testing.T, addr string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	admin, alice, bob, carol := dtClient(t, addr, dtPlain("admin")), dtClient(t, addr, dtPlain("alice")), dtClient(t, addr, dtPlain("bob")), dtClient(t, addr, dtPlain("carol"))
	must := func(resp kmsg.Response, err error) kmsg.Response {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		return resp
	}

	// Set-up: the topic, and alice may create carol's tokens and write
	// dt-topic, bob may describe alice's tokens.
	ct := kmsg.NewPtrCreateTopicsRequest()
	tt := kmsg.NewCreateTopicsRequestTopic()
	tt.Topic, tt.NumPartitions, tt.ReplicationFactor = dtTopic, 1, 1
	ct.Topics = append(ct.Topics, tt)
	must(send(ctx, admin, ct))
	lit, allow := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLPermissionTypeAllow
	ca := kmsg.NewPtrCreateACLsRequest()
	ca.Creations = []kmsg.CreateACLsRequestCreation{
		aclBinding(kmsg.ACLResourceTypeUser, "User:carol", lit, "User:alice", kmsg.ACLOperationCreateTokens, allow),
		aclBinding(kmsg.ACLResourceTypeUser, "User:alice", lit, "User:bob", kmsg.ACLOperationDescribeTokens, allow),
		aclBinding(kmsg.ACLResourceTypeTopic, dtTopic, lit, "User:alice", kmsg.ACLOperationWrite, allow),
		aclBinding(kmsg.ACLResourceTypeTopic, dtTopic, lit, "User:alice", kmsg.ACLOperationDescribe, allow),
	}
	for _, r := range must(send(ctx, admin, ca)).(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("%s: create acl: %d", addr, r.ErrorCode)
		}
	}
	// Kafka's brokers apply ACLs after the controller commits them.
	poll(ctx, t, addr+": ACLs in force", func() bool {
		da := kmsg.NewPtrDescribeACLsRequest()
		da.ResourceType, da.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		da.Operation, da.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		r, err := send(ctx, admin, da)
		return err == nil && len(r.(*kmsg.DescribeACLsResponse).Resources) == 3
	})

	type created struct {
		id     string
		hmac   []byte
		maxTs  int64
		expiry int64 // at creation
	}
	tokens := map[string]created{}
	create := func(label string, cl *kgo.Client, version int16, owner string, maxLifetime int64, renewers ...string) {
		req := kmsg.NewPtrCreateDelegationTokenRequest()
		req.SetVersion(version)
		if owner != "" {
			typ, name, _ := strings.Cut(owner, ":")
			req.OwnerPrincipalType, req.OwnerPrincipalName = kmsg.StringPtr(typ), kmsg.StringPtr(name)
			if typ == "" {
				req.OwnerPrincipalType = nil // a name without a type
			}
		}
		for _, r := range renewers {
			rn := kmsg.NewCreateDelegationTokenRequestRenewer()
			rn.PrincipalType, rn.PrincipalName, _ = strings.Cut(r, ":")
			req.Renewers = append(req.Renewers, rn)
		}
		req.MaxLifetimeMillis = maxLifetime
		r := must(send(ctx, cl, req)).(*kmsg.CreateDelegationTokenResponse)
		if r.ErrorCode == 0 {
			tokens[label] = created{r.TokenID, r.HMAC, r.MaxTimestamp, r.ExpiryTimestamp}
			add("create %s v%d: code 0 owner %s:%s requester %s:%s expiry +%d max +%d id %d hmac %d", label, version, r.PrincipalType, r.PrincipalName,
				r.TokenRequesterPrincipalType, r.TokenRequesterPrincipalName, r.ExpiryTimestamp-r.IssueTimestamp, r.MaxTimestamp-r.IssueTimestamp, len(r.TokenID), len(r.HMAC))
			return
		}
		add("create %s v%d: code %d owner %s:%s requester %s:%s timestamps %d %d %d id %q hmac %d", label, version, r.ErrorCode, r.PrincipalType, r.PrincipalName,
			r.TokenRequesterPrincipalType, r.TokenRequesterPrincipalName, r.IssueTimestamp, r.ExpiryTimestamp, r.MaxTimestamp, r.TokenID, len(r.HMAC))
	}
	create("self", alice, 3, "", 3600000, "User:bob")
	create("default", bob, 2, "", -1)
	create("for-carol", alice, 3, "User:carol", 0)
	create("v1", carol, 1, "", 7200000)
	create("for-alice-by-bob", bob, 3, "User:alice", -1)
	create("group-renewer", alice, 3, "", -1, "Group:g")
	create("owner-self-named", alice, 3, "User:alice", -1)
	create("owner-without-type", alice, 3, ":carol", -1)

	// Kafka's brokers learn of tokens after the controller commits them.
	describe := func(cl *kgo.Client, owners ...string) *kmsg.DescribeDelegationTokenResponse {
		req := kmsg.NewPtrDescribeDelegationTokenRequest()
		if owners != nil {
			req.Owners = []kmsg.DescribeDelegationTokenRequestOwner{}
		}
		for _, o := range owners {
			do := kmsg.NewDescribeDelegationTokenRequestOwner()
			do.PrincipalType, do.PrincipalName, _ = strings.Cut(o, ":")
			req.Owners = append(req.Owners, do)
		}
		return must(send(ctx, cl, req)).(*kmsg.DescribeDelegationTokenResponse)
	}
	poll(ctx, t, addr+": tokens visible", func() bool { return len(describe(admin).TokenDetails) == len(tokens) })
	names := map[string]string{}
	for label, c := range tokens {
		names[c.id] = label
	}
	describeLines := func(label string, cl *kgo.Client, owners ...string) {
		r := describe(cl, owners...)
		var lines []string
		for _, d := range r.TokenDetails {
			var rn []string
			for _, x := range d.Renewers {
				rn = append(rn, x.PrincipalType+":"+x.PrincipalName)
			}
			tok := tokens[names[d.TokenID]]
			// A renewed or expired token's expiry depends on when.
			expiry := fmt.Sprintf("+%d", d.ExpiryTimestamp-d.IssueTimestamp)
			if d.ExpiryTimestamp != tok.expiry {
				expiry = "moved"
			}
			lines = append(lines, fmt.Sprintf("describe %s: %s owner %s:%s requester %s:%s renewers %v expiry %s max +%d hmac %v", label, names[d.TokenID],
				d.PrincipalType, d.PrincipalName, d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName, rn,
				expiry, d.MaxTimestamp-d.IssueTimestamp, string(d.HMAC) == string(tok.hmac)))
		}
		sort.Strings(lines)
		add("describe %s: code %d tokens %d", label, r.ErrorCode, len(lines))
		out = append(out, lines...)
	}
	describeLines("alice", alice)
	describeLines("bob", bob)
	describeLines("carol", carol)
	describeLines("admin", admin)
	describeLines("admin-owner-carol", admin, "User:carol")
	describeLines("alice-owners-empty", alice, []string{}...)
	describeLines("alice-owner-bob", alice, "User:bob")
	describeLines("bob-owner-bob", bob, "User:bob")

	// expiryOf names an expiry timestamp: the token's max timestamp, or
	// now plus period (sent between before and after), or the number.
	expiryOf := func(ts, before, after, period, maxTs int64) string {
		switch {
		case ts == maxTs:
			return "max"
		case ts >= before+period && ts <= after+period:
			return fmt.Sprintf("now+%d", period)
		}
		return fmt.Sprint(ts)
	}
	renew := func(label string, cl *kgo.Client, tok created, period int64) {
		req := kmsg.NewPtrRenewDelegationTokenRequest()
		req.HMAC, req.RenewTimeMillis = tok.hmac, period
		before := time.Now().UnixMilli()
		r := must(send(ctx, cl, req)).(*kmsg.RenewDelegationTokenResponse)
		add("renew %s: code %d expiry %s", label, r.ErrorCode, expiryOf(r.ExpiryTimestamp, before, time.Now().UnixMilli(), min(period, 86400000), tok.maxTs))
	}
	expire := func(label string, cl *kgo.Client, tok created, period int64) int64 {
		req := kmsg.NewPtrExpireDelegationTokenRequest()
		req.HMAC, req.ExpiryPeriodMillis = tok.hmac, period
		before := time.Now().UnixMilli()
		r := must(send(ctx, cl, req)).(*kmsg.ExpireDelegationTokenResponse)
		add("expire %s: code %d expiry %s", label, r.ErrorCode, expiryOf(r.ExpiryTimestamp, before, time.Now().UnixMilli(), max(period, 0), tok.maxTs))
		return r.ExpiryTimestamp
	}
	self, def := tokens["self"], tokens["default"]
	unknown := created{hmac: []byte("no-such-hmac"), maxTs: -2}
	renew("self-by-renewer", bob, self, 60000)
	renew("self-by-owner-long", alice, self, 30*86400000)
	renew("self-by-stranger", carol, self, 60000)
	renew("self-by-super-user", admin, self, 60000)
	renew("unknown", alice, unknown, 60000)
	expire("unknown", alice, unknown, 1000)
	expire("self-by-stranger", carol, self, 1000)
	expire("self-by-renewer", bob, self, 600000)
	end := expire("default-now", bob, def, 0)
	// Wait for the clock to pass the expiry (the token is then expired),
	// and for the broker to show the new expiry: Kafka's controller
	// decides renewals and expiries against the token cache its metadata
	// publisher updates after the commit, so a request sent at once may
	// be decided on the token as it was before (FINDINGS.md).
	poll(ctx, t, addr+": expiry visible and past", func() bool {
		for _, d := range describe(admin).TokenDetails {
			if d.TokenID == def.id {
				return d.ExpiryTimestamp == end && time.Now().UnixMilli() > end+1
			}
		}
		return false
	})
	renew("default-expired", bob, def, 60000)
	expire("default-expired", bob, def, 1000)
	expire("default-remove", bob, def, -1)
	poll(ctx, t, addr+": removed token gone", func() bool { return len(describe(admin).TokenDetails) == len(tokens)-1 })
	expire("default-removed", bob, def, -1)
	describeLines("admin-after-expire", admin)

	// Logins with tokens: the connection is the token's owner, for the
	// authorizer too (alice may describe dt-topic, carol not), and may
	// not ask for tokens.
	metadata := func(label string, cl *kgo.Client) {
		req := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(dtTopic)
		req.Topics = append(req.Topics, mt)
		r, err := send(ctx, cl, req)
		if err != nil {
			add("metadata %s: %v", label, err)
			return
		}
		for _, tp := range r.(*kmsg.MetadataResponse).Topics {
			add("metadata %s: topic %s code %d", label, *tp.Topic, tp.ErrorCode)
		}
	}
	for _, mech := range []string{"SCRAM-SHA-512", "SCRAM-SHA-256"} {
		byToken := dtClient(t, addr, dtToken(mech, self.id, self.hmac))
		metadata("alice-token "+mech, byToken)
		r := must(send(ctx, byToken, kmsg.NewPtrCreateDelegationTokenRequest())).(*kmsg.CreateDelegationTokenResponse)
		add("create by-token %s: code %d owner %s:%s requester %s:%s", mech, r.ErrorCode, r.PrincipalType, r.PrincipalName, r.TokenRequesterPrincipalType, r.TokenRequesterPrincipalName)
		d := describe(byToken)
		add("describe by-token %s: code %d tokens %d", mech, d.ErrorCode, len(d.TokenDetails))
		rq := kmsg.NewPtrRenewDelegationTokenRequest()
		rq.HMAC = self.hmac
		rr := must(send(ctx, byToken, rq)).(*kmsg.RenewDelegationTokenResponse)
		add("renew by-token %s: code %d expiry %d", mech, rr.ErrorCode, rr.ExpiryTimestamp)
	}
	carolTok := tokens["for-carol"]
	metadata("carol-token", dtClient(t, addr, dtToken("SCRAM-SHA-512", carolTok.id, carolTok.hmac)))
	produced := dtClient(t, addr, dtToken("SCRAM-SHA-512", self.id, self.hmac), kgo.RecordDeliveryTimeout(30*time.Second)).
		ProduceSync(ctx, &kgo.Record{Topic: dtTopic, Value: []byte("by token")}).FirstErr()
	add("produce alice-token: %v", produced)
	for label, m := range map[string]sasl.Mechanism{
		"wrong-hmac":     dtToken("SCRAM-SHA-512", self.id, []byte("wrong")),
		"removed-token":  dtToken("SCRAM-SHA-512", def.id, def.hmac),
		"without-token":  scram.Auth{User: self.id, Pass: base64.StdEncoding.EncodeToString(self.hmac)}.AsSha512Mechanism(),
		"unknown-token":  dtToken("SCRAM-SHA-512", "AAAAAAAAAAAAAAAAAAAAAA", self.hmac),
		"token-as-plain": plain.Auth{User: self.id, Pass: base64.StdEncoding.EncodeToString(self.hmac)}.AsMechanism(),
	} {
		_, err := send(ctx, dtClient(t, addr, m), kmsg.NewPtrMetadataRequest())
		add("login %s: %v", label, err)
	}
	sort.Strings(out[len(out)-5:])
	return out
}

// poll waits until cond holds, checking every 50 ms, or fails the test
// when ctx ends.
func poll(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: never happened", what)
		case <-tick.C:
		}
	}
}

// TestDelegationTokensDifferential sends the same delegation token
// requests and token logins to samsa and to Apache Kafka 4.4 and compares
// every answer: creation for oneself and (v3) for another owner with and
// without CREATE_TOKENS, renewers, lifetimes, describe filters with
// DESCRIBE_TOKENS, renew and expire by owner, renewer and stranger,
// expired and removed tokens, SCRAM-SHA-256 and -512 logins with a token
// (as its owner, for the authorizer too), and the refusals of a
// token-authenticated connection.
func TestDelegationTokensDifferential(t *testing.T) {
	t.Parallel()
	samsaAddr, kafkaAddr := startTokenBrokers(t, dtSecret)
	var samsa, kafka []string
	var wg sync.WaitGroup
	wg.Go(func() { samsa = tokenProbe(t, samsaAddr) })
	wg.Go(func() { kafka = tokenProbe(t, kafkaAddr) })
	wg.Wait()
	if !reflect.DeepEqual(samsa, kafka) {
		t.Errorf("samsa and Kafka differ:\nsamsa:\n  %s\nkafka:\n  %s", strings.Join(samsa, "\n  "), strings.Join(kafka, "\n  "))
	} else {
		t.Logf("samsa and Kafka 4.4 agree on %d answers:\n  %s", len(samsa), strings.Join(samsa, "\n  "))
	}
}

// TestDelegationTokensDisabledDifferential: without
// delegation.token.secret.key every token API answers
// DELEGATION_TOKEN_AUTH_DISABLED, in the shape Kafka 4.4 gives each
// (Create from its controller: owner and requester, timestamps 0).
func TestDelegationTokensDisabledDifferential(t *testing.T) {
	t.Parallel()
	samsaAddr, kafkaAddr := startTokenBrokers(t, "")
	probe := func(addr string) []string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		alice := dtClient(t, addr, dtPlain("alice"))
		var out []string
		for _, req := range []kmsg.Request{kmsg.NewPtrCreateDelegationTokenRequest(), kmsg.NewPtrRenewDelegationTokenRequest(),
			kmsg.NewPtrExpireDelegationTokenRequest(), kmsg.NewPtrDescribeDelegationTokenRequest()} {
			resp, err := send(ctx, alice, req)
			out = append(out, fmt.Sprintf("%s: %+v %v", kmsg.NameForKey(req.Key()), resp, err))
		}
		return out
	}
	var samsa, kafka []string
	var wg sync.WaitGroup
	wg.Go(func() { samsa = probe(samsaAddr) })
	wg.Go(func() { kafka = probe(kafkaAddr) })
	wg.Wait()
	if !reflect.DeepEqual(samsa, kafka) {
		t.Errorf("samsa and Kafka differ:\nsamsa:\n  %s\nkafka:\n  %s", strings.Join(samsa, "\n  "), strings.Join(kafka, "\n  "))
	} else {
		t.Logf("samsa and Kafka 4.4 agree:\n  %s", strings.Join(samsa, "\n  "))
	}
}
