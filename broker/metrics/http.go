package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// HTTPServer is the node's HTTP listener (samsa.http.listener): /metrics,
// /healthz and /readyz.
type HTTPServer struct {
	ln  net.Listener
	srv *http.Server
	wg  sync.WaitGroup
}

// HTTPOptions configures Listen.
type HTTPOptions struct {
	// Addr is host:port to listen on.
	Addr string
	// Metrics is served on /metrics; nil serves 404 there.
	Metrics *Metrics
	// Ready returns nil when the node can serve clients, or why not;
	// /readyz answers 200 or 503 with the reason.
	Ready  func() error
	Logger *slog.Logger
}

// Listen binds opts.Addr and serves on it until Close. A bind failure is
// returned, so that the node refuses to start as it does for its Kafka
// listeners.
func Listen(opts HTTPOptions) (*HTTPServer, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: samsa.http.listener %s: %w", opts.Addr, err)
	}
	mux := http.NewServeMux()
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", opts.Metrics.Handler())
	}
	// /healthz answers while the process serves HTTP at all: a liveness
	// probe that fails only when the process is wedged or gone.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if opts.Ready != nil {
			if err := opts.Ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintln(w, "not ready:", err)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	s := &HTTPServer{ln: ln, srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
	}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			opts.Logger.Error("HTTP listener stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return s, nil
}

// Addr is the bound address.
func (s *HTTPServer) Addr() net.Addr { return s.ln.Addr() }

// Close stops the listener, lets requests in flight finish until ctx is
// done, and waits for the serving goroutine.
func (s *HTTPServer) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	s.wg.Wait()
	return err
}
