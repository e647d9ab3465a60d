package broker

import (
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/wire"
)

// The controller mutation quota (controller_mutation_rate, KIP-599):
// CreateTopics, DeleteTopics and CreatePartitions take one token per
// partition created or deleted from the client's token bucket
// (broker/quota.TokenBucket). From CreateTopics v6, DeleteTopics v5 and
// CreatePartitions v3 on (strict mode), a topic that comes while the
// bucket is below zero is refused with THROTTLING_QUOTA_EXCEEDED and the
// response carries the throttle; older versions (permissive) are served
// and only throttled. validate_only requests are not counted, as in
// Kafka.
//
// samsa applies it on the node the client sent the request to, before
// forwarding to the active controller (which knows the client only by
// the forwarded frame's client id): Kafka applies it on the controller,
// after a topic's own validation, so there a topic refused for another
// reason takes no tokens; here it does.

// mutationThrottle is what the mutation quota did to one request.
type mutationThrottle struct {
	refused  map[string]bool // topics refused, by name (or topic id)
	order    map[string]int  // each topic's index in the request
	throttle time.Duration
}

// mutationStrictSince is the first strict version of each mutating API.
var mutationStrictSince = map[int16]int16{
	int16(kmsg.CreateTopics):     6,
	int16(kmsg.DeleteTopics):     5,
	int16(kmsg.CreatePartitions): 3,
}

// mutationQuota applies the controller mutation quota to a CreateTopics,
// DeleteTopics or CreatePartitions request. It returns nil when nothing
// applies; otherwise the request (and its frame, re-encoded) no longer
// holds the refused topics, and patch puts them back in the response.
func (c *conn) mutationQuota(hdr wire.RequestHeader, req kmsg.Request, frame []byte) (*mutationThrottle, []byte) {
	strictSince, ok := mutationStrictSince[hdr.APIKey]
	if !ok || c.controller || c.srv.opts.Deps == nil || c.srv.opts.Deps.Controller == nil {
		return nil, frame
	}
	img := c.srv.opts.Deps.Controller.Image()
	if len(img.ClientQuotas) == 0 {
		return nil, frame
	}
	user := strings.TrimPrefix(c.principal(), "User:")
	clientID := ""
	if hdr.ClientID != nil {
		clientID = *hdr.ClientID
	}
	topics := mutationPermits(img, req, c.defaultPartitions())
	if topics == nil {
		return nil, frame // validate_only
	}
	m := &mutationThrottle{refused: map[string]bool{}, order: map[string]int{}}
	now := time.Now()
	for i, t := range topics {
		m.order[t.key] = i
		if hdr.APIVersion >= strictSince {
			if d := c.srv.quotas.MutationExceeded(img.ClientQuotas, user, clientID, now); d > 0 {
				m.refused[t.key] = true
				m.throttle = max(m.throttle, d)
				continue
			}
			c.srv.quotas.RecordMutations(img.ClientQuotas, user, clientID, t.permits, now)
			continue
		}
		m.throttle = c.srv.quotas.RecordMutations(img.ClientQuotas, user, clientID, t.permits, now)
	}
	if len(m.refused) > 0 {
		dropRefused(req, m.refused)
		frame = wire.AppendRequest(nil, hdr, req)[4:]
	}
	return m, frame
}

func (c *conn) defaultPartitions() float64 {
	if cfg := c.srv.opts.Deps.Config; cfg != nil && cfg.NumPartitions > 0 {
		return float64(cfg.NumPartitions)
	}
	return 1
}

// topicPermits is one topic of a mutating request and the partitions it
// creates or deletes.
type topicPermits struct {
	key     string
	permits float64
}

func topicKey(name *string, id [16]byte) string {
	if name != nil && *name != "" {
		return *name
	}
	return fmt.Sprintf("%x", id)
}

// mutationPermits returns each topic of req with its partition
// mutations: the partitions a CreateTopics creates, those of a topic
// DeleteTopics deletes, those CreatePartitions adds. Nil for a
// validate_only request.
func mutationPermits(img *controller.Image, req kmsg.Request, defaultPartitions float64) []topicPermits {
	out := []topicPermits{}
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		if r.ValidateOnly {
			return nil
		}
		for _, t := range r.Topics {
			n := float64(t.NumPartitions)
			if n <= 0 {
				n = defaultPartitions
				if len(t.ReplicaAssignment) > 0 {
					n = float64(len(t.ReplicaAssignment))
				}
			}
			out = append(out, topicPermits{t.Topic, n})
		}
	case *kmsg.DeleteTopicsRequest:
		partitions := func(name *string, id [16]byte) float64 {
			if name != nil {
				if t := img.Topics[*name]; t != nil {
					return float64(len(t.Partitions))
				}
				return 0
			}
			if t := img.TopicsByID[controller.Uuid(id)]; t != nil {
				return float64(len(t.Partitions))
			}
			return 0
		}
		for _, name := range r.TopicNames {
			out = append(out, topicPermits{name, partitions(&name, [16]byte{})})
		}
		for _, t := range r.Topics {
			out = append(out, topicPermits{topicKey(t.Topic, t.TopicID), partitions(t.Topic, t.TopicID)})
		}
	case *kmsg.CreatePartitionsRequest:
		if r.ValidateOnly {
			return nil
		}
		for _, t := range r.Topics {
			n := 0.0
			if cur := img.Topics[t.Topic]; cur != nil && int(t.Count) > len(cur.Partitions) {
				n = float64(int(t.Count) - len(cur.Partitions))
			}
			out = append(out, topicPermits{t.Topic, n})
		}
	}
	return out
}

// dropRefused removes the refused topics from req.
func dropRefused(req kmsg.Request, refused map[string]bool) {
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		r.Topics = filterOut(r.Topics, func(t kmsg.CreateTopicsRequestTopic) bool { return refused[t.Topic] })
	case *kmsg.DeleteTopicsRequest:
		r.TopicNames = filterOut(r.TopicNames, func(n string) bool { return refused[n] })
		r.Topics = filterOut(r.Topics, func(t kmsg.DeleteTopicsRequestTopic) bool { return refused[topicKey(t.Topic, t.TopicID)] })
	case *kmsg.CreatePartitionsRequest:
		r.Topics = filterOut(r.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool { return refused[t.Topic] })
	}
}

func filterOut[T any](in []T, drop func(T) bool) []T {
	out := in[:0:0]
	for _, v := range in {
		if !drop(v) {
			out = append(out, v)
		}
	}
	return out
}

// patchFrame is patch for a response frame the active controller sent
// back for a forwarded request: decoded, patched and encoded again.
func (m *mutationThrottle) patchFrame(c *conn, hdr wire.RequestHeader, req kmsg.Request, out []byte) []byte {
	if m == nil || (len(m.refused) == 0 && m.throttle <= 0) || len(out) < 8 {
		return out
	}
	resp := req.ResponseKind()
	resp.SetVersion(hdr.APIVersion)
	body := out[8:]
	if resp.IsFlexible() {
		var err error
		if body, err = wire.SkipTags(body); err != nil {
			return out
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return out
	}
	m.patch(c, resp)
	return wire.AppendResponse(nil, hdr, resp)
}

// patch puts the refused topics back into resp, in request order, with
// THROTTLING_QUOTA_EXCEEDED, and sets the throttle when there is one (the
// caller mutes the connection for muteTime).
func (m *mutationThrottle) patch(c *conn, resp kmsg.Response) {
	if m == nil || (len(m.refused) == 0 && m.throttle <= 0) {
		return
	}
	msg := kerr.ThrottlingQuotaExceeded.Description
	code := kerr.ThrottlingQuotaExceeded.Code
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		for k := range m.refused {
			t := kmsg.NewCreateTopicsResponseTopic()
			t.Topic, t.ErrorCode, t.ErrorMessage = k, code, &msg
			t.NumPartitions, t.ReplicationFactor = -1, -1
			r.Topics = append(r.Topics, t)
		}
		sortByOrder(r.Topics, m.order, func(t kmsg.CreateTopicsResponseTopic) string { return t.Topic })
	case *kmsg.DeleteTopicsResponse:
		for k := range m.refused {
			t := kmsg.NewDeleteTopicsResponseTopic()
			name := k
			t.Topic, t.ErrorCode, t.ErrorMessage = &name, code, &msg
			r.Topics = append(r.Topics, t)
		}
		sortByOrder(r.Topics, m.order, func(t kmsg.DeleteTopicsResponseTopic) string { return topicKey(t.Topic, t.TopicID) })
	case *kmsg.CreatePartitionsResponse:
		for k := range m.refused {
			t := kmsg.NewCreatePartitionsResponseTopic()
			t.Topic, t.ErrorCode, t.ErrorMessage = k, code, &msg
			r.Topics = append(r.Topics, t)
		}
		sortByOrder(r.Topics, m.order, func(t kmsg.CreatePartitionsResponseTopic) string { return t.Topic })
	}
	if m.throttle <= 0 {
		return
	}
	if tr, ok := resp.(kmsg.ThrottleResponse); ok {
		cur, _ := tr.Throttle()
		resp.(kmsg.SetThrottleResponse).SetThrottle(max(cur, int32(min(m.throttle.Milliseconds(), 1<<31-1))))
	}
}

// muteTime is how long the connection stays muted after the response is
// written (conn.afterResponse): the mutation throttle, or 0.
func (m *mutationThrottle) muteTime() time.Duration {
	if m == nil || m.throttle <= 0 {
		return 0
	}
	return m.throttle
}

// sortByOrder orders topics as the request named them.
func sortByOrder[T any](topics []T, order map[string]int, key func(T) string) {
	idx := func(t T) int {
		if i, ok := order[key(t)]; ok {
			return i
		}
		return len(order)
	}
	for i := 1; i < len(topics); i++ {
		for j := i; j > 0 && idx(topics[j]) < idx(topics[j-1]); j-- {
			topics[j], topics[j-1] = topics[j-1], topics[j]
		}
	}
}
