package quorum

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// ReversePreamble opens a "reverse" Raft connection: a broker-only node
// (an observer of the quorum) dials a voter's controller listener and
// writes ReversePreamble, a 2-byte length and its own Raft address (the
// address the active controller added it at). The voter parks the
// connection; when its Raft transport next dials that address it takes a
// parked connection instead of dialing TCP, and the observer, on seeing
// the first byte of an RPC arrive, hands the connection to its Raft
// transport as if it had accepted it. So Raft reaches a broker-only node
// only over connections that node opened to the controller listeners, and
// its client listeners never accept Raft.
var ReversePreamble = []byte{0xff, 'S', 'R', 'A', 'F', 'T', 0, 2}

const (
	// maxReverseAddr bounds the observer address a reverse preamble
	// carries.
	maxReverseAddr = 1024
	// reverseSlots is how many idle reverse connections an observer keeps
	// parked at each voter: one is taken per connection the voter's Raft
	// transport opens (its connection pool, a pipeline, a snapshot), and
	// replaced as soon as it is.
	reverseSlots = 2
	// maxParked bounds the parked connections a voter keeps per observer
	// address; the oldest is closed when one more arrives (slack for an
	// observer that reaches one voter under two names).
	maxParked = 3 * reverseSlots
	// reverseMemory is how long after an observer last parked a
	// connection its voter still waits for one instead of dialing it.
	reverseMemory = time.Minute
	// reverseRefresh is how often an observer re-reads the voters it
	// parks connections at.
	reverseRefresh = 2 * time.Second
	// reverseBackoffMin and reverseBackoffMax bound the wait before an
	// observer re-dials a voter after a failed or closed connection.
	reverseBackoffMin = 100 * time.Millisecond
	reverseBackoffMax = 2 * time.Second
)

// reverseWarnAfter is how long an observer fails to reach a voter before
// it logs a WARN line (a variable for tests).
var reverseWarnAfter = 30 * time.Second

// reverseKeepAlive notices within about 11 s that the other end of an
// idle parked connection is gone without a FIN (a powered-off or
// partitioned node), so that the observer parks anew at a restarted voter.
var reverseKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 2 * time.Second, Count: 3}

// parkedConn is a reverse connection parked at a voter. watch reads from
// it until it is taken (the reader is woken with a past read deadline) or
// the observer closes it.
type parkedConn struct {
	c     net.Conn
	taken bool          // under Listener.mu
	done  chan struct{} // closed when watch returns
	bad   bool          // set by watch before done: closed or sent data while parked
}

// park keeps a reverse connection from the observer at addr.
func (l *Listener) park(c net.Conn, addr string) {
	if tc, ok := unwrapTCP(c); ok {
		tc.SetKeepAliveConfig(reverseKeepAlive)
	}
	p := &parkedConn{c: c, done: make(chan struct{})}
	l.mu.Lock()
	select {
	case <-l.closed:
		l.mu.Unlock()
		c.Close()
		return
	default:
	}
	if l.parked == nil {
		l.parked = map[string][]*parkedConn{}
		l.lastPark = map[string]time.Time{}
	}
	list := append(l.parked[addr], p)
	var evicted *parkedConn
	if len(list) > maxParked {
		evicted, list = list[0], list[1:]
	}
	l.parked[addr] = list
	now := time.Now()
	for a, at := range l.lastPark {
		if len(l.parked[a]) == 0 && now.Sub(at) >= reverseMemory {
			delete(l.lastPark, a)
			delete(l.parked, a)
		}
	}
	l.lastPark[addr] = now
	l.parkedChanged()
	l.mu.Unlock()
	if evicted != nil {
		evicted.c.Close()
	}
	l.wg.Add(1)
	go func() { defer l.wg.Done(); l.watch(p, addr) }()
}

// unwrapTCP finds the TCP connection under c (a peekedConn, a TLS
// connection).
func unwrapTCP(c net.Conn) (*net.TCPConn, bool) {
	for range 4 {
		switch v := c.(type) {
		case *net.TCPConn:
			return v, true
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil, false
		}
	}
	return nil, false
}

// parkedChanged wakes Dials waiting for a parked connection (l.mu held).
func (l *Listener) parkedChanged() {
	if l.parkedCh != nil {
		close(l.parkedCh)
	}
	l.parkedCh = make(chan struct{})
}

func (l *Listener) watch(p *parkedConn, addr string) {
	defer close(p.done)
	var one [1]byte
	n, err := p.c.Read(one[:])
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.taken {
		p.bad = n > 0 || !errors.Is(err, os.ErrDeadlineExceeded)
		return
	}
	list := l.parked[addr]
	for i, q := range list {
		if q == p {
			l.parked[addr] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if n > 0 {
		l.logger.Warn("quorum: closing a parked Raft connection that sent data", "observer", addr, "remote", p.c.RemoteAddr())
	}
	p.c.Close()
}

// reverseAddr reports whether addr is an observer that parks connections
// here, so that Dial waits for one rather than dialing it.
func (l *Listener) reverseAddr(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.parked[addr]) > 0 || time.Since(l.lastPark[addr]) < reverseMemory
}

// takeParked returns a parked connection of the observer at addr, waiting
// up to timeout for one.
func (l *Listener) takeParked(addr string, timeout time.Duration) (net.Conn, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		var p *parkedConn
		if list := l.parked[addr]; len(list) > 0 {
			p = list[len(list)-1]
			l.parked[addr] = list[:len(list)-1]
			p.taken = true
			l.lastPark[addr] = time.Now()
		}
		if l.parkedCh == nil {
			l.parkedCh = make(chan struct{})
		}
		wait := l.parkedCh
		l.mu.Unlock()
		if p != nil {
			p.c.SetReadDeadline(time.Unix(1, 0))
			<-p.done
			if !p.bad {
				p.c.SetReadDeadline(time.Time{})
				return p.c, nil
			}
			p.c.Close()
			continue
		}
		select {
		case <-wait:
		case <-deadline.C:
			return nil, fmt.Errorf("quorum: no parked Raft connection from observer %s within %v", addr, timeout)
		case <-l.closed:
			return nil, net.ErrClosed
		}
	}
}

// readReverseAddr reads the observer address after ReversePreamble.
func readReverseAddr(r io.Reader) (string, error) {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", err
	}
	size := binary.BigEndian.Uint16(n[:])
	if size == 0 || size > maxReverseAddr {
		return "", fmt.Errorf("observer address of %d bytes", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// StartReverse makes this listener (a broker-only node's) keep reverse
// connections parked at each voter's controller listener that targets
// returns (re-read every few seconds), and accept Raft only on them. self
// is this node's Raft address as the active controller adds it
// (AddObserver). The connections are closed by Close.
func (l *Listener) StartReverse(self string, targets func() []string) {
	l.wg.Add(1)
	go func() { defer l.wg.Done(); l.reverseLoop(self, targets) }()
}

func (l *Listener) reverseLoop(self string, targets func() []string) {
	running := map[string]chan struct{}{}
	defer func() {
		for _, stop := range running {
			close(stop)
		}
	}()
	tick := time.NewTicker(reverseRefresh)
	defer tick.Stop()
	for {
		want := map[string]bool{}
		for _, t := range targets() {
			if t != "" && t != self {
				want[t] = true
			}
		}
		for t, stop := range running {
			if !want[t] {
				close(stop)
				delete(running, t)
			}
		}
		for t := range want {
			if running[t] != nil {
				continue
			}
			stop := make(chan struct{})
			running[t] = stop
			for i := range reverseSlots {
				l.wg.Add(1)
				go func() { defer l.wg.Done(); l.reverseSlot(self, t, stop, i == 0) }()
			}
		}
		select {
		case <-tick.C:
		case <-l.closed:
			return
		}
	}
}

// reverseSlot keeps one reverse connection parked at voter target: it
// dials, waits for the voter to use it, hands it to Raft and dials again,
// backing off after failures, until stop or Close.
func (l *Listener) reverseSlot(self, target string, stop chan struct{}, logs bool) {
	backoff := reverseBackoffMin
	h := &slotHealth{failingSince: time.Now()}
	held := func() {
		if h.ok() && logs {
			l.logger.Info("quorum: reverse Raft connections to a controller work again", "controller", target)
		}
	}
	for {
		select {
		case <-stop:
			return
		case <-l.closed:
			return
		default:
		}
		c, first, parked, err := l.parkAt(self, target, stop, held)
		if parked {
			held()
		} else if failing := h.failed(); failing > 0 && logs {
			l.logger.Warn("quorum: cannot leave Raft connections at a controller; this broker gets no metadata from it while it is the active controller", "controller", target, "for", failing.Round(time.Second), "err", err)
		}
		if err == nil {
			backoff = reverseBackoffMin
			// Raft owns the connection from here; Close still closes it.
			conn := &peekedConn{Conn: &trackedConn{Conn: c, l: l}, r: io.MultiReader(bytes.NewReader(first), c)}
			select {
			case l.raftConns <- conn:
				continue
			case <-l.closed:
				c.Close()
				return
			}
		}
		l.logger.Debug("quorum: reverse Raft connection to a controller failed; retrying", "controller", target, "err", err, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-stop:
			t.Stop()
			return
		case <-l.closed:
			t.Stop()
			return
		}
		backoff = min(2*backoff, reverseBackoffMax)
	}
}

// slotHealth tells a reverse slot when to log that a voter cannot be
// reached (once per failing period) and that it can again.
type slotHealth struct {
	mu           sync.Mutex
	failingSince time.Time
	warned       bool
}

// ok records a connection the voter kept; true when a WARN line was
// logged since the last one.
func (h *slotHealth) ok() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	was := h.warned
	h.failingSince, h.warned = time.Now(), false
	return was
}

// failed records a failure; it returns how long the voter has failed when
// that reaches reverseWarnAfter for the first time, else 0.
func (h *slotHealth) failed() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := time.Since(h.failingSince)
	if h.warned || d < reverseWarnAfter {
		return 0
	}
	h.warned = true
	return d
}

// parkAt dials target, parks the connection there and waits until the
// voter uses it (its first byte, returned). parked: the voter kept it
// (used it, or held it for at least a second; then held is called too).
func (l *Listener) parkAt(self, target string, stop chan struct{}, held func()) (c net.Conn, first []byte, parked bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		select {
		case <-stop:
		case <-l.closed:
		case <-ctx.Done():
		}
		cancel()
	}()
	hdr := make([]byte, 0, 2+len(self))
	hdr = binary.BigEndian.AppendUint16(hdr, uint16(len(self)))
	hdr = append(hdr, self...)
	c, err = l.sec.dial(ctx, target, ReversePreamble, hdr, reverseKeepAlive)
	if err != nil {
		return nil, nil, false, err
	}
	if !l.track(c, true) {
		c.Close()
		return nil, nil, false, net.ErrClosed
	}
	done := make(chan struct{})
	defer close(done)
	conn := c // c is a result: nil on errors
	go func() {
		select {
		case <-stop:
			conn.Close()
		case <-done:
		}
	}()
	wrote := time.Now()
	heldTimer := time.AfterFunc(time.Second, held)
	defer heldTimer.Stop()
	first = make([]byte, 1)
	if _, err := io.ReadFull(c, first); err != nil {
		l.track(c, false)
		c.Close()
		// A voter that closes at once did not keep it (an earlier
		// build's: "unknown preamble").
		return nil, nil, time.Since(wrote) >= time.Second, err
	}
	return c, first, true, nil
}

// trackedConn is a reverse connection handed to Raft: closing it forgets
// it.
type trackedConn struct {
	net.Conn
	l *Listener
}

func (t *trackedConn) Close() error {
	t.l.track(t.Conn, false)
	return t.Conn.Close()
}

// track records an outgoing reverse connection (parked or used by Raft)
// so that Close closes it; false when the listener is closed.
func (l *Listener) track(c net.Conn, add bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !add {
		delete(l.outgoing, c)
		return true
	}
	select {
	case <-l.closed:
		return false
	default:
	}
	if l.outgoing == nil {
		l.outgoing = map[net.Conn]bool{}
	}
	l.outgoing[c] = true
	return true
}

// Dial implements raft.StreamLayer: a parked reverse connection of an
// observer that parks them here, otherwise a TCP connection that opens
// with Preamble.
func (l *Listener) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if addr := string(address); l.reverseAddr(addr) {
		return l.takeParked(addr, timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return l.sec.dial(ctx, string(address), Preamble, nil, net.KeepAliveConfig{})
}
