package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// TestSASLServeRaft: the SASL exchange a Raft connection to a SASL
// controller listener must pass (saslServe) logs in the client side this
// node dials with (saslClient), refuses a wrong password with
// SASL_AUTHENTICATION_FAILED, and refuses anything but SaslHandshake v1 /
// SaslAuthenticate (a Raft RPC sent straight after the preamble, an
// oversized frame) without reading further.
func TestSASLServeRaft(t *testing.T) {
	srv := &SASLServer{Mechanisms: []string{"PLAIN"}, PlainUsers: map[string]string{"admin": "admin-secret"}}
	login := func(pass string) (string, error, error) {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		deadline := time.Now().Add(10 * time.Second)
		a.SetDeadline(deadline)
		b.SetDeadline(deadline)
		cerr := make(chan error, 1)
		go func() {
			cerr <- saslClient(context.Background(), b, plain.Auth{User: "admin", Pass: pass}.AsMechanism(), "127.0.0.1", "test")
			b.Close()
		}()
		p, err := saslServe(a, srv)
		a.Close()
		return p, err, <-cerr
	}
	if p, err, cerr := login("admin-secret"); err != nil || cerr != nil || p != "User:admin" {
		t.Fatalf("good login: principal %q, server %v, client %v", p, err, cerr)
	}
	if _, err, cerr := login("wrong"); !errors.Is(err, errRaftAuth) || !errors.Is(cerr, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: server %v, client %v", err, cerr)
	}
	for name, frame := range map[string][]byte{
		"raft bytes": {0, 0, 0, 0, 1, 2, 3, 4},
		"huge":       binary.BigEndian.AppendUint32(nil, 1<<30),
	} {
		a, b := net.Pipe()
		go func() { b.Write(frame) }()
		a.SetDeadline(time.Now().Add(10 * time.Second))
		_, err := saslServe(a, srv)
		a.Close()
		b.Close()
		if !errors.Is(err, errRaftAuth) || !strings.Contains(err.Error(), "SASL request of") {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// FuzzSASLServeRaft: whatever a connection sends after the Raft preamble,
// saslServe answers or fails without panicking.
func FuzzSASLServeRaft(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 2, 3, 4})
	f.Add([]byte{0, 0, 0, 20, 0, 17, 0, 1, 0, 0, 0, 1, 0, 4, 't', 'e', 's', 't', 0, 5, 'P', 'L', 'A', 'I', 'N'})
	srv := &SASLServer{Mechanisms: []string{"PLAIN", "SCRAM-SHA-256"}, PlainUsers: map[string]string{"admin": "x"}}
	f.Fuzz(func(t *testing.T, in []byte) {
		a, b := net.Pipe()
		defer b.Close()
		go func() {
			b.Write(in)
			b.Close()
		}()
		go func() { // drain the answers
			buf := make([]byte, 512)
			for {
				if _, err := b.Read(buf); err != nil {
					return
				}
			}
		}()
		a.SetDeadline(time.Now().Add(5 * time.Second))
		saslServe(a, srv)
		a.Close()
	})
}
