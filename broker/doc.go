// Package broker runs the Kafka listeners: it accepts connections, reads
// size-prefixed request frames, decodes them with package wire, dispatches
// them through the handler table of package handlers and writes responses
// back in request order.
//
// Each connection has one read goroutine, one goroutine that runs its
// requests one at a time (as Apache Kafka does: a connection is muted while
// its request is processed), and one write goroutine. A malformed,
// oversized or unknown request closes that connection with a log line and
// never affects other connections.
//
// Usage:
//
//	srv, err := broker.New(broker.Options{Deps: deps, Listeners: cfg.Listeners, MaxRequestBytes: cfg.SocketRequestMaxBytes})
//	...
//	go srv.Serve()
//	...
//	srv.Shutdown(ctx)
package broker
