package quota

import (
	"cmp"
	"slices"
	"time"

	"github.com/samsa-broker/samsa/controller"
)

// Stat is one client's quota measures, as Kafka's per-client quota
// sensors (kafka.server:type=Produce|Fetch|Request|ControllerMutation,
// user=...,client-id=...).
type Stat struct {
	// Type is Kafka's quota type: Produce, Fetch, Request or
	// ControllerMutation.
	Type string
	// User and ClientID name the entity whose quota applies ("" for a
	// part it does not name, as Kafka's metric tags).
	User, ClientID string
	// Rate is bytes per second (Produce, Fetch), percent of a thread
	// (Request) or partition mutations per second (ControllerMutation).
	Rate float64
	// ThrottleMs is the average throttle of the requests throttled in
	// the measured span (Kafka's throttle-time), 0 when none was.
	ThrottleMs float64
}

// quotaTypes are Kafka's quota type names by key.
var quotaTypes = map[string]string{
	controller.QuotaProducerByteRate:       "Produce",
	controller.QuotaConsumerByteRate:       "Fetch",
	controller.QuotaRequestPercentage:      "Request",
	controller.QuotaControllerMutationRate: "ControllerMutation",
}

// Stats returns the measures of every client entity in use at now,
// sorted by type, user and client id (the ip entities' connection rates
// are not client measures and are left out).
func (m *Manager) Stats(now time.Time) []Stat {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Stat, 0, len(m.mu.rates))
	for k, e := range m.mu.rates {
		if _, ok := quotaTypes[k.key]; !ok {
			continue // connection creation rates are per address, not per client
		}
		s := Stat{Type: quotaTypes[k.key], User: k.entity.User.Name, ClientID: k.entity.ClientID.Name, Rate: e.rate.Measure(now)}
		if n := e.throttled.Sum(now); n > 0 {
			s.ThrottleMs = e.throttleMs.Sum(now) / n
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Stat) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.User, b.User), cmp.Compare(a.ClientID, b.ClientID))
	})
	return out
}
