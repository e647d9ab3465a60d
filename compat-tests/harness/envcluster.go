package harness

import (
	"testing"
)

// EnvNode is one process of StartEnvNodes: its environment block (as a
// compose file's service would give it) and the address where it answers
// ApiVersions once ready (a client listener, or the controller listener of
// a controller-only node).
type EnvNode struct {
	Env  []string
	Addr string
}

// StartEnvNodes starts one samsa process per node, configured by its
// environment block alone (log.dirs is a fresh temporary dir), and waits
// until each answers ApiVersions at its Addr. The processes are killed at
// test cleanup. Ports are the caller's: it must have picked free ones.
func StartEnvNodes(t testing.TB, nodes []EnvNode) *Cluster {
	t.Helper()
	c := &Cluster{}
	c.startNodes(t, len(nodes), func(i int) (string, []string) { return nodes[i].Addr, nodes[i].Env })
	return c
}

// FreePorts returns n loopback ports that were free a moment ago.
func FreePorts(t testing.TB, n int) []int { return freePorts(t, n) }
