package diff

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// ErrDiffClosed is returned by Conn.Do when the broker closed the connection
// instead of answering; the suite records it as the request's outcome
// (Kafka closes the connection on an unsupported version, for example).
var ErrDiffClosed = errors.New("diff: connection closed by the broker")

// ErrDiffBadResponse is returned when a response does not match its request.
var ErrDiffBadResponse = errors.New("diff: bad response")

// Conn is one raw Kafka connection that sends each request at exactly the
// version set on it, so the suite can walk every version, including ones
// no client would pick.
type Conn struct {
	addr   string
	c      net.Conn
	format *kmsg.RequestFormatter
	corr   int32
	// timeout bounds one request; a long-poll fetch or a JoinGroup waits up
	// to its own timeout, so this is generous.
	timeout time.Duration
}

// Dial opens a connection to addr with client id "diff".
func Dial(addr string, timeout time.Duration) (*Conn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, fmt.Errorf("diff: dial %s: %w", addr, err)
	}
	return &Conn{addr: addr, c: c, format: kmsg.NewRequestFormatter(kmsg.FormatterClientID("diff")), timeout: timeout}, nil
}

// Close closes the connection.
func (c *Conn) Close() error {
	if c.c == nil {
		return nil
	}
	err := c.c.Close()
	c.c = nil
	return err
}

// Do sends req at req.GetVersion() and decodes the response at the same
// version. After ErrDiffClosed the Conn redials on the next call.
func (c *Conn) Do(req kmsg.Request) (kmsg.Response, error) {
	if c.c == nil {
		nc, err := net.DialTimeout("tcp", c.addr, c.timeout)
		if err != nil {
			return nil, fmt.Errorf("diff: redial %s: %w", c.addr, err)
		}
		c.c = nc
	}
	c.corr++
	buf := c.format.AppendRequest(nil, req, c.corr)
	if err := c.c.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return nil, fmt.Errorf("diff: deadline: %w", err)
	}
	if _, err := c.c.Write(buf); err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: write: %v", ErrDiffClosed, err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c.c, size[:]); err != nil {
		c.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err) {
			return nil, ErrDiffClosed
		}
		return nil, fmt.Errorf("diff: read: %w", err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 64<<20 {
		c.Close()
		return nil, fmt.Errorf("%w: frame size %d", ErrDiffBadResponse, n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.c, body); err != nil {
		c.Close()
		return nil, fmt.Errorf("diff: read body: %w", err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != c.corr {
		c.Close()
		return nil, fmt.Errorf("%w: correlation id %d, want %d", ErrDiffBadResponse, got, c.corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	// An ApiVersions at a version the broker does not know is answered in
	// the v0 shape (UNSUPPORTED_VERSION); a version past every one we know
	// is decoded that way directly, since its own shape would misparse.
	if req.Key() == int16(kmsg.ApiVersions) && req.GetVersion() > req.MaxVersion() {
		resp.SetVersion(0)
	}
	// ApiVersions answers with a v0 response header even when flexible.
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		var err error
		if body, err = wire.SkipTags(body); err != nil {
			return nil, fmt.Errorf("%w: header tags: %v", ErrDiffBadResponse, err)
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		// An ApiVersions at a version the broker does not serve is answered
		// at v0 (UNSUPPORTED_VERSION and the key ranges).
		if req.Key() == int16(kmsg.ApiVersions) {
			v0 := kmsg.NewPtrApiVersionsResponse()
			v0.SetVersion(0)
			if err0 := v0.ReadFrom(body); err0 == nil {
				return v0, nil
			}
		}
		return nil, fmt.Errorf("%w: %s v%d: %v", ErrDiffBadResponse, kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}
