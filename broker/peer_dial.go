package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/wire"
)

// Connections from this broker to other brokers' inter-broker listener
// (replica fetches, transaction markers) speak that listener's protocol:
// TLS with the listener's truststore (and keystore as client certificate),
// and SASL with sasl.mechanism.inter.broker.protocol and the username and
// password of the listener's JAAS configuration for that mechanism, as a
// Kafka broker does.

// errPeerAuth is a failed authentication to another broker.
var errPeerAuth = errors.New("broker: authenticating to a peer")

// peerDialer opens a connection to a peer listener, secured and
// authenticated, ready for requests.
type peerDialer func(ctx context.Context, addr string) (net.Conn, error)

// interBrokerDialer returns the dialer for cfg's inter-broker listener, or
// nil when it is PLAINTEXT, and the replica fetchers' dialer, which also
// sets replica.socket.receive.buffer.bytes as SO_RCVBUF before connecting
// (nil when PLAINTEXT and that is <= 0, the OS default). With security
// (the listeners' reloaders), each connection takes the listener's
// current client TLS, so a reloaded keystore or truststore also serves
// this broker's own connections.
func interBrokerDialer(cfg *config.Config, security map[string]*ListenerSecurity) (dial, fetch peerDialer, err error) {
	lc, err := newListenerClient(cfg, security, cfg.InterBrokerListenerName, cfg.Security.InterBrokerMechanism, "inter-broker")
	recv := int(cfg.ReplicaSocketReceiveBufferBytes)
	if err != nil {
		return nil, nil, err
	}
	if lc == nil {
		if recv <= 0 {
			return nil, nil, nil
		}
		d := net.Dialer{Control: recvBufferControl(recv)}
		return nil, func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }, nil
	}
	flc := *lc
	flc.recvBuffer = recv
	return lc.dial, flc.dial, nil
}

// listenerClient connects to a TLS or SASL listener of other nodes as a
// Kafka broker does: TLS with the listener's truststore (its keystore as
// the client certificate), SASL with the given mechanism and the username
// and password of the listener's JAAS configuration for it.
type listenerClient struct {
	tls      *tls.Config // nil: no TLS
	reloader *tlsReloader
	mech     sasl.Mechanism // nil: no SASL
	client   string
	// recvBuffer is the SO_RCVBUF set before connecting (<= 0: the OS
	// default).
	recvBuffer int
}

// newListenerClient returns the client of listener, or nil when it is
// PLAINTEXT (or not known). role names the listener in errors.
func newListenerClient(cfg *config.Config, security map[string]*ListenerSecurity, listener, mechanism, role string) (*listenerClient, error) {
	ls, ok := cfg.Security.Listeners[listener]
	if !ok || (!ls.UsesTLS() && !ls.UsesSASL()) {
		return nil, nil
	}
	lc := &listenerClient{client: fmt.Sprintf("samsa-node-%d", cfg.NodeID)}
	if ls.UsesTLS() {
		var err error
		if lc.tls, err = clientTLSConfig(ls.Listener, ls.TLS); err != nil {
			return nil, err
		}
	}
	if ls.UsesSASL() {
		cred, ok := ls.SASL.Credentials[mechanism]
		if !ok || cred.Username == "" {
			return nil, fmt.Errorf("%w: the %s listener %s uses SASL %s but has no username and password for it: set listener.name.%s.%s.sasl.jaas.config with username and password options",
				errPeerAuth, role, ls.Listener, mechanism, lower(ls.Listener), lower(mechanism))
		}
		switch mechanism {
		case "PLAIN":
			lc.mech = plain.Auth{User: cred.Username, Pass: cred.Password}.AsMechanism()
		case "SCRAM-SHA-256":
			lc.mech = scram.Auth{User: cred.Username, Pass: cred.Password}.AsSha256Mechanism()
		case "SCRAM-SHA-512":
			lc.mech = scram.Auth{User: cred.Username, Pass: cred.Password}.AsSha512Mechanism()
		default:
			return nil, fmt.Errorf("%w: mechanism %s", errPeerAuth, mechanism)
		}
	}
	if sec := security[ls.Listener]; sec != nil {
		lc.reloader = sec.reloader
	}
	return lc, nil
}

// dialTLS opens a TCP connection to addr and, on a TLS listener, runs the
// client side of the handshake (the server's host name checked unless
// ssl.endpoint.identification.algorithm is empty).
func (lc *listenerClient) dialTLS(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Control: recvBufferControl(lc.recvBuffer)}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if lc.tls == nil {
		return conn, nil
	}
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetDeadline(deadline)
	}
	host, _, _ := net.SplitHostPort(addr)
	base := lc.tls
	if lc.reloader != nil {
		if cur := lc.reloader.client.Load(); cur != nil {
			base = cur
		}
	}
	c := base.Clone()
	c.ServerName = host
	t := tls.Client(conn, c)
	if err := t.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	conn.SetDeadline(time.Time{})
	return t, nil
}

// login runs the SASL exchange on conn; nothing without SASL.
func (lc *listenerClient) login(ctx context.Context, conn net.Conn, addr string) error {
	if lc.mech == nil {
		return nil
	}
	host, _, _ := net.SplitHostPort(addr)
	if err := saslClient(ctx, conn, lc.mech, host, lc.client); err != nil {
		return fmt.Errorf("%w %s: %w", errPeerAuth, addr, err)
	}
	return nil
}

// dial opens a secured, authenticated connection to addr, ready for Kafka
// requests.
func (lc *listenerClient) dial(ctx context.Context, addr string) (net.Conn, error) {
	conn, err := lc.dialTLS(ctx, addr)
	if err != nil {
		return nil, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetDeadline(deadline)
	}
	if err := lc.login(ctx, conn, addr); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// saslClient authenticates conn with SaslHandshake v1 and SaslAuthenticate
// v1 requests.
func saslClient(ctx context.Context, conn net.Conn, mech sasl.Mechanism, host, client string) error {
	corr := int32(0)
	send := func(req kmsg.Request, version int16) (kmsg.Response, error) {
		corr++
		out, err := exchange(conn, wire.AppendRequest(nil, wire.RequestHeader{APIVersion: version, CorrelationID: corr, ClientID: &client}, req))
		if err != nil {
			return nil, err
		}
		resp := req.ResponseKind()
		resp.SetVersion(version)
		if err := resp.ReadFrom(out[8:]); err != nil {
			return nil, err
		}
		return resp, nil
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = mech.Name()
	r, err := send(hs, 1)
	if err != nil {
		return err
	}
	if code := r.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		return fmt.Errorf("SaslHandshake %s: %w", mech.Name(), kerr.ErrorForCode(code))
	}
	session, token, err := mech.Authenticate(ctx, host)
	if err != nil {
		return err
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = token
		r, err := send(req, 1)
		if err != nil {
			return err
		}
		resp := r.(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != 0 {
			msg := ""
			if resp.ErrorMessage != nil {
				msg = *resp.ErrorMessage
			}
			return fmt.Errorf("SaslAuthenticate: %w: %s", kerr.ErrorForCode(resp.ErrorCode), msg)
		}
		done, next, err := session.Challenge(resp.SASLAuthBytes)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		token = next
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
