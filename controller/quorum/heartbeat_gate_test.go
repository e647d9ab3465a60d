package quorum

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// handlerTransport keeps the heartbeat handler set on it.
type handlerTransport struct {
	raft.Transport
	fn func(raft.RPC)
}

func (h *handlerTransport) SetHeartbeatHandler(fn func(raft.RPC)) { h.fn = fn }

// TestHeartbeatGate: a heartbeat being handled when the quorum closes
// ends before close returns (the store is closed after it), and one that
// arrives later never reaches Raft: it is answered errStopping.
func TestHeartbeatGate(t *testing.T) {
	var gate heartbeatGate
	inner := &handlerTransport{}
	tr := track(inner, &progressTracker{peers: map[raft.ServerID]peerProgress{}}, nil, make(chan struct{}), &gate)
	entered, release := make(chan struct{}), make(chan struct{})
	calls := 0
	tr.SetHeartbeatHandler(func(rpc raft.RPC) {
		calls++
		if calls == 1 {
			close(entered)
			<-release
		}
		rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
	})
	if inner.fn == nil {
		t.Fatal("no handler reached the transport")
	}
	first := make(chan raft.RPCResponse, 1)
	go inner.fn(raft.RPC{Command: &raft.AppendEntriesRequest{}, RespChan: first})
	<-entered
	closed := make(chan struct{})
	go func() { gate.close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("close returned while a heartbeat was being handled")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("close never returned after the heartbeat ended")
	}
	if r := <-first; r.Error != nil {
		t.Fatalf("the heartbeat in flight: %v", r.Error)
	}
	later := make(chan raft.RPCResponse, 1)
	inner.fn(raft.RPC{Command: &raft.AppendEntriesRequest{}, RespChan: later})
	if r := <-later; !errors.Is(r.Error, errStopping) || calls != 1 {
		t.Fatalf("a heartbeat after close: %v, handler calls %d", r.Error, calls)
	}
}
