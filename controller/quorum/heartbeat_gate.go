package quorum

import (
	"errors"
	"sync"

	"github.com/hashicorp/raft"
)

// errStopping answers the heartbeats that arrive once the quorum closes.
var errStopping = errors.New("quorum: stopping")

// heartbeatGate holds Raft's heartbeat handler off the store once the
// quorum closes. hashicorp/raft runs that handler on the transport's
// connection goroutines, which Raft's Shutdown does not wait for: a
// heartbeat already being handled when the node stopped went on to save a
// newer term into the store Quorum.Close had just closed, and Raft
// panicked ("failed to save current term: database not open"), killing
// the process. close waits for the handlers running and refuses later
// ones.
type heartbeatGate struct {
	mu     sync.RWMutex
	closed bool
}

// wrap returns fn run through the gate (nil for a nil fn).
func (g *heartbeatGate) wrap(fn func(raft.RPC)) func(raft.RPC) {
	if fn == nil {
		return nil
	}
	return func(rpc raft.RPC) {
		g.mu.RLock()
		defer g.mu.RUnlock()
		if g.closed {
			rpc.Respond(nil, errStopping)
			return
		}
		fn(rpc)
	}
}

// close waits for the heartbeats being handled to end; later ones are
// answered errStopping without reaching Raft.
func (g *heartbeatGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// SetHeartbeatHandler sets Raft's heartbeat handler on the wrapped
// transport, through the quorum's heartbeat gate.
func (t *trackingTransport) SetHeartbeatHandler(fn func(raft.RPC)) {
	if t.heartbeats != nil {
		fn = t.heartbeats.wrap(fn)
	}
	t.Transport.SetHeartbeatHandler(fn)
}
