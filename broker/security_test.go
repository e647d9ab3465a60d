package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-broker/samsa/compat-tests/harness/testcerts"
	"github.com/samsa-broker/samsa/config"
)

// secureNode is a node with one listener of each protocol, in this order:
// PLAINTEXT, SSL (client certificates required), SASL_SSL and
// SASL_PLAINTEXT (PLAIN and SCRAM-SHA-512 on both SASL listeners).
type secureNode struct {
	n                                  *Node
	plain, ssl, saslSSL, saslPlaintext string
	ca                                 *testcerts.CA
	client                             testcerts.Pair
}

func startSecureNode(t *testing.T, extra ...string) *secureNode {
	t.Helper()
	dir := t.TempDir()
	ca := testcerts.NewCA("samsa test CA")
	srv := ca.Server("localhost", "127.0.0.1")
	keystore := filepath.Join(dir, "server.pem")
	truststore := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(keystore, append(srv.CertPEM, srv.KeyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(truststore, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`
	args := []string{
		"listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"log.dirs=" + filepath.Join(dir, "data"),
		"ssl.keystore.location=" + keystore,
		"ssl.keystore.type=PEM",
		"ssl.truststore.location=" + truststore,
		"ssl.truststore.type=PEM",
		"listener.name.ssl.ssl.client.auth=required",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
		"listener.name.sasl_ssl.plain.sasl.jaas.config=" + jaas,
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + jaas,
	}
	args = append(args, extra...)
	var flags []string
	for _, a := range args {
		flags = append(flags, "--override", a)
	}
	cfg, err := config.Load(flags, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := StartNode(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeTestNode(t, n) })
	addrs := n.Addrs()
	return &secureNode{
		n: n, plain: addrs[0].String(), ssl: addrs[1].String(), saslSSL: addrs[2].String(), saslPlaintext: addrs[3].String(),
		ca: ca, client: ca.Client(pkix.Name{CommonName: "alice", Organization: []string{"example"}}),
	}
}

func (s *secureNode) tls(withCert bool) *tls.Config {
	tc := &tls.Config{RootCAs: s.ca.Pool(), ServerName: "127.0.0.1"}
	if withCert {
		tc.Certificates = []tls.Certificate{s.client.TLS()}
	}
	return tc
}

// roundTrip produces one record to topic and reads it back with a client
// built from opts.
func roundTrip(t *testing.T, topic string, opts ...kgo.Opt) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RequestRetries(1), kgo.RetryTimeout(5*time.Second))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("secret " + topic)}).FirstErr(); err != nil {
		return err
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return err
		}
		if recs := fs.Records(); len(recs) > 0 {
			if string(recs[0].Value) != "secret "+topic {
				t.Fatalf("read %q", recs[0].Value)
			}
			return nil
		}
	}
}

// TestSecureListeners drives every listener protocol with franz-go:
// mutual TLS, SASL_SSL with SCRAM-SHA-512 (credentials created with
// AlterUserScramCredentials), SASL_PLAINTEXT with PLAIN users from the
// listener's JAAS configuration, and the refusals: a wrong password is
// SASL_AUTHENTICATION_FAILED, a client without TLS or without a client
// certificate cannot connect to the SSL listener.
func TestSecureListeners(t *testing.T) {
	s := startSecureNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("mTLS", func(t *testing.T) {
		if err := roundTrip(t, "mtls", kgo.SeedBrokers(s.ssl), kgo.DialTLSConfig(s.tls(true))); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("SSL without client certificate", func(t *testing.T) {
		if err := requestErr(kgo.SeedBrokers(s.ssl), kgo.DialTLSConfig(s.tls(false))); err == nil {
			t.Fatal("a client without certificate was served on a listener with ssl.client.auth=required")
		}
	})
	t.Run("plaintext client to SSL listener", func(t *testing.T) {
		expectClosed(t, s.ssl, apiVersionsFrame())
	})

	// SCRAM credentials through the admin API, on the PLAINTEXT listener.
	admCl, err := kgo.NewClient(kgo.SeedBrokers(s.plain))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-secret"}})
	if err != nil || res.Error() != nil {
		t.Fatalf("AlterUserSCRAMs: %v %v", err, res.Error())
	}
	desc, err := adm.DescribeUserSCRAMs(ctx, "bob")
	if err != nil || desc.Error() != nil || len(desc["bob"].CredInfos) != 1 || desc["bob"].CredInfos[0].Iterations != 4096 {
		t.Fatalf("DescribeUserSCRAMs: %v %+v", err, desc)
	}

	scramAuth := func(user, pw string) sasl.Mechanism {
		return scram.Auth{User: user, Pass: pw}.AsSha512Mechanism()
	}
	t.Run("SASL_SSL SCRAM-SHA-512", func(t *testing.T) {
		if err := roundTrip(t, "scram", kgo.SeedBrokers(s.saslSSL), kgo.DialTLSConfig(s.tls(false)), kgo.SASL(scramAuth("bob", "bob-secret"))); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("SASL_SSL SCRAM-SHA-512 wrong password", func(t *testing.T) {
		err := requestErr(kgo.SeedBrokers(s.saslSSL), kgo.DialTLSConfig(s.tls(false)), kgo.SASL(scramAuth("bob", "nope")))
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("err %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	})
	t.Run("SASL_SSL SCRAM unknown user", func(t *testing.T) {
		err := requestErr(kgo.SeedBrokers(s.saslSSL), kgo.DialTLSConfig(s.tls(false)), kgo.SASL(scramAuth("mallory", "x")))
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("err %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	})
	t.Run("SASL_PLAINTEXT PLAIN", func(t *testing.T) {
		if err := roundTrip(t, "plain", kgo.SeedBrokers(s.saslPlaintext), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("SASL_PLAINTEXT PLAIN wrong password", func(t *testing.T) {
		err := requestErr(kgo.SeedBrokers(s.saslPlaintext), kgo.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()))
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("err %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	})
	t.Run("SASL listener without authentication", func(t *testing.T) {
		// ApiVersions is served, Metadata closes the connection.
		conn, err := net.Dial("tcp", s.saslPlaintext)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := conn.Write(apiVersionsFrame()); err != nil {
			t.Fatal(err)
		}
		if _, err := readFrame(conn); err != nil {
			t.Fatalf("ApiVersions before authentication: %v", err)
		}
		if _, err := conn.Write(requestFrame(kmsg.NewPtrMetadataRequest(), 2)); err != nil {
			t.Fatal(err)
		}
		if _, err := readFrame(conn); err == nil {
			t.Fatal("Metadata answered before authentication")
		}
	})
	t.Run("ApiVersions v5 cluster check only once authenticated", func(t *testing.T) {
		// Kafka 4.4 answers REBOOTSTRAP_REQUIRED to a client naming another
		// cluster (KIP-1242), but its SaslServerAuthenticator does not
		// check before authentication: franz-go sends the cluster id in
		// its first ApiVersions, before SASL.
		other := "another-cluster"
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 5, "test", "1.0"
		req.ClusterID, req.NodeID = &other, 1
		for _, c := range []struct {
			addr string
			want int16
		}{{s.saslPlaintext, 0}, {s.plain, kerr.RebootstrapRequired.Code}} {
			conn, err := net.Dial("tcp", c.addr)
			if err != nil {
				t.Fatal(err)
			}
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := conn.Write(requestFrame(req, 1)); err != nil {
				t.Fatal(err)
			}
			body, err := readFrame(conn)
			conn.Close()
			if err != nil {
				t.Fatal(err)
			}
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.Version = 5
			if err := resp.ReadFrom(body[4:]); err != nil || resp.ErrorCode != c.want {
				t.Fatalf("%s: %v, error %d, want %d", c.addr, err, resp.ErrorCode, c.want)
			}
		}
	})
	t.Run("SASL handshake v0 with a bare PLAIN token", func(t *testing.T) {
		conn, err := net.Dial("tcp", s.saslPlaintext)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(20 * time.Second))
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 0, "PLAIN"
		conn.Write(requestFrame(hs, 1))
		body, err := readFrame(conn)
		if err != nil {
			t.Fatal(err)
		}
		resp := kmsg.NewPtrSASLHandshakeResponse()
		if err := resp.ReadFrom(body[4:]); err != nil || resp.ErrorCode != 0 {
			t.Fatalf("handshake: %v %d", err, resp.ErrorCode)
		}
		token := []byte("\x00alice\x00alice-secret")
		conn.Write(binary.BigEndian.AppendUint32(nil, uint32(len(token))))
		conn.Write(token)
		if b, err := readFrame(conn); err != nil || len(b) != 0 {
			t.Fatalf("bare token answer %q %v, want an empty frame", b, err)
		}
		// Authenticated: Metadata is served now.
		conn.Write(requestFrame(kmsg.NewPtrMetadataRequest(), 3))
		if _, err := readFrame(conn); err != nil {
			t.Fatalf("Metadata after authentication: %v", err)
		}
	})
	t.Run("unsupported mechanism", func(t *testing.T) {
		conn, err := net.Dial("tcp", s.saslPlaintext)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(20 * time.Second))
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "GSSAPI"
		conn.Write(requestFrame(hs, 1))
		body, err := readFrame(conn)
		if err != nil {
			t.Fatal(err)
		}
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.Version = 1
		if err := resp.ReadFrom(body[4:]); err != nil || resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(resp.SupportedMechanisms) != 2 {
			t.Fatalf("handshake: %v %+v", err, resp)
		}
		if _, err := readFrame(conn); err == nil {
			t.Fatal("connection stayed open after an unsupported mechanism")
		}
	})
}

// requestErr is the error of one Metadata request by a client built from
// opts (a failed authentication is not retried by franz-go).
func requestErr(opts ...kgo.Opt) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	_, err = cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	return err
}

func apiVersionsFrame() []byte {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	return requestFrame(req, 1)
}

// requestFrame encodes req (at its Version) with a v1 header.
func requestFrame(req kmsg.Request, corr int32) []byte {
	var b []byte
	b = append(b, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// readFrame reads one size-prefixed frame and returns it without the size.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(r, b)
	return b, err
}

// expectClosed sends frame to addr over plain TCP and expects the
// connection to close without an answer.
func expectClosed(t *testing.T, addr string, frame []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	conn.Write(frame)
	b, err := readFrame(conn)
	if err == nil {
		t.Fatalf("answered %d bytes", len(b))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("connection neither answered nor closed")
	}
}
