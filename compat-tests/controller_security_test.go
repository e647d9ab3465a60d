// This file runs samsa clusters whose controller listener is SASL_PLAINTEXT
// or SSL with client certificates, configured as Kafka 4.4's documentation
// and compose files do (KAFKA_SASL_MECHANISM_CONTROLLER_PROTOCOL,
// KAFKA_LISTENER_NAME_CONTROLLER_PLAIN_SASL_JAAS_CONFIG, ssl.* keystores).
// Both what the listener carries go through its security: the Kafka
// requests of brokers and tools, and samsa's Raft transport, which must
// authenticate before Raft reads a byte (docs/OPERATIONS.md "Controller
// listener").

package compattests

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/harness/testcerts"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
	"github.com/samsa-broker/samsa/controller/quorum"
	"github.com/samsa-broker/samsa/wire"
)

// saslControllerClusterEnv is a SASL_PLAINTEXT controller listener with
// PLAIN, the controllers logging in as admin (a super user, as Kafka 4.4
// requires of its controllers with an authorizer), and mallory, a user the
// listener accepts but who is not.
func saslControllerClusterEnv() []string {
	return []string{
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"KAFKA_SASL_MECHANISM_CONTROLLER_PROTOCOL=PLAIN",
		"KAFKA_LISTENER_NAME_CONTROLLER_SASL_ENABLED_MECHANISMS=PLAIN",
		`KAFKA_LISTENER_NAME_CONTROLLER_PLAIN_SASL_JAAS_CONFIG=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_mallory="mallory-secret";`,
		"KAFKA_AUTHORIZER_CLASS_NAME=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"KAFKA_SUPER_USERS=User:admin;User:ANONYMOUS",
		"KAFKA_BROKER_SESSION_TIMEOUT_MS=3000", "KAFKA_BROKER_HEARTBEAT_INTERVAL_MS=500",
	}
}

func plainOpts(user, pass string) []kgo.Opt {
	return []kgo.Opt{kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())}
}

// quorumLeader returns the index (node id - 1) of the quorum's leader as
// the live controllers describe it over their controller listener (with
// opts: its security), polling up to d.
func quorumLeader(t *testing.T, ctx context.Context, ctlAddrs []string, down map[int]bool, opts []kgo.Opt, d time.Duration) int {
	t.Helper()
	found := -1
	if !pollUntil(d, func() bool {
		for i, addr := range ctlAddrs {
			if down[i] {
				continue
			}
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}, opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			req := kmsg.NewPtrDescribeQuorumRequest()
			rt := kmsg.NewDescribeQuorumRequestTopic()
			rt.Topic = "__cluster_metadata"
			rp := kmsg.NewDescribeQuorumRequestTopicPartition()
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			resp, err := cl.SeedBrokers()[0].Request(rctx, req)
			cancel()
			cl.Close()
			if err != nil {
				continue
			}
			r := resp.(*kmsg.DescribeQuorumResponse)
			if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
				continue
			}
			leader := int(r.Topics[0].Partitions[0].LeaderID) - 1
			if leader >= 0 && leader < len(ctlAddrs) && !down[leader] {
				found = leader
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no live controller names a live leader within %v", d)
	}
	return found
}

// produceConsumeAcrossFailover produces through the brokers, kills the
// quorum's leader (a controller process, c.Brokers[index]), waits for
// another, produces again through the live brokers and consumes everything:
// the metadata keeps flowing over the secured controller listener.
func produceConsumeAcrossFailover(t *testing.T, ctx context.Context, c *harness.Cluster, brokers []int, ctlOpts []kgo.Opt, topic string, rf int) {
	t.Helper()
	addrs := func(down map[int]bool) []string {
		var out []string
		for _, i := range brokers {
			if !down[i] {
				out = append(out, c.Brokers[i].Addr)
			}
		}
		return out
	}
	for _, addr := range addrs(nil) {
		if !pollUntil(30*time.Second, func() bool {
			m, err := rawMetadata(ctx, addr)
			return err == nil && len(m.Brokers) == len(brokers)
		}) {
			t.Fatalf("%s does not list %d brokers", addr, len(brokers))
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs(nil)...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	r := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 3, int16(rf)
	r.Topics = append(r.Topics, rt)
	if resp, err := r.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %v %+v", err, resp)
	}
	waitTopicEverywhere(t, ctx, addrs(nil), topic, 3)
	for i := range 30 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "before-%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	var ctlAddrs []string
	for i := range 3 {
		ctlAddrs = append(ctlAddrs, c.ControllerAddrs[i])
	}
	down := map[int]bool{}
	victim := quorumLeader(t, ctx, ctlAddrs, down, ctlOpts, 30*time.Second)
	start := time.Now()
	c.Brokers[victim].Kill(t)
	down[victim] = true
	next := quorumLeader(t, ctx, ctlAddrs, down, ctlOpts, 30*time.Second)
	t.Logf("killed the quorum leader, node %d; node %d leads after %v", victim+1, next+1, time.Since(start).Round(time.Millisecond))

	live := addrs(down)
	pcl, err := kgo.NewClient(kgo.SeedBrokers(live...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	for i := range 30 {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "after-%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d after the failover: %v", i, err)
		}
	}
	// A topic created now goes through the new active controller.
	r2 := kmsg.NewPtrCreateTopicsRequest()
	rt2 := kmsg.NewCreateTopicsRequestTopic()
	rt2.Topic, rt2.NumPartitions, rt2.ReplicationFactor = topic+"-after", 1, 1
	r2.Topics = append(r2.Topics, rt2)
	if !pollUntil(30*time.Second, func() bool {
		resp, err := r2.RequestWith(ctx, pcl)
		return err == nil && (resp.Topics[0].ErrorCode == 0 || resp.Topics[0].ErrorCode == kerr.TopicAlreadyExists.Code)
	}) {
		t.Fatal("CreateTopics after the failover failed")
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(live...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]bool{}
	for len(seen) < 60 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 60 distinct records", len(seen))
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
}

// rawController opens a TCP connection to a controller listener and writes
// the Raft preamble.
func rawController(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write(quorum.Preamble); err != nil {
		t.Fatal(err)
	}
	return conn
}

// exchangeRaw writes req (header v1) and returns its decoded response.
func exchangeRaw(t *testing.T, conn net.Conn, corr int32, version int16, req kmsg.Request) kmsg.Response {
	t.Helper()
	client := "compat-test"
	req.SetVersion(version)
	if _, err := conn.Write(wire.AppendRequest(nil, wire.RequestHeader{APIVersion: version, CorrelationID: corr, ClientID: &client}, req)); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		t.Fatalf("reading the %s response: %v", kmsg.NameForKey(req.Key()), err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		t.Fatal(err)
	}
	body = body[4:] // correlation id
	if req.IsFlexible() {
		body = body[1:] // response header tags (none from samsa)
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	return resp
}

// closedByPeer reports whether the other end closed conn (and did not
// just stay silent).
func closedByPeer(conn net.Conn) error {
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	n, err := conn.Read(make([]byte, 64))
	if err == nil {
		return fmt.Errorf("read %d bytes, want the connection closed", n)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return fmt.Errorf("the connection stays open")
	}
	return nil
}

// waitLog waits for a line matching re in the node's output.
func waitLog(t *testing.T, b *harness.Broker, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	if !pollUntil(20*time.Second, func() bool { return rx.MatchString(b.Output()) }) {
		t.Fatalf("no log line matching %q in node %s's output", re, b.Addr)
	}
}

// raftLogin sends the Raft preamble, then Kafka's SASL exchange (PLAIN) as
// user; it returns the connection and the SaslAuthenticate error code.
func raftLogin(t *testing.T, addr, user, pass string) (net.Conn, int16) {
	t.Helper()
	return saslLogin(t, rawController(t, addr), user, pass)
}

// saslLogin runs Kafka's SASL exchange (PLAIN) on conn as user and returns
// the SaslAuthenticate error code.
func saslLogin(t *testing.T, conn net.Conn, user, pass string) (net.Conn, int16) {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	if r := exchangeRaw(t, conn, 1, 1, hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslHandshake on a Raft connection: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("\x00" + user + "\x00" + pass)
	r := exchangeRaw(t, conn, 2, 1, auth).(*kmsg.SASLAuthenticateResponse)
	return conn, r.ErrorCode
}

// TestControllerListenerSASL: three combined-mode nodes whose controller
// listener is SASL_PLAINTEXT (PLAIN) with StandardAuthorizer. Produce and
// consume work across a failover of the quorum's leader; a Raft
// connection that does not authenticate, or authenticates with a wrong
// password (SASL_AUTHENTICATION_FAILED), or as a user without
// CLUSTER_ACTION, is closed with a log line before Raft reads it; that
// user's BrokerHeartbeat is CLUSTER_AUTHORIZATION_FAILED; Kafka's
// kafka-metadata-quorum --bootstrap-controller --command-config describes
// the quorum.
func TestControllerListenerSASL(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t, 3, harness.ClusterOptions{Env: saslControllerClusterEnv()})
	ctx := testContext(t, 4*time.Minute)
	admin := plainOpts("admin", "admin-secret")

	// Raw Raft bytes without authenticating.
	ctl := c.ControllerAddrs[0]
	conn := rawController(t, ctl)
	conn.Write([]byte{0, 0, 0, 0, 1, 2, 3, 4}) // an AppendEntries would start with its type byte
	if err := closedByPeer(conn); err != nil {
		t.Fatalf("unauthenticated Raft connection: %v", err)
	}
	conn.Close()
	waitLog(t, c.Brokers[0], `closing a Raft connection to the controller listener that did not authenticate.*SASL request of 0 bytes`)

	// A wrong password.
	conn, code := raftLogin(t, ctl, "admin", "wrong")
	if code != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("wrong password on a Raft connection: error %v, want SASL_AUTHENTICATION_FAILED", kerr.ErrorForCode(code))
	}
	if err := closedByPeer(conn); err != nil {
		t.Fatalf("after a failed login: %v", err)
	}
	conn.Close()
	waitLog(t, c.Brokers[0], `did not authenticate.*(?i)invalid username or password|did not authenticate.*authentication failed`)

	// A user of the listener who is not a super user.
	conn, code = raftLogin(t, ctl, "mallory", "mallory-secret")
	if code != 0 {
		t.Fatalf("mallory's login: %v", kerr.ErrorForCode(code))
	}
	if err := closedByPeer(conn); err != nil {
		t.Fatalf("mallory's Raft connection: %v", err)
	}
	conn.Close()
	waitLog(t, c.Brokers[0], `User:mallory may not carry Raft`)
	// Her Kafka requests to the controller: a BrokerHeartbeat is
	// refused, as Kafka's ControllerApis refuses it without CLUSTER_ACTION.
	kc, err := net.DialTimeout("tcp", ctl, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	kc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, code := saslLogin(t, kc, "mallory", "mallory-secret"); code != 0 {
		t.Fatalf("mallory's Kafka login: %v", kerr.ErrorForCode(code))
	}
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch = 1, 1
	if r := exchangeRaw(t, kc, 3, 0, hb).(*kmsg.BrokerHeartbeatResponse); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("mallory's BrokerHeartbeat: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(r.ErrorCode))
	}
	kc.Close()

	t.Run("kafka-metadata-quorum", func(t *testing.T) {
		if testing.Short() {
			t.Skip("short: no Java tools")
		}
		kafkaref.Require(t)
		props := filepath.Join(t.TempDir(), "controller.properties")
		os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
			`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";`+"\n"), 0o600)
		out, err := kafkaref.Tool(t, "kafka-metadata-quorum", "--bootstrap-controller", c.ControllerAddrs[1], "--command-config", props, "describe", "--status").CombinedOutput()
		if err != nil || !regexp.MustCompile(`(?m)^LeaderId:\s+[123]$`).Match(out) || !strings.Contains(string(out), "CurrentVoters:") {
			t.Fatalf("kafka-metadata-quorum --bootstrap-controller --command-config describe --status: %v\n%s", err, out)
		}
		t.Logf("kafka-metadata-quorum describe --status over SASL_PLAINTEXT:\n%s", out)
	})

	produceConsumeAcrossFailover(t, ctx, c, []int{0, 1, 2}, admin, "ctrlsec-sasl", 3)
}

// controllerCerts makes a CA and a certificate for localhost and
// 127.0.0.1 that every node uses, and writes them as PEM files: the CA
// (the truststore) and the certificate with its key (the keystore).
func controllerCerts(t *testing.T) (ca *testcerts.CA, node testcerts.Pair, caFile, keystore string) {
	t.Helper()
	dir := t.TempDir()
	ca = testcerts.NewCA("samsa controller CA")
	node = ca.Server("localhost", "127.0.0.1")
	caFile, keystore = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "node.pem")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keystore, append(append([]byte{}, node.CertPEM...), node.KeyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	return ca, node, caFile, keystore
}

// TestControllerListenerMutualTLS: three combined-mode nodes whose
// controller listener is SSL with ssl.client.auth=required; each node's
// certificate is its keystore for both ends. Produce and consume work
// across a failover; a Raft preamble without TLS, and a TLS client without
// a certificate, are closed.
func TestControllerListenerMutualTLS(t *testing.T) {
	t.Parallel()
	ca, node, caFile, keystore := controllerCerts(t)
	c := harness.StartCluster(t, 3, harness.ClusterOptions{Env: []string{
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:SSL,PLAINTEXT:PLAINTEXT",
		"KAFKA_LISTENER_NAME_CONTROLLER_SSL_KEYSTORE_TYPE=PEM",
		"KAFKA_LISTENER_NAME_CONTROLLER_SSL_KEYSTORE_LOCATION=" + keystore,
		"KAFKA_LISTENER_NAME_CONTROLLER_SSL_TRUSTSTORE_TYPE=PEM",
		"KAFKA_LISTENER_NAME_CONTROLLER_SSL_TRUSTSTORE_LOCATION=" + caFile,
		"KAFKA_LISTENER_NAME_CONTROLLER_SSL_CLIENT_AUTH=required",
		"KAFKA_AUTHORIZER_CLASS_NAME=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"KAFKA_SUPER_USERS=User:CN=localhost;User:ANONYMOUS",
		"KAFKA_BROKER_SESSION_TIMEOUT_MS=3000", "KAFKA_BROKER_HEARTBEAT_INTERVAL_MS=500",
	}})
	ctx := testContext(t, 4*time.Minute)
	ctl := c.ControllerAddrs[0]

	conn := rawController(t, ctl)
	if err := closedByPeer(conn); err != nil {
		t.Fatalf("Raft preamble without TLS: %v", err)
	}
	conn.Close()
	waitLog(t, c.Brokers[0], `closing a controller connection: TLS handshake failed`)

	// Without a client certificate the handshake (or the first read
	// after it, in TLS 1.3) fails.
	tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ctl, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
	if err == nil {
		tc.Write(quorum.Preamble)
		if err := closedByPeer(tc); err != nil {
			t.Fatalf("TLS without a client certificate: %v", err)
		}
		tc.Close()
	}

	ctlTLS := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{node.TLS()}}
	produceConsumeAcrossFailover(t, ctx, c, []int{0, 1, 2}, []kgo.Opt{kgo.DialTLSConfig(ctlTLS)}, "ctrlsec-tls", 3)
}

// TestControllerListenerSASLSeparateRoles: three controller-only nodes and
// one broker-only node, the controller listener SASL_PLAINTEXT: the broker
// registers, heartbeats and receives the metadata log (over the reverse
// Raft connections it parks at the controllers, logged in) through the
// secured listener, across a failover of the quorum's leader.
func TestControllerListenerSASLSeparateRoles(t *testing.T) {
	t.Parallel()
	c := harness.StartSplitCluster(t, 3, 1, harness.ClusterOptions{Env: saslControllerClusterEnv()})
	ctx := testContext(t, 4*time.Minute)
	produceConsumeAcrossFailover(t, ctx, c, []int{3}, plainOpts("admin", "admin-secret"), "ctrlsec-split", 1)
}

// TestControllerListenerSASLSSLScram: the controller listener SASL_SSL with
// SCRAM-SHA-512 and bitnami's KAFKA_CONTROLLER_USER / _PASSWORD (added as
// static SCRAM users, so that the controllers can log in before the
// metadata log, where kafka-configs keeps SCRAM credentials, is readable),
// TLS without client certificates: three combined-mode nodes produce and
// consume across a failover, and the quorum is described over SASL_SSL.
func TestControllerListenerSASLSSLScram(t *testing.T) {
	t.Parallel()
	ca, _, caFile, keystore := controllerCerts(t)
	c := harness.StartCluster(t, 3, harness.ClusterOptions{Env: []string{
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:SASL_SSL,PLAINTEXT:PLAINTEXT",
		"KAFKA_SSL_KEYSTORE_TYPE=PEM",
		"KAFKA_SSL_KEYSTORE_LOCATION=" + keystore,
		"KAFKA_SSL_TRUSTSTORE_TYPE=PEM",
		"KAFKA_SSL_TRUSTSTORE_LOCATION=" + caFile,
		"KAFKA_SASL_MECHANISM_CONTROLLER_PROTOCOL=SCRAM-SHA-512",
		"KAFKA_LISTENER_NAME_CONTROLLER_SASL_ENABLED_MECHANISMS=SCRAM-SHA-512",
		"KAFKA_CONTROLLER_USER=controller_user",
		"KAFKA_CONTROLLER_PASSWORD=controller-secret",
		"KAFKA_BROKER_SESSION_TIMEOUT_MS=3000", "KAFKA_BROKER_HEARTBEAT_INTERVAL_MS=500",
	}})
	ctx := testContext(t, 4*time.Minute)
	opts := []kgo.Opt{
		kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}),
		kgo.SASL(scram.Auth{User: "controller_user", Pass: "controller-secret"}.AsSha512Mechanism()),
	}
	// A wrong password over TLS is refused.
	bad := []kgo.Opt{opts[0], kgo.SASL(scram.Auth{User: "controller_user", Pass: "wrong"}.AsSha512Mechanism())}
	bcl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ControllerAddrs[0]), kgo.RequestRetries(0)}, bad...)...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bcl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrApiVersionsRequest())
	bcl.Close()
	if err == nil || !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("wrong SCRAM password on the controller listener: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	produceConsumeAcrossFailover(t, ctx, c, []int{0, 1, 2}, opts, "ctrlsec-sasl-ssl", 3)
}
