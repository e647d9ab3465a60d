package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// Timeouts of node lifecycle steps. Generous: the machine is shared.
const (
	readyTimeout = 90 * time.Second
	exitTimeout  = 30 * time.Second
)

// ErrNodeState is returned when a lifecycle step does not fit the node's state.
var ErrNodeState = errors.New("faults: node state")

// ErrNotReady is returned when a node does not answer ApiVersions in time.
var ErrNotReady = errors.New("faults: node not ready")

// Config describes a cluster to start.
type Config struct {
	// Nodes is the number of combined broker+controller nodes (3 or 5).
	Nodes int
	// Env is added after the generated environment of every node.
	Env []string
	// Loopback forces the loopback fallback even where namespaces work.
	Loopback bool
}

// Cluster is N samsa processes forming one KRaft cluster, each in its own
// network namespace (or all on loopback, the fallback).
type Cluster struct {
	Nodes []*Node
	// Net is nil in loopback mode: network faults are then unavailable.
	Net *NamespaceNet
	t   testing.TB
}

// Node is one samsa process of a Cluster.
type Node struct {
	ID   int // KAFKA_NODE_ID, 1-based
	Addr string
	Dir  string
	Log  string // path of the node's combined stdout/stderr over all runs

	argv []string
	env  []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	paused  bool
	runs    int
	logFile *os.File
}

// BaseEnv is the environment every fault-test node gets before Config.Env:
// fast failure detection, RF=3 and min.insync.replicas=2 everywhere.
func BaseEnv(nodes int) []string {
	rf := strconv.Itoa(min(3, nodes))
	return []string{
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0",
		"KAFKA_BROKER_SESSION_TIMEOUT_MS=3000",
		"KAFKA_BROKER_HEARTBEAT_INTERVAL_MS=500",
		"KAFKA_REPLICA_LAG_TIME_MAX_MS=6000",
		"KAFKA_DEFAULT_REPLICATION_FACTOR=" + rf,
		"KAFKA_MIN_INSYNC_REPLICAS=2",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=" + rf,
		"KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS=5",
		"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=" + rf,
		"KAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS=5",
		"KAFKA_AUTO_CREATE_TOPICS_ENABLE=false",
	}
}

// StartCluster starts the cluster and waits until every node answers
// ApiVersions. Everything is torn down at test cleanup, also on failure.
func StartCluster(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	bin := harness.Build(t)
	c := &Cluster{t: t}
	var hosts []string
	var clientPorts, ctrlPorts []int
	if !cfg.Loopback && NamespacesAvailable() {
		nn, err := NewNamespaceNet(cfg.Nodes)
		if err != nil {
			t.Logf("faults: namespaces unavailable, falling back to loopback: %v", err)
		} else {
			c.Net = nn
		}
	}
	if c.Net != nil {
		for i := range cfg.Nodes {
			hosts = append(hosts, c.Net.IP(i))
			clientPorts = append(clientPorts, 9092)
			ctrlPorts = append(ctrlPorts, 9093)
		}
	} else {
		ports := freePorts(t, 2*cfg.Nodes)
		for i := range cfg.Nodes {
			hosts = append(hosts, "127.0.0.1")
			clientPorts = append(clientPorts, ports[i])
			ctrlPorts = append(ctrlPorts, ports[cfg.Nodes+i])
		}
	}
	var voters []string
	for i := range cfg.Nodes {
		voters = append(voters, fmt.Sprintf("%d@%s:%d", i+1, hosts[i], ctrlPorts[i]))
	}
	root := t.TempDir()
	for i := range cfg.Nodes {
		client := fmt.Sprintf("PLAINTEXT://%s:%d", hosts[i], clientPorts[i])
		env := []string{
			"KAFKA_NODE_ID=" + strconv.Itoa(i+1),
			"KAFKA_PROCESS_ROLES=broker,controller",
			"KAFKA_LISTENERS=" + client + fmt.Sprintf(",CONTROLLER://%s:%d", hosts[i], ctrlPorts[i]),
			"KAFKA_ADVERTISED_LISTENERS=" + client,
			"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
			"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
			"KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT",
			"KAFKA_CONTROLLER_QUORUM_VOTERS=" + strings.Join(voters, ","),
			"CLUSTER_ID=4L6g3nShT-eMCtK--X86sw",
		}
		env = append(env, BaseEnv(cfg.Nodes)...)
		env = append(env, cfg.Env...)
		dir := filepath.Join(root, fmt.Sprintf("node%d", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		argv := []string{bin, "--override", "log.dirs=" + filepath.Join(dir, "data")}
		if c.Net != nil {
			argv = c.Net.Wrap(i, argv)
		}
		c.Nodes = append(c.Nodes, &Node{
			ID:   i + 1,
			Addr: net.JoinHostPort(hosts[i], strconv.Itoa(clientPorts[i])),
			Dir:  dir,
			Log:  filepath.Join(root, fmt.Sprintf("node%d.log", i+1)),
			argv: argv,
			env:  append(os.Environ(), env...),
		})
	}
	t.Cleanup(func() {
		for _, n := range c.Nodes {
			n.teardown()
		}
		if t.Failed() {
			for _, n := range c.Nodes {
				t.Logf("node %d log tail (%s):\n%s", n.ID, n.Log, n.Tail(60))
			}
		}
		if c.Net != nil {
			c.Net.Close()
		}
	})
	for _, n := range c.Nodes {
		if err := n.launch(); err != nil {
			t.Fatal(err)
		}
	}
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i, n := range c.Nodes {
		wg.Go(func() { errs[i] = n.WaitReady(context.Background()) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var lns []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("faults: free port: %v", err)
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range lns {
		l.Close()
	}
	return ports
}

// Addrs returns every node's client listener.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Addr)
	}
	return out
}

// NodeByID returns the node with the given KAFKA_NODE_ID, or nil.
func (c *Cluster) NodeByID(id int32) *Node {
	for _, n := range c.Nodes {
		if int32(n.ID) == id {
			return n
		}
	}
	return nil
}

func (n *Node) launch() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		select {
		case <-n.exited:
		default:
			return fmt.Errorf("%w: node %d launched while running", ErrNodeState, n.ID)
		}
	}
	if n.logFile == nil {
		f, err := os.OpenFile(n.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("faults: node log: %w", err)
		}
		n.logFile = f
	}
	n.runs++
	fmt.Fprintf(n.logFile, "=== faults: node %d run %d at %s\n", n.ID, n.runs, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(n.argv[0], n.argv[1:]...)
	cmd.Env = n.env
	cmd.Stdout = n.logFile
	cmd.Stderr = n.logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("faults: start node %d: %w", n.ID, err)
	}
	exited := make(chan struct{})
	n.cmd, n.exited, n.paused = cmd, exited, false
	logFile, runs := n.logFile, n.runs
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logFile, "=== faults: node %d run %d exited: %v\n", n.ID, runs, err)
		close(exited)
	}()
	return nil
}

// Running reports whether the node's process is alive (paused counts).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// Paused reports whether the node is stopped by SIGSTOP.
func (n *Node) Paused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused
}

func (n *Node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("%w: node %d never started", ErrNodeState, n.ID)
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%w: signal %v to node %d: %w", ErrNodeState, sig, n.ID, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	}
	return nil
}

// waitExit waits for the current run to end, SIGKILLing it after exitTimeout.
func (n *Node) waitExit() error {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	timer := time.NewTimer(exitTimeout)
	defer timer.Stop()
	select {
	case <-exited:
		return nil
	case <-timer.C:
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("%w: node %d did not exit within %v", ErrNodeState, n.ID, exitTimeout)
	}
}

// Kill sends SIGKILL and waits for the process to end.
func (n *Node) Kill() error {
	if err := n.signal(syscall.SIGKILL); err != nil {
		return err
	}
	return n.waitExit()
}

// Stop sends SIGTERM (a controlled shutdown) and waits for the exit.
func (n *Node) Stop() error {
	if err := n.signal(syscall.SIGTERM); err != nil {
		return err
	}
	return n.waitExit()
}

// Pause sends SIGSTOP.
func (n *Node) Pause() error { return n.signal(syscall.SIGSTOP) }

// Resume sends SIGCONT.
func (n *Node) Resume() error { return n.signal(syscall.SIGCONT) }

// Restart launches the node again on its data directory and waits until it
// answers ApiVersions.
func (n *Node) Restart(ctx context.Context) error {
	if err := n.launch(); err != nil {
		return err
	}
	return n.WaitReady(ctx)
}

// WaitReady polls ApiVersions until it succeeds, the process exits, or
// readyTimeout passes.
func (n *Node) WaitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	n.mu.Lock()
	exited := n.exited
	n.mu.Unlock()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-exited:
			return fmt.Errorf("%w: node %d exited while starting", ErrNotReady, n.ID)
		case <-ctx.Done():
			return fmt.Errorf("%w: node %d after %v: %v", ErrNotReady, n.ID, readyTimeout, last)
		case <-tick.C:
		}
		if last = harness.Probe(ctx, n.Addr); last == nil {
			return nil
		}
	}
}

// teardown kills the process (continuing it first if paused) and closes the log.
func (n *Node) teardown() {
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = n.waitExit()
	}
	n.mu.Lock()
	if n.logFile != nil {
		n.logFile.Close()
		n.logFile = nil
	}
	n.mu.Unlock()
}

// Tail returns the last lines of the node's log.
func (n *Node) Tail(lines int) string {
	b, err := os.ReadFile(n.Log)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}
