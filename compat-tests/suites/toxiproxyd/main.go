// Command toxiproxyd is a small TCP proxy with the part of Toxiproxy's HTTP API
// that Sarama's functional tests use (compat-tests/suites/sarama.sh): their
// TestMain finds the brokers through proxies named kafka1..kafka5, and some tests
// disable a proxy, add a reset_peer or latency toxic, and reset all proxies.
// Sarama's CI runs the real Toxiproxy in a container; this command lets the
// suite run here without one.
//
//	toxiproxyd -api 127.0.0.1:8474 \
//	    -proxy kafka1=127.0.0.1:29091=127.0.1.1:29091 -proxy kafka2=...
//
// Each -proxy is NAME=LISTEN=UPSTREAM and exists from the start, so the tests'
// lookup of an existing proxy finds it. The API served:
//
//	GET  /proxies/NAME         the proxy as JSON {name, listen, upstream, enabled}
//	POST /proxies/NAME         update it (enabled false closes its connections and
//	                           its listener; true listens again); 404 if unknown
//	POST /proxies              create a proxy from the same JSON (201)
//	POST /proxies/NAME/toxics  add a toxic {name, type, stream, attributes}:
//	                           latency (attributes.latency ms, each chunk delayed)
//	                           or reset_peer (connections reset with RST: those
//	                           open now and each new one while the toxic is there)
//	POST /reset                enable every proxy and remove every toxic (204)
//
// A toxic's stream is "downstream" (from the upstream to the client, the
// default) or "upstream".
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// errToxiproxydBadProxy is returned for a -proxy flag that is not NAME=LISTEN=UPSTREAM.
var errToxiproxydBadProxy = errors.New("toxiproxyd: -proxy must be NAME=LISTEN=UPSTREAM")

// errToxiproxydBadToxic is returned for a toxic of a type this proxy does not know.
var errToxiproxydBadToxic = errors.New("toxiproxyd: unknown toxic type")

// proxySpec is a proxy as the API shows it.
type proxySpec struct {
	Name     string `json:"name"`
	Listen   string `json:"listen"`
	Upstream string `json:"upstream"`
	Enabled  bool   `json:"enabled"`
}

// toxic is a toxic as the API takes it.
type toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]int `json:"attributes"`
}

// proxy forwards the connections accepted on its listen address to its upstream.
type proxy struct {
	mu struct {
		sync.Mutex
		spec     proxySpec
		listener net.Listener
		conns    map[*link]struct{}
		toxics   []toxic
	}
	wg sync.WaitGroup
}

// link is one proxied connection: the client's side and the upstream's side.
type link struct {
	client, upstream *net.TCPConn
	once             sync.Once
}

// reset closes both sides with SO_LINGER 0, so each peer sees a TCP RST.
func (l *link) reset() {
	l.once.Do(func() {
		for _, c := range []*net.TCPConn{l.client, l.upstream} {
			if c != nil {
				_ = c.SetLinger(0)
				_ = c.Close()
			}
		}
	})
}

// closeGracefully closes both sides with a FIN.
func (l *link) closeGracefully() {
	l.once.Do(func() {
		_ = l.client.Close()
		_ = l.upstream.Close()
	})
}

func newProxy(spec proxySpec) *proxy {
	p := &proxy{}
	p.mu.spec = spec
	p.mu.conns = map[*link]struct{}{}
	return p
}

// setEnabled starts or stops the proxy's listener. Stopping closes every
// connection of the proxy.
func (p *proxy) setEnabled(on bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.spec.Enabled = on
	if on {
		if p.mu.listener != nil {
			return nil
		}
		ln, err := net.Listen("tcp", p.mu.spec.Listen)
		if err != nil {
			return fmt.Errorf("toxiproxyd: listen %s: %w", p.mu.spec.Listen, err)
		}
		// A listen address with port 0 becomes the port the kernel chose, which
		// the proxy keeps when it is disabled and enabled again.
		p.mu.spec.Listen = ln.Addr().String()
		p.mu.listener = ln
		p.wg.Add(1)
		go p.accept(ln)
		return nil
	}
	if p.mu.listener != nil {
		_ = p.mu.listener.Close()
		p.mu.listener = nil
	}
	for l := range p.mu.conns {
		l.closeGracefully()
		delete(p.mu.conns, l)
	}
	return nil
}

// toxicsLocked returns the toxics of a stream.
// REQUIRES: p.mu held.
func (p *proxy) toxicsLocked(stream string) []toxic {
	var out []toxic
	for _, t := range p.mu.toxics {
		s := t.Stream
		if s == "" {
			s = "downstream"
		}
		if s == stream {
			out = append(out, t)
		}
	}
	return out
}

// hasResetLocked reports whether a reset_peer toxic is present.
// REQUIRES: p.mu held.
func (p *proxy) hasResetLocked() bool {
	for _, t := range p.mu.toxics {
		if t.Type == "reset_peer" {
			return true
		}
	}
	return false
}

func (p *proxy) addToxic(t toxic) error {
	switch t.Type {
	case "latency", "reset_peer":
	default:
		return fmt.Errorf("%w: %q", errToxiproxydBadToxic, t.Type)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.toxics = append(p.mu.toxics, t)
	if t.Type == "reset_peer" {
		for l := range p.mu.conns {
			l.reset()
			delete(p.mu.conns, l)
		}
	}
	return nil
}

func (p *proxy) clearToxics() {
	p.mu.Lock()
	p.mu.toxics = nil
	p.mu.Unlock()
}

func (p *proxy) spec() proxySpec {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.spec
}

func (p *proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c.(*net.TCPConn))
	}
}

// latency returns the summed latency toxics of a stream.
func (p *proxy) latency(stream string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var d time.Duration
	for _, t := range p.toxicsLocked(stream) {
		if t.Type == "latency" {
			d += time.Duration(t.Attributes["latency"]) * time.Millisecond
		}
	}
	return d
}

func (p *proxy) serve(client *net.TCPConn) {
	defer p.wg.Done()
	p.mu.Lock()
	upstreamAddr := p.mu.spec.Upstream
	reset := p.hasResetLocked()
	p.mu.Unlock()
	if reset {
		(&link{client: client}).reset()
		return
	}
	uc, err := net.DialTimeout("tcp", upstreamAddr, 10*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	l := &link{client: client, upstream: uc.(*net.TCPConn)}
	p.mu.Lock()
	if !p.mu.spec.Enabled || p.hasResetLocked() {
		enabled := p.mu.spec.Enabled
		p.mu.Unlock()
		if enabled {
			l.reset()
		} else {
			l.closeGracefully()
		}
		return
	}
	p.mu.conns[l] = struct{}{}
	p.mu.Unlock()

	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); p.pipe(l, l.upstream, l.client, "downstream") }()
	go func() { defer copies.Done(); p.pipe(l, l.client, l.upstream, "upstream") }()
	copies.Wait()
	p.mu.Lock()
	delete(p.mu.conns, l)
	p.mu.Unlock()
}

// pipe copies from src to dst, delaying each chunk by the stream's latency
// toxics, until either side fails; then it closes the link.
func (p *proxy) pipe(l *link, src, dst *net.TCPConn, stream string) {
	defer l.closeGracefully()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := p.latency(stream); d > 0 {
				// The toxic's behaviour is the delay itself.
				time.Sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// server is the HTTP API over the proxies.
type server struct {
	mu      sync.Mutex
	proxies map[string]*proxy
}

func (s *server) get(name string) *proxy {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proxies[name]
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodPost && len(parts) == 1 && parts[0] == "reset":
		s.mu.Lock()
		all := make([]*proxy, 0, len(s.proxies))
		for _, p := range s.proxies {
			all = append(all, p)
		}
		s.mu.Unlock()
		for _, p := range all {
			p.clearToxics()
			if err := p.setEnabled(true); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && len(parts) == 1 && parts[0] == "proxies":
		var spec proxySpec
		if err := json.NewDecoder(r.Body).Decode(&spec); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		if _, ok := s.proxies[spec.Name]; ok {
			s.mu.Unlock()
			http.Error(w, "proxy already exists", http.StatusConflict)
			return
		}
		p := newProxy(spec)
		s.proxies[spec.Name] = p
		s.mu.Unlock()
		if err := p.setEnabled(spec.Enabled); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, http.StatusCreated, p.spec())
	case len(parts) == 2 && parts[0] == "proxies":
		p := s.get(parts[1])
		if p == nil {
			http.Error(w, "proxy not found", http.StatusNotFound)
			return
		}
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, http.StatusOK, p.spec())
		case http.MethodPost:
			var spec proxySpec
			if err := json.NewDecoder(r.Body).Decode(&spec); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if err := p.setEnabled(spec.Enabled); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			writeJSON(w, http.StatusOK, p.spec())
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "proxies" && parts[2] == "toxics":
		p := s.get(parts[1])
		if p == nil {
			http.Error(w, "proxy not found", http.StatusNotFound)
			return
		}
		var t toxic
		if err := json.NewDecoder(r.Body).Decode(&t); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := p.addToxic(t); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, http.StatusOK, t)
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

// proxyFlags collects the -proxy flags.
type proxyFlags []proxySpec

func (f *proxyFlags) String() string { return fmt.Sprint(*f) }

func (f *proxyFlags) Set(v string) error {
	parts := strings.Split(v, "=")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return fmt.Errorf("%w: %q", errToxiproxydBadProxy, v)
	}
	*f = append(*f, proxySpec{Name: parts[0], Listen: parts[1], Upstream: parts[2], Enabled: true})
	return nil
}

// newServer starts the given proxies.
func newServer(specs []proxySpec) (*server, error) {
	s := &server{proxies: map[string]*proxy{}}
	for _, spec := range specs {
		p := newProxy(spec)
		if err := p.setEnabled(true); err != nil {
			s.close()
			return nil, err
		}
		s.proxies[spec.Name] = p
	}
	return s, nil
}

// close stops every proxy and waits for their goroutines.
func (s *server) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.proxies {
		_ = p.setEnabled(false)
		p.wg.Wait()
	}
}

func main() {
	api := flag.String("api", "127.0.0.1:8474", "address of the HTTP API")
	var specs proxyFlags
	flag.Var(&specs, "proxy", "NAME=LISTEN=UPSTREAM (repeatable)")
	flag.Parse()
	s, err := newServer(specs)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *api)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case err := <-done:
		if !errors.Is(err, http.ErrServerClosed) {
			_, _ = io.WriteString(os.Stderr, err.Error()+"\n")
		}
	}
	_ = srv.Close()
	s.close()
}
