package quota

import (
	"time"

	"github.com/samsa-broker/samsa/controller"
)

// TokenBucket is the controller mutation quota's measure, as Kafka's
// TokenBucket (KIP-599): it holds up to quota × samples × window tokens,
// refills at quota per second, and each partition mutation takes one
// token; a client whose bucket is below zero is over its quota, for
// -tokens / quota seconds. Not safe for concurrent use.
type TokenBucket struct {
	tokens float64
	last   time.Time
	filled bool
}

// refill brings the bucket to now for a quota of bound and burst.
func (b *TokenBucket) refill(bound, burst float64, now time.Time) {
	if !b.filled {
		b.tokens, b.last, b.filled = burst, now, true
		return
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(burst, b.tokens+bound*d.Seconds())
	}
	b.last = now
}

// throttle is how long until the bucket is back at zero.
func (b *TokenBucket) throttle(bound float64) time.Duration {
	if b.tokens >= 0 || bound <= 0 {
		return 0
	}
	return roundMillis(time.Duration(-b.tokens / bound * float64(time.Second)))
}

// mutationBucketLocked returns the bucket of a client, refilled to now,
// its quota and its key; ok is false when the client has no mutation quota.
// REQUIRES: m.mu held.
func (m *Manager) mutationBucketLocked(quotas Quotas, user, clientID string, now time.Time) (b *TokenBucket, bound float64, k rateKey, ok bool) {
	bound, shared, ok := Resolve(quotas, controller.QuotaControllerMutationRate, user, clientID)
	if !ok {
		return nil, 0, k, false
	}
	k = rateKey{controller.QuotaControllerMutationRate, shared}
	b, found := m.mu.buckets[k]
	if !found {
		b = &TokenBucket{}
		m.mu.buckets[k] = b
	}
	m.sweepLocked(now)
	m.mu.bucketUsed[k] = now
	b.refill(bound, bound*float64(m.opts.MutationSamples)*m.opts.MutationWindow.Seconds(), now)
	return b, bound, k, true
}

// MutationExceeded returns, for a client already over its
// controller_mutation_rate, how long until it is back within it (0 when
// within it or unlimited): Kafka's strict mode refuses the topic then
// (THROTTLING_QUOTA_EXCEEDED).
func (m *Manager) MutationExceeded(quotas Quotas, user, clientID string, now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, bound, k, ok := m.mutationBucketLocked(quotas, user, clientID, now)
	if !ok {
		return 0
	}
	t := b.throttle(bound)
	m.entityLocked(k, now).noteThrottle(t, now)
	return t
}

// RecordMutations takes permits partition mutations from the client's
// bucket, whatever it holds, and returns the throttle that leaves it
// with (0 when within its quota or unlimited).
func (m *Manager) RecordMutations(quotas Quotas, user, clientID string, permits float64, now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, bound, k, ok := m.mutationBucketLocked(quotas, user, clientID, now)
	if !ok {
		return 0
	}
	b.tokens -= permits
	e := m.entityLocked(k, now)
	e.rate.Record(permits, now)
	t := b.throttle(bound)
	e.noteThrottle(t, now)
	return t
}
