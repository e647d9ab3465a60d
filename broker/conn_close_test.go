package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/handlers"
)

// TestConnCloseHook: before, nothing heard of a client connection
// closing, so share sessions outlived their connections. The server now
// numbers each connection (handlers.Request.ConnID, distinct per
// connection) and calls the OnConnClose functions with that number once
// the connection closed.
func TestConnCloseHook(t *testing.T) {
	n := startTestNode(t, t.TempDir())
	defer closeTestNode(t, n)
	seen := make(chan uint64, 4)
	e := n.srv.table[int16(kmsg.DescribeCluster)]
	inner := e.Handle
	e.Handle = func(d *handlers.Deps, r *handlers.Request) (kmsg.Response, error) {
		seen <- r.ConnID
		return inner(d, r)
	}
	n.srv.table[e.Key] = e // before any connection exists: no race
	closed := make(chan uint64, 1024)
	n.srv.OnConnClose(func(id uint64) {
		select {
		case closed <- id:
		default: // never block the server's connection goroutine
		}
	})

	addr := n.Addrs()[0].String()
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	if _, err := a.roundTrip(kmsg.NewPtrDescribeClusterRequest(), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.roundTrip(kmsg.NewPtrDescribeClusterRequest(), 0); err != nil {
		t.Fatal(err)
	}
	idA, idB := <-seen, <-seen
	if idA == 0 || idB == 0 || idA == idB {
		t.Fatalf("connection ids %d and %d, want two distinct non-zero ids", idA, idB)
	}
	a.nc.Close()
	// Other connections (the node's own) may close meanwhile: wait for
	// a's id among the reported ones; b's must never be.
	deadline := time.After(30 * time.Second)
	for gotA := false; !gotA; {
		select {
		case id := <-closed:
			if id == idB {
				t.Fatalf("OnConnClose got b's id %d while b is open", id)
			}
			gotA = id == idA
		case <-deadline:
			t.Fatal("OnConnClose not called with a's id within 30 s of a closing")
		}
	}
	if _, err := b.roundTrip(kmsg.NewPtrDescribeClusterRequest(), 0); err != nil {
		t.Fatalf("the other connection: %v", err)
	}
	if id := <-seen; id != idB {
		t.Fatalf("the other connection's id changed from %d to %d", idB, id)
	}
	for {
		select {
		case id := <-closed:
			if id == idB {
				t.Fatalf("OnConnClose got b's id %d while b is open", id)
			}
		default:
			return
		}
	}
}
