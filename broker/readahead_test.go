package broker

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
)

// countingConn is a net.Conn whose reads come from r, counted.
type countingConn struct {
	net.Conn
	r     io.Reader
	reads int
}

func (c *countingConn) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// TestReadAhead: two small requests sent together are read with one read
// of the socket (each used to take two: its size, then its body), their
// bytes come out whole and in order, and a body larger than the buffer is
// read into its own buffer after what the buffer already holds.
func TestReadAhead(t *testing.T) {
	frame := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	small1, small2 := bytes.Repeat([]byte{1}, 100), bytes.Repeat([]byte{2}, 300)
	large := make([]byte, 3*readAheadSize)
	for i := range large {
		large[i] = byte(i)
	}
	var wire []byte
	wire = append(wire, frame(small1)...)
	wire = append(wire, frame(small2)...)
	wire = append(wire, frame(large)...)
	nc := &countingConn{r: bytes.NewReader(wire)}
	c := &conn{nc: nc, srv: &Server{}}

	readFrame := func() []byte {
		t.Helper()
		var size [4]byte
		if err := c.readFull(size[:]); err != nil {
			t.Fatal(err)
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if err := c.readFull(body); err != nil {
			t.Fatal(err)
		}
		return body
	}
	if got := readFrame(); !bytes.Equal(got, small1) {
		t.Fatalf("first request: %d bytes, want the 100 sent", len(got))
	}
	if got := readFrame(); !bytes.Equal(got, small2) {
		t.Fatalf("second request: %d bytes, want the 300 sent", len(got))
	}
	if nc.reads != 1 {
		t.Fatalf("%d socket reads for two small requests sent together, want 1", nc.reads)
	}
	if got := readFrame(); !bytes.Equal(got, large) {
		t.Fatalf("large request: %d bytes, not the %d sent", len(got), len(large))
	}
	// The buffer's 4 KiB held the large request's size and its first
	// bytes; the rest came straight into the body in one more read.
	if nc.reads != 2 {
		t.Fatalf("%d socket reads in all, want 2", nc.reads)
	}
	if err := c.readFull(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read past the end: %v, want EOF", err)
	}
}
