package harness

import (
	"net"
	"strconv"
	"testing"
)

// LaunchEnvNode starts one samsa process configured by node's environment
// block alone, like StartEnvNodes, but does not wait until it is ready: a
// controller that joins a quorum (controller.quorum.bootstrap.servers)
// serves nothing until AddRaftVoter adds it, which the test sends after
// the launch. WaitReady waits for it. The process is killed at test
// cleanup; id (1-based) names it in the output logged when the test fails.
func LaunchEnvNode(t testing.TB, id int, node EnvNode) *Broker {
	t.Helper()
	_, portStr, _ := net.SplitHostPort(node.Addr)
	port, _ := strconv.Atoi(portStr)
	b := &Broker{binary: Build(t), Dir: t.TempDir(), port: port, clusterEnv: true, Addr: node.Addr}
	b.options.Env = node.Env
	t.Cleanup(func() {
		b.killIfRunning()
		if t.Failed() {
			t.Logf("samsa node %d output (%s):\n%s", id, b.Addr, b.Output())
		}
	})
	if err := b.launch(); err != nil {
		t.Fatalf("harness: %v", err)
	}
	return b
}

// WaitReady waits until b answers ApiVersions at its Addr (StartTimeout).
func (b *Broker) WaitReady(t testing.TB) {
	t.Helper()
	if err := b.waitReady(); err != nil {
		t.Fatalf("harness: node at %s did not become ready: %v", b.Addr, err)
	}
}
