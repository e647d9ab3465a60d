// Package quota enforces client quotas as Kafka's ClientQuotaManager:
// a client's rate of produced bytes, fetched bytes, request handling time
// or partition mutations is measured over Window×Samples (Kafka's
// quota.window.size.seconds = 1 and quota.window.num = 11), and a client
// over its quota is throttled for the time that brings its rate back to
// the quota:
//
//	throttle = (rate - quota) / quota × window of the measurement
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
// now.
//
// Usage:
//
//	m := quota.NewManager(quota.Options{})
//	throttle := m.Record(img.ClientQuotas, controller.QuotaProducerByteRate, "alice", "app", float64(n), now)
//	// set throttle_time_ms to throttle and read nothing more from the
//	// connection until now+throttle
package quota
