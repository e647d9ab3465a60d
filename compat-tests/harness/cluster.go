package harness

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// ClusterOptions configures StartCluster.
type ClusterOptions struct {
	// Env is added to every node's environment block after the generated
	// one (so it can override it), as KAFKA_* variables of a compose file.
	Env []string
	// ExtraLogDirs, when set, returns more log directories for node id
	// (1-based), listed in log.dirs after its data directory (which keeps
	// the metadata): a JBOD node. The caller creates (and may mount) them.
	ExtraLogDirs func(id int) []string
	// NodeEnv, when set, returns more environment variables for node id
	// (1-based), added after Env.
	NodeEnv func(id int) []string
	// ListenersExtra, when set, returns more listeners of node id
	// (1-based), "NAME://host:port[,...]", appended to its listeners and
	// advertised.listeners (the PLAINTEXT one stays first: the harness
	// probes it); their protocols go in Env
	// (KAFKA_LISTENER_SECURITY_PROTOCOL_MAP).
	ListenersExtra func(id int) string
}

// Cluster is several samsa processes forming one cluster.
type Cluster struct {
	Brokers []*Broker
	// ControllerAddrs are the controller listeners, by node (node id i+1).
	ControllerAddrs []string
	// extraDirs is ClusterOptions.ExtraLogDirs.
	extraDirs func(id int) []string
}

// ClusterEnv is the environment block of node id (1-based) of a cluster
// whose client and controller ports are given by node: the variables of
// the apache/kafka three-node combined-mode KRaft compose example.
func ClusterEnv(id int, clientPorts, controllerPorts []int) []string {
	var voters []string
	for i, p := range controllerPorts {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, p))
	}
	client := fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", clientPorts[id-1])
	return []string{
		"KAFKA_NODE_ID=" + strconv.Itoa(id),
		"KAFKA_PROCESS_ROLES=broker,controller",
		"KAFKA_LISTENERS=" + client + fmt.Sprintf(",CONTROLLER://127.0.0.1:%d", controllerPorts[id-1]),
		"KAFKA_ADVERTISED_LISTENERS=" + client,
		"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT",
		"KAFKA_CONTROLLER_QUORUM_VOTERS=" + strings.Join(voters, ","),
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0",
		"CLUSTER_ID=4L6g3nShT-eMCtK--X86sw",
	}
}

// StartCluster starts n combined-mode samsa processes configured by the
// environment blocks of ClusterEnv (plus o.Env) and waits until each
// answers ApiVersions (which it does once it registered with the active
// controller). The processes are killed at test cleanup.
func StartCluster(t testing.TB, n int, o ClusterOptions) *Cluster {
	t.Helper()
	ports := freePorts(t, 2*n)
	clientPorts, ctrlPorts := ports[:n], ports[n:]
	c := &Cluster{}
	for i := range n {
		c.ControllerAddrs = append(c.ControllerAddrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(ctrlPorts[i])))
	}
	c.extraDirs = o.ExtraLogDirs
	c.start(t, clientPorts, func(id int) []string {
		env := ClusterEnv(id, clientPorts, ctrlPorts)
		if o.ListenersExtra != nil {
			if extra := o.ListenersExtra(id); extra != "" {
				for i, kv := range env {
					if strings.HasPrefix(kv, "KAFKA_LISTENERS=") || strings.HasPrefix(kv, "KAFKA_ADVERTISED_LISTENERS=") {
						env[i] = kv + "," + extra
					}
				}
			}
		}
		env = append(env, o.Env...)
		if o.NodeEnv != nil {
			env = append(env, o.NodeEnv(id)...)
		}
		return env
	})
	return c
}

// freePorts returns n loopback ports that are free (pickPort): the
// nodes' environment blocks must name every port before any node starts.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ps := make([]int, n)
	for i := range ps {
		p, err := pickPort()
		if err != nil {
			t.Fatalf("harness: free port: %v", err)
		}
		ps[i] = p
	}
	return ps
}

// start launches one process per port (node id i+1 listening on ports[i],
// configured by env(i+1)), killed at test cleanup, and waits until every
// one answers ApiVersions.
func (c *Cluster) start(t testing.TB, ports []int, env func(id int) []string) {
	t.Helper()
	c.startNodes(t, len(ports), func(i int) (string, []string) {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])), env(i + 1)
	})
}

// startNodes launches n processes, node i (0-based) answering at the
// address and configured by the environment block node(i) returns, killed
// at test cleanup, and waits until every one answers ApiVersions.
func (c *Cluster) startNodes(t testing.TB, n int, node func(i int) (addr string, env []string)) {
	t.Helper()
	bin := Build(t)
	for i := range n {
		addr, env := node(i)
		_, portStr, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(portStr)
		b := &Broker{binary: bin, Dir: t.TempDir(), port: port, clusterEnv: true, Addr: addr}
		if c.extraDirs != nil {
			b.ExtraDirs = c.extraDirs(i + 1)
		}
		b.options.Env = env
		c.Brokers = append(c.Brokers, b)
		t.Cleanup(func() {
			b.killIfRunning()
			if t.Failed() {
				t.Logf("samsa node %d output (%s):\n%s", i+1, b.Addr, b.Output())
			}
		})
	}
	for _, b := range c.Brokers {
		if err := b.launch(); err != nil {
			t.Fatalf("harness: %v", err)
		}
	}
	errs := make([]error, len(c.Brokers))
	var wg sync.WaitGroup
	for i, b := range c.Brokers {
		wg.Go(func() { errs[i] = b.waitReady() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("harness: node %d did not become ready on %s: %v", i+1, c.Brokers[i].Addr, err)
		}
	}
}

// Addrs returns the client listeners of the nodes, for SeedBrokers.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, b := range c.Brokers {
		out = append(out, b.Addr)
	}
	return out
}

// Pause stops the process with SIGSTOP (it keeps its sockets, answers
// nothing); Resume continues it.
func (b *Broker) Pause(t testing.TB) { b.signal(t, syscall.SIGSTOP) }

// AddEnv adds environment variables (KEY=value, replacing an earlier
// value of KEY) for the broker's next start (Restart).
func (b *Broker) AddEnv(kv ...string) { b.options.Env = append(b.options.Env, kv...) }

// Resume continues a paused process (SIGCONT).
func (b *Broker) Resume(t testing.TB) { b.signal(t, syscall.SIGCONT) }

func (b *Broker) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	b.mu.Lock()
	cmd := b.cmd
	b.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		t.Fatalf("harness: broker %s is not running", b.Addr)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatalf("harness: signal %v to pid %d: %v", sig, cmd.Process.Pid, err)
	}
}

// SplitClusterEnv is the environment block of node id of a cluster with
// separate roles, as the apache/kafka "isolated" KRaft compose example:
// nodes 1..controllers are controllers only (a CONTROLLER listener), the
// others brokers only (a PLAINTEXT listener). ports[i] is node i+1's port.
func SplitClusterEnv(id, controllers int, ports []int) []string {
	var voters []string
	for i := range controllers {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[i]))
	}
	env := []string{
		"KAFKA_NODE_ID=" + strconv.Itoa(id),
		"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"KAFKA_CONTROLLER_QUORUM_VOTERS=" + strings.Join(voters, ","),
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0",
		"CLUSTER_ID=4L6g3nShT-eMCtK--X86sw",
	}
	if id <= controllers {
		return append(env, "KAFKA_PROCESS_ROLES=controller",
			fmt.Sprintf("KAFKA_LISTENERS=CONTROLLER://127.0.0.1:%d", ports[id-1]))
	}
	l := fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", ports[id-1])
	return append(env, "KAFKA_PROCESS_ROLES=broker", "KAFKA_LISTENERS="+l, "KAFKA_ADVERTISED_LISTENERS="+l,
		"KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT")
}

// StartSplitCluster starts controllers controller-only and brokers
// broker-only processes (SplitClusterEnv plus o.Env). Brokers holds the
// controllers first, then the brokers; a controller's Addr is its
// controller listener (where it answers ApiVersions).
func StartSplitCluster(t testing.TB, controllers, brokers int, o ClusterOptions) *Cluster {
	t.Helper()
	ports := freePorts(t, controllers+brokers)
	c := &Cluster{}
	for i := range controllers {
		c.ControllerAddrs = append(c.ControllerAddrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])))
	}
	c.start(t, ports, func(id int) []string { return append(SplitClusterEnv(id, controllers, ports), o.Env...) })
	return c
}
