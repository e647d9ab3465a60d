package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/metrics"
	"github.com/samsa-broker/samsa/controller"
)

// requestObserver sees each handled request once, on its connection's
// goroutine (metrics.Metrics.ObserveRequest).
type requestObserver interface {
	ObserveRequest(key, version int16, req kmsg.Request, resp kmsg.Response, queued, took, remote time.Duration) (slot int16)
	ObserveResponseSend(slot int16, took time.Duration)
}

// startHTTP starts the HTTP listener of samsa.http.listener (metrics,
// health and readiness) and hooks the metrics into the request pipeline.
// It must run before Server.Serve. With the setting empty it does
// nothing, and requests are not observed at all.
func (n *Node) startHTTP() error {
	addr := n.cfg.HTTPListener
	if addr == "" {
		return nil
	}
	m := metrics.New(metrics.Options{
		NodeID:            n.cfg.NodeID,
		Image:             n.ctrl.Image,
		ActiveController:  n.ctrl.ActiveController,
		MinInsyncReplicas: n.cfg.MinInsyncReplicas,
		Logs:              n.logs.Logs,
		ISRChanges:        n.replicas.ISRChanges,
		Groups:            n.groups,
		Connections:       n.srv.connectionsByListener,
		Reauthentications: n.reauthCounts,
		RequestQueueSize:  n.srv.requestsInFlight,
		BrokerState:       n.brokerState,
		TopicName: func(id [16]byte) (string, bool) {
			t, ok := n.ctrl.Image().TopicsByID[controller.Uuid(id)]
			if !ok {
				return "", false
			}
			return t.Name, true
		},
		TopicExists: func(name string) bool { _, ok := n.ctrl.Image().Topics[name]; return ok },
	})
	srv, err := metrics.Listen(metrics.HTTPOptions{Addr: addr, Metrics: m, Ready: n.ready, Logger: n.logger.With("component", "http")})
	if err != nil {
		return err
	}
	n.http = srv
	n.srv.observer = m
	m.Registry().MustRegister(panicMetric(n.srv))
	m.Registry().MustRegister(newQuotaCollector(n.srv.quotas))
	n.logger.Info("HTTP listener serving /metrics, /healthz and /readyz", "addr", srv.Addr().String())
	return nil
}

// stopHTTP closes the HTTP listener first on shutdown, so that /readyz
// stops answering before the Kafka listeners go.
func (n *Node) stopHTTP(ctx context.Context) {
	if n.http == nil {
		return
	}
	if err := n.http.Close(ctx); err != nil {
		n.logger.Warn("HTTP listener did not stop in time", "err", err)
	}
}

// HTTPAddr is the bound address of the HTTP listener, nil when it is off.
func (n *Node) HTTPAddr() net.Addr {
	if n.http == nil {
		return nil
	}
	return n.http.Addr()
}

// ready is /readyz: the Kafka listeners accept, the quorum has an active
// controller, and this broker is registered in the metadata image and not
// fenced, so that Metadata lists it and clients can use it.
func (n *Node) ready() error {
	select {
	case <-n.stopping:
		return errors.New("shutting down")
	default:
	}
	if !n.srv.serving.Load() {
		return errors.New("listeners are not serving")
	}
	if n.ctrl.ActiveController() < 0 {
		return errors.New("no active controller")
	}
	b, ok := n.ctrl.Image().Brokers[n.cfg.NodeID]
	if !ok {
		return fmt.Errorf("broker %d is not registered in the metadata image", n.cfg.NodeID)
	}
	if b.Fenced {
		return fmt.Errorf("broker %d is fenced", n.cfg.NodeID)
	}
	return nil
}

// brokerState maps ready to Kafka's BrokerState.
func (n *Node) brokerState() metrics.BrokerState {
	select {
	case <-n.stopping:
		return metrics.BrokerShuttingDown
	default:
	}
	if n.ready() != nil {
		return metrics.BrokerStarting
	}
	return metrics.BrokerRunning
}

// requestsInFlight is the number of requests read and not yet handled.
func (s *Server) requestsInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.mu.conns {
		n += int(c.busy.Load())
	}
	return n
}

// connectionsByListener counts open client connections by the name of the
// client listener they came in on (every listener served, 0 included).
func (s *Server) connectionsByListener() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.mu.listeners))
	for _, bl := range s.mu.listeners {
		out[bl.listener.Name] = 0
	}
	for c := range s.mu.conns {
		if c.bound != nil && !c.bound.removed {
			out[c.bound.listener.Name]++
		}
	}
	return out
}

// reauthCounts are the re-authentication counters of the SASL listeners.
func (n *Node) reauthCounts() map[string]metrics.ReauthCounts {
	out := map[string]metrics.ReauthCounts{}
	for name, sec := range n.currentSecurity() {
		if sec != nil && sec.SASL != nil {
			out[name] = metrics.ReauthCounts{Successful: sec.SASL.stats.reauthentications.Load(), ExpiredKilled: sec.SASL.stats.expiredKilled.Load()}
		}
	}
	return out
}
