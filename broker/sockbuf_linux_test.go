package broker

import (
	"syscall"
	"testing"
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
			if got := serverSendBuffer(t, n, c); got != tc.want {
				t.Fatalf("SO_SNDBUF of the accepted connection %d, want %d", got, tc.want)
			}
		})
	}
}

// serverSendBuffer returns SO_SNDBUF of the server side of client
// connection c, which must have been answered already.
func serverSendBuffer(t *testing.T, n *Node, c *rawClient) int {
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
	s, ok := sc.nc.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		t.Fatalf("server connection %T is not a socket", sc.nc)
	}
	raw, err := s.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := raw.Control(func(fd uintptr) { v, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF) }); err != nil || gerr != nil {
		t.Fatalf("getsockopt SO_SNDBUF: %v %v", err, gerr)
	}
	return v
}
