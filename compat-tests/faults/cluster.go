package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/compat-tests/childproc"
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
	// Nodes is the number of combined broker+controller nodes (3 or 5):
	// the metadata quorum's voters.
	Nodes int
	// Brokers is the number of broker-only nodes started with the cluster
	// (ids Nodes+1...), and Spares that of broker-only nodes prepared but
	// not started (ids after them): AddBroker starts one, a fresh member
	// with a node.id the cluster never saw.
	Brokers, Spares int
	// Env is added after the generated environment of every node.
	Env []string
	// Loopback forces the loopback fallback even where namespaces work:
	// no network faults.
	Loopback bool
	// Proxy forces the proxy network (ProxyNet) even where namespaces
	// work. Without either, namespaces are used where available (root and
	// ip(8)), else the proxy network.
	Proxy bool
	// DiskLimit, when positive, gives every node's log directory a tmpfs
	// of that many bytes of its own, so that one node's disk can be
	// filled (Node.FillDisk). It needs root (mount(2)).
	DiskLimit int64
	// DirLimit, when positive, gives every node a second log directory
	// (Node.SecondDir) on a tmpfs of that many bytes of its own, for the
	// DirFullLeader step (jbod.go). It needs root (mount(2)).
	DirLimit int64
	// LazyFS, when set, is the path of a lazyfs binary: every node's log
	// directory is then a lazyfs mount, and power cuts clear its cache
	// instead of being emulated (lazyfs.go). It needs root and /dev/fuse.
	LazyFS string
}

// Network cuts and heals links between nodes, numbered from 0 in the
// order of Cluster.all (node id - 1).
type Network interface {
	// Partition sets the links: nodes in different groups cannot reach
	// each other; a node in no group reaches everyone. nil heals all.
	Partition(groups [][]int) error
	Heal() error
	Close()
}

// Cluster is N samsa processes forming one KRaft cluster, each in its own
// network namespace (or all on loopback, the fallback).
type Cluster struct {
	// Nodes are the members: started nodes not retired.
	Nodes []*Node
	// Net is nil in loopback mode: network faults are then unavailable.
	Net Network
	// NetName says which network the nodes run on: "namespaces",
	// "loopback" or "proxy".
	NetName string
	t       testing.TB
	all     []*Node // every node, started, spare or retired, by id
	spares  []*Node
}

// Node is one samsa process of a Cluster.
type Node struct {
	ID      int // KAFKA_NODE_ID, 1-based
	Addr    string
	Dir     string
	DataDir string // the log directory (log.dirs)
	// SecondDir is the second log directory (Config.DirLimit), "" if none.
	SecondDir string
	Log       string // path of the node's combined stdout/stderr over all runs
	// Controller is true for quorum voters (combined nodes).
	Controller bool

	argv    []string
	env     []string
	mounted bool // DataDir is a tmpfs of its own
	// secondMounted: SecondDir is a tmpfs of its own.
	secondMounted bool
	// lazy is the lazyfs mount of DataDir (Config.LazyFS), nil if none.
	lazy *lazyMount

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

// nodeAddrs is where one node listens and how the others reach it.
type nodeAddrs struct {
	host               string
	client, controller int // listener ports
	// advertised is the client listener's advertised host:port; voters
	// is this node's controller.quorum.voters (proxies give each node a
	// view of its own).
	advertised string
	voters     string
}

// StartCluster starts the cluster and waits until every node answers
// ApiVersions. Everything is torn down at test cleanup, also on failure.
func StartCluster(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	bin := harness.Build(t)
	c := &Cluster{t: t}
	total := cfg.Nodes + cfg.Brokers + cfg.Spares
	addrs := c.network(t, cfg, total)
	root := t.TempDir()
	for i := range total {
		a := addrs[i]
		client := fmt.Sprintf("PLAINTEXT://%s:%d", a.host, a.client)
		controller := i < cfg.Nodes
		env := []string{
			"KAFKA_NODE_ID=" + strconv.Itoa(i+1),
			"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://" + a.advertised,
			"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
			"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
			"KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT",
			"KAFKA_CONTROLLER_QUORUM_VOTERS=" + a.voters,
			"CLUSTER_ID=4L6g3nShT-eMCtK--X86sw",
		}
		if controller {
			env = append(env, "KAFKA_PROCESS_ROLES=broker,controller",
				"KAFKA_LISTENERS="+client+fmt.Sprintf(",CONTROLLER://%s:%d", a.host, a.controller))
		} else {
			env = append(env, "KAFKA_PROCESS_ROLES=broker", "KAFKA_LISTENERS="+client)
		}
		env = append(env, BaseEnv(cfg.Nodes)...)
		env = append(env, cfg.Env...)
		dir := filepath.Join(root, fmt.Sprintf("node%d", i+1))
		data := filepath.Join(dir, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			t.Fatal(err)
		}
		logDirs, second := data, ""
		if cfg.DirLimit > 0 {
			second = filepath.Join(dir, "data2")
			if err := os.MkdirAll(second, 0o755); err != nil {
				t.Fatal(err)
			}
			logDirs += "," + second
		}
		argv := []string{bin, "--override", "log.dirs=" + logDirs}
		if nn, ok := c.Net.(*NamespaceNet); ok {
			argv = nn.Wrap(i, argv)
		}
		n := &Node{
			ID:         i + 1,
			Addr:       a.advertised,
			Dir:        dir,
			DataDir:    data,
			SecondDir:  second,
			Controller: controller,
			Log:        filepath.Join(root, fmt.Sprintf("node%d.log", i+1)),
			argv:       argv,
			env:        append(os.Environ(), env...),
		}
		c.all = append(c.all, n)
		if i < cfg.Nodes+cfg.Brokers {
			c.Nodes = append(c.Nodes, n)
		} else {
			c.spares = append(c.spares, n)
		}
	}
	if pn, ok := c.Net.(*ProxyNet); ok {
		all := slices.Clone(c.all)
		pn.SetPids(func(i int) int { return all[i].pid() })
	}
	keep := KeepLogsDir(t)
	t.Cleanup(func() {
		for _, n := range c.all {
			n.teardown()
		}
		if t.Failed() {
			for _, n := range c.all {
				n.mu.Lock()
				ran := n.runs > 0
				n.mu.Unlock()
				if ran {
					t.Logf("node %d log tail (%s):\n%s", n.ID, n.Log, n.Tail(60))
				}
			}
		}
		if keep != "" {
			for _, n := range c.all {
				if b, err := os.ReadFile(n.Log); err == nil {
					_ = os.WriteFile(filepath.Join(keep, fmt.Sprintf("%s-node%d.log", strings.ReplaceAll(t.Name(), "/", "_"), n.ID)), b, 0o644)
				}
			}
		}
		for _, n := range c.all {
			n.unmountDisk()
			n.unmountSecondDir()
			n.unmountLazyFS()
		}
		if c.Net != nil {
			c.Net.Close()
		}
	})
	if cfg.DiskLimit > 0 {
		for _, n := range c.all {
			if err := n.mountDisk(cfg.DiskLimit); err != nil {
				t.Fatal(err)
			}
		}
	}
	if cfg.DirLimit > 0 {
		for _, n := range c.all {
			if err := n.mountSecondDir(cfg.DirLimit); err != nil {
				t.Fatal(err)
			}
		}
	}
	if cfg.LazyFS != "" {
		for _, n := range c.all {
			if err := n.mountLazyFS(cfg.LazyFS); err != nil {
				t.Fatal(err)
			}
		}
	}
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

// network sets up the nodes' network (namespaces, else proxies, else
// plain loopback) and returns every node's addresses.
func (c *Cluster) network(t testing.TB, cfg Config, total int) []nodeAddrs {
	t.Helper()
	addrs := make([]nodeAddrs, total)
	if !cfg.Loopback && !cfg.Proxy && NamespacesAvailable() {
		nn, err := NewNamespaceNet(total)
		if err != nil {
			t.Logf("faults: namespaces unavailable, falling back to proxies: %v", err)
		} else {
			c.Net, c.NetName = nn, "namespaces"
			for i := range total {
				addrs[i] = nodeAddrs{host: nn.IP(i), client: 9092, controller: 9093}
			}
		}
	}
	if c.Net == nil {
		ports := freePorts(t, 2*total)
		for i := range total {
			addrs[i] = nodeAddrs{host: "127.0.0.1", client: ports[i], controller: ports[total+i]}
			addrs[i].advertised = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i]))
		}
		c.NetName = "loopback"
		if !cfg.Loopback && ProxyAvailable() {
			c.proxyNetwork(t, cfg, addrs)
		}
	}
	var voters []string
	for i := range cfg.Nodes {
		if c.NetName == "proxy" {
			voters = append(voters, fmt.Sprintf("%d@%s", i+1, addrs[i].voters))
		} else {
			voters = append(voters, fmt.Sprintf("%d@%s:%d", i+1, addrs[i].host, addrs[i].controller))
		}
	}
	for i := range addrs {
		if addrs[i].advertised == "" {
			addrs[i].advertised = net.JoinHostPort(addrs[i].host, strconv.Itoa(addrs[i].client))
		}
		addrs[i].voters = strings.Join(voters, ",")
	}
	return addrs
}

// proxyNetwork puts a proxy in front of every node's listeners: the
// client listener is advertised at its proxy, and the controller
// listener's voter entry is its proxy (addrs[i].voters holds that
// host:port until network joins the list).
func (c *Cluster) proxyNetwork(t testing.TB, cfg Config, addrs []nodeAddrs) {
	t.Helper()
	var front []net.Listener
	var targets []proxyTarget
	listen := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, f := range front {
				f.Close()
			}
			t.Fatalf("%v: %v", ErrProxy, err)
		}
		front = append(front, l)
		return l.Addr().String()
	}
	for i := range addrs {
		addrs[i].advertised = listen()
		targets = append(targets, proxyTarget{dst: i, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(addrs[i].client))})
		if i < cfg.Nodes {
			addrs[i].voters = listen()
			targets = append(targets, proxyTarget{dst: i, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(addrs[i].controller))})
		}
	}
	c.Net = NewProxyNet(len(addrs), front, targets)
	c.NetName = "proxy"
}

// AddBroker starts the next spare broker-only node (a member the cluster
// never saw, with a fresh node.id and an empty log directory), makes it a
// member and waits until it answers ApiVersions.
func (c *Cluster) AddBroker(ctx context.Context) (*Node, error) {
	if len(c.spares) == 0 {
		return nil, fmt.Errorf("%w: no spare node left (Config.Spares)", ErrNodeState)
	}
	n := c.spares[0]
	c.spares = c.spares[1:]
	c.Nodes = append(c.Nodes, n)
	if err := n.Restart(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// Retire stops node n for good (SIGTERM, a controlled shutdown) and takes
// it out of the members, so that recovery no longer restarts it: a
// decommissioned broker.
func (c *Cluster) Retire(n *Node) error {
	c.Nodes = slices.DeleteFunc(c.Nodes, func(o *Node) bool { return o == n })
	return n.Stop()
}

func freePorts(t testing.TB, n int) []int { return harness.FreePorts(t, n) }

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
	for _, n := range c.all {
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
	if err := childproc.Start(cmd); err != nil {
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

// pid is the process id of the node's current run, 0 when it is down.
func (n *Node) pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	select {
	case <-n.exited:
		return 0
	default:
		return n.cmd.Process.Pid
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
