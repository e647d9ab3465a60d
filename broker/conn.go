package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/handlers"
	"github.com/samsa-broker/samsa/wire"
)

// conn is one client connection. The read goroutine (run) hands frames to
// a dispatcher goroutine (process), which starts requests in the order
// they came and queues, in that order, a slot for each response; the
// write goroutine writes the slots' responses in that order as they
// complete. A request runs on the dispatcher until its handler detaches
// (pipeline.go): then the dispatcher role passes to a new goroutine and the
// next request starts while the detached one waits (a long poll, an
// acks=all produce), so responses can complete out of order but leave in
// request order.
//
// Memory per connection is bounded: a body is read in chunks that grow as
// its bytes arrive (never the announced size up front), every frame is
// admitted against the server's queued.max.request.bytes budget, at most
// frameQueue frames wait for processing, and the next request is not run
// while more than maxQueuedResponseBytes of responses wait to be written
// (a slow reader gets backpressure, not a pile of responses).
type conn struct {
	srv  *Server
	nc   net.Conn
	host string
	// id numbers the connection in its server (handlers.Request.ConnID).
	id uint64
	// controller: the connection came in on a controller listener, where
	// the controller-only APIs are served.
	controller bool
	// listener is the name of the client listener the connection came in
	// on ("" on a controller listener), for handlers.Request.
	listener string
	// bound is that client listener (nil on a controller listener).
	bound *boundListener

	// sec, sasl and tlsPrincipal are the connection's security
	// (security.go): nil on PLAINTEXT listeners.
	sec          *ListenerSecurity
	sasl         *saslConn
	tlsPrincipal string

	frames    chan frame
	responses chan *pending
	stopOnce  sync.Once
	stopping  atomic.Bool

	// dispatchers counts the goroutines that ran process (the first
	// and those a detaching request started); detached counts requests
	// whose handlers detached and have not finished; broken is set once
	// a request failed and the connection closes.
	dispatchers sync.WaitGroup
	detached    atomic.Int32
	broken      atomic.Bool

	// mutedUntil (unix nanoseconds) is when the reader may read the next
	// request again; see afterResponse.
	mutedUntil atomic.Int64

	// lastActive is when bytes last moved either way (unix nanoseconds);
	// busy counts requests read and not yet handled. A connection is idle
	// when busy is 0 and lastActive is connections.max.idle.ms old.
	lastActive atomic.Int64
	busy       atomic.Int32

	// raw is the plain TCP connection's raw side for large reads
	// (rawread_linux.go); nil on TLS and other connections.
	raw *rawSocket

	// ahead buffers what the reader reads from nc (readahead.go).
	ahead readAhead

	queued struct {
		sync.Mutex
		bytes int           // encoded responses not yet written
		freed chan struct{} // closed and replaced when bytes drops, once waited on
		// waited: waitResponseRoom took freed to wait on.
		waited bool
	}
}

// frame is one request read off the wire and the budget it holds.
type frame struct {
	buf     []byte
	charged int64
	// read is when its last byte arrived, for the request queue time.
	read time.Time
}

const (
	// frameQueue is how many read frames may wait for processing.
	frameQueue = 8
	// firstChunk is the buffer a body starts with; it doubles as bytes
	// arrive, up to the announced size.
	firstChunk = 64 << 10
	// maxQueuedResponseBytes: while more response bytes than this wait
	// for the socket, the connection runs no further request.
	maxQueuedResponseBytes = 4 << 20
)

var errIdle = errors.New("idle for longer than connections.max.idle.ms")

func newConn(s *Server, nc net.Conn, bl *boundListener, controller bool) *conn {
	host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
	c := &conn{srv: s, nc: nc, host: host, id: s.connIDs.Add(1), bound: bl, controller: controller, frames: make(chan frame, frameQueue), responses: make(chan *pending, frameQueue)}
	c.queued.freed = make(chan struct{})
	var sec *ListenerSecurity
	if bl != nil {
		c.listener, sec = bl.listener.Name, bl.sec
	}
	if controller {
		sec = s.ctrlSec
	}
	c.secure(sec)
	// After secure: a TLS connection reads through its *tls.Conn.
	c.raw = rawReader(c.nc)
	c.touch()
	return c
}

func (c *conn) touch() { c.lastActive.Store(time.Now().UnixNano()) }

// stopReading unblocks the read loop so that the connection drains: the
// request being processed finishes and its response is written.
func (c *conn) stopReading() {
	c.stopOnce.Do(func() {
		c.stopping.Store(true)
		if tc, ok := c.nc.(*net.TCPConn); ok {
			tc.CloseRead()
			return
		}
		c.nc.SetReadDeadline(time.Now())
	})
}

func (c *conn) run() {
	log := c.srv.opts.Logger
	if err := c.handshake(); err != nil {
		log.Info("closing connection", "remote", c.nc.RemoteAddr().String(), "reason", err)
		c.nc.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	c.dispatchers.Add(1)
	go func() { defer c.dispatchers.Done(); c.process() }()
	go func() { defer wg.Done(); c.write() }()
	err := c.read()
	close(c.frames)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && c.srv.ctx.Err() == nil && !c.stopping.Load() {
		log.Info("closing connection", "remote", c.nc.RemoteAddr().String(), "reason", err)
	}
	c.dispatchers.Wait()
	wg.Wait()
	c.nc.Close()
	c.srv.connClosed(c.id)
}

func (c *conn) read() error {
	var sizeBuf [4]byte
	done := c.srv.ctx.Done()
	for {
		if !c.waitUnmuted(done) {
			return nil
		}
		if err := c.readFull(sizeBuf[:]); err != nil {
			return err
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if size < 8 {
			return fmt.Errorf("invalid request size %d", size)
		}
		if max := c.srv.opts.MaxRequestBytes; max > 0 && size > max {
			return fmt.Errorf("request size %d exceeds socket.request.max.bytes %d", size, max)
		}
		if !c.srv.budget.acquire(done, int64(size)) {
			return nil
		}
		buf, err := c.readBody(int(size))
		if err != nil {
			c.srv.budget.release(int64(size))
			return fmt.Errorf("reading request body: %w", err)
		}
		// A request that arrived while the connection was muted (the
		// reader was already waiting for it when a throttled response
		// went out) waits as if unread: Kafka reads nothing from a
		// muted channel.
		if !c.waitUnmuted(done) {
			c.srv.budget.release(int64(size))
			return nil
		}
		// Busy from here: a body that stops arriving is idle like any
		// other silence, so a stalled sender cannot hold its budget.
		c.busy.Add(1)
		select {
		case c.frames <- frame{buf: buf, charged: int64(size), read: time.Now()}:
		case <-done:
			c.srv.budget.release(int64(size))
			return nil
		}
	}
}

// readBody reads a body of size bytes into a pooled buffer of its size
// class (framepool.go) when there is one, else into a buffer that starts
// at firstChunk and doubles as the bytes actually arrive, so a size prefix
// alone costs at most firstChunk of new memory (a peer announcing 100 MiB
// and sending nothing used to cost 100 MiB). The buffers it grows out of go
// to the pools.
func (c *conn) readBody(size int) ([]byte, error) {
	if buf := pooledFrame(size); buf != nil {
		return buf, c.readFull(buf)
	}
	buf := newFrame(min(size, firstChunk))
	buf = buf[:min(size, cap(buf))]
	n := 0
	for {
		if err := c.readFull(buf[n:]); err != nil {
			putFrame(buf)
			return nil, err
		}
		n = len(buf)
		if n == size {
			return buf, nil
		}
		grown := newFrame(min(size, 2*n))
		grown = grown[:min(size, cap(grown))]
		copy(grown, buf)
		putFrame(buf)
		buf = grown
	}
}

// readFull fills p, closing the connection as idle when nothing moves for
// connections.max.idle.ms while no request of it is in progress.
func (c *conn) readFull(p []byte) error {
	idle := c.srv.opts.ConnectionsMaxIdle
	for len(p) > 0 {
		if idle > 0 {
			c.nc.SetReadDeadline(time.Now().Add(idle))
		}
		n, err := c.readSome(p)
		if n > 0 {
			c.touch()
			p = p[n:]
		}
		if err == nil {
			continue
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || idle <= 0 || c.stopping.Load() || c.srv.ctx.Err() != nil {
			return err
		}
		if c.busy.Load() == 0 && time.Since(time.Unix(0, c.lastActive.Load())) >= idle {
			return errIdle
		}
	}
	return nil
}

// waitResponseRoom blocks while more than maxQueuedResponseBytes of
// responses wait for the socket. The writer always makes progress or
// fails (its write deadline is connections.max.idle.ms), and on failure it
// drains the queue, so this cannot wait forever.
func (c *conn) waitResponseRoom() {
	for {
		c.queued.Lock()
		if c.queued.bytes <= maxQueuedResponseBytes {
			c.queued.Unlock()
			return
		}
		freed := c.queued.freed
		c.queued.waited = true
		c.queued.Unlock()
		<-freed
	}
}

func (c *conn) queueResponse(n int) {
	c.queued.Lock()
	c.queued.bytes += n
	c.queued.Unlock()
}

func (c *conn) responseWritten(n int) {
	c.queued.Lock()
	c.queued.bytes -= n
	if c.queued.waited {
		close(c.queued.freed)
		c.queued.freed, c.queued.waited = make(chan struct{}), false
	}
	c.queued.Unlock()
}

func (c *conn) write() {
	idle := c.srv.opts.ConnectionsMaxIdle
	failed := false
	for p := range c.responses {
		out := p.wait()
		switch {
		case failed:
		case out.empty():
			continue
		default:
			if idle > 0 {
				// A peer that reads nothing for this long is dropped, so
				// that its responses do not stay queued forever.
				c.nc.SetWriteDeadline(time.Now().Add(idle))
			}
			if out.throttle > 0 {
				// Muted before the client can see the response, so a
				// request it sends on receipt waits too; afterResponse
				// then counts the throttle from the end of the write.
				c.muteFor(out.throttle)
			}
			sendStart := time.Now()
			err := writeOutgoing(c.nc, &out)
			if o := c.srv.observer; o != nil && err == nil && out.sendSlot > 0 {
				o.ObserveResponseSend(out.sendSlot-1, time.Since(sendStart))
			}
			if err != nil {
				failed = true
				c.nc.Close()
			} else {
				c.touch()
				c.afterResponse(&out)
			}
		}
		n := out.size()
		out.release()
		c.responseWritten(n)
	}
}

// handle decodes and runs one request and returns the encoded response, or
// nil when no response is due (acks=0 produce). detach is the handler's
// Request.Detacher (pipeline.go).
//
// A panic while handling is recovered here: it is logged with its stack,
// counted (Server.PanicCount) and closes this connection only.
func (c *conn) handle(frame []byte, read time.Time, detach handlers.Detacher) (out outgoing, err error) {
	start := time.Now()
	var hdr wire.RequestHeader
	defer func() {
		if r := recover(); r != nil {
			c.srv.panics.Add(1)
			c.srv.opts.Logger.Error("panic while handling a request; closing the connection",
				"remote", c.nc.RemoteAddr().String(), "api_key", hdr.APIKey, "api", kmsg.NameForKey(hdr.APIKey),
				"version", hdr.APIVersion, "panic", r, "stack", string(debug.Stack()))
			out, err = outgoing{}, fmt.Errorf("panic in %s v%d: %v", kmsg.NameForKey(hdr.APIKey), hdr.APIVersion, r)
		}
	}()
	if c.sasl != nil && c.sasl.phase == saslRawTokens {
		buf, err := c.sasl.rawToken(frame)
		return outgoing{buf: buf}, err
	}
	hdr, req, err := wire.ParseRequest(frame)
	if err != nil {
		if errors.Is(err, wire.ErrUnsupportedVersion) && hdr.APIKey == int16(kmsg.ApiVersions) {
			return outgoing{buf: c.unsupportedApiVersions(hdr)}, nil
		}
		return outgoing{}, fmt.Errorf("request key %d v%d: %w", hdr.APIKey, hdr.APIVersion, err)
	}
	entry, ok := c.srv.table[hdr.APIKey]
	if ok && entry.ControllerOnly && !c.controller {
		ok = false // as Kafka: not an API of a broker listener
	}
	if !ok {
		return outgoing{}, fmt.Errorf("unsupported api key %d (%s)", hdr.APIKey, kmsg.NameForKey(hdr.APIKey))
	}
	if hdr.APIVersion < entry.MinVersion || hdr.APIVersion > entry.MaxVersion {
		if hdr.APIKey == int16(kmsg.ApiVersions) {
			return outgoing{buf: c.unsupportedApiVersions(hdr)}, nil
		}
		return outgoing{}, fmt.Errorf("unsupported version %d of %s", hdr.APIVersion, kmsg.NameForKey(hdr.APIKey))
	}
	if c.sasl != nil {
		if buf, handled, err := c.sasl.intercept(hdr, req); handled {
			return outgoing{buf: buf}, err
		}
	}
	mutations, frame := c.quotasBefore(hdr, req, frame)
	hr := &handlers.Request{Header: hdr, Body: req, ConnID: c.id, ClientHost: c.host, ListenerName: c.listener, SendFiles: true, Principal: c.principal(),
		SecurityProtocol: c.securityProtocol(), TokenAuthenticated: c.sasl != nil && c.sasl.tokenAuthenticated(), Controller: c.controller, Detacher: detach,
		Authenticating: c.sasl != nil && !c.sasl.authenticated()}
	if entry.Forward && c.srv.opts.Forward != nil && (entry.AnswerLocally == nil || !entry.AnswerLocally(c.srv.opts.Deps, hr)) {
		if out, forwarded := c.srv.opts.Forward(frame, c.principal(), c.host); forwarded {
			return outgoing{buf: mutations.patchFrame(c, hdr, req, out), throttle: mutations.muteTime()}, nil
		}
	}
	resp, err := handlers.Serve(entry, c.srv.opts.Deps, hr)
	if err != nil {
		return outgoing{}, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(hdr.APIKey), hdr.APIVersion, err)
	}
	mutations.patch(c, resp)
	throttle := max(mutations.muteTime(), c.enforceQuotas(hdr, req, resp, len(frame), time.Since(start)-hr.Remote))
	slot := int16(-1)
	if o := c.srv.observer; o != nil {
		slot = o.ObserveRequest(hdr.APIKey, hdr.APIVersion, req, resp, start.Sub(read), time.Since(start), hr.Remote)
	}
	if resp == nil {
		return outgoing{}, nil
	}
	if ff, ok := resp.(*handlers.FileFetch); ok {
		out, cached := encodeCachedFetch(hdr, ff)
		if !cached {
			out, err = encodeFileFetch(hdr, ff)
			if err == nil {
				err = inlineSmall(&out, inlineFileBytes)
			}
		}
		out.sendSlot = slot + 1
		out.throttle = throttle
		return out, err
	}
	return outgoing{buf: wire.AppendResponse(make([]byte, 0, responseSizeHint(resp)), hdr, resp), sendSlot: slot + 1, throttle: throttle}, nil
}

// responseSizeHint is the buffer capacity to encode resp into: for a
// fetch, the record bytes it carries plus room for everything else, so
// that a large fetch is encoded without growing (and so copying) the
// buffer again and again; 0 (grow as needed) for other responses.
func responseSizeHint(resp kmsg.Response) int {
	f, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return 0
	}
	n := 64
	for i := range f.Topics {
		t := &f.Topics[i]
		n += 32 + len(t.Topic)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			n += 96 + len(p.RecordBatches) + 24*len(p.AbortedTransactions)
		}
	}
	return n
}

// unsupportedApiVersions answers an ApiVersions request of a version we do
// not know in the v0 shape, with UNSUPPORTED_VERSION and the range of
// ApiVersions alone, as Kafka does: that is what clients rely on to retry
// with a version we speak (compat-tests/diff).
func (c *conn) unsupportedApiVersions(hdr wire.RequestHeader) []byte {
	resp := handlers.ApiVersionsResponse(c.srv.opts.Deps)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	keys := resp.ApiKeys[:0]
	for _, k := range resp.ApiKeys {
		if k.ApiKey == int16(kmsg.ApiVersions) {
			keys = append(keys, k)
		}
	}
	resp.ApiKeys = keys
	hdr.APIVersion = 0
	return wire.AppendResponse(nil, hdr, resp)
}
