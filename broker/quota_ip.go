package broker

import (
	"net"
	"net/netip"
	"time"

	"github.com/samsa-broker/samsa/broker/quota"
)

// Connection creation rate quotas of ip entities (KIP-612), as Kafka's
// ConnectionQuotas: each new connection is counted against the
// connection_creation_rate of its address (the ip entity naming it, else
// the default ip entity; unlimited when neither is set), measured over
// quota.window.num windows of quota.window.size.seconds. A connection
// over the quota is accepted by TCP but never served: no request is read
// from it, it does not count towards max.connections or
// max.connections.per.ip, and it is closed once its throttle time (the
// time until the address is back within its quota, at most one window)
// has passed. Kafka's acceptor does the same with its throttled sockets;
// the client sees a connection closed without an answer and retries
// with its reconnect backoff. Quotas are read from the current metadata
// image on each accept, so a change applies to the next connection.
//
// max.connection.creation.rate is the broker-wide rate (Kafka's
// broker connection rate sensor): a new connection over it waits, and the
// accept loop with it, until the rate is back within it (at most one
// window), and is then served. Connections on the inter-broker listener
// are not counted when the broker has other listeners. Connections on a
// controller listener are counted by neither rate (the controller
// quorum's own channel must never be throttled).

// connectionRates applies the connection creation rates to a new
// connection c: first the broker-wide max.connection.creation.rate, whose
// excess waits here (the accept loop with it, as Kafka's acceptor), then
// the ip quota of its address. It returns how long to hold c before
// closing it, 0 when it may be served, and ok false when the server
// stopped while waiting.
func (s *Server) connectionRates(c *conn) (throttle time.Duration, ok bool) {
	if c.controller {
		return 0, true
	}
	counted := false
	if s.opts.MaxConnectionCreationRate > 0 && !s.protectedListener(c.listener) {
		counted = true
		if wait := s.quotas.RecordAccept(s.opts.MaxConnectionCreationRate, time.Now()); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return 0, false
			}
		}
	}
	throttle = s.ipThrottle(c)
	if throttle > 0 && counted {
		s.quotas.UnrecordAccept(time.Now())
	}
	return throttle, true
}

// protectedListener tells whether the broker-wide connection creation
// rate leaves connections on listener alone: the inter-broker listener,
// when the broker has others (Kafka's protectedListener).
func (s *Server) protectedListener(listener string) bool {
	return listener != "" && listener == s.opts.InterBrokerListener && s.listenerCount() > 1
}

// ipThrottle counts c against the connection creation rate quota of its
// address and returns how long to hold it before closing it, or 0 when
// it may be served.
func (s *Server) ipThrottle(c *conn) time.Duration {
	if s.opts.Deps == nil || s.opts.Deps.Controller == nil {
		return 0
	}
	quotas := s.opts.Deps.Controller.Image().ClientQuotas
	if len(quotas) == 0 {
		return 0
	}
	addr, err := netip.ParseAddr(c.host)
	if err != nil {
		return 0 // not an IP connection (an in-memory pipe in tests)
	}
	bound, ok := quota.ConnectionRateBound(quotas, addr)
	if !ok {
		return 0
	}
	return s.quotas.RecordConnection(addr, bound, time.Now())
}

// closeThrottled holds nc open, unread, for delay and then closes it
// (sooner when the server shuts down), as Kafka's acceptor closes its
// throttled sockets.
func (s *Server) closeThrottled(nc net.Conn, delay time.Duration) {
	if ok, suppressed := s.limitLog.allow(time.Now()); ok {
		s.opts.Logger.Info("connection creation rate quota exceeded; closing the new connection after its throttle time",
			"remote", nc.RemoteAddr().String(), "throttle", delay, "suppressed", suppressed)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.ctx.Done():
		}
		nc.Close()
	}()
}
