package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/broker"
	"github.com/samsa-broker/samsa/config"
)

// TestCLIUsers: `samsa users` sets, lists and deletes SCRAM credentials on
// a live broker (issue 17: "acls and users once security exists"), and
// every subcommand reaches a SASL listener with --command-config, the
// client properties file the Kafka tools take.
func TestCLIUsers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	saslAddr := l.Addr().String()
	l.Close()
	cfg, err := config.Load([]string{"--override", "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://" + saslAddr,
		"--override", "log.dirs=" + t.TempDir(), "--override", "offsets.topic.num.partitions=3",
		"--override", "sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := broker.StartNode(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n.Close(ctx)
	})
	addr := n.Addrs()[0].String()

	ok(t, addr, "", "users", "set", "alice", "--password", "alice-secret")
	ok(t, addr, "bob-secret\n", "users", "set", "bob", "--password-stdin", "--mechanism", "SCRAM-SHA-256", "--iterations", "4096")
	users := decode[[]userJSON](t, ok(t, addr, "", "users", "list", "--format", "json"))
	if len(users) != 2 || users[0].User != "alice" || users[0].Mechanisms[0].Mechanism != "SCRAM-SHA-512" ||
		users[1].User != "bob" || users[1].Mechanisms[0] != (credJSON{"SCRAM-SHA-256", 4096}) {
		t.Fatalf("users list: %+v", users)
	}
	if out := ok(t, addr, "", "users", "describe", "alice"); !strings.Contains(out, "alice") || !strings.Contains(out, "SCRAM-SHA-512 (8192 iterations)") {
		t.Fatalf("users describe table:\n%s", out)
	}
	fails(t, addr, exitUsage, "users", "set", "carol")
	fails(t, addr, exitFailed, "users", "set", "carol", "--password", "x", "--iterations", "10")

	// The SASL listener, through a Kafka client properties file.
	dir := t.TempDir()
	props := func(name, mech, user, pass string) string {
		p := filepath.Join(dir, name)
		text := "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=" + mech + "\n" +
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user + `" password="` + pass + "\";\n"
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := props("alice.properties", "SCRAM-SHA-512", "alice", "alice-secret")
	ok(t, saslAddr, "", "topics", "create", "secured", "--command-config", good)
	if out := ok(t, saslAddr, "", "topics", "list", "--command-config", good); !strings.Contains(out, "secured") {
		t.Fatalf("topics list over SASL:\n%s", out)
	}
	r := samsa(t, map[string]string{"SAMSA_BROKERS": saslAddr, "SAMSA_COMMAND_CONFIG": props("bob.properties", "SCRAM-SHA-256", "bob", "bob-secret")}, "", "health", "--node-id", "1")
	if r.code != exitOK {
		t.Fatalf("health over SASL with SAMSA_COMMAND_CONFIG: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	bad := props("wrong.properties", "SCRAM-SHA-512", "alice", "wrong")
	if r := fails(t, saslAddr, exitFailed, "topics", "list", "--command-config", bad, "--timeout", "5s"); !strings.Contains(r.stderr+r.stdout, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("wrong password: %s%s", r.stdout, r.stderr)
	}
	fails(t, saslAddr, exitUsage, "topics", "list", "--command-config", filepath.Join(dir, "missing.properties"))

	ok(t, addr, "", "users", "delete", "alice", "bob")
	if users := decode[[]userJSON](t, ok(t, addr, "", "users", "list", "--format", "json")); len(users) != 0 {
		t.Fatalf("after delete: %+v", users)
	}
	fails(t, addr, exitFailed, "users", "delete", "alice")
}

// lockedBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCLIProduceProgress: a long produce (stdin still open) reports its
// progress on stderr at --progress intervals (issue 17: progress output
// for long operations), and the summary comes last.
func TestCLIProduceProgress(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topics", "create", "progress-topic", "--partitions", "1")
	pr, pw := io.Pipe()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		code, _ := dispatch([]string{"produce", "progress-topic", "--progress", "100ms", "-b", addr}, pr, &stdout, &stderr, func(string) string { return "" })
		done <- code
	}()
	if _, err := io.WriteString(pw, "one\ntwo\nthree\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(stderr.String(), "3 lines read, 3 acknowledged, 0 failed") {
		if time.Now().After(deadline) {
			out := stderr.String()
			t.Fatalf("no progress line: %q", out[max(0, len(out)-500):])
		}
		<-tick.C
	}
	pw.Close()
	if code := <-done; code != 0 {
		t.Fatalf("produce exit %d: %s", code, stderr.String())
	}
	out := stderr.String()
	if !strings.HasSuffix(out, "samsa: produced 3 records to progress-topic\n") {
		t.Fatalf("summary not last: %q", out)
	}
}
