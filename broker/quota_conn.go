package broker

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/handlers"
	"github.com/samsa-broker/samsa/broker/quota"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/wire"
)

// Client quota enforcement on a connection (broker/quota has the rules).
// After a request is handled, its cost is recorded against the client's
// quotas: the request's size for Produce (producer_byte_rate), the
// response's size for a consumer's Fetch and a ShareFetch
// (consumer_byte_rate), and the
// handler's own time for every request but the exempt ones
// (request_percentage). When a quota is exceeded, the response carries
// the largest throttle in throttle_time_ms and the connection runs no
// further request until the throttle has passed (Kafka mutes the channel:
// KIP-219). Requests on a controller listener, follower fetches and the
// broker-to-broker APIs are never throttled, as in Kafka.

// quotaExempt are the APIs the request quota does not count: those a
// client needs before it can be throttled at all, and broker-to-broker
// ones (Kafka's ClusterAction APIs).
func quotaExempt(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate, kmsg.WriteTxnMarkers,
		kmsg.AlterPartition, kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.AllocateProducerIDs:
		return true
	}
	return false
}

// enforceQuotas records the request against the client's quotas and,
// when one is exceeded, sets resp's throttle time and returns it: the
// caller puts it in the outgoing response, and the writer mutes the
// connection for it once the response is written (conn.afterResponse). requestBytes is the request's size; handled is the time
// the handler ran, without what it waited for (Request.Remote).
func (c *conn) enforceQuotas(hdr wire.RequestHeader, req kmsg.Request, resp kmsg.Response, requestBytes int, handled time.Duration) time.Duration {
	if c.controller || quotaExempt(hdr.APIKey) || c.srv.opts.Deps == nil || c.srv.opts.Deps.Controller == nil {
		return 0
	}
	quotas := c.srv.opts.Deps.Controller.Image().ClientQuotas
	if len(quotas) == 0 {
		return 0
	}
	user := strings.TrimPrefix(c.principal(), "User:")
	clientID := ""
	if hdr.ClientID != nil {
		clientID = *hdr.ClientID
	}
	now := time.Now()
	var throttle time.Duration
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		throttle = c.srv.quotas.Record(quotas, controller.QuotaProducerByteRate, user, clientID, float64(requestBytes), now)
	case *kmsg.FetchRequest:
		if r.ReplicaID >= 0 || r.ReplicaState.ID >= 0 {
			return 0 // replication is never throttled
		}
		throttle = c.srv.quotas.Record(quotas, controller.QuotaConsumerByteRate, user, clientID, float64(fetchResponseBytes(resp)), now)
	case *kmsg.ShareFetchRequest:
		// Kafka 4.4 records a ShareFetch response against the consumer's
		// fetch quota too (KafkaApis.handleShareFetchRequest).
		throttle = c.srv.quotas.Record(quotas, controller.QuotaConsumerByteRate, user, clientID, float64(shareFetchResponseBytes(resp)), now)
	}
	percent := handled.Seconds() * 100
	throttle = max(throttle, c.srv.quotas.Record(quotas, controller.QuotaRequestPercentage, user, clientID, percent, now))
	if throttle <= 0 {
		return 0
	}
	ms := int32(min(throttle.Milliseconds(), int64(1<<31-1)))
	switch r := resp.(type) {
	case *handlers.FileFetch:
		r.FetchResponse.SetThrottle(ms)
	case kmsg.SetThrottleResponse:
		r.SetThrottle(ms)
	}
	return throttle
}

// quotasBefore applies the quotas that act before a request is handled:
// a consumer fetch's max bytes is capped at what its quota allows over
// samples-1 windows (as Kafka: more would always be throttled), and the
// controller mutation quota (quota_mutation.go) may refuse topics, in
// which case frame is the request re-encoded without them.
func (c *conn) quotasBefore(hdr wire.RequestHeader, req kmsg.Request, frame []byte) (*mutationThrottle, []byte) {
	if f, ok := req.(*kmsg.FetchRequest); ok && !c.controller && f.ReplicaID < 0 && f.ReplicaState.ID < 0 &&
		c.srv.opts.Deps != nil && c.srv.opts.Deps.Controller != nil {
		quotas := c.srv.opts.Deps.Controller.Image().ClientQuotas
		if len(quotas) > 0 {
			clientID := ""
			if hdr.ClientID != nil {
				clientID = *hdr.ClientID
			}
			if bound, _, ok := quota.Resolve(quotas, controller.QuotaConsumerByteRate, strings.TrimPrefix(c.principal(), "User:"), clientID); ok {
				if limit := c.srv.quotas.MaxInWindow(bound); limit < float64(f.MaxBytes) {
					f.MaxBytes = int32(max(limit, 1))
					f.MinBytes = min(f.MinBytes, f.MaxBytes)
				}
			}
		}
	}
	return c.mutationQuota(hdr, req, frame)
}

// fetchResponseBytes is about the encoded size of a fetch response: its
// record bytes, in the response or in file ranges, plus the partitions'
// framing.
func fetchResponseBytes(resp kmsg.Response) int {
	var f *kmsg.FetchResponse
	var files *handlers.FileFetch
	switch r := resp.(type) {
	case *kmsg.FetchResponse:
		f = r
	case *handlers.FileFetch:
		f, files = r.FetchResponse, r
	default:
		return 0
	}
	n := 16
	for i := range f.Topics {
		t := &f.Topics[i]
		n += 24 + len(t.Topic)
		if files != nil {
			n += files.FileBytes(i)
		}
		for j := range t.Partitions {
			n += 48 + len(t.Partitions[j].RecordBatches)
		}
	}
	return n
}

// shareFetchResponseBytes is about the encoded size of a ShareFetch
// response: its record bytes plus the framing of its partitions and
// acquired ranges.
func shareFetchResponseBytes(resp kmsg.Response) int {
	r, ok := resp.(*kmsg.ShareFetchResponse)
	if !ok {
		return 0
	}
	n := 16
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			p := &r.Topics[i].Partitions[j]
			n += 48 + len(p.Records) + 20*len(p.AcquiredRecords)
		}
		n += 24
	}
	return n
}
