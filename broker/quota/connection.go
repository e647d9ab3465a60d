package quota

import (
	"net/netip"
	"time"

	"github.com/samsa-broker/samsa/controller"
)

// ConnectionRateBound returns the connection_creation_rate quota of a
// client address (KIP-612): the one set on the ip entity naming addr, or
// else the one on the default ip entity. ok is false when neither sets
// it: connections from addr are not limited. Entity names are compared
// as addresses, so "::1" and "0:0::1" name the same client.
func ConnectionRateBound(quotas Quotas, addr netip.Addr) (bound float64, ok bool) {
	addr = addr.Unmap()
	var def float64
	hasDef := false
	for e, values := range quotas {
		if !e.IP.Present || e.User.Present || e.ClientID.Present {
			continue
		}
		v, found := values[controller.QuotaConnectionCreationRate]
		if !found {
			continue
		}
		if e.IP.Default {
			def, hasDef = v, true
			continue
		}
		if named, err := netip.ParseAddr(e.IP.Name); err == nil && named.Unmap() == addr {
			return v, true
		}
	}
	return def, hasDef
}

// RecordConnection counts a new connection from addr against its
// connection creation rate quota bound at now and returns how long the
// connection must wait before it is closed, or 0 when it is within the
// quota and may be served. As Kafka's ConnectionQuotas, a connection
// over the quota is taken back out of the rate (it is not served, so it
// does not count), and the delay is at most one window
// (quota.window.size.seconds). The rate of an address is kept across
// quota changes: a new bound applies to the connections already counted.
func (m *Manager) RecordConnection(addr netip.Addr, bound float64, now time.Time) time.Duration {
	if bound <= 0 {
		return 0
	}
	addr = addr.Unmap()
	k := rateKey{controller.QuotaConnectionCreationRate, controller.QuotaEntity{IP: controller.QuotaEntityName{Present: true, Name: addr.String()}}}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entityLocked(k, now)
	e.rate.Record(1, now)
	t := min(e.rate.ThrottleTime(bound, now), m.opts.Window)
	if t > 0 {
		e.rate.Record(-1, now)
	}
	e.noteThrottle(t, now)
	return t
}

// acceptKey names the broker-wide connection creation rate.
var acceptKey = rateKey{key: "max.connection.creation.rate"}

// RecordAccept counts a new connection against the broker-wide
// connection creation rate bound (max.connection.creation.rate) at now
// and returns how long the broker waits before it serves the connection
// (0: at once; at most one window). Unlike an ip quota's, the connection
// stays counted: it is served after the wait.
func (m *Manager) RecordAccept(bound float64, now time.Time) time.Duration {
	if bound <= 0 {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entityLocked(acceptKey, now)
	e.rate.Record(1, now)
	return min(e.rate.ThrottleTime(bound, now), m.opts.Window)
}

// UnrecordAccept takes back a connection RecordAccept counted at now,
// for one an ip quota then refuses: as in Kafka, a connection that is not
// served does not count towards the broker-wide rate.
func (m *Manager) UnrecordAccept(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entityLocked(acceptKey, now).rate.Record(-1, now)
}
