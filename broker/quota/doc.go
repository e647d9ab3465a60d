// Package quota enforces client quotas as Kafka's ClientQuotaManager:
// a client's rate of produced bytes, fetched bytes or request handling
// time is measured over Samples windows of Window (Kafka's
// quota.window.num = 11 and quota.window.size.seconds = 1, Rate), and a
// client over its quota is throttled for the time that brings its rate
// back to the quota (Kafka: (rate - quota) / quota × the measured span;
// see Rate for where and why samsa's measurement departs from it). The
// controller mutation quota is Kafka's token bucket (KIP-599,
// TokenBucket): quota × controller.quota.window.num windows of burst,
// refilled at the quota.
//
// The quota of a (user, client-id) pair is the most specific entity of
// the metadata image that sets the key (Resolve):
//
//	/users/<u>/clients/<c>, /users/<u>/clients/<default>, /users/<u>,
//	/users/<default>/clients/<c>, /users/<default>/clients/<default>,
//	/users/<default>, /clients/<c>, /clients/<default>
//
// and every connection that resolves to the same entity shares one rate
// (Kafka's quota sensor, tagged with the user and/or client-id that the
// entity names). Nothing here does IO or reads the clock: callers pass
// now. The broker side (recording requests, setting throttle_time_ms,
// muting the connection) is broker/quota_conn.go and
// broker/quota_mutation.go.
//
// Usage:
//
//	m := quota.NewManager(quota.Options{})
//	throttle := m.Record(img.ClientQuotas, controller.QuotaProducerByteRate, "alice", "app", float64(n), now)
//	// set throttle_time_ms to throttle and read nothing more from the
//	// connection until now+throttle
package quota
