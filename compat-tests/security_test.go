// This file runs real clients against the samsa binary's secured listeners,
// configured the way a docker-compose file configures apache/kafka: KAFKA_*
// environment variables for the ssl.* and sasl.* settings, and bitnami's
// KAFKA_CLIENT_USERS/KAFKA_CLIENT_PASSWORDS. Certificates are generated per
// test run (compat-tests/harness/testcerts); no key is committed.

package compattests

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/harness/testcerts"
)

// secureBroker is a samsa process with PLAINTEXT (for administration), SSL
// with required client certificates, and SASL_SSL (SCRAM-SHA-512 and
// PLAIN) listeners, and the PEM files clients need.
type secureBroker struct {
	b                         *harness.Broker
	sslAddr, saslAddr         string
	caFile, certFile, keyFile string
	ca                        *testcerts.CA
	client                    testcerts.Pair
}

// loopbackPort is a free loopback port from below the ephemeral range
// (harness.FreePorts), which a restarted broker can bind again.
func loopbackPort(t *testing.T) int {
	t.Helper()
	return harness.FreePorts(t, 1)[0]
}

func startSecureBroker(t *testing.T) *secureBroker {
	t.Helper()
	dir := t.TempDir()
	ca := testcerts.NewCA("samsa compat CA")
	srv := ca.Server("localhost", "127.0.0.1")
	cli := ca.Client(pkix.Name{CommonName: "compat-client", Organization: []string{"samsa"}})
	s := &secureBroker{
		caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "client.pem"), keyFile: filepath.Join(dir, "client.key"),
		ca: ca, client: cli,
	}
	keystore := filepath.Join(dir, "server.pem")
	for name, data := range map[string][]byte{
		s.caFile: ca.CertPEM, s.certFile: cli.CertPEM, s.keyFile: cli.KeyPEM, keystore: append(srv.CertPEM, srv.KeyPEM...),
	} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.sslAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(loopbackPort(t)))
	s.saslAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(loopbackPort(t)))
	s.b = harness.Start(t, harness.Options{
		ListenersExtra: "SSL://" + s.sslAddr + ",SASL_SSL://" + s.saslAddr,
		Env: []string{
			"KAFKA_SSL_KEYSTORE_TYPE=PEM",
			"KAFKA_SSL_KEYSTORE_LOCATION=" + keystore,
			"KAFKA_SSL_TRUSTSTORE_TYPE=PEM",
			"KAFKA_SSL_TRUSTSTORE_LOCATION=" + s.caFile,
			"KAFKA_LISTENER_NAME_SSL_SSL_CLIENT_AUTH=required",
			"KAFKA_SASL_ENABLED_MECHANISMS=SCRAM-SHA-512,PLAIN",
			`KAFKA_LISTENER_NAME_SASL__SSL_PLAIN_SASL_JAAS_CONFIG=org.apache.kafka.common.security.plain.PlainLoginModule required user_paul="paul-secret";`,
			"KAFKA_CLIENT_USERS=carol",
			"KAFKA_CLIENT_PASSWORDS=carol-secret",
		},
	})
	return s
}

func (s *secureBroker) tlsConfig(withCert bool) *tls.Config {
	tc := &tls.Config{RootCAs: s.ca.Pool(), ServerName: "127.0.0.1"}
	if withCert {
		tc.Certificates = []tls.Certificate{s.client.TLS()}
	}
	return tc
}

// TestSecurityClients: franz-go, kcat (librdkafka) and
// confluent-kafka-python produce and consume over SASL_SSL with
// SCRAM-SHA-512 (a credential created with kafka-configs' request,
// AlterUserScramCredentials) and over mutual TLS; a wrong password gets
// SASL_AUTHENTICATION_FAILED and a client without TLS is refused.
func TestSecurityClients(t *testing.T) {
	s := startSecureBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(s.b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret"}})
	if err != nil || res.Error() != nil {
		t.Fatalf("AlterUserSCRAMs: %v %v", err, res.Error())
	}
	for _, topic := range []string{"sec-franz-scram", "sec-franz-mtls", "sec-kcat-scram", "sec-kcat-mtls", "sec-python-scram", "sec-franz-bitnami"} {
		if r, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || r.Err != nil {
			t.Fatalf("CreateTopic %s: %v %v", topic, err, r.Err)
		}
	}

	franz := func(t *testing.T, topic string, opts ...kgo.Opt) {
		cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("hello " + topic)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil || len(fs.Records()) != 1 || string(fs.Records()[0].Value) != "hello "+topic {
			t.Fatalf("consume: %v %v", err, fs.Records())
		}
	}
	t.Run("franz-go SASL_SSL SCRAM-SHA-512", func(t *testing.T) {
		franz(t, "sec-franz-scram", kgo.SeedBrokers(s.saslAddr), kgo.DialTLSConfig(s.tlsConfig(false)), kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()))
	})
	t.Run("franz-go SASL_SSL SCRAM-SHA-512 bitnami user", func(t *testing.T) {
		franz(t, "sec-franz-bitnami", kgo.SeedBrokers(s.saslAddr), kgo.DialTLSConfig(s.tlsConfig(false)), kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism()))
	})
	t.Run("franz-go mTLS", func(t *testing.T) {
		franz(t, "sec-franz-mtls", kgo.SeedBrokers(s.sslAddr), kgo.DialTLSConfig(s.tlsConfig(true)))
	})
	t.Run("franz-go wrong password", func(t *testing.T) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.saslAddr), kgo.DialTLSConfig(s.tlsConfig(false)), kgo.SASL(scram.Auth{User: "bob", Pass: "not-it"}.AsSha512Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("Ping with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	})
	t.Run("franz-go without TLS to the SSL listener", func(t *testing.T) {
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		defer pcancel()
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.sslAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.Ping(pctx); err == nil {
			t.Fatal("a plaintext client was served by the SSL listener")
		}
	})

	t.Run("kcat", func(t *testing.T) {
		kcat := lookTool(t, "kcat")
		scramArgs := []string{"-b", s.saslAddr, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
			"-X", "sasl.username=bob", "-X", "sasl.password=bob-secret", "-X", "ssl.ca.location=" + s.caFile}
		mtlsArgs := []string{"-b", s.sslAddr, "-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + s.caFile,
			"-X", "ssl.certificate.location=" + s.certFile, "-X", "ssl.key.location=" + s.keyFile}
		for _, tc := range []struct {
			topic string
			args  []string
		}{{"sec-kcat-scram", scramArgs}, {"sec-kcat-mtls", mtlsArgs}} {
			run := func(stdin string, extra ...string) string {
				cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
				defer ccancel()
				cmd := exec.CommandContext(cctx, kcat, append(append([]string{}, tc.args...), extra...)...)
				cmd.Stdin = strings.NewReader(stdin)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("kcat %v: %v\n%s", extra, err, out)
				}
				return string(out)
			}
			run("one\ntwo\nthree\n", "-P", "-t", tc.topic)
			if out := run("", "-C", "-t", tc.topic, "-o", "beginning", "-c", "3", "-e"); !strings.Contains(out, "one\ntwo\nthree") {
				t.Fatalf("kcat %s consumed %q", tc.topic, out)
			}
		}
		// A wrong password: librdkafka reports the broker's message.
		cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
		defer ccancel()
		bad := append(append([]string{}, scramArgs...), "-X", "sasl.password=wrong", "-L", "-m", "5")
		for i, a := range bad {
			if a == "sasl.password=bob-secret" {
				bad[i] = "sasl.password=wrong"
			}
		}
		out, err := exec.CommandContext(cctx, kcat, bad...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "Authentication failed") {
			t.Fatalf("kcat with a wrong password: %v\n%s", err, out)
		}
	})

	t.Run("confluent-kafka-python", func(t *testing.T) {
		py := pythonWith(t, "confluent_kafka")
		script := fmt.Sprintf(`
import sys
from confluent_kafka import Producer, Consumer
conf = {"bootstrap.servers": %q, "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "bob", "sasl.password": "bob-secret", "ssl.ca.location": %q}
p = Producer(conf)
for i in range(10):
    p.produce("sec-python-scram", value=b"py-%%d" %% i)
assert p.flush(30) == 0
c = Consumer(dict(conf, **{"group.id": "sec-python", "auto.offset.reset": "earliest"}))
c.subscribe(["sec-python-scram"])
got = []
while len(got) < 10:
    m = c.poll(30)
    if m is None:
        sys.exit("timed out after %%d records" %% len(got))
    if m.error():
        sys.exit(str(m.error()))
    got.append(m.value())
c.close()
assert got == [b"py-%%d" %% i for i in range(10)], got
print("ok")
`, s.saslAddr, s.caFile)
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Minute)
		defer ccancel()
		out, err := exec.CommandContext(cctx, py, "-c", script).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "ok") {
			t.Fatalf("python: %v\n%s", err, out)
		}
	})
}

// javaSecurityChecks are the checks of samsa.compat.SecurityChecks.
var javaSecurityChecks = []string{"scram-admin", "sasl-ssl-scram-sha-512", "sasl-ssl-wrong-password", "mtls"}

// TestJavaSecurity runs samsa.compat.SecurityChecks (kafka-clients 4.4.0):
// Admin.alterUserScramCredentials, SASL_SSL with SCRAM-SHA-512, a wrong
// password (SaslAuthenticationException) and mutual TLS with PEM stores.
func TestJavaSecurity(t *testing.T) {
	t.Parallel()
	cp := javaClasspath(t)
	s := startSecureBroker(t)
	clientPem := filepath.Join(filepath.Dir(s.caFile), "client-store.pem")
	if err := os.WriteFile(clientPem, append(append([]byte{}, s.client.CertPEM...), s.client.KeyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	reportJavaChecks(t, runJavaChecks(t, cp, "samsa.compat.SecurityChecks", s.b.Addr, s.saslAddr, s.sslAddr, s.caFile, clientPem, "all"), javaSecurityChecks)
}
