package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

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
// nil when it is PLAINTEXT. With security (the listeners' reloaders), each
// connection takes the listener's current client TLS, so a reloaded
// keystore or truststore also serves this broker's own connections.
func interBrokerDialer(cfg *config.Config, security map[string]*ListenerSecurity) (peerDialer, error) {
	ls, ok := cfg.Security.Listeners[cfg.InterBrokerListenerName]
	if !ok || (!ls.UsesTLS() && !ls.UsesSASL()) {
		return nil, nil
	}
	var tc *tls.Config
	if ls.UsesTLS() {
		var err error
		if tc, err = clientTLSConfig(ls.Listener, ls.TLS); err != nil {
			return nil, err
		}
	}
	var mech sasl.Mechanism
	if ls.UsesSASL() {
		name := cfg.Security.InterBrokerMechanism
		cred, ok := ls.SASL.Credentials[name]
		if !ok || cred.Username == "" {
			return nil, fmt.Errorf("%w: the inter-broker listener %s uses SASL %s but has no username and password for it: set listener.name.%s.%s.sasl.jaas.config with username and password options",
				errPeerAuth, ls.Listener, name, lower(ls.Listener), lower(name))
		}
		switch name {
		case "PLAIN":
			mech = plain.Auth{User: cred.Username, Pass: cred.Password}.AsMechanism()
		case "SCRAM-SHA-256":
			mech = scram.Auth{User: cred.Username, Pass: cred.Password}.AsSha256Mechanism()
		case "SCRAM-SHA-512":
			mech = scram.Auth{User: cred.Username, Pass: cred.Password}.AsSha512Mechanism()
		default:
			return nil, fmt.Errorf("%w: mechanism %s", errPeerAuth, name)
		}
	}
	client := fmt.Sprintf("samsa-node-%d", cfg.NodeID)
	var reloader *tlsReloader
	if sec := security[ls.Listener]; sec != nil {
		reloader = sec.reloader
	}
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		if deadline, ok := ctx.Deadline(); ok {
			conn.SetDeadline(deadline)
		}
		host, _, _ := net.SplitHostPort(addr)
		if tc != nil {
			base := tc
			if reloader != nil {
				if cur := reloader.client.Load(); cur != nil {
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
			conn = t
		}
		if mech != nil {
			if err := saslClient(ctx, conn, mech, host, client); err != nil {
				conn.Close()
				return nil, fmt.Errorf("%w %s: %w", errPeerAuth, addr, err)
			}
		}
		return conn, nil
	}, nil
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
