package kafkaref

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ScriptTimeout bounds one start or stop of the script, including the first download
// of the jars.
const ScriptTimeout = 10 * time.Minute

// ErrNoScript is returned when kafka-ref.sh cannot be found.
var ErrNoScript = errors.New("kafkaref: compat-tests/kafka-ref/kafka-ref.sh not found above the working directory")

// Options selects the cluster to start.
type Options struct {
	// Nodes is the number of combined broker+controller nodes; 0 means 1.
	Nodes int
	// Overrides are extra server.properties lines ("key=value"), applied to every node.
	Overrides []string
	// SSL gives each node a second listener named SSL (kafka-ref.sh's
	// KAFKA_REF_SSL=1; its keystore and any other protocol for it go in
	// Overrides); SSLAddrs lists them.
	SSL bool
	// NodeOverrides, when set, returns more server.properties lines of node
	// n (1-based), after Overrides (kafka-ref.sh's KAFKA_REF_NODE<n>_OVERRIDES).
	NodeOverrides func(n int) []string
}

// Cluster is a running Kafka started by Start.
type Cluster struct {
	t     testing.TB
	dir   string
	addrs []string
	ssl   []string
	pids  []int

	stopOnce sync.Once
}

// Script returns the path of kafka-ref.sh: $KAFKA_REF_SCRIPT if set, else the copy
// in the module above the working directory.
func Script() (string, error) {
	if p := os.Getenv("KAFKA_REF_SCRIPT"); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("kafkaref: %w", err)
	}
	for {
		p := filepath.Join(dir, "compat-tests", "kafka-ref", "kafka-ref.sh")
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			return "", ErrNoScript
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoScript
		}
		dir = parent
	}
}

// Require skips the test when java or mvn is missing, or fails it when
// SAMSA_REQUIRE_CLIENTS=1, and returns the script's path.
func Require(t testing.TB) string {
	t.Helper()
	for _, bin := range []string{"java", "mvn", "python3"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing(t, "%s not on PATH: the Kafka reference broker cannot run", bin)
		}
	}
	p, err := Script()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("SAMSA_REQUIRE_CLIENTS") == "1" {
		t.Fatalf("SAMSA_REQUIRE_CLIENTS=1 but "+format, args...)
	}
	t.Skipf(format, args...)
}

var classpath struct {
	once sync.Once
	cp   string
	err  error
}

// Classpath returns the classpath of the Kafka 4.4.0 jars (broker, tools, clients,
// Streams, Connect), fetching them on first use.
func Classpath(t testing.TB) string {
	t.Helper()
	script := Require(t)
	classpath.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), ScriptTimeout)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, script, "classpath")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			classpath.err = fmt.Errorf("kafkaref: %s classpath: %w\n%s", script, err, stderr.String())
			return
		}
		classpath.cp = strings.TrimSpace(string(out))
	})
	if classpath.err != nil {
		t.Fatal(classpath.err)
	}
	return classpath.cp
}

// Start formats and starts a Kafka cluster in a fresh temporary directory, waits until
// every broker serves requests, and registers Stop with t.Cleanup.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	script := Require(t)
	Classpath(t) // resolve the jars once per test binary, with its own error
	nodes := o.Nodes
	if nodes == 0 {
		nodes = 1
	}
	c := &Cluster{t: t, dir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), ScriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "start", c.dir, "--nodes", strconv.Itoa(nodes))
	cmd.Env = append(os.Environ(), "KAFKA_REF_OVERRIDES="+strings.Join(o.Overrides, "\n"),
		// The script's watcher stops the cluster if this test binary dies before
		// its cleanup runs (a -timeout panic, a kill).
		"KAFKA_REF_OWNER_PID="+strconv.Itoa(os.Getpid()))
	if o.SSL {
		cmd.Env = append(cmd.Env, "KAFKA_REF_SSL=1")
	}
	if o.NodeOverrides != nil {
		for n := 1; n <= nodes; n++ {
			cmd.Env = append(cmd.Env, fmt.Sprintf("KAFKA_REF_NODE%d_OVERRIDES=%s", n, strings.Join(o.NodeOverrides(n), "\n")))
		}
	}
	out, err := cmd.CombinedOutput()
	// Registered before checking err: a start that failed half-way still has
	// processes to stop (the script stops them itself, this is the backstop).
	t.Cleanup(c.Stop)
	if err != nil {
		t.Fatalf("kafkaref: start: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(c.dir, "bootstrap"))
	if err != nil {
		t.Fatalf("kafkaref: %v", err)
	}
	c.addrs = strings.Split(strings.TrimSpace(string(b)), ",")
	if o.SSL {
		b, err := os.ReadFile(filepath.Join(c.dir, "ssl-bootstrap"))
		if err != nil {
			t.Fatalf("kafkaref: %v", err)
		}
		c.ssl = strings.Split(strings.TrimSpace(string(b)), ",")
	}
	p, err := os.ReadFile(filepath.Join(c.dir, "pids"))
	if err != nil {
		t.Fatalf("kafkaref: %v", err)
	}
	for _, f := range strings.Fields(string(p)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("kafkaref: pids file: %v", err)
		}
		c.pids = append(c.pids, pid)
	}
	t.Logf("kafkaref: Kafka 4.4.0, %d node(s) at %s, files in %s", nodes, c.Bootstrap(), c.dir)
	return c
}

// Bootstrap returns the brokers' addresses, comma-separated, as bootstrap.servers.
func (c *Cluster) Bootstrap() string { return strings.Join(c.addrs, ",") }

// Addrs returns each broker's host:port, node 1 first.
func (c *Cluster) Addrs() []string { return append([]string(nil), c.addrs...) }

// SSLAddrs returns each broker's SSL listener (Options.SSL), node 1 first.
func (c *Cluster) SSLAddrs() []string { return append([]string(nil), c.ssl...) }

// Pids returns the JVMs' process ids, node 1 first.
func (c *Cluster) Pids() []int { return append([]int(nil), c.pids...) }

// Dir returns the directory holding the nodes' configurations, logs and data.
func (c *Cluster) Dir() string { return c.dir }

// LogFile returns the path of node n's server.log (n counts from 1).
func (c *Cluster) LogFile(n int) string {
	return filepath.Join(c.dir, fmt.Sprintf("node%d", n), "server.log")
}

// Stop stops the nodes (TERM, then KILL after the script's bound). It is idempotent;
// Start registers it with t.Cleanup. If the test failed, the tail of each node's
// server.log goes to the test log.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		if c.t.Failed() {
			for n := 1; n <= len(c.pids); n++ {
				c.t.Logf("kafkaref: tail of %s:\n%s", c.LogFile(n), tail(c.LogFile(n), 60))
			}
		}
		script, err := Script()
		if err != nil {
			c.t.Error(err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), ScriptTimeout)
		defer cancel()
		if out, err := exec.CommandContext(ctx, script, "stop", c.dir).CombinedOutput(); err != nil {
			c.t.Errorf("kafkaref: stop: %v\n%s", err, out)
		}
	})
}

// Tool returns a command that runs one of Kafka's CLI tools by its script name
// ("kafka-topics", "kafka-configs", "kafka-consumer-groups", ...; `kafka-ref.sh tools`
// lists them), logging WARN and above to stderr. The caller runs it.
func Tool(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	script := Require(t)
	Classpath(t)
	return exec.Command(script, append([]string{"tool", name}, args...)...)
}

// Run returns a command that runs a Java main class with the Kafka classpath.
func Run(t testing.TB, class string, args ...string) *exec.Cmd {
	t.Helper()
	script := Require(t)
	Classpath(t)
	return exec.Command(script, append([]string{"run", class}, args...)...)
}

func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
