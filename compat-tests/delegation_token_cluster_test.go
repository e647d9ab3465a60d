package compattests

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// TestDelegationTokensCluster: delegation tokens are cluster metadata. On
// a three-node samsa cluster whose client listener is SASL_PLAINTEXT
// (PLAIN users, SCRAM for token logins; brokers talk to each other with
// PLAIN), Kafka's own kafka-delegation-tokens tool creates a token through
// node 1 and describes it through node 3; franz-go logs in with it on
// every node, and so does the Java client (kafka-topics --list through
// node 2); the token survives a stop of the whole cluster; the tool renews
// it and expires it through node 2 and every node then refuses it; and a
// token with a short lifetime is removed by the active controller's sweep
// (delegation.token.expiry.check.interval.ms) from every node's metadata.
func TestDelegationTokensCluster(t *testing.T) {
	kafkaref.Require(t)
	c := harness.StartCluster(t, 3, harness.ClusterOptions{Env: []string{
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:SASL_PLAINTEXT",
		"KAFKA_SASL_ENABLED_MECHANISMS=PLAIN,SCRAM-SHA-512,SCRAM-SHA-256",
		"KAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL=PLAIN",
		"KAFKA_LISTENER_NAME_PLAINTEXT_PLAIN_SASL_JAAS_CONFIG=" + dtJAAS(true),
		"KAFKA_DELEGATION_TOKEN_SECRET_KEY=" + dtSecret,
		"KAFKA_DELEGATION_TOKEN_EXPIRY_CHECK_INTERVAL_MS=1000",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	addrs := c.Addrs()
	dir := t.TempDir()
	props := func(name, jaas, mechanism string) string {
		p := filepath.Join(dir, name+".properties")
		if err := os.WriteFile(p, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism="+mechanism+"\nsasl.jaas.config="+jaas+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plainJAAS := func(user string) string {
		return `org.apache.kafka.common.security.plain.PlainLoginModule required username="` + user + `" password="` + dtUsers[user] + `";`
	}
	aliceProps, bobProps := props("alice", plainJAAS("alice"), "PLAIN"), props("bob", plainJAAS("bob"), "PLAIN")
	tool := func(addr, config string, args ...string) string {
		t.Helper()
		out, err := kafkaref.Tool(t, "kafka-delegation-tokens", append([]string{"--bootstrap-server", addr, "--command-config", config}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kafka-delegation-tokens %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	// Create with Kafka's tool through node 1.
	out := tool(addrs[0], aliceProps, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob")
	tokenID, hmacB64 := parseTokenTool(out)
	if tokenID == "" || hmacB64 == "" || !strings.Contains(out, "User:alice") || !strings.Contains(out, "[User:bob]") {
		t.Fatalf("kafka-delegation-tokens --create:\n%s", out)
	}
	hmac, err := base64.StdEncoding.DecodeString(hmacB64)
	if err != nil {
		t.Fatalf("HMAC %q: %v", hmacB64, err)
	}
	t.Logf("kafka-delegation-tokens --create through node 1:\n%s", out)

	// Every node has the token (its image learns it from the metadata
	// log a moment after the commit): a token login on each one alone.
	loginOn := func(addr string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(dtToken("SCRAM-SHA-512", tokenID, hmac)), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
		if err != nil {
			return err
		}
		defer cl.Close()
		_, err = cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
		return err
	}
	for i, addr := range addrs {
		poll(ctx, t, "token login on node "+addr, func() bool { return loginOn(addr) == nil })
		t.Logf("token login on node %d: ok", i+1)
	}
	// Kafka 4.4's tool sends an empty owner list without
	// --owner-principal, which Kafka (and samsa) answer with no tokens
	// (FINDINGS.md): name the owner.
	if out := tool(addrs[2], bobProps, "--describe", "--owner-principal", "User:alice"); !strings.Contains(out, tokenID) || !strings.Contains(out, hmacB64) {
		t.Fatalf("kafka-delegation-tokens --describe through node 3 (bob, a renewer):\n%s", out)
	}
	// The Java client logs in with the token (tokenauth=true in the JAAS
	// configuration, as Kafka documents) and lists topics as alice.
	tokenProps := props("token", `org.apache.kafka.common.security.scram.ScramLoginModule required username="`+tokenID+`" password="`+hmacB64+`" tokenauth="true";`, "SCRAM-SHA-512")
	admin := dtClient(t, addrs[0], dtPlain("admin"))
	ct := kmsg.NewPtrCreateTopicsRequest()
	tt := kmsg.NewCreateTopicsRequestTopic()
	tt.Topic, tt.NumPartitions, tt.ReplicationFactor = "dt-cluster", 1, 3
	ct.Topics = append(ct.Topics, tt)
	if _, err := send(ctx, admin, ct); err != nil {
		t.Fatal(err)
	}
	if out, err := kafkaref.Tool(t, "kafka-topics", "--bootstrap-server", addrs[1], "--command-config", tokenProps, "--list").CombinedOutput(); err != nil || !strings.Contains(string(out), "dt-cluster") {
		t.Fatalf("kafka-topics --list with the token: %v\n%s", err, out)
	}

	// A short-lived token for the sweep.
	short := kmsg.NewPtrCreateDelegationTokenRequest()
	short.MaxLifetimeMillis = 2000
	sr, err := send(ctx, dtClient(t, addrs[1], dtPlain("carol")), short)
	if err != nil || sr.(*kmsg.CreateDelegationTokenResponse).ErrorCode != 0 {
		t.Fatalf("short-lived token: %+v %v", sr, err)
	}
	shortID := sr.(*kmsg.CreateDelegationTokenResponse).TokenID

	// Stop the whole cluster and start it again: the tokens come back
	// from each node's metadata.
	restartCluster(t, c)
	for _, addr := range addrs {
		poll(ctx, t, "token login after restart on "+addr, func() bool { return loginOn(addr) == nil })
	}
	// The sweep removed the short-lived token everywhere.
	describeAll := func(addr string) map[string]bool {
		r, err := send(ctx, dtClient(t, addr, dtPlain("admin")), kmsg.NewPtrDescribeDelegationTokenRequest())
		if err != nil {
			return nil
		}
		ids := map[string]bool{}
		for _, d := range r.(*kmsg.DescribeDelegationTokenResponse).TokenDetails {
			ids[d.TokenID] = true
		}
		return ids
	}
	for _, addr := range addrs {
		poll(ctx, t, "sweep of the short-lived token on "+addr, func() bool {
			ids := describeAll(addr)
			return ids != nil && ids[tokenID] && !ids[shortID]
		})
	}

	// Renew and expire with the tool through node 2.
	if out := tool(addrs[1], bobProps, "--renew", "--hmac", hmacB64, "--renew-time-period", "3600000"); !strings.Contains(out, "Completed renew operation") {
		t.Fatalf("kafka-delegation-tokens --renew:\n%s", out)
	}
	if out := tool(addrs[1], aliceProps, "--expire", "--hmac", hmacB64, "--expiry-time-period", "-1"); !strings.Contains(out, "Completed expire operation") {
		t.Fatalf("kafka-delegation-tokens --expire:\n%s", out)
	}
	for _, addr := range addrs {
		poll(ctx, t, "token refused on "+addr, func() bool { return loginOn(addr) != nil })
	}
	if out := tool(addrs[0], aliceProps, "--describe", "--owner-principal", "User:alice"); strings.Contains(out, tokenID) || !strings.Contains(out, "Total number of tokens : 0") {
		t.Fatalf("expired token still described:\n%s", out)
	}
}

// parseTokenTool finds the token id and HMAC in the table
// kafka-delegation-tokens --create prints (TOKENID HMAC OWNER ..., a
// blank line, then the token's row).
func parseTokenTool(out string) (id, hmac string) {
	header := false
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "TOKENID":
			header = true
		case header && len(f) >= 2:
			return f[0], f[1]
		}
	}
	return "", ""
}
