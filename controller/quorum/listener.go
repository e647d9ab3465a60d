package quorum

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"time"
)

// Preamble is what a samsa node writes first on a Raft connection to a
// controller listener: 0xff, "SRAFT", then a 2-byte protocol version (1).
// A Kafka request starts with its int32 size, so its first byte is never
// 0xff (that would be a negative size), which lets Raft and the Kafka
// protocol share the port named in controller.quorum.voters.
var Preamble = []byte{0xff, 'S', 'R', 'A', 'F', 'T', 0, 1}

// preambleTimeout bounds how long an accepted connection may take to show
// what protocol it speaks.
const preambleTimeout = 10 * time.Second

// Listener is the controller listener: one TCP port shared by the Raft
// transport (connections that open with Preamble) and by Kafka clients of
// the controller (every other connection, handed to OnKafka). It
// implements raft.StreamLayer.
type Listener struct {
	ln        net.Listener
	advertise net.Addr
	logger    *slog.Logger
	onKafka   func(net.Conn)
	raftConns chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
	// broker: a broker-only node's client listener, which refuses Raft
	// connections (its Raft traffic comes over reverse connections,
	// StartReverse).
	broker bool
	// sec secures Raft connections (security.go); zero: PLAINTEXT.
	sec Security

	mu       sync.Mutex
	parked   map[string][]*parkedConn // reverse connections parked here, by observer address
	lastPark map[string]time.Time
	parkedCh chan struct{}     // closed when parked changes
	outgoing map[net.Conn]bool // reverse connections this observer opened
}

// Listen opens the controller listener on bind. advertise is the address
// the other voters use for this node (its controller.quorum.voters entry;
// empty: the bound address). onKafka takes ownership of every connection
// that is not Raft; nil closes them with a log line.
func Listen(bind, advertise string, onKafka func(net.Conn), logger *slog.Logger) (*Listener, error) {
	return listen(bind, advertise, onKafka, logger, false, Security{})
}

// ListenSecure is Listen on a controller listener that is not PLAINTEXT:
// accepted connections go through sec's TLS, Raft connections through
// its SASL (or client certificate) check before Raft sees them, and this
// node's own Raft connections through its client side.
func ListenSecure(bind, advertise string, onKafka func(net.Conn), logger *slog.Logger, sec Security) (*Listener, error) {
	return listen(bind, advertise, onKafka, logger, false, sec)
}

func listen(bind, advertise string, onKafka func(net.Conn), logger *slog.Logger, broker bool, sec Security) (*Listener, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("quorum: controller listener: %w", err)
	}
	l := &Listener{ln: ln, advertise: ln.Addr(), logger: logger, onKafka: onKafka,
		raftConns: make(chan net.Conn), closed: make(chan struct{}), broker: broker, sec: sec}
	if advertise != "" {
		a, err := net.ResolveTCPAddr("tcp", advertise)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("quorum: controller address %q: %w", advertise, err)
		}
		l.advertise = a
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

// ListenBroker opens a broker-only node's listener: like Listen, but a
// connection that opens with a Raft preamble is closed with a log line
// (Raft reaches a broker-only node only over the reverse connections it
// opens itself, StartReverse).
func ListenBroker(bind, advertise string, onKafka func(net.Conn), logger *slog.Logger) (*Listener, error) {
	return listen(bind, advertise, onKafka, logger, true, Security{})
}

// ListenBrokerSecure is ListenBroker for a node whose controllers'
// listener is not PLAINTEXT: the reverse connections it parks there go
// through sec's client side (Dial, Login). Its own listener is the
// broker's, whose TLS the broker runs: sec's server side is not used.
func ListenBrokerSecure(bind, advertise string, onKafka func(net.Conn), logger *slog.Logger, sec Security) (*Listener, error) {
	return listen(bind, advertise, onKafka, logger, true, Security{Dial: sec.Dial, Login: sec.Login})
}

func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.closed:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.logger.Error("quorum: controller listener accept failed", "err", err)
			return
		}
		l.wg.Add(1)
		go func() { defer l.wg.Done(); l.route(c) }()
	}
}

// route reads the first bytes of c and hands it to Raft or to Kafka. A
// panic while routing closes that connection with an ERROR line and leaves
// the listener serving (issue 11 item 6).
func (l *Listener) route(c net.Conn) {
	defer func() {
		if r := recover(); r != nil {
			l.logger.Error("quorum: panic while routing a controller connection; closing it",
				"remote", c.RemoteAddr(), "panic", r, "stack", string(debug.Stack()))
			c.Close()
		}
	}()
	c.SetReadDeadline(time.Now().Add(preambleTimeout))
	if l.sec.Handshake != nil && !l.broker {
		ctx, cancel := context.WithTimeout(context.Background(), preambleTimeout)
		tc, err := l.sec.Handshake(ctx, c)
		cancel()
		if err != nil {
			l.logger.Info("quorum: closing a controller connection: TLS handshake failed", "remote", c.RemoteAddr(), "err", err)
			c.Close()
			return
		}
		c = tc
		c.SetReadDeadline(time.Now().Add(preambleTimeout))
	}
	br := bufio.NewReaderSize(c, len(Preamble))
	first, err := br.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	if first[0] != Preamble[0] {
		c.SetReadDeadline(time.Time{})
		conn := &peekedConn{Conn: c, r: br}
		if l.onKafka == nil {
			l.logger.Warn("quorum: closing a Kafka connection to the controller listener: no controller APIs are served there yet", "remote", c.RemoteAddr())
			conn.Close()
			return
		}
		l.onKafka(conn)
		return
	}
	got := make([]byte, len(Preamble))
	_, err = io.ReadFull(br, got)
	raftPreamble := err == nil && (bytes.Equal(got, Preamble) || bytes.Equal(got, ReversePreamble))
	if raftPreamble && !l.broker && l.sec.Admit != nil {
		// Nothing of Raft is read before the connection has
		// authenticated: a connection that has not never reaches it.
		if err := l.sec.Admit(&peekedConn{Conn: c, r: br}); err != nil {
			l.logger.Warn("quorum: closing a Raft connection to the controller listener that did not authenticate", "remote", c.RemoteAddr(), "err", err)
			c.Close()
			return
		}
	}
	switch {
	case err == nil && l.broker && (bytes.Equal(got, Preamble) || bytes.Equal(got, ReversePreamble)):
		l.logger.Warn("quorum: closing a Raft connection to a broker listener: a broker-only node receives the metadata log only over connections it opens to the controllers", "remote", c.RemoteAddr())
		c.Close()
	case err == nil && bytes.Equal(got, Preamble):
		c.SetReadDeadline(time.Time{})
		select {
		case l.raftConns <- &peekedConn{Conn: c, r: br}:
		case <-l.closed:
			c.Close()
		}
	case err == nil && bytes.Equal(got, ReversePreamble):
		addr, err := readReverseAddr(br)
		if err != nil || br.Buffered() > 0 {
			l.logger.Warn("quorum: closing a reverse Raft connection with a bad header", "remote", c.RemoteAddr(), "err", err)
			c.Close()
			return
		}
		c.SetReadDeadline(time.Time{})
		l.park(c, addr)
	default:
		l.logger.Warn("quorum: closing a controller connection with an unknown preamble", "remote", c.RemoteAddr(), "preamble", fmt.Sprintf("%x", got))
		c.Close()
	}
}

// peekedConn reads through the bufio.Reader that peeked at the preamble,
// so bytes it read ahead are not lost.
type peekedConn struct {
	net.Conn
	r io.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// NetConn is the connection under p (a TLS connection on a TLS listener).
func (p *peekedConn) NetConn() net.Conn { return p.Conn }

// Accept implements net.Listener for the Raft transport.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.raftConns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Addr is the advertised address (the voter's entry in
// controller.quorum.voters).
func (l *Listener) Addr() net.Addr { return l.advertise }

// BoundAddr is the address the listener is bound to.
func (l *Listener) BoundAddr() net.Addr { return l.ln.Addr() }

// Close stops accepting, closes the reverse connections parked here or
// opened from here, and waits for the routing goroutines.
func (l *Listener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.mu.Lock()
		close(l.closed)
		var conns []net.Conn
		for _, list := range l.parked {
			for _, p := range list {
				conns = append(conns, p.c)
			}
		}
		for c := range l.outgoing {
			conns = append(conns, c)
		}
		l.mu.Unlock()
		err = l.ln.Close()
		for _, c := range conns {
			c.Close()
		}
		l.wg.Wait()
	})
	return err
}
