package broker

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/samsa-broker/samsa/compat-tests/harness/testcerts"
	"github.com/samsa-broker/samsa/config"
)

// TestTLSReload: a changed keystore file is served to new handshakes, one
// that does not load keeps the previous certificate, and an unchanged file
// does nothing.
func TestTLSReload(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA("reload CA")
	ks := filepath.Join(dir, "server.pem")
	write := func(data []byte) {
		t.Helper()
		if err := os.WriteFile(ks, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	first, second := ca.Server("localhost", "127.0.0.1"), ca.Server("localhost", "127.0.0.1")
	write(append(first.CertPEM, first.KeyPEM...))
	r, err := newTLSReloader("SSL", &config.TLSSettings{KeystoreLocation: ks, ClientAuth: "none", EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"}})
	if err != nil {
		t.Fatal(err)
	}
	serverCfg := r.config()
	served := func() []byte {
		t.Helper()
		c1, c2 := net.Pipe()
		defer c1.Close()
		defer c2.Close()
		go func() {
			s := tls.Server(c2, serverCfg)
			if s.Handshake() == nil {
				io.Copy(io.Discard, s)
			}
		}()
		cl := tls.Client(c1, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"})
		if err := cl.Handshake(); err != nil {
			t.Fatalf("handshake: %v", err)
		}
		return cl.ConnectionState().PeerCertificates[0].Raw
	}
	logger := slog.New(slog.DiscardHandler)
	if string(served()) != string(first.Cert.Raw) {
		t.Fatal("not the first certificate")
	}
	if r.reload(logger) {
		t.Fatal("reloaded an unchanged file")
	}
	clientCert := func() []byte { return r.client.Load().Certificates[0].Certificate[0] }
	if string(clientCert()) != string(first.Cert.Raw) {
		t.Fatal("the inter-broker client certificate is not the first")
	}
	write(append(second.CertPEM, second.KeyPEM...))
	if !r.reload(logger) || string(served()) != string(second.Cert.Raw) {
		t.Fatal("the rotated certificate is not served")
	}
	if string(clientCert()) != string(second.Cert.Raw) {
		t.Fatal("the inter-broker client certificate was not reloaded")
	}
	write(append(first.CertPEM, second.KeyPEM...)) // key of another certificate
	if r.reload(logger) || string(served()) != string(second.Cert.Raw) {
		t.Fatal("a keystore that does not load replaced the working one")
	}
	write(append(first.CertPEM, first.KeyPEM...))
	if !r.reload(logger) || string(served()) != string(first.Cert.Raw) {
		t.Fatal("the fixed keystore is not served")
	}
}
