package broker

import "sync"

// connCloseHooks are the functions a Server calls with a connection's id
// once the connection closed (every request on it finished): share
// sessions opened on it go, as Kafka's ConnectionDisconnectListener.
type connCloseHooks struct {
	mu struct {
		sync.Mutex
		fs []func(connID uint64)
	}
}

// OnConnClose makes the Server call f with the id of each client
// connection that closes while it serves (handlers.Request.ConnID names a
// request's connection). Connections closed by Shutdown are not reported:
// whatever they held goes with the node. f must not block for long.
func (s *Server) OnConnClose(f func(connID uint64)) {
	s.closeHooks.mu.Lock()
	s.closeHooks.mu.fs = append(s.closeHooks.mu.fs, f)
	s.closeHooks.mu.Unlock()
}

// connClosed reports connection id closed to the OnConnClose functions.
func (s *Server) connClosed(id uint64) {
	if s.ctx.Err() != nil {
		return // shutting down
	}
	s.closeHooks.mu.Lock()
	fs := s.closeHooks.mu.fs
	s.closeHooks.mu.Unlock()
	for _, f := range fs {
		f(id)
	}
}
