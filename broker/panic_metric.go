package broker

import "github.com/prometheus/client_golang/prometheus"

// panicMetric exports Server.PanicCount (issue 11 item 6: a panic in one
// request closes that connection with an ERROR line and is counted here,
// so that an alert can fire on a bug that no longer stops the broker).
// Kafka has no such metric; the name is samsa's own.
func panicMetric(s *Server) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "samsa_server_request_panics_total",
		Help: "Requests whose handling panicked since start; each closed its connection and was logged at ERROR with its stack.",
	}, func() float64 { return float64(s.PanicCount()) })
}
