package broker

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-broker/samsa/compat-tests/harness/testcerts"
)

// TestSecureInterBroker: a three-node cluster whose broker listener (also
// the inter-broker listener) is SASL_SSL with PLAIN. Followers fetch from
// leaders over TLS, authenticated with the JAAS username and password of
// the listener; a produce with acks=all to a topic with
// min.insync.replicas=3 succeeds only if every follower replicates.
func TestSecureInterBroker(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA("samsa inter-broker test CA")
	srv := ca.Server("localhost", "127.0.0.1")
	keystore, truststore := filepath.Join(dir, "server.pem"), filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(keystore, append(srv.CertPEM, srv.KeyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(truststore, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c := startTestCluster(t, 3,
		"listener.security.protocol.map=PLAINTEXT:SASL_SSL,CONTROLLER:PLAINTEXT",
		"ssl.keystore.location="+keystore,
		"ssl.truststore.location="+truststore,
		"sasl.enabled.mechanisms=PLAIN",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		`listener.name.plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-pw" user_broker="broker-pw" user_app="app-pw";`,
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr(0), c.addr(1), c.addr(2)),
		kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}), kgo.SASL(plain.Auth{User: "app", Pass: "app-pw"}.AsMechanism()),
		kgo.DefaultProduceTopic("replicated"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProduceRequestTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	mir := "3"
	if !poll(30*time.Second, func() bool {
		resp, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &mir}, "replicated")
		return err == nil && resp.Err == nil
	}) {
		t.Fatal("CreateTopic over SASL_SSL failed")
	}
	pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
	defer pcancel()
	for i := range 30 {
		if err := cl.ProduceSync(pctx, &kgo.Record{Partition: int32(i % 3), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce %d with acks=all and min.insync.replicas=3: %v", i, err)
		}
	}
}
