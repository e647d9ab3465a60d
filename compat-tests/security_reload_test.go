package compattests

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/harness/testcerts"
)

// TestCertificateRotation rotates an SSL listener's keystore file under a
// live franz-go client: the client's open connections keep producing and
// consuming, new connections get the new certificate (a client trusting
// only the new CA connects once the broker re-read the file, one trusting
// only the old CA no longer does), and a keystore that does not load
// leaves the working certificate in place.
func TestCertificateRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	oldCA, newCA := testcerts.NewCA("rotation CA 1"), testcerts.NewCA("rotation CA 2")
	ks := filepath.Join(dir, "server.pem")
	writeKeystore := func(p testcerts.Pair) {
		t.Helper()
		// Write and rename, as cert-manager and certbot do, so the broker
		// never reads half a file.
		tmp := ks + ".tmp"
		if err := os.WriteFile(tmp, append(append([]byte{}, p.CertPEM...), p.KeyPEM...), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, ks); err != nil {
			t.Fatal(err)
		}
	}
	writeKeystore(oldCA.Server("localhost", "127.0.0.1"))
	sslAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(loopbackPort(t)))
	b := harness.Start(t, harness.Options{
		ListenersExtra: "SSL://" + sslAddr,
		Env:            []string{"KAFKA_SSL_KEYSTORE_TYPE=PEM", "KAFKA_SSL_KEYSTORE_LOCATION=" + ks},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admCl, adm := newAdmin(t, b.Addr)
	const topic = "rotation"
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("CreateTopic: %v %v", err, r.Err)
	}
	trusting := func(ca *testcerts.CA, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(sslAddr), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	live := trusting(oldCA, kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer live.Close()
	roundTrip := func(what string, n int) {
		t.Helper()
		if err := live.ProduceSync(ctx, &kgo.Record{Value: []byte(what)}).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", what, err)
		}
		got := 0
		for got < n {
			fs := live.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("%s: consume: %v", what, err)
			}
			got += len(fs.Records())
		}
	}
	roundTrip("before rotation", 1)

	writeKeystore(newCA.Server("localhost", "127.0.0.1"))
	// The broker checks its files every 2 s: poll until a client that
	// trusts only the new CA gets in.
	deadline := time.Now().Add(60 * time.Second)
	for {
		cl := trusting(newCA)
		err := cl.Ping(ctx)
		cl.Close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new certificate is not served a minute after the rotation: %v", err)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	pctx, pcancel := context.WithTimeout(ctx, 15*time.Second)
	old := trusting(oldCA)
	if err := old.Ping(pctx); err == nil {
		t.Error("a new connection trusting only the old CA still got in after the rotation")
	}
	old.Close()
	pcancel()
	roundTrip("after rotation, on the connections opened before", 1)

	// A broken keystore is not taken: the new certificate stays.
	if err := os.WriteFile(ks, []byte("-----BEGIN CERTIFICATE-----\nnot a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Wait for the broker's log line rather than a fixed time.
	deadline = time.Now().Add(60 * time.Second)
	for !strings.Contains(b.Output(), "does not load; keeping the previous certificate") {
		if time.Now().After(deadline) {
			t.Fatal("the broker did not report the broken keystore within a minute")
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	cl := trusting(newCA)
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("after a broken keystore was written: %v", err)
	}
	cl.Close()

	// The dynamic update Kafka does: IncrementalAlterConfigs of
	// listener.name.ssl.ssl.keystore.location on this broker's resource.
	// Answers checked against Kafka 4.4 (codes and messages' shape).
	thirdCA := testcerts.NewCA("rotation CA 3")
	write := func(name string, data []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	third := thirdCA.Server("localhost", "127.0.0.1")
	thirdFile := write("third.pem", append(append([]byte{}, third.CertPEM...), third.KeyPEM...))
	other := thirdCA.Server("other.example")
	otherFile := write("other.pem", append(append([]byte{}, other.CertPEM...), other.KeyPEM...))
	caOnly := write("ca-only.pem", thirdCA.CertPEM)
	alter := func(resource, key, value string) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, resource
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = key, kmsg.StringPtr(value)
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, admCl)
		if err != nil {
			t.Fatal(err)
		}
		msg := ""
		if m := resp.Resources[0].ErrorMessage; m != nil {
			msg = *m
		}
		return resp.Resources[0].ErrorCode, msg
	}
	for _, tc := range []struct {
		resource, key, value string
		code                 int16
		msg                  string
	}{
		{"1", "listener.name.ssl.ssl.keystore.location", filepath.Join(dir, "missing.pem"), kerr.InvalidRequest.Code, "Validation of dynamic config update of SSLFactory failed"},
		{"1", "listener.name.ssl.ssl.keystore.location", caOnly, kerr.InvalidRequest.Code, "Validation of dynamic config update of SSLFactory failed"},
		{"1", "listener.name.ssl.ssl.keystore.location", otherFile, kerr.InvalidRequest.Code, "DistinguishedName does not match"},
		{"", "listener.name.ssl.ssl.keystore.location", thirdFile, kerr.InvalidRequest.Code, "Cannot update these configs at default cluster level, broker id must be specified: [listener.name.ssl.ssl.keystore.location]"},
		{"1", "ssl.keystore.location", thirdFile, kerr.InvalidRequest.Code, "These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.keystore.location]"},
		{"1", "listener.name.ssl.ssl.keystore.location", thirdFile, 0, ""},
	} {
		code, msg := alter(tc.resource, tc.key, tc.value)
		if code != tc.code || !strings.Contains(msg, tc.msg) {
			t.Errorf("%q %s=%s: code %d %q, want %d %q", tc.resource, tc.key, filepath.Base(tc.value), code, msg, tc.code, tc.msg)
		}
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		cl := trusting(thirdCA)
		err := cl.Ping(ctx)
		cl.Close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the keystore set by IncrementalAlterConfigs is not served a minute later: %v", err)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	roundTrip("after the dynamic update, on the connections opened before", 1)
}
