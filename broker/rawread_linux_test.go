package broker

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestRawReadBehavesLikeRead: rawRead returns the bytes sent, in order;
// a read deadline ends a wait with a timeout net.Error (what readFull's
// idle check needs); the peer's close is io.EOF; our own close is
// net.ErrClosed; a TLS connection gets no raw side.
func TestRawReadBehavesLikeRead(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	peer, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	nc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rc := rawReader(nc)
	if rc == nil {
		t.Fatal("no raw side for a TCP connection")
	}
	want := make([]byte, 3<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	go peer.Write(want)
	got := make([]byte, 0, len(want))
	buf := make([]byte, 1<<20)
	for len(got) < len(want) {
		nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, err := rawRead(rc, buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("bytes differ")
	}

	nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err = rawRead(rc, buf)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("after the deadline: %v, want a timeout", err)
	}

	nc.SetReadDeadline(time.Time{})
	peer.Write([]byte("tail"))
	peer.Close()
	var tail []byte
	for {
		n, err := rawRead(rc, buf)
		tail = append(tail, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if string(tail) != "tail" {
		t.Fatalf("read %q before EOF", tail)
	}

	nc.Close()
	if _, err := rawRead(rc, buf); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("after close: %v, want net.ErrClosed", err)
	}
}
