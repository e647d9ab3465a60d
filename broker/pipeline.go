package broker

import (
	"sync"
	"time"
)

// The request pipeline of one connection.
//
// Requests start strictly in the order they were read, one at a time, on
// the connection's dispatcher goroutine (process). A handler that is about
// to wait on something other than this connection (a long-poll Fetch for
// data, an acks=all Produce for the ISR) calls Request.Detach: its
// goroutine stops being the dispatcher, a new dispatcher goroutine starts
// the next request at once, and the detached handler finishes on its own.
// So a long poll no longer holds up a Metadata, Heartbeat or Produce sent
// after it on the same connection, and everything a handler does before
// it detaches (a produce's appends, a fetch's session update, every SASL
// step) still happens in request order, as on a connection that runs one
// request at a time. Kafka itself runs one request per connection at a
// time (it mutes the channel until the response is sent); clients cannot
// tell the difference except in latency.
//
// Each request gets a pending slot, queued to the writer in request order:
// when its handler detaches (before the next request starts) or else once
// its response is delivered (again before the next request starts). The
// writer waits for each slot in turn, so responses go out in request order
// however their handlers finish. A request that does not detach (most of
// them) thus reaches the writer with its response already in the slot:
// one goroutine wake-up per response instead of two (the writer used to
// wake for the slot, park on it, and wake again for the response), which
// is a good part of what a record costs at low rates.
//
// Bounds: at most maxDetached handlers of a connection are detached at a
// time (a handler that cannot detach just waits on the dispatcher, as
// before), and at most frameQueue slots wait for the writer beyond the
// one it is writing.

// maxDetached is how many handlers of one connection may wait detached at
// once: Kafka clients keep at most 5 requests in flight per connection by
// default (max.in.flight.requests.per.connection), so this never
// serializes a well-behaved client.
const maxDetached = 8

// pending is the place of one request's response in the connection's
// response order. The request's goroutine delivers its outgoing once (an
// empty one when no response is due); the writer takes it. It is also the
// request's handlers.Request.Detacher.
type pending struct {
	ch chan outgoing // capacity 1
	// c and detached are the request's connection and whether its
	// handler detached (its slot is then queued to the writer already);
	// only the request's goroutine uses them.
	c        *conn
	detached bool
}

var pendingPool = sync.Pool{New: func() any { return &pending{ch: make(chan outgoing, 1)} }}

func newPending(c *conn) *pending {
	p := pendingPool.Get().(*pending)
	p.c, p.detached = c, false
	return p
}

// deliver hands the response to the writer.
func (p *pending) deliver(out outgoing) { p.ch <- out }

// wait returns the delivered response and recycles p.
func (p *pending) wait() outgoing {
	out := <-p.ch
	p.c = nil
	pendingPool.Put(p)
	return out
}

// process is the dispatcher loop: it starts the connection's requests in
// order until the reader closes frames (then it closes responses) or until
// a request it runs detaches (then a new dispatcher goroutine runs process
// and this one returns once that request is done).
func (c *conn) process() {
	for f := range c.frames {
		if c.broken.Load() {
			c.srv.budget.release(f.charged)
			c.busy.Add(-1)
			continue // drain; the reader stops once the socket closes
		}
		c.waitResponseRoom()
		p := newPending(c)
		if c.runRequest(f, p) {
			return
		}
	}
	close(c.responses)
}

// Detach makes a new goroutine the connection's dispatcher, unless the
// handler detached already or maxDetached handlers are detached. The
// request's slot goes to the writer first, so it keeps its place before
// the requests the new dispatcher starts.
func (p *pending) Detach() {
	c := p.c
	if p.detached || c.detached.Load() >= maxDetached {
		return
	}
	p.detached = true
	c.responses <- p
	c.detached.Add(1)
	c.dispatchers.Add(1)
	go func() { defer c.dispatchers.Done(); c.process() }()
}

// runRequest handles frame f, delivers its response to p and reports
// whether the handler detached (another goroutine is now the dispatcher).
func (c *conn) runRequest(f frame, p *pending) (detached bool) {
	out, err := c.handle(f.buf, f.read, p)
	recycleFrame(f.buf)
	c.srv.budget.release(f.charged)
	c.busy.Add(-1)
	if err != nil {
		out.release()
		out = outgoing{}
		c.srv.opts.Logger.Info("closing connection", "remote", c.nc.RemoteAddr().String(), "reason", err)
		c.broken.Store(true)
		c.nc.Close()
	}
	detached = p.detached
	c.queueResponse(out.size())
	if detached {
		p.deliver(out) // the slot is queued (Detach); p is the writer's now
		c.detached.Add(-1)
		return true
	}
	p.deliver(out)
	c.responses <- p
	if err == nil && c.sasl != nil && c.sasl.closeAfter {
		// A failed SASL handshake or authentication: the answer goes
		// out, then the connection closes, as in Kafka. SASL requests
		// never detach, so this runs on the dispatcher, before any
		// later request starts.
		c.broken.Store(true)
		c.srv.opts.Logger.Info("closing connection", "remote", c.nc.RemoteAddr().String(), "reason", c.sasl.failure)
		c.stopReading()
	}
	return false
}

// afterResponse runs on the write goroutine after each response is
// written. It is the hook for client quotas (Kafka mutes a throttled
// connection, reading nothing from it, until its throttle time passes
// after the response is sent): set out.throttle when building the
// response, and the reader pauses for that long from here.
func (c *conn) afterResponse(out *outgoing) {
	if out.throttle > 0 {
		c.muteFor(out.throttle)
	}
}

// muteFor stops the reader from reading another request for d from now
// (requests already read still run). A later, shorter mute does not
// shorten an earlier one.
func (c *conn) muteFor(d time.Duration) {
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitUnmuted blocks the reader while the connection is muted; false when
// done closed first.
func (c *conn) waitUnmuted(done <-chan struct{}) bool {
	for {
		left := time.Until(time.Unix(0, c.mutedUntil.Load()))
		if left <= 0 {
			return true
		}
		t := time.NewTimer(left)
		select {
		case <-t.C:
		case <-done:
			t.Stop()
			return false
		}
	}
}
