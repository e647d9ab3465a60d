package broker

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// reauthLifetime is the test broker's connections.max.reauth.ms. franz-go
// re-authenticates a second before a session ends, and Kafka begins at
// most one re-authentication a second, so it must be well above 2s.
const reauthLifetime = 3 * time.Second

// TestReauthentication runs franz-go over SASL_PLAINTEXT against a node
// with connections.max.reauth.ms=3000 (KIP-368): PLAIN and SCRAM clients
// keep producing and consuming over several session lifetimes, counted by
// the listener's successful-reauthentication counter; a raw client that
// never re-authenticates is disconnected on its first request after the
// lifetime; a re-authentication as another principal is refused with
// Kafka's message; a SCRAM user deleted while connected is refused at its
// next re-authentication.
func TestReauthentication(t *testing.T) {
	s := startSecureNode(t, "connections.max.reauth.ms="+strconv.FormatInt(reauthLifetime.Milliseconds(), 10))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(s.plain))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	for _, user := range []string{"bob", "carol"} {
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: user + "-secret"}})
		if err != nil || res.Error() != nil {
			t.Fatalf("AlterUserSCRAMs %s: %v %v", user, err, res.Error())
		}
	}
	counts := func() (reauths, expired int64) {
		c := s.n.reauthCounts()["SASL_PLAINTEXT"]
		return c.Successful, c.ExpiredKilled
	}

	for _, c := range []struct {
		name string
		mech sasl.Mechanism
	}{
		{"PLAIN", plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()},
		{"SCRAM-SHA-512", scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()},
	} {
		t.Run(c.name+" client keeps working", func(t *testing.T) {
			topic := "reauth-" + c.name
			cl, err := kgo.NewClient(kgo.SeedBrokers(s.saslPlaintext), kgo.SASL(c.mech), kgo.DefaultProduceTopic(topic),
				kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			start, _ := counts()
			// Produce one record a tick until the broker has counted three
			// re-authentications (about three lifetimes), each acked.
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			produced := 0
			for n, _ := counts(); n < start+3; n, _ = counts() {
				if ctx.Err() != nil {
					t.Fatalf("%d re-authentications after %d records", n-start, produced)
				}
				if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(produced))}).FirstErr(); err != nil {
					t.Fatalf("produce %d: %v", produced, err)
				}
				produced++
				<-tick.C
			}
			for read := 0; read < produced; {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					t.Fatalf("consume after %d of %d: %v", read, produced, err)
				}
				for _, r := range fs.Records() {
					if string(r.Value) != strconv.Itoa(read) {
						t.Fatalf("record %d is %q", read, r.Value)
					}
					read++
				}
			}
			if _, expired := counts(); expired != 0 {
				t.Fatalf("%d connections expired", expired)
			}
		})
	}

	t.Run("raw client that never re-authenticates", func(t *testing.T) {
		conn, lifetime := rawSASLLogin(t, s.saslPlaintext, "alice", "alice-secret")
		defer conn.Close()
		if lifetime != reauthLifetime.Milliseconds() {
			t.Fatalf("session lifetime %d ms, want %d", lifetime, reauthLifetime.Milliseconds())
		}
		authenticated := time.Now()
		if _, err := rawRequest(conn, kmsg.NewPtrMetadataRequest(), 3); err != nil {
			t.Fatalf("Metadata in the session: %v", err)
		}
		_, before := counts()
		// The session ends at a known time: wait for it, not for a
		// condition.
		<-time.After(time.Until(authenticated.Add(reauthLifetime + 200*time.Millisecond)))
		if _, err := rawRequest(conn, kmsg.NewPtrMetadataRequest(), 4); err == nil {
			t.Fatal("Metadata answered after the session expired")
		}
		if _, after := counts(); after != before+1 {
			t.Fatalf("expired connections killed: %d, want %d", after, before+1)
		}
	})

	t.Run("re-authentication as another principal", func(t *testing.T) {
		conn, _ := rawSASLLogin(t, s.saslPlaintext, "alice", "alice-secret")
		defer conn.Close()
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "PLAIN"
		body, err := rawRequest(conn, hs, 10)
		if err != nil {
			t.Fatalf("re-authentication handshake: %v", err)
		}
		hr := kmsg.NewPtrSASLHandshakeResponse()
		hr.Version = 1
		if err := hr.ReadFrom(body); err != nil || hr.ErrorCode != 0 {
			t.Fatalf("re-authentication handshake: %v %+v", err, hr)
		}
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.Version, au.SASLAuthBytes = 1, []byte("\x00admin\x00admin-secret")
		if body, err = rawRequest(conn, au, 11); err != nil {
			t.Fatalf("re-authentication as admin: %v", err)
		}
		ar := kmsg.NewPtrSASLAuthenticateResponse()
		ar.Version = 1
		if err := ar.ReadFrom(body); err != nil {
			t.Fatal(err)
		}
		const want = "Cannot change principals during re-authentication from User.alice: User.admin"
		if ar.ErrorCode != kerr.SaslAuthenticationFailed.Code || ar.ErrorMessage == nil || *ar.ErrorMessage != want {
			t.Fatalf("re-authentication as admin: %+v, want SASL_AUTHENTICATION_FAILED %q", ar, want)
		}
		if _, err := rawRequest(conn, kmsg.NewPtrMetadataRequest(), 12); err == nil {
			t.Fatal("connection served after a refused re-authentication")
		}
	})

	t.Run("deleted SCRAM user refused at re-authentication", func(t *testing.T) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.saslPlaintext), kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism()),
			kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		// The connection to the node (not the seed's) is the one kept.
		node := cl.Broker(int(s.n.cfg.NodeID))
		if _, err := node.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
			t.Fatalf("Metadata as carol: %v", err)
		}
		loggedIn := time.Now()
		res, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha512}}, nil)
		if err != nil || res.Error() != nil {
			t.Fatalf("delete carol: %v %v", err, res.Error())
		}
		// The open connection keeps its session until franz-go
		// re-authenticates it (a second before the lifetime ends), which
		// fails.
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		served := 0
		for {
			_, err := node.Request(ctx, kmsg.NewPtrMetadataRequest())
			if errors.Is(err, kerr.SaslAuthenticationFailed) {
				break
			}
			if err == nil {
				served++
			}
			if time.Since(loggedIn) > 4*reauthLifetime {
				t.Fatalf("carol still served %v after her credential was deleted (last error %v)", time.Since(loggedIn), err)
			}
			<-tick.C
		}
		if took := time.Since(loggedIn); took < reauthLifetime-1500*time.Millisecond || served == 0 {
			t.Fatalf("refused %v after login, %d requests served: want the session kept until the re-authentication", took, served)
		}
	})
}

// rawSASLLogin authenticates a new connection to addr with PLAIN
// (SaslHandshake v1, SaslAuthenticate v1) and returns it with the session
// lifetime the broker gave.
func rawSASLLogin(t *testing.T, addr, user, pass string) (net.Conn, int64) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(time.Minute))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if _, err := rawRequest(conn, hs, 1); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version, au.SASLAuthBytes = 1, []byte("\x00"+user+"\x00"+pass)
	body, err := rawRequest(conn, au, 2)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	ar := kmsg.NewPtrSASLAuthenticateResponse()
	ar.Version = 1
	if err := ar.ReadFrom(body); err != nil || ar.ErrorCode != 0 {
		t.Fatalf("authenticate: %v %+v", err, ar)
	}
	return conn, ar.SessionLifetimeMillis
}

// rawRequest sends req (not flexible) and returns the response body, after
// the correlation id.
func rawRequest(conn net.Conn, req kmsg.Request, corr int32) ([]byte, error) {
	if _, err := conn.Write(requestFrame(req, corr)); err != nil {
		return nil, err
	}
	b, err := readFrame(conn)
	if err != nil {
		return nil, err
	}
	return b[4:], nil
}
