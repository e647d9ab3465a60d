package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// ErrNoController is returned when no active controller is known (an
// election is under way) or the active controller is this node.
var ErrNoController = errors.New("broker: no remote active controller")

// controllerRequestTimeout bounds one request to the active controller when
// the caller's context has no earlier deadline.
const controllerRequestTimeout = 10 * time.Second

// maxControllerResponse bounds a response read from the controller.
const maxControllerResponse = 100 << 20

// controllerChannel sends Kafka requests to the active controller over its
// controller listener (Kafka's NodeToControllerChannelManager): broker
// registration and heartbeats, producer id blocks, ISR changes, and
// client admin requests this node forwards because it is not the active
// controller. One connection, re-dialled when the controller moves or the
// connection fails; requests are serialized (control traffic is small).
type controllerChannel struct {
	nodeID int32
	// leader returns the active controller's id and controller listener
	// address; id -1 when unknown.
	leader func() (id int32, addr string)
	// dial, when set, opens secured connections (peer_dial.go): to
	// another broker's TLS or SASL inter-broker listener.
	dial peerDialer

	mu struct {
		sync.Mutex
		conn net.Conn
		addr string
		corr int32
	}
}

// target returns the address to send to, or ErrNoController.
func (c *controllerChannel) target() (string, error) {
	id, addr := c.leader()
	if id < 0 || addr == "" {
		return "", fmt.Errorf("%w: the quorum has no leader", ErrNoController)
	}
	if id == c.nodeID {
		return "", fmt.Errorf("%w: this node is the active controller", ErrNoController)
	}
	return addr, nil
}

// roundTrip writes one request frame (built by frame for the correlation
// id) and returns the response frame, size prefix included.
func (c *controllerChannel) roundTrip(ctx context.Context, frame func(corr int32) []byte) ([]byte, error) {
	addr, err := c.target()
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, controllerRequestTimeout)
		defer cancel()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.conn != nil && c.mu.addr != addr {
		c.mu.conn.Close()
		c.mu.conn = nil
	}
	if c.mu.conn == nil {
		var d net.Dialer
		dial := d.DialContext
		if c.dial != nil {
			dial = func(ctx context.Context, _, addr string) (net.Conn, error) { return c.dial(ctx, addr) }
		}
		conn, err := dial(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("broker: dialling the active controller at %s: %w", addr, err)
		}
		c.mu.conn, c.mu.addr = conn, addr
	}
	conn := c.mu.conn
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	c.mu.corr++
	// A cancelled context ends the exchange at once rather than at its
	// deadline: a replica fetcher retired while its fetch to a cut-off
	// node is in flight, or a client request whose connection closed.
	interrupt := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	out, err := exchange(conn, frame(c.mu.corr))
	if !interrupt() {
		// The context ended during the exchange; the deadline it set may
		// land after it, so the connection is not reused.
		conn.Close()
		c.mu.conn = nil
		if err != nil {
			err = fmt.Errorf("%w: %w", ctx.Err(), err)
		}
	}
	if err != nil {
		conn.Close()
		c.mu.conn = nil
		return nil, fmt.Errorf("broker: request to the active controller at %s: %w", addr, err)
	}
	return out, nil
}

// exchange writes frame and reads one size-prefixed response.
func exchange(conn net.Conn, frame []byte) ([]byte, error) {
	if _, err := conn.Write(frame); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > maxControllerResponse {
		return nil, fmt.Errorf("response size %d", n)
	}
	out := make([]byte, 4+n)
	copy(out, size[:])
	if _, err := io.ReadFull(conn, out[4:]); err != nil {
		return nil, err
	}
	return out, nil
}

// Request sends req at version (the highest both sides serve: samsa nodes
// of one build serve the same table) and decodes the response.
func (c *controllerChannel) Request(ctx context.Context, req kmsg.Request, version int16) (kmsg.Response, error) {
	client := fmt.Sprintf("samsa-node-%d", c.nodeID)
	req.SetVersion(version)
	out, err := c.roundTrip(ctx, func(corr int32) []byte {
		return wire.AppendRequest(nil, wire.RequestHeader{APIVersion: version, CorrelationID: corr, ClientID: &client}, req)
	})
	if err != nil {
		return nil, err
	}
	body := out[8:] // size, correlation id
	if req.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		if body, err = wire.SkipTags(body); err != nil {
			return nil, fmt.Errorf("broker: response header from the active controller: %w", err)
		}
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("broker: decoding %s response from the active controller: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// Close closes the connection.
func (c *controllerChannel) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.conn != nil {
		c.mu.conn.Close()
		c.mu.conn = nil
	}
}
