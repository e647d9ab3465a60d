package broker

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/handlers"
	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/quorum"
	"github.com/samsa-broker/samsa/wire"
)

// A controller listener mapped to SSL, SASL_PLAINTEXT or SASL_SSL secures
// both things it carries (docs/OPERATIONS.md "Controller listener"):
//
//   - Kafka requests to the controllers (broker registration and
//     heartbeats, ISR changes, forwarded admin requests, tools with
//     --bootstrap-controller): the broker's Server serves them with the
//     listener's TLS and SASL, as any listener; this node's own requests
//     to the active controller dial it with the listener's client TLS and
//     log in with sasl.mechanism.controller.protocol and the username and
//     password of listener.name.<listener>.<mechanism>.sasl.jaas.config,
//     as Kafka's NodeToControllerChannelManager does.
//   - samsa's Raft transport: the quorum listener runs the TLS handshake
//     before it reads anything, and a connection that opens with the Raft
//     preamble must then authenticate with Kafka's SaslHandshake and
//     SaslAuthenticate requests (the same SASL server as the Kafka
//     connections) before Raft reads a byte of it. With an authorizer its
//     principal must also be allowed CLUSTER_ACTION on the cluster, which
//     in practice means super.users: ACLs live in the metadata log, which
//     cannot be read before the quorum forms. Kafka 4.4 asks the same of
//     its controllers' principal (its Vote requests from a principal that
//     is not a super user are refused until the ACLs load, so the quorum
//     never forms).

// errRaftAuth is a Raft connection that did not authenticate or may not
// carry Raft.
var errRaftAuth = errors.New("broker: Raft connection refused")

// maxSASLFrame bounds a SASL request on a Raft connection (Kafka's
// sasl.server.max.receive.size default, 512 KiB).
const maxSASLFrame = 512 << 10

// maxSASLRounds bounds the requests of one SASL exchange (SCRAM needs
// three).
const maxSASLRounds = 8

// controllerListener returns the security of this node's controller
// listener (the first of controller.listener.names), nil for PLAINTEXT.
func controllerListener(cfg *config.Config, security map[string]*ListenerSecurity) (name string, sec *ListenerSecurity) {
	if len(cfg.ControllerListenerNames) == 0 {
		return "", nil
	}
	name = cfg.ControllerListenerNames[0]
	return name, security[name]
}

// controllerSecurity returns the quorum's Security for the controller
// listener and the dialer of this node's Kafka requests to the
// controllers; zero and nil for a PLAINTEXT controller listener.
// clusterAction, when set (an authorizer is configured), tells whether a
// principal from a host may carry Raft.
func controllerSecurity(cfg *config.Config, security map[string]*ListenerSecurity, clusterAction func(principal, host string) bool) (quorum.Security, peerDialer, error) {
	name, sec := controllerListener(cfg, security)
	lc, err := newListenerClient(cfg, security, name, cfg.Security.ControllerMechanism, "controller")
	if err != nil || lc == nil {
		return quorum.Security{}, nil, err
	}
	qs := quorum.Security{Login: lc.login}
	if lc.tls != nil {
		qs.Dial = lc.dialTLS
	}
	if sec != nil && cfg.HasRole("controller") {
		if sec.TLS != nil {
			qs.Handshake = func(ctx context.Context, c net.Conn) (net.Conn, error) {
				tc := tls.Server(c, sec.TLS)
				if err := tc.HandshakeContext(ctx); err != nil {
					return nil, err
				}
				return tc, nil
			}
		}
		qs.Admit = func(c net.Conn) error { return admitRaft(c, sec, clusterAction) }
	}
	return qs, lc.dial, nil
}

// admitRaft authenticates a Raft connection to a secured controller
// listener: its SASL exchange on a SASL listener, else its TLS client
// certificate; then, with an authorizer, CLUSTER_ACTION on the cluster.
func admitRaft(c net.Conn, sec *ListenerSecurity, clusterAction func(principal, host string) bool) error {
	principal := anonymous
	if tc := findTLS(c); tc != nil {
		p, err := tlsPrincipal(tc.ConnectionState(), sec.PrincipalRules)
		if err != nil {
			return fmt.Errorf("%w: TLS principal: %w", errRaftAuth, err)
		}
		principal = p
	}
	if sec.SASL != nil {
		p, err := saslServe(c, sec.SASL)
		if err != nil {
			return err
		}
		principal = p
	}
	if clusterAction != nil {
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		if !clusterAction(principal, host) {
			return fmt.Errorf("%w: %s may not carry Raft: it needs CLUSTER_ACTION on the cluster (put it in super.users, as Kafka's controllers)", errRaftAuth, principal)
		}
	}
	return nil
}

// saslServe runs the server side of Kafka's SASL exchange (SaslHandshake
// v1, then SaslAuthenticate) on c with the listener's SASL server, the
// code every SASL listener runs, and returns the principal. A failed
// authentication is answered (SASL_AUTHENTICATION_FAILED,
// UNSUPPORTED_SASL_MECHANISM) and returned as an error; any other request
// is an error without an answer.
func saslServe(c net.Conn, srv *SASLServer) (string, error) {
	sc := newSASLConn(srv)
	var size [4]byte
	for range maxSASLRounds {
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return "", fmt.Errorf("%w: reading a SASL request: %w", errRaftAuth, err)
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 8 || n > maxSASLFrame {
			return "", fmt.Errorf("%w: SASL request of %d bytes (not a Kafka SaslHandshake)", errRaftAuth, n)
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(c, frame); err != nil {
			return "", fmt.Errorf("%w: reading a SASL request: %w", errRaftAuth, err)
		}
		hdr, req, err := wire.ParseRequest(frame)
		if err != nil {
			return "", fmt.Errorf("%w: %w", errRaftAuth, err)
		}
		switch key := kmsg.Key(hdr.APIKey); {
		case key == kmsg.SASLHandshake && hdr.APIVersion == 1:
		case key == kmsg.SASLAuthenticate && hdr.APIVersion >= 0 && hdr.APIVersion <= 2:
		default:
			return "", fmt.Errorf("%w: %s v%d before SASL authentication", errRaftAuth, kmsg.NameForKey(hdr.APIKey), hdr.APIVersion)
		}
		out, handled, err := sc.intercept(hdr, req)
		if err != nil {
			return "", fmt.Errorf("%w: %w", errRaftAuth, err)
		}
		if !handled {
			return "", fmt.Errorf("%w: %s before SASL authentication", errRaftAuth, kmsg.NameForKey(hdr.APIKey))
		}
		if _, err := c.Write(out); err != nil {
			return "", fmt.Errorf("%w: %w", errRaftAuth, err)
		}
		if sc.closeAfter {
			return "", fmt.Errorf("%w: %w", errRaftAuth, sc.failure)
		}
		if sc.authenticated() {
			return sc.principal, nil
		}
	}
	return "", fmt.Errorf("%w: SASL exchange of more than %d requests", errRaftAuth, maxSASLRounds)
}

// findTLS returns the TLS connection c is or wraps (the quorum listener
// hands over TLS connections it accepted wrapped), or nil.
func findTLS(c net.Conn) *tls.Conn {
	for range 4 {
		switch v := c.(type) {
		case *tls.Conn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// image is the controller's metadata image, nil before the controller
// exists.
func (n *Node) image() *controller.Image {
	if c := n.ctrlPub.Load(); c != nil {
		return c.Image()
	}
	return nil
}

// raftClusterAction returns whether a principal may carry Raft on a
// secured controller listener (CLUSTER_ACTION on the cluster: a super
// user, or an ACL once the image holds them), or nil without an
// authorizer.
func (n *Node) raftClusterAction() func(principal, host string) bool {
	authz := handlers.NewAuthz(n.cfg.Authorizer)
	if authz == nil {
		return nil
	}
	return func(principal, host string) bool {
		return authz.ClusterAction(n.image(), principal, host)
	}
}
