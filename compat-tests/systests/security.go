package systests

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/harness/testcerts"
)

// Security is the security_protocol axis of the system tests (kafka.py's
// security_protocol, interbroker_security_protocol, client_sasl_mechanism,
// interbroker_sasl_mechanism): the clients and the brokers' replication
// connections use a listener named after Protocol (SSL or SASL_SSL),
// beside the PLAINTEXT listener the scenarios administer the cluster
// through.
type Security struct {
	Protocol string // SSL or SASL_SSL
	// ClientMechanism and InterBrokerMechanism are PLAIN, SCRAM-SHA-256 or
	// SCRAM-SHA-512 (SASL_SSL only).
	ClientMechanism, InterBrokerMechanism string
}

// Name is a subtest name: "SSL" or "SASL_SSL/PLAIN/SCRAM-SHA-512".
func (s Security) Name() string {
	if s.Protocol != "SASL_SSL" {
		return s.Protocol
	}
	return s.Protocol + "/" + s.ClientMechanism + "/" + s.InterBrokerMechanism
}

// Secured is how clients reach a cluster started by StartSamsaSecure: the
// secured listeners' addresses and the client settings for them.
type Secured struct {
	Bootstrap   string
	Addrs       []string
	ClientProps []string // Java client properties
	opts        []kgo.Opt
}

// The users of the SASL_SSL clusters: admin is what the brokers log in to
// each other as; client is what the tools log in as. PLAIN users come from
// the listener's JAAS configuration, SCRAM users from the metadata log
// (AlterUserScramCredentials, as kafka-configs --add-config
// 'SCRAM-SHA-512=[password=...]' does).
const (
	adminUser, adminPassword   = "admin", "admin-secret"
	clientUser, clientPassword = "client", "client-secret"
)

// envKey is the KAFKA_* variable of a Kafka setting, as the apache/kafka
// image maps them ("-" is "___", "_" is "__", "." is "_").
func envKey(setting string) string {
	return "KAFKA_" + strings.ToUpper(strings.NewReplacer("-", "___", "_", "__", ".", "_").Replace(setting))
}

func jaas(mechanism, user, password string, extra string) string {
	module := "org.apache.kafka.common.security.scram.ScramLoginModule"
	if mechanism == "PLAIN" {
		module = "org.apache.kafka.common.security.plain.PlainLoginModule"
	}
	return fmt.Sprintf(`%s required username="%s" password="%s"%s;`, module, user, password, extra)
}

// StartSamsaSecure starts n samsa nodes (as StartSamsa) with a listener
// named sec.Protocol beside PLAINTEXT, used between the brokers
// (inter.broker.listener.name) and by the clients: TLS with certificates
// of a CA made for the test (SSL: client certificates required), and SASL
// PLAIN and SCRAM users for SASL_SSL. It returns once every node's secured
// listener takes a logged-in client.
func StartSamsaSecure(t testing.TB, n int, settings map[string]string, sec Security) (Cluster, *Secured) {
	t.Helper()
	all, s := secureSettings(t, sec.Protocol, sec)
	for k, v := range settings {
		all[k] = v
	}
	// The secured listeners' ports come from below the ephemeral range
	// (harness.FreePorts), as the nodes' other ports: a node restarted
	// by a scenario binds its port again, and a port the kernel handed
	// out for "127.0.0.1:0" could be taken meanwhile by any outgoing
	// connection ("bind: address already in use" at a SASL_SSL restart
	// under load).
	for _, p := range harness.FreePorts(t, n) {
		s.Addrs = append(s.Addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	}
	c := startSamsa(t, n, all, nil, func(id int) string { return sec.Protocol + "://" + s.Addrs[id-1] })
	s.ready(t, c, sec)
	return c, s
}

// StartKafkaSecure is StartSamsaSecure on Kafka 4.4 (kafka-ref.sh): the
// secured listener is the one kafka-ref.sh names SSL, its protocol set to
// sec.Protocol.
func StartKafkaSecure(t testing.TB, n int, settings map[string]string, sec Security) (Cluster, *Secured) {
	t.Helper()
	all, s := secureSettings(t, "SSL", sec)
	for k, v := range settings {
		all[k] = v
	}
	c := startKafka(t, n, all, nil, true)
	s.Addrs = c.c.SSLAddrs()
	s.ready(t, c, sec)
	return c, s
}

// secureSettings returns the broker settings of a listener named listener
// secured as sec, with certificates made for the test, and the client
// side of it.
func secureSettings(t testing.TB, listener string, sec Security) (map[string]string, *Secured) {
	t.Helper()
	dir := t.TempDir()
	ca := testcerts.NewCA("samsa systests CA")
	node := ca.Server("localhost", "127.0.0.1")
	cli := ca.Client(pkix.Name{CommonName: "systests-client"})
	caFile, nodeStore, clientStore := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "node.pem"), filepath.Join(dir, "client.pem")
	for name, data := range map[string][]byte{
		caFile:      ca.CertPEM,
		nodeStore:   append(append([]byte{}, node.CertPEM...), node.KeyPEM...),
		clientStore: append(append([]byte{}, cli.CertPEM...), cli.KeyPEM...),
	} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ln := strings.ToLower(listener)
	all := map[string]string{
		"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT," + listener + ":" + sec.Protocol,
		"inter.broker.listener.name":     listener,
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.location":          nodeStore,
		"ssl.truststore.type":            "PEM",
		"ssl.truststore.location":        caFile,
	}
	clientProps := []string{"security.protocol=" + sec.Protocol,
		"ssl.truststore.type=PEM", "ssl.truststore.location=" + caFile}
	tlsCfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	opts := []kgo.Opt{kgo.DialTLSConfig(tlsCfg)}
	switch sec.Protocol {
	case "SSL":
		all["listener.name."+ln+".ssl.client.auth"] = "required"
		clientProps = append(clientProps, "ssl.keystore.type=PEM", "ssl.keystore.location="+clientStore)
		tlsCfg.Certificates = []tls.Certificate{cli.TLS()}
	case "SASL_SSL":
		all["sasl.enabled.mechanisms"] = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
		all["sasl.mechanism.inter.broker.protocol"] = sec.InterBrokerMechanism
		users := fmt.Sprintf(` user_%s="%s" user_%s="%s"`, adminUser, adminPassword, clientUser, clientPassword)
		all["listener.name."+ln+".plain.sasl.jaas.config"] = jaas("PLAIN", adminUser, adminPassword, users)
		for _, m := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
			all["listener.name."+ln+"."+strings.ToLower(m)+".sasl.jaas.config"] = jaas(m, adminUser, adminPassword, "")
		}
		clientProps = append(clientProps, "sasl.mechanism="+sec.ClientMechanism,
			"sasl.jaas.config="+jaas(sec.ClientMechanism, clientUser, clientPassword, ""))
		opts = append(opts, kgo.SASL(mechanism(sec.ClientMechanism, clientUser, clientPassword)))
	default:
		t.Fatalf("systests: security protocol %q", sec.Protocol)
	}
	return all, &Secured{ClientProps: clientProps, opts: opts}
}

// ready creates the SCRAM users (SASL_SSL) and waits until every secured
// listener takes a login.
func (s *Secured) ready(t testing.TB, c Cluster, sec Security) {
	t.Helper()
	s.Bootstrap = strings.Join(s.Addrs, ",")
	if sec.Protocol == "SASL_SSL" {
		createScramUsers(t, c)
	}
	for _, a := range s.Addrs {
		s.waitLogin(t, a, 120*time.Second)
	}
}

func mechanism(m, user, password string) sasl.Mechanism {
	switch m {
	case "PLAIN":
		return plain.Auth{User: user, Pass: password}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	default:
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
	}
}

// createScramUsers creates the SCRAM credentials of both users for both
// mechanisms through the PLAINTEXT listener.
func createScramUsers(t testing.TB, c Cluster) {
	t.Helper()
	adm, ctx, done := admin(t, c)
	defer done()
	// One request per mechanism: Kafka answers DUPLICATE_RESOURCE to a user
	// named twice in one request, whatever the mechanisms.
	for _, m := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
		var up []kadm.UpsertSCRAM
		for _, u := range [][2]string{{adminUser, adminPassword}, {clientUser, clientPassword}} {
			up = append(up, kadm.UpsertSCRAM{User: u[0], Mechanism: m, Iterations: 4096, Password: u[1]})
		}
		res, err := adm.AlterUserSCRAMs(ctx, nil, up)
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatalf("systests: creating %v users: %v", m, err)
		}
	}
}

// waitLogin polls until addr's secured listener answers Metadata to a
// client with the test's TLS (and SASL) settings.
func (s *Secured) waitLogin(t testing.TB, addr string, d time.Duration) {
	t.Helper()
	var last error
	if !Poll(d, func() bool {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}, s.opts...)...)
		if err != nil {
			last = err
			return false
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, last = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return last == nil
	}) {
		t.Fatalf("systests: the secured listener %s takes no login within %v: %v", addr, d, last)
	}
}
