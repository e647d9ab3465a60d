package quorum

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// testLogin is a toy login for the Security hooks: the client writes a
// token line after the preamble, the server compares it. (The broker's
// hooks run Kafka's SASL exchange; compat-tests/controller_security_test.go
// covers them with real processes.)
func testSecurity(token string) Security {
	return Security{
		Admit: func(c net.Conn) error {
			got := make([]byte, 4)
			if _, err := io.ReadFull(c, got); err != nil {
				return err
			}
			if string(got) != "good" {
				return errors.New("bad token")
			}
			_, err := c.Write([]byte("ok"))
			return err
		},
		Login: func(ctx context.Context, c net.Conn, addr string) error {
			if _, err := c.Write([]byte(token)); err != nil {
				return err
			}
			ack := make([]byte, 2)
			_, err := io.ReadFull(c, ack)
			return err
		},
	}
}

// TestSecureListenerAdmitsBeforeRaft: on a secured listener a Raft
// connection reaches Accept only after Admit lets it through, with the
// bytes after the login intact; one that fails Admit (a wrong login, or
// Raft bytes right after the preamble) is closed with a log line and
// never accepted. Dial logs in (Login) before Raft writes.
func TestSecureListenerAdmitsBeforeRaft(t *testing.T) {
	logs := &syncBuffer{}
	ln, err := ListenSecure("127.0.0.1:0", "", nil, slog.New(slog.NewTextHandler(logs, nil)), testSecurity("good"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()

	for _, bad := range []string{"evil", "\x00\x00\x00\x01"} {
		c, err := net.Dial("tcp", ln.BoundAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(append(append([]byte{}, Preamble...), bad...))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.Read(make([]byte, 8)); err == nil || isTimeout(err) {
			t.Fatalf("login %q: read %d, %v; want the connection closed", bad, n, err)
		}
		c.Close()
	}
	select {
	case c := <-accepted:
		t.Fatalf("a connection that did not log in reached Raft: %v", c.RemoteAddr())
	default:
	}
	waitFor(t, 10*time.Second, "the log line", func() bool {
		return bytes.Count([]byte(logs.String()), []byte("did not authenticate")) == 2
	})

	// A peer with the right login: its Raft bytes arrive after it.
	peer, err := ListenSecure("127.0.0.1:0", "", nil, quietLogger, testSecurity("good"))
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	c, err := peer.Dial(raft.ServerAddress(ln.BoundAddr().String()), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("raft"))
	select {
	case a := <-accepted:
		got := make([]byte, 4)
		a.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(a, got); err != nil || string(got) != "raft" {
			t.Fatalf("accepted connection reads %q, %v", got, err)
		}
		a.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("a logged-in connection did not reach Accept")
	}

	// A peer with a wrong login fails its Dial.
	wrong, err := ListenSecure("127.0.0.1:0", "", nil, quietLogger, testSecurity("evil"))
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	if c, err := wrong.Dial(raft.ServerAddress(ln.BoundAddr().String()), 5*time.Second); err == nil {
		c.Close()
		t.Fatal("Dial with a wrong login succeeded")
	}
}
