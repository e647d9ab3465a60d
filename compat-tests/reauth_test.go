package compattests

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// reauthMetric reads the listener's counter name (without its prefix)
// from samsa's /metrics at addr.
func reauthMetric(t *testing.T, addr, listener, name string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	prefix := "kafka_server_socket_server_metrics_" + name + `{listener="` + listener + `"`
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, prefix) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return int64(v)
		}
	}
	t.Fatalf("no %s for listener %s on /metrics", name, listener)
	return 0
}

// TestClientsReauthenticate: kafka-clients 4.4 (producer and consumer) and
// franz-go over SASL_PLAINTEXT with PLAIN, SCRAM-SHA-512 and unsecured
// OAUTHBEARER, and confluent-kafka (librdkafka 2.x) with PLAIN and
// SCRAM-SHA-512, keep working over several sessions of a broker with
// connections.max.reauth.ms=3000 (KIP-368): they re-authenticate their
// connections in place, counted by samsa's
// kafka_server_socket_server_metrics_successful_reauthentication_total,
// and no connection is closed for an expired session.
func TestClientsReauthenticate(t *testing.T) {
	t.Parallel()
	const listener = "REAUTH"
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(loopbackPort(t)))
	httpAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(loopbackPort(t)))
	b := harness.Start(t, harness.Options{
		ListenersExtra: listener + "://" + addr,
		Overrides:      map[string]string{"samsa.http.listener": httpAddr},
		Env: []string{
			"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT," + listener + ":SASL_PLAINTEXT",
			"KAFKA_SASL_ENABLED_MECHANISMS=PLAIN,SCRAM-SHA-512,OAUTHBEARER",
			"KAFKA_CONNECTIONS_MAX_REAUTH_MS=3000",
			"KAFKA_LISTENER_NAME_REAUTH_PLAIN_SASL_JAAS_CONFIG=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\";",
			"KAFKA_LISTENER_NAME_REAUTH_OAUTHBEARER_SASL_SERVER_CALLBACK_HANDLER_CLASS=org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler",
			"KAFKA_LISTENER_NAME_REAUTH_OAUTHBEARER_SASL_JAAS_CONFIG=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope=\"kafka\";",
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, adm := newAdmin(t, b.Addr)
	if r, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-secret"}}); err != nil || r.Error() != nil {
		t.Fatalf("AlterUserSCRAMs: %v %v", err, r.Error())
	}
	mechs := []struct {
		name, user, pass string
		franz            sasl.Mechanism
	}{
		{"PLAIN", "alice", "alice-secret", plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()},
		{"SCRAM-SHA-512", "bob", "bob-secret", scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()},
		{"OAUTHBEARER", "carol", "", oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			return oauth.Auth{Token: unsecuredToken("carol", time.Now().Add(time.Hour))}, nil
		})},
	}
	var topics []string
	for _, m := range mechs {
		topics = append(topics, "reauth-java-"+m.name, "reauth-franz-"+m.name, "reauth-confluent-"+m.name)
	}
	if r, err := adm.CreateTopics(ctx, 1, 1, nil, topics...); err != nil || r.Error() != nil {
		t.Fatalf("CreateTopics: %v %v", err, r.Error())
	}
	expiredBefore := reauthMetric(t, httpAddr, listener, "expired_connections_killed_count")

	cp := javaClasspath(t)
	for _, m := range mechs {
		t.Run("java "+m.name, func(t *testing.T) {
			before := reauthMetric(t, httpAddr, listener, "successful_reauthentication_total")
			reportJavaChecks(t, runJavaChecks(t, cp, "samsa.compat.ReauthChecks", addr, m.name, m.user, m.pass, "reauth-java-"+m.name, "8"), []string{"reauth-" + m.name})
			// kafka-clients re-authenticates at 85-95% of the 3 s
			// lifetime: each of its long-lived connections (bootstrap,
			// partition leader, fetch) about twice in 8 s.
			n := reauthMetric(t, httpAddr, listener, "successful_reauthentication_total") - before
			t.Logf("%d re-authentications counted", n)
			if n < 2 {
				t.Errorf("%d re-authentications counted, want at least 2", n)
			}
		})
	}
	for _, m := range mechs[:2] {
		t.Run("confluent-kafka "+m.name, func(t *testing.T) {
			py := pypiPython(t, "confluent_kafka")
			before := reauthMetric(t, httpAddr, listener, "successful_reauthentication_total")
			runScript(t, []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"}, py, "scripts/python/reauth_confluent.py",
				addr, m.name, m.user, m.pass, "reauth-confluent-"+m.name, "8")
			n := reauthMetric(t, httpAddr, listener, "successful_reauthentication_total") - before
			t.Logf("%d re-authentications counted", n)
			if n < 2 {
				t.Errorf("%d re-authentications counted, want at least 2", n)
			}
		})
	}
	for _, m := range mechs {
		t.Run("franz-go "+m.name, func(t *testing.T) {
			topic := "reauth-franz-" + m.name
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(m.franz), kgo.DefaultProduceTopic(topic),
				kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			start := reauthMetric(t, httpAddr, listener, "successful_reauthentication_total")
			// Produce and read back one record a tick until the broker
			// counted three re-authentications.
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			n := 0
			for reauthMetric(t, httpAddr, listener, "successful_reauthentication_total") < start+3 {
				if ctx.Err() != nil {
					t.Fatalf("re-authentications not counted after %d records", n)
				}
				if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(n))}).FirstErr(); err != nil {
					t.Fatalf("produce %d: %v", n, err)
				}
				fs := cl.PollRecords(ctx, 1)
				if err := fs.Err0(); err != nil {
					t.Fatalf("consume %d: %v", n, err)
				}
				if rs := fs.Records(); len(rs) != 1 || string(rs[0].Value) != strconv.Itoa(n) {
					t.Fatalf("record %d: read %d records", n, len(rs))
				}
				n++
				<-tick.C
			}
		})
	}
	if n := reauthMetric(t, httpAddr, listener, "expired_connections_killed_count") - expiredBefore; n != 0 {
		t.Errorf("%d connections closed for an expired session", n)
	}
}
