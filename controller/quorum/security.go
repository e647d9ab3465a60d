package quorum

import (
	"context"
	"net"
	"time"
)

// Security secures the Raft connections of a controller listener whose
// security protocol is not PLAINTEXT, with the listener's own TLS and
// SASL (docs/OPERATIONS.md "Controller listener"). The zero value is
// PLAINTEXT: connections are not touched, as in earlier builds.
//
// On an accepted connection the order is: TLS handshake (Handshake), then
// the first bytes tell Raft from Kafka; a Raft connection's preamble is
// followed by Kafka's SaslHandshake/SaslAuthenticate exchange (Admit), and
// only a connection Admit lets through reaches Raft (or is parked, for a
// reverse connection). Kafka connections go to OnKafka with the TLS
// handshake done; the broker runs their SASL exchange as on any listener.
// A dialed connection mirrors it: Dial (TCP, then TLS), the preamble,
// Login (the client side of the SASL exchange), then Raft bytes.
type Security struct {
	// Handshake completes the server side of the TLS handshake of an
	// accepted connection and returns the connection to read from; nil:
	// no TLS. A broker-only node's listener (ListenBroker) never calls it:
	// its Kafka connections go to the broker, which runs the TLS of its
	// own listener.
	Handshake func(ctx context.Context, c net.Conn) (net.Conn, error)
	// Admit authenticates a Raft connection right after its preamble
	// (the server side of the SASL exchange on SASL_PLAINTEXT and
	// SASL_SSL, the TLS client certificate on SSL) and checks that its
	// principal may carry Raft; an error closes the connection with a log
	// line. nil: every connection is admitted.
	Admit func(c net.Conn) error
	// Dial opens a connection to a controller listener: TCP, then the
	// client side of TLS; nil: TCP.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// Login runs the client side of the SASL exchange on a Raft
	// connection after its preamble; nil: none.
	Login func(ctx context.Context, c net.Conn, addr string) error
}

// secured reports whether accepted Raft connections must be admitted.
func (s Security) secured() bool { return s.Handshake != nil || s.Admit != nil }

// dial opens a connection to addr with the client side of s, writes
// preamble (and header after it, for a reverse connection, after the
// login) and logs in. keepAlive configures the TCP connection.
func (s Security) dial(ctx context.Context, addr string, preamble, header []byte, keepAlive net.KeepAliveConfig) (net.Conn, error) {
	var c net.Conn
	var err error
	if s.Dial != nil {
		c, err = s.Dial(ctx, addr)
	} else {
		d := net.Dialer{KeepAliveConfig: keepAlive}
		c, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	if tc, ok := unwrapTCP(c); ok && keepAlive.Enable {
		tc.SetKeepAliveConfig(keepAlive)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(preambleTimeout)
	}
	c.SetDeadline(deadline)
	// A cancelled ctx (the listener closing) ends the exchange at once.
	interrupt := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer interrupt()
	if _, err := c.Write(preamble); err != nil {
		c.Close()
		return nil, err
	}
	if s.Login != nil {
		if err := s.Login(ctx, c, addr); err != nil {
			c.Close()
			return nil, err
		}
	}
	if len(header) > 0 {
		if _, err := c.Write(header); err != nil {
			c.Close()
			return nil, err
		}
	}
	if !interrupt() {
		c.Close()
		return nil, ctx.Err()
	}
	c.SetDeadline(time.Time{})
	return c, nil
}
