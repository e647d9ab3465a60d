package broker

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestSendBufferBytes: socket.send.buffer.bytes was accepted and ignored,
// so accepted connections kept Linux's autotuned send buffer (up to 4 MiB)
// where Kafka sets SO_SNDBUF to 102400 bytes by default. Linux reports
// twice the value set (its bookkeeping share), so 102400 reads as 204800.
func TestSendBufferBytes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides []string
		want      int
	}{
		{"default", nil, 2 * 102400},
		{"set", []string{"socket.send.buffer.bytes=65536"}, 2 * 65536},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startTestNode(t, t.TempDir(), tc.overrides...)
			defer closeTestNode(t, n)
			c := dialRaw(t, n.Addrs()[0].String())
			// Answered, so admitted: the connection is in mu.conns.
			apiVersionsOK(t, c)
			if got := sockopt(t, serverConn(t, n, c), syscall.SO_SNDBUF); got != tc.want {
				t.Fatalf("SO_SNDBUF of the accepted connection %d, want %d", got, tc.want)
			}
		})
	}
}

// TestReceiveBufferBytes: socket.receive.buffer.bytes was accepted and
// ignored. Kafka 4.4 sets it as SO_RCVBUF of each listener's server
// socket before bind, unless it is -1 (KafkaServerSocketFactory.
// openServerSocket, with KafkaConfig's socketReceiveBufferBytes: there is
// no per-listener override), so every accepted connection has it.
func TestReceiveBufferBytes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides []string
		want      int // 0: anything but the default's
	}{
		// samsa's default is -1 (config/doc.go: Kafka's 102400 turns off
		// autotuning, which cost produce 23% more broker CPU per GB).
		{"default", nil, 0},
		{"kafka-default", []string{"socket.receive.buffer.bytes=102400"}, 2 * 102400},
		{"set", []string{"socket.receive.buffer.bytes=65536"}, 2 * 65536},
		{"os-default", []string{"socket.receive.buffer.bytes=-1"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startTestNode(t, t.TempDir(), tc.overrides...)
			defer closeTestNode(t, n)
			c := dialRaw(t, n.Addrs()[0].String())
			apiVersionsOK(t, c)
			got := sockopt(t, serverConn(t, n, c), syscall.SO_RCVBUF)
			if (tc.want != 0 && got != tc.want) || (tc.want == 0 && (got <= 0 || got == 2*102400)) {
				t.Fatalf("SO_RCVBUF of the accepted connection %d, want %d (0: the OS default)", got, tc.want)
			}
		})
	}
}

// TestReplicaSocketReceiveBufferBytes: replica.socket.receive.buffer.bytes
// was accepted and ignored. Kafka 4.4's replica fetchers
// (BrokerBlockingSender's NetworkClient, send buffer -1) set it as
// SO_RCVBUF before connecting, 65536 by default (samsa's default is -1);
// -1 leaves the OS default (the plain dialer then).
func TestReplicaSocketReceiveBufferBytes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides []string
		want      int
	}{
		{"default", nil, 0}, // samsa's default is -1 (Kafka's 65536)
		{"kafka-default", []string{"replica.socket.receive.buffer.bytes=65536"}, 2 * 65536},
		{"set", []string{"replica.socket.receive.buffer.bytes=32768"}, 2 * 32768},
		{"os-default", []string{"replica.socket.receive.buffer.bytes=-1"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startTestNode(t, t.TempDir(), tc.overrides...)
			defer closeTestNode(t, n)
			if tc.want == 0 {
				if n.fetchPeers.dial != nil {
					t.Fatal("the replica fetchers have a dialer of their own with the OS default")
				}
				return
			}
			if n.fetchPeers.dial == nil {
				t.Fatal("the replica fetchers have no dialer of their own")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := n.fetchPeers.dial(ctx, n.Addrs()[0].String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if got := sockopt(t, conn, syscall.SO_RCVBUF); got != tc.want {
				t.Fatalf("SO_RCVBUF of a replica fetch connection %d, want %d", got, tc.want)
			}
		})
	}
}

// serverConn returns the server side of client connection c, which must
// have been answered already.
func serverConn(t *testing.T, n *Node, c *rawClient) net.Conn {
	t.Helper()
	local := c.nc.LocalAddr().String()
	var sc *conn
	n.srv.mu.Lock()
	for x := range n.srv.mu.conns {
		if x.nc.RemoteAddr().String() == local {
			sc = x
		}
	}
	n.srv.mu.Unlock()
	if sc == nil {
		t.Fatalf("no server connection from %s", local)
	}
	return sc.nc
}

// sockopt reads the SOL_SOCKET option opt of socket nc.
func sockopt(t *testing.T, nc net.Conn, opt int) int {
	t.Helper()
	s, ok := nc.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		t.Fatalf("connection %T is not a socket", nc)
	}
	raw, err := s.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := raw.Control(func(fd uintptr) { v, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, opt) }); err != nil || gerr != nil {
		t.Fatalf("getsockopt %d: %v %v", opt, err, gerr)
	}
	return v
}
