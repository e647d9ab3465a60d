package quorum

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/samsa-broker/samsa/controller"
)

func (l *Listener) parkedCount(addr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.parked[addr])
}

func (l *Listener) outgoingCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.outgoing)
}

// TestReversePool: an observer parks reverseSlots connections at a
// voter; the voter's Dial takes one, the observer's Accept gets it when
// the first byte arrives, both ends talk, and a replacement is parked.
// Closing the observer closes its parked and used connections, the voter
// forgets them, and its Dial then times out instead of dialing TCP.
func TestReversePool(t *testing.T) {
	voter, err := Listen("127.0.0.1:0", "", nil, quietLogger)
	if err != nil {
		t.Fatal(err)
	}
	defer voter.Close()
	obs, err := ListenBroker("127.0.0.1:0", "", nil, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	self := obs.Addr().String()
	obs.StartReverse(self, func() []string { return []string{voter.BoundAddr().String(), self} })
	waitFor(t, 30*time.Second, "parked connections", func() bool { return voter.parkedCount(self) == reverseSlots })
	if n := obs.outgoingCount(); n != reverseSlots {
		t.Fatalf("observer tracks %d outgoing connections, want %d", n, reverseSlots)
	}

	c, err := voter.Dial(raft.ServerAddress(net.JoinHostPort("127.0.0.1", "1")) /* not parked: TCP */, time.Second)
	if err == nil {
		c.Close()
		t.Fatal("TCP dial to a closed port succeeded")
	}
	c, err = voter.Dial(raft.ServerAddress(self), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("rpc-request")); err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		a, err := obs.Accept()
		if err == nil {
			accepted <- a
		}
	}()
	var a net.Conn
	select {
	case a = <-accepted:
	case <-time.After(30 * time.Second):
		t.Fatal("observer did not accept the used reverse connection")
	}
	got := make([]byte, len("rpc-request"))
	if _, err := io.ReadFull(a, got); err != nil || string(got) != "rpc-request" {
		t.Fatalf("observer read %q, %v", got, err)
	}
	if _, err := a.Write([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	got = make([]byte, len("reply"))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "reply" {
		t.Fatalf("voter read %q, %v", got, err)
	}
	waitFor(t, 30*time.Second, "a replacement parked", func() bool { return voter.parkedCount(self) == reverseSlots })
	// Used (by Raft) and parked: all tracked; closing the used one forgets it.
	waitFor(t, 10*time.Second, "outgoing tracked", func() bool { return obs.outgoingCount() == reverseSlots+1 })
	a.Close()
	if n := obs.outgoingCount(); n != reverseSlots {
		t.Fatalf("after closing the used connection the observer tracks %d, want %d", n, reverseSlots)
	}
	if _, err := c.Read(got); err == nil {
		t.Fatal("voter's connection still open after the observer closed it")
	}

	obs.Close()
	waitFor(t, 30*time.Second, "the voter to drop the closed parked connections", func() bool { return voter.parkedCount(self) == 0 })
	start := time.Now()
	if c, err := voter.Dial(raft.ServerAddress(self), 300*time.Millisecond); err == nil {
		c.Close()
		t.Fatal("dial of a closed observer succeeded")
	}
	if time.Since(start) < 300*time.Millisecond {
		t.Fatal("Dial of a reverse observer did not wait for a parked connection")
	}
}

// TestReverseBounds: a voter keeps at most maxParked connections per
// observer (closing the oldest), refuses bad reverse headers, and a
// parked connection that sends data is closed.
func TestReverseBounds(t *testing.T) {
	voter, err := Listen("127.0.0.1:0", "", nil, quietLogger)
	if err != nil {
		t.Fatal(err)
	}
	defer voter.Close()
	hdr := func(addr string) []byte {
		b := append([]byte{}, ReversePreamble...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(addr)))
		return append(b, addr...)
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range maxParked + 2 {
		c, err := net.Dial("tcp", voter.BoundAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		c.Write(hdr("obs:1"))
		n := len(conns)
		waitFor(t, 10*time.Second, "parked", func() bool { return voter.parkedCount("obs:1") == min(n, maxParked) })
	}
	// The two oldest were closed.
	for _, c := range conns[:2] {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("evicted parked connection: read %v, want EOF", err)
		}
	}
	// A parked connection that sends data is dropped.
	conns[len(conns)-1].Write([]byte{1})
	waitFor(t, 10*time.Second, "dropped", func() bool { return voter.parkedCount("obs:1") == maxParked-1 })

	for _, bad := range [][]byte{
		append(append([]byte{}, ReversePreamble...), 0, 0),           // empty address
		append(append([]byte{}, ReversePreamble...), 0xff, 0xff),     // too long
		append(append([]byte{}, ReversePreamble...), 0, 4, 'a', 'b'), // short, then EOF
	} {
		c, err := net.Dial("tcp", voter.BoundAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(bad)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("bad header %x: read %v, want EOF", bad, err)
		}
		c.Close()
	}
}

// TestBrokerListenerRefusesRaft: a broker-only node's listener closes a
// connection that opens with a Raft preamble (either kind) and hands
// Kafka connections over unchanged.
func TestBrokerListenerRefusesRaft(t *testing.T) {
	kafka := make(chan []byte, 1)
	ln, err := ListenBroker("127.0.0.1:0", "", func(c net.Conn) {
		defer c.Close()
		b, _ := io.ReadAll(io.LimitReader(c, 8))
		kafka <- b
	}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	for _, pre := range [][]byte{Preamble, ReversePreamble} {
		c, err := net.Dial("tcp", ln.BoundAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(append(append([]byte{}, pre...), 0, 5, 'x', ':', '1', '2', '3'))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("preamble %x: read %v, want the connection closed", pre, err)
		}
		c.Close()
	}
	c, err := net.Dial("tcp", ln.BoundAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := []byte{0, 0, 0, 4, 0, 18, 0, 3}
	c.Write(req)
	select {
	case b := <-kafka:
		if !bytes.Equal(b, req) {
			t.Fatalf("Kafka side read %x, want %x", b, req)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Kafka connection not handed over")
	}
	select {
	case <-accepted:
		t.Fatal("a Raft connection was accepted on a broker listener")
	default:
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestReverseObserverFollowsTCPQuorum: a broker-only observer whose
// listener refuses Raft follows a three-voter quorum over its reverse
// connections, also after the active controller fails over.
func TestReverseObserverFollowsTCPQuorum(t *testing.T) {
	tc := newTCPCluster(t, 3, testTimeout)
	ln, err := ListenBroker("127.0.0.1:0", "", nil, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	self := ln.Addr().String()
	obs, err := Open(Options{NodeID: 4, ClusterID: "c", Dir: t.TempDir(), Voters: tc.voters, Observer: true, Listener: ln,
		ElectionTimeout: testTimeout, Logger: testLogger().With("node", 4)})
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	ln.StartReverse(self, func() []string {
		var out []string
		for _, v := range tc.voters {
			out = append(out, v.Addr)
		}
		return out
	})
	l := tc.leader()
	if err := l.AddObserver(4, self); err != nil {
		t.Fatal(err)
	}
	propose := func(q *Quorum, id int32) {
		if err := q.Propose(q.Machine().Image().Offset, []controller.Record{controller.RegisterBrokerRecord{BrokerID: id, Host: "h", Port: 1}}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 60*time.Second, "the observer to apply the batch", func() bool {
			_, ok := obs.Machine().Image().Brokers[id]
			return ok
		})
	}
	propose(l, 1)
	for id, q := range tc.nodes {
		if q == l {
			tc.kill(id)
			break
		}
	}
	propose(tc.leader(), 2)
}

// TestVoterDialsOldObserver: an observer that never parked here (an
// earlier build's, whose listener takes Raft) is dialed over TCP with
// Preamble, so upgraded voters keep replicating to it.
func TestVoterDialsOldObserver(t *testing.T) {
	voter, err := Listen("127.0.0.1:0", "", nil, quietLogger)
	if err != nil {
		t.Fatal(err)
	}
	defer voter.Close()
	old, err := Listen("127.0.0.1:0", "", nil, quietLogger)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	c, err := voter.Dial(raft.ServerAddress(old.Addr().String()), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("rpc"))
	accepted := make(chan net.Conn, 1)
	go func() {
		if a, err := old.Accept(); err == nil {
			accepted <- a
		}
	}()
	select {
	case a := <-accepted:
		defer a.Close()
		got := make([]byte, 3)
		if _, err := io.ReadFull(a, got); err != nil || string(got) != "rpc" {
			t.Fatalf("read %q, %v", got, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the earlier build's observer did not accept the voter's TCP connection")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestReverseUnreachableWarns: an observer that cannot park at a voter
// logs one WARN line naming it, and one INFO line once it can.
func TestReverseUnreachableWarns(t *testing.T) {
	old := reverseWarnAfter
	reverseWarnAfter = 300 * time.Millisecond
	defer func() { reverseWarnAfter = old }()
	// A port nobody listens on, then a voter on it.
	tmp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := tmp.Addr().String()
	tmp.Close()
	var logs syncBuffer
	obs, err := ListenBroker("127.0.0.1:0", "", nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	self := obs.Addr().String()
	obs.StartReverse(self, func() []string { return []string{target} })
	waitFor(t, 30*time.Second, "the WARN line", func() bool {
		return strings.Contains(logs.String(), "cannot leave Raft connections at a controller")
	})
	voter, err := Listen(target, "", nil, quietLogger)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", target, err)
	}
	defer voter.Close()
	waitFor(t, 30*time.Second, "parked connections", func() bool { return voter.parkedCount(self) == reverseSlots })
	c, err := voter.Dial(raft.ServerAddress(self), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{1})
	waitFor(t, 30*time.Second, "the INFO line", func() bool {
		return strings.Contains(logs.String(), "reverse Raft connections to a controller work again")
	})
	if n := strings.Count(logs.String(), "cannot leave Raft connections"); n != 1 {
		t.Fatalf("%d WARN lines, want 1", n)
	}
}
