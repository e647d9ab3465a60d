package broker

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/harness/testcerts"
	"github.com/samsa-broker/samsa/config"
)

// jksFiles are JKS stores written by the JDK's keytool for a test.
type jksFiles struct {
	ca         *testcerts.CA
	client     testcerts.Pair
	caPool     *x509.CertPool
	keystore   string // key password key-pw, store password store-pw
	samePw     string // key password = store password = store-pw
	truststore string // the CA, store password trust-pw
	p12        string // the keystore as PKCS#12, store password store-pw
}

// keytoolJKS makes JKS stores with keytool (from a PKCS#12 store made by
// openssl), or skips the test when either tool is missing.
func keytoolJKS(t *testing.T) *jksFiles {
	t.Helper()
	keytool, err := exec.LookPath("keytool")
	if err != nil {
		t.Skip("keytool (a JDK) not found: cannot write JKS stores to read")
	}
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not found: cannot make the PKCS#12 store keytool converts to JKS")
	}
	dir := t.TempDir()
	ca := testcerts.NewCA("jks CA")
	srv := ca.Server("localhost", "127.0.0.1")
	f := &jksFiles{ca: ca, client: ca.Client(pkix.Name{CommonName: "app"}), caPool: ca.Pool()}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	certFile, keyFile, caFile := write("cert.pem", append(srv.CertPEM, ca.CertPEM...)), write("key.pem", srv.KeyPEM), write("ca.pem", ca.CertPEM)
	p12 := filepath.Join(dir, "srv.p12")
	f.p12 = p12
	run(openssl, "pkcs12", "-export", "-in", certFile, "-inkey", keyFile, "-name", "broker", "-out", p12, "-passout", "pass:store-pw")
	f.keystore, f.samePw, f.truststore = filepath.Join(dir, "ks.jks"), filepath.Join(dir, "same.jks"), filepath.Join(dir, "trust.jks")
	run(keytool, "-importkeystore", "-srckeystore", p12, "-srcstoretype", "PKCS12", "-srcstorepass", "store-pw", "-srcalias", "broker",
		"-destkeystore", f.keystore, "-deststoretype", "JKS", "-deststorepass", "store-pw", "-destkeypass", "key-pw", "-noprompt")
	run(keytool, "-importkeystore", "-srckeystore", p12, "-srcstoretype", "PKCS12", "-srcstorepass", "store-pw",
		"-destkeystore", f.samePw, "-deststoretype", "JKS", "-deststorepass", "store-pw", "-noprompt")
	run(keytool, "-importcert", "-file", caFile, "-alias", "ca", "-keystore", f.truststore, "-storetype", "JKS", "-storepass", "trust-pw", "-noprompt")
	for _, p := range []string{f.keystore, f.samePw, f.truststore} {
		if data, err := os.ReadFile(p); err != nil || !isJKS(data) {
			t.Fatalf("keytool did not write a JKS store to %s: %v", p, err)
		}
	}
	return f
}

// TestJKSStores reads keystores and truststores keytool writes, by
// ssl.*.type=JKS, sniffed, and with type PKCS12 (and a PKCS#12 store with
// type JKS), as the JDK's keystore.type.compat mode lets Kafka, and
// refuses wrong passwords naming the setting.
func TestJKSStores(t *testing.T) {
	f := keytoolJKS(t)
	if cert, err := loadKeystore(&config.TLSSettings{KeystoreType: "JKS", KeystoreLocation: f.p12, KeystorePassword: "store-pw"}); err != nil || cert.Leaf.Subject.CommonName != "localhost" {
		t.Errorf("PKCS#12 store with ssl.keystore.type=JKS: %v", err)
	}
	for _, typ := range []string{"JKS", "", "PKCS12"} {
		for _, s := range []*config.TLSSettings{
			{KeystoreType: typ, KeystoreLocation: f.keystore, KeystorePassword: "store-pw", KeyPassword: "key-pw"},
			{KeystoreType: typ, KeystoreLocation: f.samePw, KeystorePassword: "store-pw"}, // ssl.key.password defaults to the store's
		} {
			cert, err := loadKeystore(s)
			if err != nil {
				t.Errorf("type %q %s: %v", typ, filepath.Base(s.KeystoreLocation), err)
				continue
			}
			if cert.Leaf.Subject.CommonName != "localhost" || len(cert.Certificate) != 2 || cert.PrivateKey == nil {
				t.Errorf("type %q %s: leaf %v, chain of %d", typ, filepath.Base(s.KeystoreLocation), cert.Leaf.Subject, len(cert.Certificate))
			}
		}
		for _, pw := range []string{"trust-pw", ""} { // no password: no integrity check, as the JDK
			pool, err := loadTruststore(&config.TLSSettings{TruststoreType: typ, TruststoreLocation: f.truststore, TruststorePassword: pw})
			if err != nil || pool == nil || !pool.Equal(f.caPool) {
				t.Errorf("truststore type %q password %q: %v", typ, pw, err)
			}
		}
	}
	// The OAUTHBEARER JWKS client's truststore (ssl.truststore.* options
	// of the JAAS configuration) reads JKS too.
	certs, err := loadTruststoreCerts(&config.OAuthSettings{JWKSTruststoreLocation: f.truststore, JWKSTruststorePassword: "trust-pw"})
	if err != nil || len(certs) != 1 || !bytes.Equal(certs[0].Raw, pemDER(t, f.ca.CertPEM)) {
		t.Errorf("JWKS truststore: %d certificates, %v", len(certs), err)
	}
	refusals := []struct {
		name    string
		s       *config.TLSSettings
		trust   bool
		want    error
		setting string
	}{
		{"wrong store password", &config.TLSSettings{KeystoreLocation: f.keystore, KeystorePassword: "nope", KeyPassword: "key-pw"}, false, errJKSBadPassword, "ssl.keystore.password"},
		{"wrong key password", &config.TLSSettings{KeystoreLocation: f.keystore, KeystorePassword: "store-pw", KeyPassword: "nope"}, false, errJKSBadKeyPassword, "ssl.key.password"},
		{"key password unset but differs", &config.TLSSettings{KeystoreLocation: f.keystore, KeystorePassword: "store-pw"}, false, errJKSBadKeyPassword, "ssl.key.password"},
		{"no store password", &config.TLSSettings{KeystoreLocation: f.keystore}, false, errJKS, "ssl.keystore.password"},
		{"wrong truststore password", &config.TLSSettings{TruststoreLocation: f.truststore, TruststorePassword: "nope"}, true, errJKSBadPassword, "ssl.truststore.password"},
	}
	for _, r := range refusals {
		var err error
		if r.trust {
			_, err = loadTruststore(r.s)
		} else {
			_, err = loadKeystore(r.s)
		}
		if !errors.Is(err, r.want) || !strings.Contains(fmtErr(err), r.setting) {
			t.Errorf("%s: %v, want %v naming %s", r.name, err, r.want, r.setting)
		}
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestJKSBroker: a broker whose SSL listener has a JKS keystore and
// truststore serves franz-go over TLS (types sniffed) and over mTLS
// (ssl.*.type=JKS, ssl.client.auth=required, where a client without a
// certificate is refused), and wrong passwords stop it starting with an
// error that names the setting.
func TestJKSBroker(t *testing.T) {
	f := keytoolJKS(t)
	client := func(t *testing.T, addr string, withCert bool) *kgo.Client {
		tc := &tls.Config{RootCAs: f.caPool, ServerName: "127.0.0.1"}
		if withCert {
			pair, err := tls.X509KeyPair(f.client.CertPEM, f.client.KeyPEM)
			if err != nil {
				t.Fatal(err)
			}
			tc.Certificates = []tls.Certificate{pair}
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(tc), kgo.DefaultProduceTopic("jks"),
			kgo.RetryTimeout(5*time.Second), kgo.RequestRetries(2))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	roundTrip := func(t *testing.T, cl *kgo.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if !poll(30*time.Second, func() bool {
			resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "jks")
			return err == nil && resp.Err == nil
		}) {
			t.Fatal("CreateTopic over TLS failed")
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("over JKS")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	t.Run("TLS", func(t *testing.T) {
		c := startTestCluster(t, 1,
			"listener.security.protocol.map=PLAINTEXT:SSL,CONTROLLER:PLAINTEXT",
			"ssl.keystore.location="+f.keystore, "ssl.keystore.password=store-pw", "ssl.key.password=key-pw",
			"ssl.truststore.location="+f.truststore, "ssl.truststore.password=trust-pw")
		roundTrip(t, client(t, c.addr(0), false))
	})
	t.Run("mTLS", func(t *testing.T) {
		c := startTestCluster(t, 1,
			"listener.security.protocol.map=PLAINTEXT:SSL,CONTROLLER:PLAINTEXT", "ssl.client.auth=required",
			"ssl.keystore.type=JKS", "ssl.keystore.location="+f.samePw, "ssl.keystore.password=store-pw",
			"ssl.truststore.type=JKS", "ssl.truststore.location="+f.truststore, "ssl.truststore.password=trust-pw")
		roundTrip(t, client(t, c.addr(0), true))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := kadm.NewClient(client(t, c.addr(0), false)).ListTopics(ctx); err == nil {
			t.Error("a client without a certificate was served with ssl.client.auth=required")
		}
	})
	for _, r := range []struct{ name, setting string }{
		{"ssl.keystore.password=nope", "ssl.keystore.password"},
		{"ssl.key.password=nope", "ssl.key.password"},
		{"ssl.truststore.password=nope", "ssl.truststore.password"},
	} {
		args := []string{"--override", "node.id=1", "--override", "process.roles=broker,controller",
			"--override", "controller.quorum.voters=1@127.0.0.1:1", "--override", "controller.listener.names=CONTROLLER",
			"--override", "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
			"--override", "listener.security.protocol.map=PLAINTEXT:SSL,CONTROLLER:PLAINTEXT",
			"--override", "log.dirs=" + t.TempDir(),
			"--override", "ssl.keystore.location=" + f.keystore, "--override", "ssl.keystore.password=store-pw",
			"--override", "ssl.key.password=key-pw",
			"--override", "ssl.truststore.location=" + f.truststore, "--override", "ssl.truststore.password=trust-pw",
			"--override", r.name}
		cfg, err := config.Load(args, nil)
		if err != nil {
			t.Fatalf("%s: config: %v", r.name, err)
		}
		n, err := StartNode(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			n.Close(ctx)
			cancel()
			t.Errorf("%s: the broker started", r.name)
			continue
		}
		if !strings.Contains(err.Error(), r.setting) || !errors.Is(err, errJKS) {
			t.Errorf("%s: %v, want a JKS error naming %s", r.name, err, r.setting)
		}
	}
}

// writeJKS writes a JKS store of version 2 as the JDK lays it out (or of
// version 1, without certificate type names, when v1 is set): one
// private key entry protected with keyPassword (when key is not nil) and
// trusted certificate entries. It lets the reader's tests and the fuzz
// corpus run without a JDK; keytoolJKS checks the JDK's own files.
func writeJKS(storePassword, keyPassword string, key []byte, chain [][]byte, trusted [][]byte, v1 ...bool) []byte {
	version := uint32(2)
	if len(v1) > 0 && v1[0] {
		version = 1
	}
	var b bytes.Buffer
	u32 := func(v uint32) { binary.Write(&b, binary.BigEndian, v) }
	utf := func(s string) { binary.Write(&b, binary.BigEndian, uint16(len(s))); b.WriteString(s) }
	cert := func(der []byte) {
		if version == 2 {
			utf("X.509")
		}
		u32(uint32(len(der)))
		b.Write(der)
	}
	u32(jksMagic)
	u32(version)
	n := len(trusted)
	if key != nil {
		n++
	}
	u32(uint32(n))
	if key != nil {
		u32(jksPrivateKey)
		utf("broker")
		b.Write(make([]byte, 8))
		pw := jksPassword(keyPassword)
		salt := bytes.Repeat([]byte{7}, jksDigestSize)
		enc := append([]byte(nil), salt...)
		block := salt
		for off := 0; off < len(key); off += jksDigestSize {
			block = sha1Sum(pw, block)
			for i := off; i < len(key) && i < off+jksDigestSize; i++ {
				enc = append(enc, key[i]^block[i-off])
			}
		}
		enc = append(enc, sha1Sum(pw, key)...)
		info, err := asn1.Marshal(jksEncryptedKey{Algorithm: pkix.AlgorithmIdentifier{Algorithm: oidJKSKeyProtector, Parameters: asn1.NullRawValue}, EncryptedData: enc})
		if err != nil {
			panic(err)
		}
		u32(uint32(len(info)))
		b.Write(info)
		u32(uint32(len(chain)))
		for _, c := range chain {
			cert(c)
		}
	}
	for i, c := range trusted {
		u32(jksTrusted)
		utf("ca" + string(rune('0'+i)))
		b.Write(make([]byte, 8))
		cert(c)
	}
	b.Write(sha1Sum(jksPassword(storePassword), []byte("Mighty Aphrodite"), b.Bytes()))
	return b.Bytes()
}

func sha1Sum(parts ...[]byte) []byte {
	h := sha1.New()
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

func pemDER(t testing.TB, data []byte) []byte {
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatal("no PEM block")
	}
	return b.Bytes
}

// TestJKSHostile: stores written here read back, and truncated, lying or
// corrupted ones fail with errors, never a panic or a large allocation.
func TestJKSHostile(t *testing.T) {
	ca := testcerts.NewCA("jks hostile CA")
	srv := ca.Server("localhost")
	key, caDER, srvDER := pemDER(t, srv.KeyPEM), pemDER(t, ca.CertPEM), pemDER(t, srv.CertPEM)
	good := writeJKS("pw", "kpw", key, [][]byte{srvDER, caDER}, [][]byte{caDER})
	cert, err := jksKeyPair(good, "pw", "kpw")
	if err != nil || len(cert.Certificate) != 2 {
		t.Fatalf("written store: %v", err)
	}
	if certs, err := jksCertificates(good, "pw"); err != nil || len(certs) != 2 {
		t.Fatalf("written store as a truststore: %d certificates, %v", len(certs), err)
	}
	if cert, err := jksKeyPair(writeJKS("pw", "kpw", key, [][]byte{srvDER, caDER}, [][]byte{caDER}, true), "pw", "kpw"); err != nil || len(cert.Certificate) != 2 {
		t.Fatalf("version 1 store: %v", err)
	}
	for i := range len(good) {
		if _, err := parseJKS(good[:i], ""); err == nil {
			t.Fatalf("store truncated to %d bytes parsed", i)
		}
	}
	// A count of 2^32-1 entries, and a key of 2^32-1 bytes, in a small file.
	lying := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(lying[8:], 0xFFFFFFFF)
	if _, err := parseJKS(lying, ""); !errors.Is(err, errJKSMalformed) {
		t.Errorf("entry count 2^32-1: %v", err)
	}
	lying = append([]byte(nil), good...)
	off := 12 + 4 + 2 + len("broker") + 8
	binary.BigEndian.PutUint32(lying[off:], 0xFFFFFFFF)
	if _, err := parseJKS(lying, ""); !errors.Is(err, errJKSMalformed) {
		t.Errorf("key length 2^32-1: %v", err)
	}
	// A flipped byte in the body fails the integrity check.
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 1
	if _, err := parseJKS(flipped, "pw"); !errors.Is(err, errJKSBadPassword) {
		t.Errorf("corrupted store: %v", err)
	}
	if _, err := parseJKS(append([]byte{0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 3, 0, 0, 0, 0}, make([]byte, 20)...), ""); !errors.Is(err, errJKSUnsupported) {
		t.Errorf("version 3: %v", err)
	}
}

// FuzzJKS: no input makes the JKS reader panic, and what it accepts as a
// keystore has a leaf that matches its key.
func FuzzJKS(f *testing.F) {
	ca := testcerts.NewCA("jks fuzz CA")
	srv := ca.Server("localhost")
	key, caDER, srvDER := pemDER(f, srv.KeyPEM), pemDER(f, ca.CertPEM), pemDER(f, srv.CertPEM)
	f.Add(writeJKS("pw", "pw", key, [][]byte{srvDER, caDER}, [][]byte{caDER}))
	f.Add(writeJKS("pw", "pw", nil, nil, [][]byte{caDER}))
	f.Add([]byte{0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		// Without a password the integrity check is skipped, so mutations
		// reach the entry parser and the key protector.
		store, err := parseJKS(data, "")
		if err != nil {
			if !errors.Is(err, errJKS) {
				t.Fatalf("error outside errJKS: %v", err)
			}
			return
		}
		for _, e := range store.keys {
			if _, err := recoverJKSKey(e.protected, "pw"); err != nil && !errors.Is(err, errJKS) {
				t.Fatalf("key error outside errJKS: %v", err)
			}
		}
		cert, err := jksKeyPair(data, "pw", "")
		if err == nil && checkKeyMatches(cert.Leaf, cert.PrivateKey) != nil {
			t.Fatal("accepted a key that does not match its leaf")
		}
	})
}
