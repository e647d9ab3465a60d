package broker

import (
	"net"
	"slices"
	"testing"
)

// bufferConn records SetWriteBuffer calls.
type bufferConn struct {
	net.Conn
	set []int
}

func (c *bufferConn) SetWriteBuffer(n int) error {
	c.set = append(c.set, n)
	return nil
}

// TestSetSendBuffer: a positive socket.send.buffer.bytes is set on the
// connection; -1 (Kafka's "OS default") and 0 leave it alone, and a
// connection without SetWriteBuffer (a pipe) is skipped.
func TestSetSendBuffer(t *testing.T) {
	for _, tc := range []struct {
		bytes int
		want  []int
	}{{102400, []int{102400}}, {1, []int{1}}, {0, nil}, {-1, nil}} {
		c := &bufferConn{}
		setSendBuffer(c, tc.bytes)
		if !slices.Equal(c.set, tc.want) {
			t.Errorf("socket.send.buffer.bytes=%d: SetWriteBuffer calls %v, want %v", tc.bytes, c.set, tc.want)
		}
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	setSendBuffer(a, 102400) // must not panic
}
