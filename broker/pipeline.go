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
// Each request gets a pending slot, queued in request order in the
// connection's response queue (writeQueue): when its handler detaches
// (before the next request starts) or else with its response, once the
// handler is done (again before the next request starts). Whoever
// completes the slot at the head of the queue writes its response itself
// when it is small (inlineWriteBytes: a write that the socket takes at
// once), and then every small response behind it that is ready; a large
// one goes to the connection's writer goroutine, which writes from there
// on, so the dispatcher starts the next request meanwhile. So a request
// that does not detach and answers little (most of them) is answered by
// the dispatcher itself, and a woken long poll by its own goroutine, with
// no goroutine woken to write: at low rates a record used to cost two
// such wake-ups (the produce response and the fetch response each handed
// to the writer), each a thread switch on a loaded machine. Responses
// still leave in request order, one writer at a time.
//
// Bounds: at most maxDetached handlers of a connection are detached at a
// time (a handler that cannot detach just waits on the dispatcher, as
// before), and at most maxQueuedSlots slots wait in the queue: the
// dispatcher waits for room before it queues another.

// maxDetached is how many handlers of one connection may wait detached at
// once: Kafka clients keep at most 5 requests in flight per connection by
// default (max.in.flight.requests.per.connection), so this never
// serializes a well-behaved client.
const maxDetached = 8

// maxQueuedSlots is how many response slots may wait in a connection's
// queue, the one being written included.
const maxQueuedSlots = frameQueue + 1

// inlineWriteBytes is the largest response written by the goroutine that
// completed it rather than by the connection's writer goroutine.
const inlineWriteBytes = 64 << 10

// pending is the place of one request's response in the connection's
// response order. It is also the request's handlers.Request.Detacher.
type pending struct {
	// out and ready are the response and whether it was delivered;
	// guarded by the connection's writeQueue lock once the slot is
	// queued.
	out   outgoing
	ready bool
	// c and detached are the request's connection and whether its
	// handler detached (its slot is then queued already); only the
	// request's goroutine uses them.
	c        *conn
	detached bool
}

var pendingPool = sync.Pool{New: func() any { return new(pending) }}

func newPending(c *conn) *pending {
	p := pendingPool.Get().(*pending)
	p.c, p.detached = c, false
	return p
}

// writeQueue is a connection's queue of response slots, head first, and
// who writes them.
type writeQueue struct {
	sync.Mutex
	slots   [maxQueuedSlots]*pending // a ring: slots[head], ... n of them
	head, n int
	// writing: a goroutine is writing the ready slots at the head (the
	// one that completed the head slot, or the writer goroutine).
	writing bool
	failed  bool // a write failed: the rest are dropped
	// room, once taken by a waiting queueSlot (roomWaited), is closed
	// and cleared when a slot leaves.
	room       chan struct{}
	roomWaited bool
	// kick hands the writing over to the writer goroutine (capacity 1;
	// sent only by whoever set writing, so it never blocks).
	kick chan struct{}
}

// queueSlot appends p to the response queue, waiting while it is full.
// Only the dispatcher queues, so slots are queued in request order.
func (c *conn) queueSlot(p *pending) {
	q := &c.wq
	q.Lock()
	for q.n == maxQueuedSlots {
		if q.room == nil {
			q.room = make(chan struct{})
		}
		room := q.room
		q.roomWaited = true
		q.Unlock()
		<-room // the slot at the head leaves once written (or dropped)
		q.Lock()
	}
	q.slots[(q.head+q.n)%maxQueuedSlots] = p
	q.n++
	q.Unlock()
}

// deliver puts p's response in its slot, then writes the responses at the
// head of the queue that are ready, unless another goroutine is writing
// them (it then writes this one too, in its turn).
func (p *pending) deliver(out outgoing) {
	c := p.c
	q := &c.wq
	q.Lock()
	p.out, p.ready = out, true
	if q.writing {
		q.Unlock()
		return
	}
	q.writing = true
	c.drainLocked(true)
}

// drainLocked writes the ready slots at the head of the queue; inline (on
// the goroutine that delivered) it hands the writing over to the writer
// goroutine at the first response larger than inlineWriteBytes.
// REQUIRES: c.wq locked and c.wq.writing set by the caller; returns with
// c.wq unlocked.
func (c *conn) drainLocked(inline bool) {
	q := &c.wq
	for q.n > 0 && q.slots[q.head].ready {
		next := q.slots[q.head]
		if inline && next.out.size() > inlineWriteBytes {
			q.kick <- struct{}{} // writing stays set: the writer's now
			q.Unlock()
			return
		}
		q.slots[q.head] = nil
		q.head, q.n = (q.head+1)%maxQueuedSlots, q.n-1
		if q.roomWaited {
			close(q.room)
			q.room, q.roomWaited = nil, false
		}
		failed := q.failed
		out := next.out
		next.out, next.ready, next.c = outgoing{}, false, nil
		pendingPool.Put(next)
		q.Unlock()
		ok := c.writeResponse(&out, failed)
		q.Lock()
		q.failed = q.failed || !ok
	}
	q.writing = false
	q.Unlock()
}

// write is the connection's writer goroutine: it writes what drainLocked
// hands over, until run closes kick (every dispatcher is done by then).
func (c *conn) write() {
	for range c.wq.kick {
		c.wq.Lock()
		c.drainLocked(false)
	}
}

// process is the dispatcher loop: it starts the connection's requests in
// order until the reader closes frames or until a request it runs
// detaches (then a new dispatcher goroutine runs process and this one
// returns once that request is done).
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
}

// Detach makes a new goroutine the connection's dispatcher, unless the
// handler detached already or maxDetached handlers are detached. The
// request's slot is queued first, so it keeps its place before the
// requests the new dispatcher starts.
func (p *pending) Detach() {
	c := p.c
	if p.detached || c.detached.Load() >= maxDetached {
		return
	}
	p.detached = true
	c.queueSlot(p)
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
		p.deliver(out) // the slot is queued (Detach)
		c.detached.Add(-1)
		return true
	}
	c.queueSlot(p)
	p.deliver(out)
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

// afterResponse runs after each response is written (writeResponse). It is the hook for client quotas (Kafka mutes a throttled
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
