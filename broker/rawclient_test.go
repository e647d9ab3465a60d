package broker

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawClient speaks the Kafka protocol over one plain TCP connection, for
// tests that need to send what no well-behaved client would.
type rawClient struct {
	t    testing.TB
	nc   net.Conn
	fmtr *kmsg.RequestFormatter
	corr int32
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))}
}

// send writes req at version v and returns its correlation id.
func (c *rawClient) send(req kmsg.Request, v int16) int32 {
	c.t.Helper()
	req.SetVersion(v)
	c.corr++
	if _, err := c.nc.Write(c.fmtr.AppendRequest(nil, req, c.corr)); err != nil {
		c.t.Fatal(err)
	}
	return c.corr
}

// readFrame reads one size-prefixed frame (with a deadline, so a broken
// broker fails the test instead of hanging it).
func (c *rawClient) readFrame() ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 256<<20 {
		return nil, fmt.Errorf("response size %d", n)
	}
	buf := make([]byte, n)
	_, err := io.ReadFull(c.nc, buf)
	return buf, err
}

// roundTrip sends req at version v and decodes its response.
func (c *rawClient) roundTrip(req kmsg.Request, v int16) (kmsg.Response, error) {
	c.t.Helper()
	corr := c.send(req, v)
	return c.readResponse(req, corr)
}

func (c *rawClient) readResponse(req kmsg.Request, corr int32) (kmsg.Response, error) {
	buf, err := c.readFrame()
	if err != nil {
		return nil, err
	}
	if len(buf) < 4 || int32(binary.BigEndian.Uint32(buf)) != corr {
		return nil, fmt.Errorf("bad correlation id in % x", buf[:min(len(buf), 8)])
	}
	buf = buf[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if req.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		// Response header tagged fields: we never send any, expect none.
		if len(buf) == 0 || buf[0] != 0 {
			return nil, fmt.Errorf("unexpected response header tags")
		}
		buf = buf[1:]
	}
	return resp, resp.ReadFrom(buf)
}

// closedByPeer reports whether the broker closed the connection: a read
// returns EOF or a reset, not data and not a timeout.
func (c *rawClient) closedByPeer() bool {
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	var b [1]byte
	_, err := c.nc.Read(b[:])
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return err != nil
}
