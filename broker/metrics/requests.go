package metrics

import (
	"encoding/binary"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchFollower is the request index of follower fetches: Kafka's
// RequestMetrics name consumer fetches FetchConsumer and replica fetches
// FetchFollower, two request names for one API key.
const fetchFollower = kmsg.MaxKey + 1

// maxVersion bounds the per-version request counters; a higher version is
// counted as maxVersion (no API is near it).
const maxVersion = 31

// quantiles are the percentiles Kafka's Yammer histograms report, with the
// label values the JMX exporter's kafka-2_0_0.yml gives them ("0.$N").
var quantiles = [...]struct {
	q     float64
	label string
}{{0.50, "0.50"}, {0.75, "0.75"}, {0.95, "0.95"}, {0.98, "0.98"}, {0.99, "0.99"}, {0.999, "0.999"}}

// requestStats counts one request name (an API key, or FetchFollower).
type requestStats struct {
	byVersion [maxVersion + 1]atomic.Uint64
	// none counts ErrorCode fields that were 0, Kafka's error="NONE".
	none atomic.Uint64
	// times are Kafka's RequestMetrics histograms, by timeKind.
	times [numTimes]latency
}

// timeKind is one of Kafka's RequestMetrics times that samsa measures.
type timeKind int

const (
	// totalTime is from the request's last byte read until its handler
	// returned (Kafka's TotalTimeMs also has the response's send time).
	totalTime timeKind = iota
	// queueTime is how long the request waited behind earlier requests of
	// its connection (RequestQueueTimeMs).
	queueTime
	// localTime is the time in its handler, less remoteTime.
	localTime
	// remoteTime is how long the handler waited on others: an acks=all
	// produce for the ISR, a long-poll fetch for data (RemoteTimeMs).
	remoteTime
	// responseSendTime is how long the response took to write to the
	// socket (ResponseSendTimeMs).
	responseSendTime
	// throttleTime is the throttle a client quota put in the response
	// (ThrottleTimeMs; broker/quota_conn.go).
	throttleTime
	numTimes
)

// errorKey identifies the count of one non-zero error code of one request.
type errorKey struct {
	request int16
	code    int16
}

// topicStats is Kafka's BrokerTopicMetrics for one topic (or, for
// Metrics.allTopics, for every topic). Counters only: rates are the
// dashboards' job (rate()).
type topicStats struct {
	messagesIn, bytesIn, bytesOut           atomic.Uint64
	replicationBytesIn, replicationBytesOut atomic.Uint64
	failedProduce, failedFetch              atomic.Uint64
	totalProduce, totalFetch                atomic.Uint64
}

// requestCounters holds everything ObserveRequest updates. Counters of a
// request name are created on its first request; topics on their first
// produce or fetch and dropped at scrape once deleted.
type requestCounters struct {
	requests [fetchFollower + 1]atomic.Pointer[requestStats]
	newStats sync.Mutex // serializes creation of requestStats

	errors struct {
		sync.RWMutex
		m map[errorKey]*atomic.Uint64
	}

	allTopics topicStats
	// unknownTopics takes the per-topic counts of topics not in the
	// metadata image; it is never exported, so that clients naming
	// made-up topics cannot grow the topic map (Kafka keeps such topics'
	// meters until restart).
	unknownTopics topicStats
	topics        struct {
		sync.RWMutex
		m map[string]*topicStats
	}

	// plans caches, per response type, where its ErrorCode fields are
	// (reflect.Type -> *codePlan).
	plans sync.Map
}

func newRequestCounters() *requestCounters {
	r := &requestCounters{}
	r.errors.m = map[errorKey]*atomic.Uint64{}
	r.topics.m = map[string]*topicStats{}
	return r
}

func (r *requestCounters) stats(idx int16) *requestStats {
	if s := r.requests[idx].Load(); s != nil {
		return s
	}
	r.newStats.Lock()
	defer r.newStats.Unlock()
	if s := r.requests[idx].Load(); s != nil {
		return s
	}
	s := &requestStats{}
	r.requests[idx].Store(s)
	return s
}

func (r *requestCounters) topic(name string) *topicStats {
	r.topics.RLock()
	t := r.topics.m[name]
	r.topics.RUnlock()
	if t != nil {
		return t
	}
	r.topics.Lock()
	defer r.topics.Unlock()
	if t = r.topics.m[name]; t == nil {
		t = &topicStats{}
		r.topics.m[name] = t
	}
	return t
}

func (r *requestCounters) countError(idx, code int16) {
	if code == 0 {
		r.stats(idx).none.Add(1)
		return
	}
	k := errorKey{idx, code}
	r.errors.RLock()
	c := r.errors.m[k]
	r.errors.RUnlock()
	if c == nil {
		r.errors.Lock()
		if c = r.errors.m[k]; c == nil {
			c = new(atomic.Uint64)
			r.errors.m[k] = c
		}
		r.errors.Unlock()
	}
	c.Add(1)
}

// ObserveRequest records one handled request: its count by name and
// version, every error code in its response (as Kafka's errorCounts: each
// ErrorCode field, NONE included), how long it waited behind earlier
// requests of its connection (queued) and how long its handler took, and
// for Produce and Fetch the broker topic metrics. resp is nil when no
// response is due (acks=0). It is called once per request on the
// connection's goroutine and allocates nothing once a request name and
// topic have been seen.
//
// remote is the part of took spent waiting on other replicas or for data;
// the returned slot names the request's series for ObserveResponseSend (-1
// for none).
func (m *Metrics) ObserveRequest(key, version int16, req kmsg.Request, resp kmsg.Response, queued, took, remote time.Duration) int16 {
	if key < 0 || key > kmsg.MaxKey {
		return -1
	}
	r := m.requests
	idx := key
	switch q := req.(type) {
	case *kmsg.ProduceRequest:
		m.observeProduce(q, resp)
	case *kmsg.FetchRequest:
		if q.ReplicaID >= 0 || q.ReplicaState.ID >= 0 {
			idx = fetchFollower
		}
		m.observeFetch(idx == fetchFollower, resp)
	}
	s := r.stats(idx)
	s.byVersion[min(max(version, 0), maxVersion)].Add(1)
	now := m.opts.Now().UnixNano()
	remote = min(max(remote, 0), took)
	s.times[queueTime].observe(queued, now)
	s.times[localTime].observe(took-remote, now)
	s.times[remoteTime].observe(remote, now)
	s.times[totalTime].observe(queued+took, now)
	if tr, ok := resp.(kmsg.ThrottleResponse); ok {
		ms, _ := tr.Throttle()
		s.times[throttleTime].observe(time.Duration(ms)*time.Millisecond, now)
	}
	if resp != nil {
		r.countCodes(idx, resp)
	}
	return idx
}

// ObserveResponseSend records how long the response of the request that
// ObserveRequest gave slot took to write to its socket. It is called on
// the connection's writer goroutine.
func (m *Metrics) ObserveResponseSend(slot int16, took time.Duration) {
	if slot < 0 {
		return
	}
	m.requests.stats(slot).times[responseSendTime].observe(took, m.opts.Now().UnixNano())
}

// Kafka does not count these as failed produce or fetch requests: they
// are the client's or the cluster's doing, not the broker failing
// (ReplicaManager's "known exceptions").
func produceFailure(code int16) bool {
	switch code {
	case 0, kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.MessageTooLarge.Code,
		kerr.RecordListTooLarge.Code, kerr.CorruptMessage.Code, kerr.KafkaStorageError.Code:
		return false
	}
	return true
}

func fetchFailure(code int16) bool {
	switch code {
	case 0, kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.ReplicaNotAvailable.Code,
		kerr.KafkaStorageError.Code, kerr.OffsetOutOfRange.Code, kerr.FencedLeaderEpoch.Code,
		kerr.UnknownLeaderEpoch.Code, kerr.UnknownTopicID.Code, kerr.InconsistentTopicID.Code:
		return false
	}
	return true
}

// counts is one request's contribution to a topicStats, summed over its
// partitions before it is added, so that a request costs a few atomic adds
// per topic rather than per partition.
type counts struct {
	messagesIn, bytesIn, bytesOut, replicationBytesOut, failedProduce, failedFetch, totalProduce, totalFetch uint64
}

func addNonZero(c *atomic.Uint64, n uint64) {
	if n != 0 {
		c.Add(n)
	}
}

func (t *topicStats) add(c *counts) {
	addNonZero(&t.messagesIn, c.messagesIn)
	addNonZero(&t.bytesIn, c.bytesIn)
	addNonZero(&t.bytesOut, c.bytesOut)
	addNonZero(&t.replicationBytesOut, c.replicationBytesOut)
	addNonZero(&t.failedProduce, c.failedProduce)
	addNonZero(&t.failedFetch, c.failedFetch)
	addNonZero(&t.totalProduce, c.totalProduce)
	addNonZero(&t.totalFetch, c.totalFetch)
}

func (c *counts) plus(o *counts) {
	c.messagesIn += o.messagesIn
	c.bytesIn += o.bytesIn
	c.bytesOut += o.bytesOut
	c.replicationBytesOut += o.replicationBytesOut
	c.failedProduce += o.failedProduce
	c.failedFetch += o.failedFetch
	c.totalProduce += o.totalProduce
	c.totalFetch += o.totalFetch
}

func (m *Metrics) observeProduce(req *kmsg.ProduceRequest, resp kmsg.Response) {
	pr, _ := resp.(*kmsg.ProduceResponse)
	var all counts
	for i := range req.Topics {
		rt := &req.Topics[i]
		name, ok := m.topicName(rt.Topic, rt.TopicID)
		if !ok {
			continue
		}
		var respParts []kmsg.ProduceResponseTopicPartition
		if pr != nil && i < len(pr.Topics) {
			respParts = pr.Topics[i].Partitions
		}
		var c counts
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			code := int16(0)
			if j < len(respParts) && respParts[j].Partition == rp.Partition {
				code = respParts[j].ErrorCode
			}
			c.totalProduce++
			if code != 0 {
				if produceFailure(code) {
					c.failedProduce++
				}
				continue
			}
			c.bytesIn += uint64(len(rp.Records))
			c.messagesIn += countRecords(rp.Records)
		}
		m.topicStats(name).add(&c)
		all.plus(&c)
	}
	m.requests.allTopics.add(&all)
}

// fileFetch is a fetch response whose record bytes are partly in segment
// file ranges (broker/handlers.FileFetch, sent with sendfile): FileBytes
// counts those of a topic.
type fileFetch interface {
	Fetch() *kmsg.FetchResponse
	FileBytes(topic int) int
}

func (m *Metrics) observeFetch(follower bool, resp kmsg.Response) {
	var fileBytes func(int) int
	fr, ok := resp.(*kmsg.FetchResponse)
	if ff, isFile := resp.(fileFetch); isFile {
		fr, ok, fileBytes = ff.Fetch(), true, ff.FileBytes
	}
	if !ok {
		return
	}
	var all counts
	for i := range fr.Topics {
		ft := &fr.Topics[i]
		name, ok := m.topicName(ft.Topic, ft.TopicID)
		if !ok {
			continue
		}
		var c counts
		var n uint64
		for j := range ft.Partitions {
			fp := &ft.Partitions[j]
			n += uint64(len(fp.RecordBatches))
			if follower {
				continue
			}
			c.totalFetch++
			if fetchFailure(fp.ErrorCode) {
				c.failedFetch++
			}
		}
		if fileBytes != nil {
			n += uint64(fileBytes(i))
		}
		if follower {
			// Kafka counts replication apart from client traffic.
			c.replicationBytesOut = n
		} else {
			c.bytesOut = n
		}
		m.topicStats(name).add(&c)
		all.plus(&c)
	}
	m.requests.allTopics.add(&all)
}

// topicStats returns the counters of a topic, or a sink for a topic that
// is not in the metadata image.
func (m *Metrics) topicStats(name string) *topicStats {
	if m.opts.TopicExists != nil && !m.opts.TopicExists(name) {
		return &m.requests.unknownTopics
	}
	return m.requests.topic(name)
}

// topicName is the topic's name, resolving a topic id (Produce v13+,
// Fetch v13+) against the metadata image.
func (m *Metrics) topicName(name string, id [16]byte) (string, bool) {
	if name != "" {
		return name, true
	}
	if m.opts.TopicName == nil || id == ([16]byte{}) {
		return "", false
	}
	return m.opts.TopicName(id)
}

// countRecords counts the records of a produce's record batches from the
// v2 batch headers (records field at byte 57); a legacy message (magic 0
// or 1) counts as one. A torn tail is not counted.
func countRecords(b []byte) uint64 {
	var n uint64
	for len(b) >= 17 {
		size := int(int32(binary.BigEndian.Uint32(b[8:12])))
		if size < 0 || 12+size > len(b) {
			break
		}
		if b[16] == 2 && size >= 49 {
			n += uint64(binary.BigEndian.Uint32(b[57:61]))
		} else {
			n++
		}
		b = b[12+size:]
	}
	return n
}

// codePlan locates the ErrorCode fields of one struct type and the fields
// that lead to more of them.
type codePlan struct {
	codes  []int
	nested []nestedField
}

type nestedField struct {
	index int
	kind  reflect.Kind // reflect.Slice, reflect.Struct or reflect.Pointer
	plan  *codePlan
}

// countCodes counts every ErrorCode of resp, at any depth, as Kafka's
// AbstractResponse.errorCounts does for each API.
func (r *requestCounters) countCodes(idx int16, resp kmsg.Response) {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	v = v.Elem()
	if p := r.plan(v.Type()); p != nil {
		if none := r.walkCodes(idx, v, p); none > 0 {
			r.stats(idx).none.Add(none)
		}
	}
}

// walkCodes counts the non-zero codes under v and returns how many were
// zero (NONE), for the caller to add at once.
func (r *requestCounters) walkCodes(idx int16, v reflect.Value, p *codePlan) (none uint64) {
	for _, i := range p.codes {
		if code := int16(v.Field(i).Int()); code == 0 {
			none++
		} else {
			r.countError(idx, code)
		}
	}
	for _, n := range p.nested {
		f := v.Field(n.index)
		switch n.kind {
		case reflect.Struct:
			none += r.walkCodes(idx, f, n.plan)
		case reflect.Pointer:
			if !f.IsNil() {
				none += r.walkCodes(idx, f.Elem(), n.plan)
			}
		case reflect.Slice:
			for j := 0; j < f.Len(); j++ {
				none += r.walkCodes(idx, f.Index(j), n.plan)
			}
		}
	}
	return none
}

// plan returns the cached codePlan of struct type t, or nil when nothing
// under t has an ErrorCode.
func (r *requestCounters) plan(t reflect.Type) *codePlan {
	if p, ok := r.plans.Load(t); ok {
		return p.(*codePlan)
	}
	p := buildPlan(t, map[reflect.Type]bool{})
	r.plans.Store(t, p)
	return p
}

func buildPlan(t reflect.Type, visiting map[reflect.Type]bool) *codePlan {
	if t.Kind() != reflect.Struct || visiting[t] {
		return nil
	}
	visiting[t] = true
	defer delete(visiting, t)
	p := &codePlan{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16 {
			p.codes = append(p.codes, i)
			continue
		}
		var kind reflect.Kind
		var elem reflect.Type
		switch f.Type.Kind() {
		case reflect.Struct:
			kind, elem = reflect.Struct, f.Type
		case reflect.Pointer, reflect.Slice:
			kind, elem = f.Type.Kind(), f.Type.Elem()
		default:
			continue
		}
		if sub := buildPlan(elem, visiting); sub != nil {
			p.nested = append(p.nested, nestedField{index: i, kind: kind, plan: sub})
		}
	}
	if len(p.codes) == 0 && len(p.nested) == 0 {
		return nil
	}
	return p
}

// requestName is Kafka's name of a request in RequestMetrics: its ApiKeys
// name, with Fetch split into FetchConsumer and FetchFollower.
func requestName(idx int16) string {
	switch idx {
	case int16(kmsg.Fetch):
		return "FetchConsumer"
	case fetchFollower:
		return "FetchFollower"
	}
	// kmsg spells a few acronyms in capitals where Kafka does not.
	switch kmsg.Key(idx) {
	case kmsg.LeaderAndISR:
		return "LeaderAndIsr"
	case kmsg.SASLHandshake:
		return "SaslHandshake"
	case kmsg.SASLAuthenticate:
		return "SaslAuthenticate"
	case kmsg.InitProducerID:
		return "InitProducerId"
	case kmsg.DescribeACLs:
		return "DescribeAcls"
	case kmsg.CreateACLs:
		return "CreateAcls"
	case kmsg.DeleteACLs:
		return "DeleteAcls"
	case kmsg.DescribeUserSCRAMCredentials:
		return "DescribeUserScramCredentials"
	case kmsg.AlterUserSCRAMCredentials:
		return "AlterUserScramCredentials"
	case kmsg.AllocateProducerIDs:
		return "AllocateProducerIds"
	}
	return kmsg.NameForKey(idx)
}

// errorName is Kafka's name of an error code (Errors enum), NONE for 0.
func errorName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return "UNKNOWN_SERVER_ERROR"
}

// collectRequests emits the request and broker topic metrics. Topics that
// left the metadata image are dropped first, as Kafka removes a deleted
// topic's metrics.
func (m *Metrics) collectRequests(ch chan<- prometheus.Metric) {
	r := m.requests
	now := m.opts.Now().UnixNano()
	qs := make([]float64, len(quantiles))
	for i, q := range quantiles {
		qs[i] = q.q
	}
	for idx := range r.requests {
		s := r.requests[idx].Load()
		if s == nil {
			continue
		}
		name := requestName(int16(idx))
		for v := range s.byVersion {
			if n := s.byVersion[v].Load(); n > 0 {
				ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(n), name, itoa(v))
			}
		}
		if n := s.none.Load(); n > 0 {
			ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(n), name, "NONE")
		}
		for kind, descs := range timeDescs {
			l := &s.times[kind]
			ch <- prometheus.MustNewConstMetric(descs.count, prometheus.CounterValue, float64(l.count.Load()), name)
			if vs, ok := l.quantiles(now, qs); ok {
				for i, v := range vs {
					ch <- prometheus.MustNewConstMetric(descs.quantiles, prometheus.GaugeValue, v, name, quantiles[i].label)
				}
			}
		}
	}
	r.errors.RLock()
	for k, c := range r.errors.m {
		ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(c.Load()), requestName(k.request), errorName(k.code))
	}
	r.errors.RUnlock()

	if m.opts.TopicExists != nil {
		r.topics.Lock()
		for name := range r.topics.m {
			if !m.opts.TopicExists(name) {
				delete(r.topics.m, name)
			}
		}
		r.topics.Unlock()
	}
	emitTopic(ch, "", &r.allTopics)
	r.topics.RLock()
	for name, t := range r.topics.m {
		emitTopic(ch, name, t)
	}
	r.topics.RUnlock()
}

// emitTopic writes one topic's BrokerTopicMetrics; topic "" is the
// all-topics series, which the JMX exporter gives without a topic label
// (an empty label is the same series to Prometheus).
func emitTopic(ch chan<- prometheus.Metric, topic string, t *topicStats) {
	for _, c := range []struct {
		desc *prometheus.Desc
		v    *atomic.Uint64
	}{
		{descMessagesIn, &t.messagesIn}, {descBytesIn, &t.bytesIn}, {descBytesOut, &t.bytesOut},
		{descReplicationBytesIn, &t.replicationBytesIn}, {descReplicationBytesOut, &t.replicationBytesOut},
		{descFailedProduce, &t.failedProduce}, {descFailedFetch, &t.failedFetch},
		{descTotalProduce, &t.totalProduce}, {descTotalFetch, &t.totalFetch},
	} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(c.v.Load()), topic)
	}
}
