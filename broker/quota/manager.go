package quota

import (
	"sync"
	"time"

	"github.com/samsa-broker/samsa/controller"
)

// Options configure a Manager. Zero values take Kafka's defaults.
type Options struct {
	// Window is quota.window.size.seconds (default 1 s) and Samples
	// quota.window.num (default 11).
	Window  time.Duration
	Samples int
	// MutationWindow and MutationSamples are controller.quota.window.*
	// (default 1 s and 11): the controller mutation quota's burst is the
	// quota times MutationSamples windows.
	MutationWindow  time.Duration
	MutationSamples int
	// Expiry: a rate not recorded for this long is forgotten (Kafka's
	// inactive sensor expiry, 1 hour).
	Expiry time.Duration
}

// Manager keeps the rates of every quota entity in use. Safe for
// concurrent use.
type Manager struct {
	opts Options
	mu   struct {
		sync.Mutex
		rates     map[rateKey]*entityRate
		lastSweep time.Time
		// buckets are the controller mutation quotas' token buckets
		// (mutation.go), with when each was last used.
		buckets    map[rateKey]*TokenBucket
		bucketUsed map[rateKey]time.Time
	}
}

// rateKey names one shared rate: a quota key and the entity it resolved
// to, with the request's own names in place of default entities (Kafka's
// sensor tags).
type rateKey struct {
	key    string
	entity controller.QuotaEntity
}

type entityRate struct {
	rate     *Rate
	lastUsed time.Time
	// throttleMs and throttled sum the throttles given and count the
	// requests throttled over the same span, for Stats.
	throttleMs, throttled *Rate
}

// noteThrottle counts a throttle t given at now.
func (e *entityRate) noteThrottle(t time.Duration, now time.Time) {
	if t > 0 {
		e.throttleMs.Record(float64(t)/float64(time.Millisecond), now)
		e.throttled.Record(1, now)
	}
}

// NewManager returns a Manager with no rates.
func NewManager(o Options) *Manager {
	if o.Window <= 0 {
		o.Window = time.Second
	}
	if o.Samples <= 0 {
		o.Samples = 11
	}
	if o.MutationWindow <= 0 {
		o.MutationWindow = time.Second
	}
	if o.MutationSamples <= 0 {
		o.MutationSamples = 11
	}
	if o.Expiry <= 0 {
		o.Expiry = time.Hour
	}
	m := &Manager{opts: o}
	m.mu.rates = map[rateKey]*entityRate{}
	m.mu.buckets = map[rateKey]*TokenBucket{}
	m.mu.bucketUsed = map[rateKey]time.Time{}
	return m
}

// Quotas are the client quotas of a metadata image
// (controller.Image.ClientQuotas).
type Quotas = map[controller.QuotaEntity]map[string]float64

// Resolve returns the quota of key for a request of user and clientID:
// the value set on the most specific matching entity (see the package
// doc), and the entity that rate is shared by. ok is false when no entity
// sets key: the client is not limited.
func Resolve(quotas Quotas, key, user, clientID string) (bound float64, shared controller.QuotaEntity, ok bool) {
	if len(quotas) == 0 {
		return 0, shared, false
	}
	name := func(n string) controller.QuotaEntityName { return controller.QuotaEntityName{Present: true, Name: n} }
	def := controller.QuotaEntityName{Present: true, Default: true}
	none := controller.QuotaEntityName{}
	u, c := name(user), name(clientID)
	for _, cand := range [...]struct{ user, client controller.QuotaEntityName }{
		{u, c}, {u, def}, {u, none},
		{def, c}, {def, def}, {def, none},
		{none, c}, {none, def},
	} {
		v, found := quotas[controller.QuotaEntity{User: cand.user, ClientID: cand.client}][key]
		if !found {
			continue
		}
		if cand.user.Present {
			shared.User = u
		}
		if cand.client.Present {
			shared.ClientID = c
		}
		return v, shared, true
	}
	return 0, shared, false
}

// Record adds value to the rate of key for user and clientID at now and
// returns how long the client must be throttled (0 when within its quota
// or unlimited). A request_percentage throttle is at most one window, as
// Kafka's ClientRequestQuotaManager.
func (m *Manager) Record(quotas Quotas, key, user, clientID string, value float64, now time.Time) time.Duration {
	bound, shared, ok := Resolve(quotas, key, user, clientID)
	if !ok {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entityLocked(rateKey{key, shared}, now)
	e.rate.Record(value, now)
	t := e.rate.ThrottleTime(bound, now)
	if key == controller.QuotaRequestPercentage {
		t = min(t, m.opts.Window)
	}
	e.noteThrottle(t, now)
	return t
}

// MaxInWindow returns the most a client with quota bound may move at
// once without being throttled: bound over samples-1 windows (Kafka's
// maxValueInQuotaWindow, which caps a consumer fetch).
func (m *Manager) MaxInWindow(bound float64) float64 {
	return bound * float64(m.opts.Samples-1) * m.opts.Window.Seconds()
}

// Exceeded returns the throttle time of a client already over its quota
// of key at now, without recording anything (0 when within it): Kafka's
// strict controller mutation quota refuses a mutation then.
func (m *Manager) Exceeded(quotas Quotas, key, user, clientID string, now time.Time) time.Duration {
	bound, shared, ok := Resolve(quotas, key, user, clientID)
	if !ok {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rateLocked(rateKey{key, shared}, now).ThrottleTime(bound, now)
}

// sweepLocked forgets the rates and buckets unused for Expiry (checked
// at most once a minute).
// REQUIRES: m.mu held.
func (m *Manager) sweepLocked(now time.Time) {
	if now.Sub(m.mu.lastSweep) < time.Minute {
		return
	}
	m.mu.lastSweep = now
	for key, r := range m.mu.rates {
		if now.Sub(r.lastUsed) >= m.opts.Expiry {
			delete(m.mu.rates, key)
		}
	}
	for key, used := range m.mu.bucketUsed {
		if now.Sub(used) >= m.opts.Expiry {
			delete(m.mu.buckets, key)
			delete(m.mu.bucketUsed, key)
		}
	}
}

// rateLocked returns the rate of k, created on first use.
// REQUIRES: m.mu held.
func (m *Manager) rateLocked(k rateKey, now time.Time) *Rate {
	return m.entityLocked(k, now).rate
}

// entityLocked returns the measures of k, created on first use.
// REQUIRES: m.mu held.
func (m *Manager) entityLocked(k rateKey, now time.Time) *entityRate {
	m.sweepLocked(now)
	r, ok := m.mu.rates[k]
	if !ok {
		r = &entityRate{rate: NewRate(m.opts.Window, m.opts.Samples),
			throttleMs: NewRate(m.opts.Window, m.opts.Samples), throttled: NewRate(m.opts.Window, m.opts.Samples)}
		m.mu.rates[k] = r
	}
	r.lastUsed = now
	return r
}

// Len returns the number of rates and buckets kept (for tests).
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.mu.rates) + len(m.mu.buckets)
}
