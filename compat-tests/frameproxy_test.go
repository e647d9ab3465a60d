package compattests

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// frameProxy is a TCP proxy in front of one Kafka broker that reads the
// protocol's frames, for tests that must order what one client connection
// sends and receives: a hook may hold a request before the broker sees it,
// or a response before the client sees it (the frames behind it in that
// direction wait too, as on the wire). Metadata responses are rewritten to
// name the proxy as every broker, so a client bootstrapped through it
// stays on it; it fronts a single broker.
type frameProxy struct {
	ln     net.Listener
	target string
	host   string
	port   int32
	hooks  frameHooks
	done   chan struct{}
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

// frameHooks are called for each frame of each client connection (conn
// numbers them from 0), in that connection's order; a non-nil channel
// holds the frame until it is closed. A nil hook passes every frame.
type frameHooks struct {
	request  func(conn int, hdr wire.RequestHeader, req kmsg.Request) <-chan struct{}
	response func(conn int, hdr wire.RequestHeader, body []byte) <-chan struct{}
}

// startFrameProxy listens on a loopback port in front of target and stops
// with the test.
func startFrameProxy(t testing.TB, target string, hooks frameHooks) *frameProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("frame proxy: %v", err)
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	pn, _ := strconv.Atoi(port)
	p := &frameProxy{ln: ln, target: target, host: host, port: int32(pn), hooks: hooks, done: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's address, for bootstrap.servers.
func (p *frameProxy) Addr() string { return p.ln.Addr().String() }

func (p *frameProxy) close() {
	close(p.done)
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *frameProxy) accept() {
	defer p.wg.Done()
	for n := 0; ; n++ {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		pc := &proxyConn{p: p, id: n, client: c, server: s, pending: map[int32]wire.RequestHeader{}}
		p.wg.Add(2)
		go pc.requests()
		go pc.responses()
	}
}

// proxyConn is one client connection and its connection to the broker.
type proxyConn struct {
	p              *frameProxy
	id             int
	client, server net.Conn

	mu      sync.Mutex
	pending map[int32]wire.RequestHeader // by correlation id
}

// hold waits for ch (nil: no wait); false when the proxy is closing.
func (pc *proxyConn) hold(ch <-chan struct{}) bool {
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-pc.p.done:
		return false
	}
}

func (pc *proxyConn) shut() {
	_ = pc.client.Close()
	_ = pc.server.Close()
}

func (pc *proxyConn) requests() {
	defer pc.p.wg.Done()
	defer pc.shut()
	for {
		full, err := readFrame(pc.client) // txn_idempotent_test.go's, size included
		if err != nil {
			return
		}
		frame := full[4:]
		hdr, req, err := wire.ParseRequest(frame)
		pc.mu.Lock()
		pc.pending[hdr.CorrelationID] = hdr
		pc.mu.Unlock()
		if err == nil && pc.p.hooks.request != nil && !pc.hold(pc.p.hooks.request(pc.id, hdr, req)) {
			return
		}
		if writeSizedFrame(pc.server, frame) != nil {
			return
		}
	}
}

func (pc *proxyConn) responses() {
	defer pc.p.wg.Done()
	defer pc.shut()
	for {
		full, err := readFrame(pc.server)
		if err != nil || len(full) < 8 {
			return
		}
		frame := full[4:]
		corr := int32(binary.BigEndian.Uint32(frame))
		pc.mu.Lock()
		hdr, ok := pc.pending[corr]
		delete(pc.pending, corr)
		pc.mu.Unlock()
		if !ok {
			return // a response to no request: not the protocol
		}
		body := frame[4:]
		if req := kmsg.RequestForKey(hdr.APIKey); req != nil && hdr.APIKey != (&kmsg.ApiVersionsRequest{}).Key() {
			req.SetVersion(hdr.APIVersion)
			if req.IsFlexible() {
				if body, err = wire.SkipTags(body); err != nil {
					return
				}
			}
		}
		if hdr.APIKey == (&kmsg.MetadataRequest{}).Key() {
			if frame, err = pc.p.rewriteMetadata(frame, len(frame)-len(body), hdr.APIVersion); err != nil {
				return
			}
			body = frame[len(frame)-len(body):]
		}
		if pc.p.hooks.response != nil && !pc.hold(pc.p.hooks.response(pc.id, hdr, body)) {
			return
		}
		if writeSizedFrame(pc.client, frame) != nil {
			return
		}
	}
}

// rewriteMetadata points every broker of a Metadata response (whose body
// starts at frame[bodyAt:]) at the proxy.
func (p *frameProxy) rewriteMetadata(frame []byte, bodyAt int, version int16) ([]byte, error) {
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(version)
	if err := resp.ReadFrom(frame[bodyAt:]); err != nil {
		return nil, fmt.Errorf("frame proxy: metadata v%d response: %w", version, err)
	}
	for i := range resp.Brokers {
		resp.Brokers[i].Host, resp.Brokers[i].Port = p.host, p.port
	}
	out := append([]byte(nil), frame[:bodyAt]...)
	return resp.AppendTo(out), nil
}

// writeSizedFrame writes frame with its size prefix.
func writeSizedFrame(w io.Writer, frame []byte) error {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(frame)), uint32(len(frame)))
	_, err := w.Write(append(b, frame...))
	return err
}
