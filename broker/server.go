package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"

	"github.com/samsa-broker/samsa/broker/handlers"
	"github.com/samsa-broker/samsa/config"
)

// Options configures a Server.
type Options struct {
	Deps            *handlers.Deps
	Listeners       []config.Listener
	MaxRequestBytes int32
	Logger          *slog.Logger
}

// Server owns the listeners and every connection goroutine.
type Server struct {
	opts  Options
	table map[int16]handlers.Entry
	lns   []net.Listener

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // accept loops and connections

	mu struct {
		sync.Mutex
		conns map[*conn]struct{}
	}
}

// New binds every listener; an address in use is an error here, before the
// broker reports that it is up.
func New(o Options) (*Server, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Server{opts: o, table: make(map[int16]handlers.Entry)}
	for _, e := range handlers.Table() {
		s.table[e.Key] = e
	}
	s.mu.conns = make(map[*conn]struct{})
	s.ctx, s.cancel = context.WithCancel(context.Background())
	for _, l := range o.Listeners {
		ln, err := net.Listen("tcp", net.JoinHostPort(l.Host, strconv.Itoa(l.Port)))
		if err != nil {
			for _, prev := range s.lns {
				prev.Close()
			}
			return nil, fmt.Errorf("broker: listener %s: %w", l.Name, err)
		}
		s.lns = append(s.lns, ln)
	}
	return s, nil
}

// Addrs returns the bound addresses, in listener order.
func (s *Server) Addrs() []net.Addr {
	out := make([]net.Addr, len(s.lns))
	for i, ln := range s.lns {
		out[i] = ln.Addr()
	}
	return out
}

// Serve starts the accept loops and returns immediately.
func (s *Server) Serve() {
	for _, ln := range s.lns {
		s.wg.Add(1)
		go s.acceptLoop(ln)
	}
}

func (s *Server) acceptLoop(ln net.Listener) {
	defer s.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.ctx.Err() != nil {
				return
			}
			s.opts.Logger.Warn("accept failed", "err", err)
			continue
		}
		c := newConn(s, nc)
		s.mu.Lock()
		s.mu.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.run()
			s.mu.Lock()
			delete(s.mu.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Shutdown stops accepting, lets each connection finish the request it is
// running and flush its responses, then closes every connection. It
// returns when all goroutines are gone or ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, ln := range s.lns {
		ln.Close()
	}
	s.cancel()
	s.mu.Lock()
	for c := range s.mu.conns {
		c.stopReading()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.mu.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

func (s *Server) closeListeners() {
	for _, ln := range s.lns {
		ln.Close()
	}
}
