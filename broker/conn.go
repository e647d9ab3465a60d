package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/handlers"
	"github.com/samsa-broker/samsa/wire"
)

// conn is one client connection. The read goroutine (run) hands frames to
// the process goroutine, which runs requests strictly one at a time and
// hands encoded responses, in the same order, to the write goroutine.
type conn struct {
	srv  *Server
	nc   net.Conn
	host string

	frames    chan []byte
	responses chan []byte
	stopOnce  sync.Once
}

func newConn(s *Server, nc net.Conn) *conn {
	host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
	return &conn{srv: s, nc: nc, host: host, frames: make(chan []byte, 8), responses: make(chan []byte, 8)}
}

// stopReading unblocks the read loop so that the connection drains: the
// request being processed finishes and its response is written.
func (c *conn) stopReading() {
	c.stopOnce.Do(func() {
		if tc, ok := c.nc.(*net.TCPConn); ok {
			tc.CloseRead()
			return
		}
		c.nc.SetReadDeadline(time.Now())
	})
}

func (c *conn) run() {
	log := c.srv.opts.Logger
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.process() }()
	go func() { defer wg.Done(); c.write() }()
	err := c.read()
	close(c.frames)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && c.srv.ctx.Err() == nil {
		log.Info("closing connection", "remote", c.nc.RemoteAddr().String(), "reason", err)
	}
	wg.Wait()
	c.nc.Close()
}

func (c *conn) read() error {
	var sizeBuf [4]byte
	for {
		if _, err := io.ReadFull(c.nc, sizeBuf[:]); err != nil {
			return err
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if size < 8 {
			return fmt.Errorf("invalid request size %d", size)
		}
		if max := c.srv.opts.MaxRequestBytes; max > 0 && size > max {
			return fmt.Errorf("request size %d exceeds socket.request.max.bytes %d", size, max)
		}
		frame := make([]byte, size)
		if _, err := io.ReadFull(c.nc, frame); err != nil {
			return fmt.Errorf("reading request body: %w", err)
		}
		select {
		case c.frames <- frame:
		case <-c.srv.ctx.Done():
			return nil
		}
	}
}

func (c *conn) process() {
	defer close(c.responses)
	log := c.srv.opts.Logger
	broken := false
	for frame := range c.frames {
		if broken {
			continue // drain; the reader stops once the socket closes
		}
		out, err := c.handle(frame)
		if err != nil {
			log.Info("closing connection", "remote", c.nc.RemoteAddr().String(), "reason", err)
			broken = true
			c.nc.Close()
			continue
		}
		if out != nil {
			c.responses <- out
		}
	}
}

func (c *conn) write() {
	for out := range c.responses {
		if _, err := c.nc.Write(out); err != nil {
			c.nc.Close()
			for range c.responses {
			}
			return
		}
	}
}

// handle decodes and runs one request and returns the encoded response, or
// nil when no response is due (acks=0 produce).
func (c *conn) handle(frame []byte) ([]byte, error) {
	hdr, req, err := wire.ParseRequest(frame)
	if err != nil {
		if errors.Is(err, wire.ErrUnsupportedVersion) && hdr.APIKey == int16(kmsg.ApiVersions) {
			return c.unsupportedApiVersions(hdr), nil
		}
		return nil, fmt.Errorf("request key %d v%d: %w", hdr.APIKey, hdr.APIVersion, err)
	}
	entry, ok := c.srv.table[hdr.APIKey]
	if !ok {
		return nil, fmt.Errorf("unsupported api key %d (%s)", hdr.APIKey, kmsg.NameForKey(hdr.APIKey))
	}
	if hdr.APIVersion < entry.MinVersion || hdr.APIVersion > entry.MaxVersion {
		if hdr.APIKey == int16(kmsg.ApiVersions) {
			return c.unsupportedApiVersions(hdr), nil
		}
		return nil, fmt.Errorf("unsupported version %d of %s", hdr.APIVersion, kmsg.NameForKey(hdr.APIKey))
	}
	resp, err := entry.Handle(c.srv.opts.Deps, &handlers.Request{Header: hdr, Body: req, ClientHost: c.host})
	if err != nil {
		return nil, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(hdr.APIKey), hdr.APIVersion, err)
	}
	if resp == nil {
		return nil, nil
	}
	return wire.AppendResponse(make([]byte, 0, responseSizeHint(resp)), hdr, resp), nil
}

// responseSizeHint is the buffer capacity to encode resp into: for a
// fetch, the record bytes it carries plus room for everything else, so
// that a large fetch is encoded without growing (and so copying) the
// buffer again and again; 0 (grow as needed) for other responses.
func responseSizeHint(resp kmsg.Response) int {
	f, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return 0
	}
	n := 64
	for i := range f.Topics {
		t := &f.Topics[i]
		n += 32 + len(t.Topic)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			n += 96 + len(p.RecordBatches) + 24*len(p.AbortedTransactions)
		}
	}
	return n
}

// unsupportedApiVersions answers an ApiVersions request of a version we do
// not know in the v0 shape, with UNSUPPORTED_VERSION and our ranges, which
// is what clients rely on to retry with a version we speak.
func (c *conn) unsupportedApiVersions(hdr wire.RequestHeader) []byte {
	resp := handlers.ApiVersionsResponse(c.srv.opts.Deps)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	hdr.APIVersion = 0
	return wire.AppendResponse(nil, hdr, resp)
}
