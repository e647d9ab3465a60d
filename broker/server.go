package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsa-broker/samsa/broker/handlers"
	"github.com/samsa-broker/samsa/broker/quota"
	"github.com/samsa-broker/samsa/config"
)

// Options configures a Server.
type Options struct {
	Deps      *handlers.Deps
	Listeners []config.Listener
	// MaxRequestBytes is socket.request.max.bytes: a larger size prefix
	// closes the connection before anything is allocated.
	MaxRequestBytes int32
	// QueuedMaxRequestBytes is queued.max.request.bytes, the budget of
	// request bytes read but not yet processed over all connections; <= 0
	// is unbounded.
	QueuedMaxRequestBytes int64
	// SendBufferBytes is socket.send.buffer.bytes, the SO_SNDBUF of
	// accepted connections (sockbuf.go); <= 0 leaves the OS default.
	SendBufferBytes int
	// RecvBufferBytes is socket.receive.buffer.bytes, the SO_RCVBUF of
	// the listeners' sockets, so of the connections they accept
	// (sockbuf.go); <= 0 leaves the OS default.
	RecvBufferBytes int
	// ConnectionsMaxIdle is connections.max.idle.ms; <= 0 never closes
	// idle connections.
	ConnectionsMaxIdle time.Duration
	// MaxConnections is max.connections (0: unlimited in Options, so that a
	// zero Options works; config gives Kafka's Integer.MAX_VALUE).
	MaxConnections int
	// MaxConnectionsPerIP is max.connections.per.ip (0: unlimited, unless
	// PerIPOverrides is set, where it is Kafka's "0 unless overridden").
	MaxConnectionsPerIP int
	// PerIPOverrides holds max.connections.per.ip.overrides by IP address
	// (host names already resolved).
	PerIPOverrides map[string]int
	Logger         *slog.Logger
	// Forward, when set, may answer a request that changes cluster
	// metadata (handlers.Entry.Forward) in place of the local handler: a
	// node that is not the active controller sends it on. It gets the
	// request frame without its size prefix, and the client's principal
	// and address for the controller to authorize, and returns a response
	// frame with it, or forwarded=false to handle the request here.
	Forward func(frame []byte, principal, clientHost string) (out []byte, forwarded bool)
	// Prebound holds listeners bound by someone else, by listener name: a
	// broker-only node's listener that it shares with Raft (its Kafka
	// connections come through a connQueue).
	Prebound map[string]net.Listener
	// Security holds the TLS and SASL of each secured listener, by name
	// (security.go); listeners not in it are PLAINTEXT.
	Security map[string]*ListenerSecurity
	// Quotas are the client quotas' windows (quota_conn.go).
	Quotas quota.Options
	// MaxConnectionCreationRate is max.connection.creation.rate, new
	// connections per second (0: unlimited); InterBrokerListener is the
	// listener it leaves alone when there are others (quota_ip.go).
	MaxConnectionCreationRate float64
	InterBrokerListener       string
}

// serverOptions maps the broker settings to Options. Host names in
// max.connections.per.ip.overrides are resolved here, once, as Kafka does.
func serverOptions(cfg *config.Config, listeners []config.Listener, logger *slog.Logger) Options {
	o := Options{
		Listeners:             listeners,
		MaxRequestBytes:       cfg.SocketRequestMaxBytes,
		QueuedMaxRequestBytes: cfg.QueuedMaxRequestBytes,
		ConnectionsMaxIdle:    time.Duration(cfg.ConnectionsMaxIdleMs) * time.Millisecond,
		SendBufferBytes:       int(cfg.SocketSendBufferBytes),
		RecvBufferBytes:       int(cfg.SocketReceiveBufferBytes),
		MaxConnections:        int(cfg.MaxConnections),
		MaxConnectionsPerIP:   int(cfg.MaxConnectionsPerIP),
		Logger:                logger,
		Quotas: quota.Options{
			Window: time.Duration(cfg.QuotaWindowSizeSeconds) * time.Second, Samples: int(cfg.QuotaWindowNum),
			MutationWindow: time.Duration(cfg.ControllerQuotaWindowSizeSeconds) * time.Second, MutationSamples: int(cfg.ControllerQuotaWindowNum),
		},
	}
	switch r := cfg.MaxConnectionCreationRate; {
	case r == math.MaxInt32: // Kafka's default: unlimited
	case r == 0:
		// Kafka then throttles every connection by one window.
		o.MaxConnectionCreationRate = 1e-6
	default:
		o.MaxConnectionCreationRate = float64(r)
	}
	o.InterBrokerListener = cfg.InterBrokerListenerName
	if len(cfg.MaxConnectionsPerIPOverrides) > 0 {
		o.PerIPOverrides = make(map[string]int)
		for host, n := range cfg.MaxConnectionsPerIPOverrides {
			if ip := net.ParseIP(host); ip != nil {
				o.PerIPOverrides[ip.String()] = int(n)
				continue
			}
			addrs, err := net.LookupHost(host)
			if err != nil {
				logger.Warn("max.connections.per.ip.overrides: cannot resolve host; its override is not applied", "host", host, "err", err)
				continue
			}
			for _, a := range addrs {
				o.PerIPOverrides[a] = int(n)
			}
		}
	}
	return o
}

// Accept-error backoff, as Go's net/http server: 5ms doubling to 1s.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// nextAcceptDelay is the wait after an accept error that followed a wait
// of d (0 after a success).
func nextAcceptDelay(d time.Duration) time.Duration {
	return min(max(2*d, acceptBackoffMin), acceptBackoffMax)
}

// boundListener is a client listener the Server accepts connections on.
type boundListener struct {
	listener config.Listener
	ln       net.Listener
	// sec is the listener's TLS and SASL (nil: PLAINTEXT).
	sec *ListenerSecurity
	// prebound: ln is shared with Raft (Options.Prebound); it is never
	// removed at runtime.
	prebound bool
	// removed is set, under Server.mu, when the listener is removed at
	// runtime: a connection it accepted and not yet admitted is closed.
	removed bool
}

// Server owns the listeners and every connection goroutine.
type Server struct {
	opts  Options
	table map[int16]handlers.Entry
	// ctrlLns are the Kafka sides of controller listeners (ServeController).
	ctrlLns []net.Listener
	// ctrlSec is the security of the controller listener (nil:
	// PLAINTEXT), set by ServeController before its connections arrive.
	ctrlSec *ListenerSecurity

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // accept loops and connections

	budget *byteBudget
	// panics counts requests whose handling panicked (each closed its
	// connection); for metrics.
	panics atomic.Int64

	acceptLog, limitLog rateLimited

	// observer, when set (before Serve), sees every handled request: the
	// metrics' counters (see ops.go). serving is true between Serve and
	// Shutdown, for /readyz.
	observer requestObserver
	serving  atomic.Bool

	// quotas are the client quotas' rates (quota_conn.go).
	quotas *quota.Manager

	// connIDs numbers the connections (handlers.Request.ConnID);
	// closeHooks hear of their closing (conn_close.go).
	connIDs    atomic.Uint64
	closeHooks connCloseHooks

	mu struct {
		sync.Mutex
		conns map[*conn]struct{}
		perIP map[string]int
		// slotFreed is closed (and replaced) whenever a connection goes,
		// to wake an accept loop waiting below max.connections.
		slotFreed chan struct{}
		// listeners are the client listeners, in the order of
		// Options.Listeners, then those added at runtime
		// (AddListener); started is set by Serve, after which an added
		// listener accepts at once; closed by Shutdown.
		listeners []*boundListener
		started   bool
		closed    bool
	}
}

// New binds every listener; an address in use is an error here, before the
// broker reports that it is up.
func New(o Options) (*Server, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Server{opts: o, table: make(map[int16]handlers.Entry), budget: newByteBudget(o.QueuedMaxRequestBytes), quotas: quota.NewManager(o.Quotas)}
	for _, e := range handlers.Table() {
		s.table[e.Key] = e
	}
	s.mu.conns = make(map[*conn]struct{})
	s.mu.perIP = make(map[string]int)
	s.mu.slotFreed = make(chan struct{})
	s.ctx, s.cancel = context.WithCancel(context.Background())
	for _, l := range o.Listeners {
		if ln, ok := o.Prebound[l.Name]; ok {
			s.mu.listeners = append(s.mu.listeners, &boundListener{listener: l, ln: ln, sec: o.Security[l.Name], prebound: true})
			continue
		}
		ln, err := s.bind(l)
		if err != nil {
			for _, prev := range s.mu.listeners {
				prev.ln.Close()
			}
			return nil, err
		}
		s.mu.listeners = append(s.mu.listeners, &boundListener{listener: l, ln: ln, sec: o.Security[l.Name]})
	}
	return s, nil
}

// bind opens the socket of listener l (SO_RCVBUF before bind, sockbuf.go).
func (s *Server) bind(l config.Listener) (net.Listener, error) {
	lc := net.ListenConfig{Control: recvBufferControl(s.opts.RecvBufferBytes)}
	ln, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort(l.Host, strconv.Itoa(l.Port)))
	if err != nil {
		return nil, fmt.Errorf("broker: listener %s: %w", l.Name, err)
	}
	return ln, nil
}

// Addrs returns the bound addresses, in the order of Listeners.
func (s *Server) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]net.Addr, len(s.mu.listeners))
	for i, bl := range s.mu.listeners {
		out[i] = bl.ln.Addr()
	}
	return out
}

// Listeners returns the client listeners served, as configured (the port
// as given: 0 for an ephemeral one; Addrs has the bound ones), in order.
func (s *Server) Listeners() []config.Listener {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]config.Listener, len(s.mu.listeners))
	for i, bl := range s.mu.listeners {
		out[i] = bl.listener
	}
	return out
}

// AddListener binds listener l with its security sec (nil: PLAINTEXT) and,
// once the Server is serving, accepts on it at once (a listener added at
// runtime, as Kafka's SocketServer.addListeners). A name already served is
// an error, as is an address in use.
func (s *Server) AddListener(l config.Listener, sec *ListenerSecurity) (net.Addr, error) {
	s.mu.Lock()
	for _, bl := range s.mu.listeners {
		if strings.EqualFold(bl.listener.Name, l.Name) {
			s.mu.Unlock()
			return nil, fmt.Errorf("broker: listener %s is served already", l.Name)
		}
	}
	s.mu.Unlock()
	ln, err := s.bind(l)
	if err != nil {
		return nil, err
	}
	bl := &boundListener{listener: l, ln: ln, sec: sec}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		ln.Close()
		return nil, errors.New("broker: server stopped")
	}
	s.mu.listeners = append(s.mu.listeners, bl)
	if s.mu.started {
		s.wg.Add(1)
		go s.acceptLoop(ln, bl, false)
	}
	return ln.Addr(), nil
}

// RemoveListener stops accepting on the listener called name and closes
// every connection that came in on it, at once (Kafka's
// SocketServer.removeListeners closes the listener's acceptor and
// processors with their connections). False when no such listener is
// served or it is shared with Raft.
func (s *Server) RemoveListener(name string) bool {
	s.mu.Lock()
	i := slices.IndexFunc(s.mu.listeners, func(bl *boundListener) bool { return strings.EqualFold(bl.listener.Name, name) })
	if i < 0 || s.mu.listeners[i].prebound {
		s.mu.Unlock()
		return false
	}
	bl := s.mu.listeners[i]
	s.mu.listeners = slices.Delete(s.mu.listeners, i, i+1)
	bl.removed = true
	var conns []*conn
	for c := range s.mu.conns {
		if c.bound == bl {
			conns = append(conns, c)
		}
	}
	s.mu.Unlock()
	bl.ln.Close()
	for _, c := range conns {
		c.nc.Close()
	}
	return true
}

// boundAddr is the bound address of the listener called name; nil when
// it is not served.
func (s *Server) boundAddr(name string) net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, bl := range s.mu.listeners {
		if strings.EqualFold(bl.listener.Name, name) {
			return bl.ln.Addr()
		}
	}
	return nil
}

// listenerSecurities is the security of each secured listener served.
func (s *Server) listenerSecurities() map[string]*ListenerSecurity {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]*ListenerSecurity{}
	for _, bl := range s.mu.listeners {
		if bl.sec != nil {
			out[bl.listener.Name] = bl.sec
		}
	}
	return out
}

// listenerCount is the number of client listeners served.
func (s *Server) listenerCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.listeners)
}

// PanicCount is the number of requests whose handling panicked since start.
func (s *Server) PanicCount() int64 { return s.panics.Load() }

// ConnectionCount is the number of open client connections.
func (s *Server) ConnectionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.conns)
}

// Serve starts the accept loops and returns immediately.
func (s *Server) Serve() {
	s.serving.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.started = true
	for _, bl := range s.mu.listeners {
		s.wg.Add(1)
		go s.acceptLoop(bl.ln, bl, false)
	}
}

// ServeController serves the Kafka side of a controller listener (the
// connections that are not Raft), where the controller-only APIs are
// served too. The Server closes ln on Shutdown.
func (s *Server) ServeController(ln net.Listener, sec *ListenerSecurity) {
	s.ctrlSec = sec
	s.ctrlLns = append(s.ctrlLns, ln)
	s.wg.Add(1)
	go s.acceptLoop(ln, nil, true)
}

// acceptLoop accepts on ln: a client listener's (bl) or, when controller,
// the Kafka side of the controller listener (bl nil).
func (s *Server) acceptLoop(ln net.Listener, bl *boundListener, controller bool) {
	defer s.wg.Done()
	var delay time.Duration
	for {
		if !s.waitConnectionSlot() {
			return
		}
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.ctx.Err() != nil {
				return
			}
			// Out of file descriptors (EMFILE) and the like: back off
			// instead of spinning, and log at most once a second.
			delay = nextAcceptDelay(delay)
			if ok, suppressed := s.acceptLog.allow(time.Now()); ok {
				s.opts.Logger.Error("accept failed; backing off", "listener", ln.Addr().String(), "err", err, "retry_in", delay, "suppressed", suppressed)
			}
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		delay = 0
		setSendBuffer(nc, s.opts.SendBufferBytes)
		if _, own := ln.(*net.TCPListener); !own {
			setRecvBuffer(nc, s.opts.RecvBufferBytes)
		}
		c := newConn(s, nc, bl, controller)
		d, ok := s.connectionRates(c) // quota_ip.go
		if !ok {
			nc.Close()
			return
		}
		if d > 0 {
			s.closeThrottled(nc, d)
			continue
		}
		if reason := s.admit(c); reason != "" {
			if ok, suppressed := s.limitLog.allow(time.Now()); ok {
				s.opts.Logger.Warn("closing new connection", "remote", nc.RemoteAddr().String(), "reason", reason, "suppressed", suppressed)
			}
			nc.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.run()
			s.remove(c)
		}()
	}
}

// waitConnectionSlot blocks while max.connections connections are open, as
// Kafka's acceptor does (new connections wait in the listen backlog). It
// returns false when the server stops.
func (s *Server) waitConnectionSlot() bool {
	for {
		s.mu.Lock()
		if s.opts.MaxConnections <= 0 || len(s.mu.conns) < s.opts.MaxConnections {
			s.mu.Unlock()
			return true
		}
		freed := s.mu.slotFreed
		s.mu.Unlock()
		select {
		case <-freed:
		case <-s.ctx.Done():
			return false
		}
	}
}

// admit registers c, or returns why it must be closed: over
// max.connections.per.ip (or its override) for its address, as Kafka's
// TooManyConnectionsException, or over max.connections when two listeners
// raced for the last slot.
func (s *Server) admit(c *conn) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.bound != nil && c.bound.removed {
		return "its listener " + c.bound.listener.Name + " was removed"
	}
	if max := s.opts.MaxConnections; max > 0 && len(s.mu.conns) >= max {
		return fmt.Sprintf("max.connections (%d) reached", max)
	}
	limit, ok := s.opts.PerIPOverrides[c.host]
	if !ok {
		limit = s.opts.MaxConnectionsPerIP
		if limit <= 0 && len(s.opts.PerIPOverrides) == 0 {
			limit = -1 // unlimited
		}
	}
	if limit >= 0 && s.mu.perIP[c.host] >= limit {
		return fmt.Sprintf("too many connections from %s (limit %d)", c.host, limit)
	}
	s.mu.conns[c] = struct{}{}
	s.mu.perIP[c.host]++
	return ""
}

func (s *Server) remove(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mu.conns, c)
	if s.mu.perIP[c.host]--; s.mu.perIP[c.host] <= 0 {
		delete(s.mu.perIP, c.host)
	}
	close(s.mu.slotFreed)
	s.mu.slotFreed = make(chan struct{})
}

// Shutdown stops accepting, lets each connection finish the request it is
// running and flush its responses, then closes every connection. It
// returns when all goroutines are gone or ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.serving.Store(false)
	s.closeListeners()
	s.cancel()
	s.mu.Lock()
	for c := range s.mu.conns {
		c.stopReading()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.mu.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

func (s *Server) closeListeners() {
	s.mu.Lock()
	s.mu.closed = true
	lns := make([]net.Listener, 0, len(s.mu.listeners))
	for _, bl := range s.mu.listeners {
		lns = append(lns, bl.ln)
	}
	s.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
	for _, ln := range s.ctrlLns {
		ln.Close()
	}
}

// byteBudget is queued.max.request.bytes: the request bytes admitted and
// not yet processed, over all connections. Like Kafka's memory pool it is
// not strict: a request is admitted whenever anything is left, so one
// request larger than the budget still passes and the total exceeds the
// budget by at most one request. Unlike Kafka, admission reserves the
// announced size in this account only; the bytes themselves are allocated
// as they arrive (conn.readBody).
type byteBudget struct {
	max int64 // <= 0: unbounded
	mu  struct {
		sync.Mutex
		used  int64
		freed chan struct{} // closed and replaced on a release once waited on
		// waited: an acquire took freed to wait on (so a release with
		// no one waiting allocates no new channel).
		waited bool
	}
}

func newByteBudget(max int64) *byteBudget {
	b := &byteBudget{max: max}
	b.mu.freed = make(chan struct{})
	return b
}

// acquire admits n bytes, waiting while the budget is used up; false when
// done closes first.
func (b *byteBudget) acquire(done <-chan struct{}, n int64) bool {
	for {
		b.mu.Lock()
		if b.max <= 0 || b.mu.used < b.max {
			b.mu.used += n
			b.mu.Unlock()
			return true
		}
		freed := b.mu.freed
		b.mu.waited = true
		b.mu.Unlock()
		select {
		case <-freed:
		case <-done:
			return false
		}
	}
}

func (b *byteBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.mu.used -= n
	if b.mu.waited {
		close(b.mu.freed)
		b.mu.freed, b.mu.waited = make(chan struct{}), false
	}
	b.mu.Unlock()
}

// used returns the bytes admitted and not yet released.
func (b *byteBudget) used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.used
}

// rateLimited lets one log line through per second and counts the rest,
// so that a flood of failures (6 million accept errors) cannot fill a disk.
type rateLimited struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether to log now, and how many lines were suppressed
// since the last one that was logged.
func (r *rateLimited) allow(now time.Time) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() && now.Sub(r.last) < time.Second {
		r.suppressed++
		return false, 0
	}
	n := r.suppressed
	r.last, r.suppressed = now, 0
	return true, n
}
