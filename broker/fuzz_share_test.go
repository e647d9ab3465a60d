package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share-group half of the TCP fuzzer: structure-aware requests of the
// share APIs (ShareGroupHeartbeat 76, ShareGroupDescribe 77, ShareFetch
// 78, ShareAcknowledge 79, the share-state APIs 83-87, the share offsets
// admin APIs 90-92, FindCoordinator of share keys, GROUP configs) sent by
// members that joined a real share group, so that most requests get past
// the first checks: valid kmsg requests with one or more fields mutated
// (huge and negative counts, offsets, epochs, batch sizes; acknowledgement
// batches out of order, overlapping, reversed, of unknown types; unknown
// member ids and topic ids; wrong session epochs; huge partition lists).
// Every request must be answered (a well-formed request must never close
// the connection), no handler may panic, and afterwards a new share group
// must still consume every record and plain clients still produce and
// consume. TestShareFuzzShort is the short seeded run of `go test`;
// FuzzShareRequests runs as long as wanted:
//
//	go test -run '^$' -fuzz FuzzShareRequests -parallel 1 ./broker/
//
// SAMSA_SHARE_FUZZ_STEPS sets the steps of TestShareFuzzShort (a long soak).

const shareFuzzTopic = "sfz"

// shareFuzzOverrides: the fuzz node with a short assignment interval, so
// members get their partitions soon.
var shareFuzzOverrides = append(slices.Clone(fuzzOverrides), "group.share.assignment.interval.ms=100")

// shareConn is one client connection speaking raw requests.
type shareConn struct {
	addr string
	nc   net.Conn
	fmtr *kmsg.RequestFormatter
	corr int32
}

// errClosed is returned when the broker closed the connection instead of
// answering.
var errClosed = errors.New("connection closed by the broker")

// roundTrip sends req at version v and reads its response: errClosed when
// the broker closed the connection, another error when it did not answer
// within two minutes or answered garbage.
func (c *shareConn) roundTrip(req kmsg.Request, v int16) (kmsg.Response, error) {
	if c.nc == nil {
		nc, err := net.DialTimeout("tcp", c.addr, 10*time.Second)
		if err != nil {
			return nil, err
		}
		c.nc = nc
	}
	req.SetVersion(v)
	c.corr++
	frame := c.fmtr.AppendRequest(nil, req, c.corr)
	c.nc.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := c.nc.Write(frame); err != nil {
		c.close()
		return nil, errClosed
	}
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		c.close()
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return nil, fmt.Errorf("%s v%d: no answer within two minutes", kmsg.NameForKey(req.Key()), v)
		}
		return nil, errClosed
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 64<<20 || n < 4 {
		c.close()
		return nil, fmt.Errorf("%s v%d: response of %d bytes", kmsg.NameForKey(req.Key()), v, n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c.nc, buf); err != nil {
		c.close()
		return nil, errClosed
	}
	if int32(binary.BigEndian.Uint32(buf)) != c.corr {
		c.close()
		return nil, fmt.Errorf("%s v%d: correlation id %d, want %d", kmsg.NameForKey(req.Key()), v, int32(binary.BigEndian.Uint32(buf)), c.corr)
	}
	buf = buf[4:]
	if req.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		if len(buf) == 0 || buf[0] != 0 {
			c.close()
			return nil, fmt.Errorf("%s v%d: response header tags", kmsg.NameForKey(req.Key()), v)
		}
		buf = buf[1:]
	}
	resp := req.ResponseKind()
	resp.SetVersion(v)
	if err := resp.ReadFrom(buf); err != nil {
		c.close()
		return nil, fmt.Errorf("%s v%d: response does not decode: %w", kmsg.NameForKey(req.Key()), v, err)
	}
	return resp, nil
}

func (c *shareConn) close() {
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
}

// shareWorld is what the members share: the node, the topic's id and the
// tallies of the run.
type shareWorld struct {
	n       *Node
	addr    string
	topicID [16]byte
	parts   int32
	records int
	min     map[int16]int16 // lowest served version per key
	max     map[int16]int16 // highest served version per key

	mu       sync.Mutex
	failures []string
	codes    map[string]int // "API code" -> count
	closed   map[string]int // well-formed requests that closed the connection
}

func (w *shareWorld) fail(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failures = append(w.failures, fmt.Sprintf(format, args...))
}

func (w *shareWorld) failed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.failures) > 0
}

func (w *shareWorld) tally(api string, codes ...int16) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range codes {
		w.codes[api+" "+strconv.Itoa(int(c))]++
	}
}

// setupShareWorld creates the topic, produces records in batches of
// several sizes, and sets the share groups' offset reset to earliest.
func setupShareWorld(t testing.TB, n *Node) *shareWorld {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := &shareWorld{n: n, addr: n.Addrs()[0].String(), parts: 3, min: map[int16]int16{}, max: map[int16]int16{}, codes: map[string]int{}, closed: map[string]int{}}
	for k, e := range n.srv.table {
		w.min[k], w.max[k] = e.MinVersion, e.MaxVersion
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.addr), kgo.DefaultProduceTopic(shareFuzzTopic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	created, err := adm.CreateTopic(ctx, w.parts, 1, nil, shareFuzzTopic)
	if err != nil || created.Err != nil {
		t.Fatal(err, created.Err)
	}
	w.topicID = created.ID
	for i := range 90 {
		r := &kgo.Record{Partition: int32(i % 3), Value: fmt.Appendf(nil, "r%d", i)}
		if i%7 == 0 {
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	w.records = 90
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"sg", "sg2", "sg-check"} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = 32, g
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
		res.Configs = append(res.Configs, cfg)
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("setting %s's offset reset: %v %+v", g, err, resp)
		}
	}
	return w
}

// shareMember is one fuzzing member: a connection, its group membership
// and share session, and the records it acquired.
type shareMember struct {
	w       *shareWorld
	rng     *rand.Rand
	conn    *shareConn
	group   string
	id      string
	epoch   int32 // member epoch
	session int32 // next share session epoch
	// acquired are the ranges of the last fetches, per partition.
	acquired map[int32][]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
}

func newShareMember(w *shareWorld, seed uint64, group string) *shareMember {
	r := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	id := make([]byte, 22)
	for i := range id {
		id[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[r.IntN(64)]
	}
	return &shareMember{w: w, rng: r, group: group, id: string(id),
		conn:     &shareConn{addr: w.addr, fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID("sfz"))},
		acquired: map[int32][]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{}}
}

// send sends a request and checks that it was answered; mutated says the
// request may be malformed on purpose (a close is then allowed).
func (m *shareMember) send(req kmsg.Request, mutated bool) kmsg.Response {
	v := m.w.max[req.Key()]
	if lo := m.w.min[req.Key()]; m.rng.IntN(4) == 0 {
		v = lo + int16(m.rng.IntN(int(v-lo)+1)) // older versions now and then
	}
	name := kmsg.NameForKey(req.Key())
	resp, err := m.conn.roundTrip(req, v)
	switch {
	case errors.Is(err, errClosed):
		if !mutated {
			m.w.mu.Lock()
			m.w.closed[fmt.Sprintf("%s v%d", name, v)]++
			m.w.mu.Unlock()
		}
		m.session = 0
		return nil
	case err != nil:
		m.w.fail("%v", err)
		return nil
	}
	return resp
}

// interesting returns an int64 a fuzzer likes: boundaries, small values,
// or near the given one.
func (m *shareMember) interesting(near int64) int64 {
	r := m.rng
	switch r.IntN(8) {
	case 0:
		return []int64{0, -1, -2, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64, 1 << 40}[r.IntN(8)]
	case 1:
		return int64(r.Uint64())
	default:
		return near + int64(r.IntN(9)) - 4
	}
}

func (m *shareMember) i32(near int32) int32 {
	v := m.interesting(int64(near))
	if v > math.MaxInt32 || v < math.MinInt32 {
		return int32(v >> 32)
	}
	return int32(v)
}

// topicID is the real topic id mostly, else a random or zero one.
func (m *shareMember) topicID() [16]byte {
	switch m.rng.IntN(12) {
	case 0:
		return [16]byte{}
	case 1:
		var id [16]byte
		for i := range id {
			id[i] = byte(m.rng.Uint32())
		}
		return id
	}
	return m.w.topicID
}

func (m *shareMember) partition() int32 {
	if m.rng.IntN(10) == 0 {
		return m.i32(0)
	}
	return int32(m.rng.IntN(int(m.w.parts)))
}

func (m *shareMember) memberID() *string {
	switch m.rng.IntN(16) {
	case 0:
		return nil
	case 1:
		return kmsg.StringPtr("")
	case 2:
		return kmsg.StringPtr("unknown-member-0123456789")
	case 3:
		return kmsg.StringPtr(strings.Repeat("m", 37))
	}
	return kmsg.StringPtr(m.id)
}

func (m *shareMember) groupID() string {
	switch m.rng.IntN(16) {
	case 0:
		return ""
	case 1:
		return "no-such-group"
	case 2:
		return "g" // a classic or consumer group name the TCP fuzzer uses
	}
	return m.group
}

// heartbeat joins or heartbeats the member's share group, mutated now
// and then.
func (m *shareMember) heartbeat(mutate bool) {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	if m.epoch == 0 {
		req.SubscribedTopicNames = []string{shareFuzzTopic}
	}
	if mutate {
		switch m.rng.IntN(6) {
		case 0:
			req.MemberEpoch = m.i32(m.epoch)
		case 1:
			if id := m.memberID(); id != nil {
				req.MemberID = *id
			}
		case 2:
			req.GroupID = m.groupID()
		case 3:
			req.SubscribedTopicNames = []string{shareFuzzTopic, "no-such-topic", "", "__consumer_offsets"}[:m.rng.IntN(5)]
		case 4:
			req.RackID = kmsg.StringPtr(strings.Repeat("r", m.rng.IntN(300)))
		case 5:
			for range 2000 {
				req.SubscribedTopicNames = append(req.SubscribedTopicNames, shareFuzzTopic)
			}
		}
	}
	resp, _ := m.send(req, mutate).(*kmsg.ShareGroupHeartbeatResponse)
	if resp == nil {
		return
	}
	m.w.tally("ShareGroupHeartbeat", resp.ErrorCode)
	switch {
	case resp.ErrorCode == 0 && !mutate:
		m.epoch = resp.MemberEpoch
	case resp.ErrorCode == kerr.FencedMemberEpoch.Code || resp.ErrorCode == kerr.UnknownMemberID.Code:
		if !mutate {
			m.epoch = 0
		}
	}
}

// ackBatches makes acknowledgement batches from what the member acquired
// of p: well-formed mostly, else reversed, overlapping, out of order,
// huge, negative, with unknown types or type lists of the wrong length.
func (m *shareMember) ackBatches(p int32, mutate bool) (first, last []int64, types [][]int8) {
	r := m.rng
	acq := m.acquired[p]
	for _, a := range acq {
		if r.IntN(3) == 0 {
			continue
		}
		f, l := a.FirstOffset, a.LastOffset
		ts := []int8{int8(1 + r.IntN(3))}
		if r.IntN(3) == 0 && l-f < 64 {
			ts = ts[:0]
			for range l - f + 1 {
				ts = append(ts, int8(r.IntN(4)))
			}
		}
		first, last, types = append(first, f), append(last, l), append(types, ts)
	}
	if !mutate {
		return first, last, types
	}
	switch r.IntN(8) {
	case 0: // reversed
		if len(first) > 0 {
			first[0], last[0] = last[0]+1, first[0]
		}
	case 1: // out of order
		slices.Reverse(first)
		slices.Reverse(last)
		slices.Reverse(types)
	case 2: // overlapping
		if len(first) > 0 {
			first, last, types = append(first, first[0]), append(last, last[0]), append(types, types[0])
		}
	case 3: // huge or negative offsets
		first, last, types = append(first, m.interesting(0)), append(last, m.interesting(0)), append(types, []int8{1})
	case 4: // unknown types
		if len(types) > 0 {
			types[0] = []int8{int8(r.IntN(256) - 128)}
		}
	case 5: // type list of the wrong length
		if len(types) > 0 {
			types[0] = append(types[0], 1, 2)
		}
	case 6: // no types
		if len(types) > 0 {
			types[0] = nil
		}
	case 7: // many batches
		for i := range 1000 + r.IntN(4000) {
			first, last, types = append(first, int64(i)), append(last, int64(i)), append(types, []int8{1})
		}
	}
	return first, last, types
}

// fetchEvery sends one ShareFetch of every partition of the topic in m's
// session, waiting up to maxWaitMs, with the ranges of acks[p] accepted
// on partition p (nil: no acknowledgements), and advances the session
// epoch. A connection error or a request-level error code fails t, the
// message led by what.
func (m *shareMember) fetchEvery(t testing.TB, what string, maxWaitMs int32, acks map[int32][]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord) *kmsg.ShareFetchResponse {
	t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id), m.session
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = maxWaitMs, 1, 1<<20, 500, 500
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = m.w.topicID
	for p := range m.w.parts {
		tp := kmsg.NewShareFetchRequestTopicPartition()
		tp.Partition, tp.PartitionMaxBytes = p, 1<<20
		for _, a := range acks[p] {
			b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
			b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a.FirstOffset, a.LastOffset, []int8{1}
			tp.AcknowledgementBatches = append(tp.AcknowledgementBatches, b)
		}
		rt.Partitions = append(rt.Partitions, tp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := m.conn.roundTrip(req, m.w.max[req.Key()])
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	fr := resp.(*kmsg.ShareFetchResponse)
	if fr.ErrorCode != 0 {
		t.Fatalf("%s: error %d", what, fr.ErrorCode)
	}
	m.session = nextSessionEpoch(m.session)
	return fr
}

// fetch sends a ShareFetch in the member's session.
func (m *shareMember) fetch(mutate bool) {
	r := m.rng
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id), m.session
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = int32(r.IntN(30)), 1, 1<<20, int32(1+r.IntN(50)), int32(1+r.IntN(50))
	var parts []int32
	for p := range m.w.parts {
		if r.IntN(3) != 0 {
			parts = append(parts, p)
		}
	}
	t := kmsg.NewShareFetchRequestTopic()
	t.TopicID = m.w.topicID
	for _, p := range parts {
		tp := kmsg.NewShareFetchRequestTopicPartition()
		tp.Partition, tp.PartitionMaxBytes = p, 1<<20
		if m.session != 0 {
			first, last, types := m.ackBatches(p, mutate && r.IntN(2) == 0)
			for i := range first {
				b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
				b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first[i], last[i], types[i]
				tp.AcknowledgementBatches = append(tp.AcknowledgementBatches, b)
			}
		}
		t.Partitions = append(t.Partitions, tp)
	}
	req.Topics = append(req.Topics, t)
	if mutate {
		switch r.IntN(12) {
		case 0:
			req.ShareSessionEpoch = m.i32(m.session)
		case 1:
			req.MemberID = m.memberID()
		case 2:
			req.GroupID = kmsg.StringPtr(m.groupID())
		case 3:
			req.MaxRecords, req.BatchSize = m.i32(10), m.i32(10)
		case 4:
			req.MaxBytes, req.MinBytes = m.i32(1<<20), m.i32(1)
		case 5:
			req.ShareAcquireMode = int8(r.IntN(4)) - 1
		case 6:
			req.IsRenewAck = true
		case 7:
			req.Topics[0].TopicID = m.topicID()
		case 8: // a huge partition list
			for range 5000 + r.IntN(20000) {
				tp := kmsg.NewShareFetchRequestTopicPartition()
				tp.Partition, tp.PartitionMaxBytes = m.partition(), m.i32(1000)
				req.Topics[0].Partitions = append(req.Topics[0].Partitions, tp)
			}
		case 9: // forgotten topics, real and not
			f := kmsg.NewShareFetchRequestForgottenTopicsData()
			f.TopicID, f.Partitions = m.topicID(), []int32{m.partition(), m.partition()}
			req.ForgottenTopicsData = append(req.ForgottenTopicsData, f)
		case 10:
			for i := range req.Topics[0].Partitions {
				req.Topics[0].Partitions[i].Partition = m.partition()
				req.Topics[0].Partitions[i].PartitionMaxBytes = m.i32(1 << 20)
			}
		case 11: // many topics
			for range 100 + r.IntN(1000) {
				t := kmsg.NewShareFetchRequestTopic()
				t.TopicID = m.topicID()
				req.Topics = append(req.Topics, t)
			}
		}
	}
	resp, _ := m.send(req, mutate).(*kmsg.ShareFetchResponse)
	if resp == nil {
		return
	}
	m.w.tally("ShareFetch", resp.ErrorCode)
	if resp.ErrorCode != 0 {
		if sessionGone(resp.ErrorCode) {
			m.session = 0
		}
		return
	}
	if req.ShareSessionEpoch == m.session && req.GroupID != nil && *req.GroupID == m.group && req.MemberID != nil && *req.MemberID == m.id {
		m.session = nextSessionEpoch(m.session)
	}
	clear(m.acquired)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			m.w.tally("ShareFetch/partition", p.ErrorCode)
			if p.AcknowledgeErrorCode != 0 {
				m.w.tally("ShareFetch/ack", p.AcknowledgeErrorCode)
			}
			if t.TopicID == m.w.topicID {
				m.acquired[p.Partition] = append(m.acquired[p.Partition], p.AcquiredRecords...)
			}
			m.checkAcquired(p)
		}
	}
}

// checkAcquired checks a partition's acquired ranges: ascending,
// disjoint, within the log, with delivery counts of at least one.
func (m *shareMember) checkAcquired(p kmsg.ShareFetchResponseTopicPartition) {
	prev := int64(-1)
	for _, a := range p.AcquiredRecords {
		if a.FirstOffset <= prev || a.LastOffset < a.FirstOffset || a.DeliveryCount < 1 || a.LastOffset >= int64(m.w.records/int(m.w.parts)) {
			m.w.fail("partition %d: bad acquired ranges %+v", p.Partition, p.AcquiredRecords)
			return
		}
		prev = a.LastOffset
	}
}

// sessionGone reports whether a share request's error code says the
// member's share session is gone (not found, or its epoch out of step), so
// the member starts a new one.
func sessionGone(code int16) bool {
	return code == kerr.ShareSessionNotFound.Code || code == kerr.InvalidShareSessionEpoch.Code
}

func nextSessionEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// acknowledge sends a ShareAcknowledge of what the member acquired.
func (m *shareMember) acknowledge(mutate bool) {
	r := m.rng
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id), m.session
	t := kmsg.NewShareAcknowledgeRequestTopic()
	t.TopicID = m.w.topicID
	for p := range m.w.parts {
		first, last, types := m.ackBatches(p, mutate)
		if len(first) == 0 {
			continue
		}
		tp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		tp.Partition = p
		for i := range first {
			b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
			b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first[i], last[i], types[i]
			tp.AcknowledgementBatches = append(tp.AcknowledgementBatches, b)
		}
		t.Partitions = append(t.Partitions, tp)
	}
	req.Topics = append(req.Topics, t)
	if mutate {
		switch r.IntN(7) {
		case 0:
			req.ShareSessionEpoch = m.i32(m.session)
		case 1:
			req.MemberID = m.memberID()
		case 2:
			req.GroupID = kmsg.StringPtr(m.groupID())
		case 3:
			req.IsRenewAck = true
			for i := range req.Topics[0].Partitions {
				for j := range req.Topics[0].Partitions[i].AcknowledgementBatches {
					req.Topics[0].Partitions[i].AcknowledgementBatches[j].AcknowledgeTypes = []int8{4}
				}
			}
		case 4:
			req.Topics[0].TopicID = m.topicID()
		case 5:
			for i := range req.Topics[0].Partitions {
				req.Topics[0].Partitions[i].Partition = m.partition()
			}
		case 6: // the same partition many times
			for range 1000 {
				tp := kmsg.NewShareAcknowledgeRequestTopicPartition()
				tp.Partition = m.partition()
				req.Topics[0].Partitions = append(req.Topics[0].Partitions, tp)
			}
		}
	}
	resp, _ := m.send(req, mutate).(*kmsg.ShareAcknowledgeResponse)
	if resp == nil {
		return
	}
	m.w.tally("ShareAcknowledge", resp.ErrorCode)
	if sessionGone(resp.ErrorCode) {
		m.session = 0
		return
	}
	if resp.ErrorCode == 0 && req.ShareSessionEpoch == m.session && m.session > 0 && req.MemberID != nil && *req.MemberID == m.id && *req.GroupID == m.group {
		m.session = nextSessionEpoch(m.session)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			m.w.tally("ShareAcknowledge/partition", p.ErrorCode)
		}
	}
	clear(m.acquired)
}

// admin sends one of the other share APIs with mutated fields.
func (m *shareMember) admin() {
	r := m.rng
	topic := []string{shareFuzzTopic, "no-such-topic", "", "__share_group_state"}[r.IntN(4)]
	var req kmsg.Request
	switch r.IntN(10) {
	case 0:
		q := kmsg.NewPtrShareGroupDescribeRequest()
		q.GroupIDs = []string{m.groupID(), m.groupID()}
		q.IncludeAuthorizedOperations = r.IntN(2) == 0
		req = q
	case 1:
		q := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = m.groupID()
		if r.IntN(3) != 0 {
			t := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
			t.Topic, t.Partitions = topic, []int32{m.partition(), m.partition(), m.i32(7)}
			g.Topics = append(g.Topics, t)
		}
		q.Groups = append(q.Groups, g)
		req = q
	case 2:
		q := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		q.GroupID = m.groupID()
		t := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		t.Topic = topic
		for range 1 + r.IntN(3) {
			p := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
			p.Partition, p.StartOffset = m.partition(), m.interesting(10)
			t.Partitions = append(t.Partitions, p)
		}
		q.Topics = append(q.Topics, t)
		req = q
	case 3:
		q := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		q.GroupID = m.groupID()
		t := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		t.Topic = topic
		q.Topics = append(q.Topics, t)
		req = q
	case 4:
		q := kmsg.NewPtrInitializeShareGroupStateRequest()
		q.GroupID = m.groupID()
		t := kmsg.NewInitializeShareGroupStateRequestTopic()
		t.TopicID = m.topicID()
		p := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		p.Partition, p.StateEpoch, p.StartOffset = m.partition(), m.i32(1), m.interesting(0)
		t.Partitions = append(t.Partitions, p)
		q.Topics = append(q.Topics, t)
		req = q
	case 5:
		q := kmsg.NewPtrReadShareGroupStateRequest()
		q.GroupID = m.groupID()
		t := kmsg.NewReadShareGroupStateRequestTopic()
		t.TopicID = m.topicID()
		p := kmsg.NewReadShareGroupStateRequestTopicPartition()
		p.Partition, p.LeaderEpoch = m.partition(), m.i32(0)
		t.Partitions = append(t.Partitions, p)
		q.Topics = append(q.Topics, t)
		req = q
	case 6:
		q := kmsg.NewPtrWriteShareGroupStateRequest()
		q.GroupID = m.groupID()
		t := kmsg.NewWriteShareGroupStateRequestTopic()
		t.TopicID = m.topicID()
		p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset, p.DeliveryCompleteCount = m.partition(), m.i32(0), m.i32(0), m.interesting(0), m.i32(0)
		for range r.IntN(4) {
			b := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
			b.FirstOffset = m.interesting(int64(r.IntN(90)))
			b.LastOffset = b.FirstOffset + int64(r.IntN(10))
			if r.IntN(4) == 0 {
				b.LastOffset = m.interesting(b.FirstOffset)
			}
			b.DeliveryState, b.DeliveryCount = []int8{0, 1, 2, 4, 3, -1}[r.IntN(6)], int16(m.i32(1))
			p.StateBatches = append(p.StateBatches, b)
		}
		t.Partitions = append(t.Partitions, p)
		q.Topics = append(q.Topics, t)
		req = q
	case 7:
		q := kmsg.NewPtrDeleteShareGroupStateRequest()
		q.GroupID = m.groupID()
		t := kmsg.NewDeleteShareGroupStateRequestTopic()
		t.TopicID = m.topicID()
		p := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
		p.Partition = m.partition()
		t.Partitions = append(t.Partitions, p)
		q.Topics = append(q.Topics, t)
		req = q
	case 8:
		q := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		q.GroupID = m.groupID()
		t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
		t.TopicID = m.topicID()
		p := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		p.Partition, p.LeaderEpoch = m.partition(), m.i32(0)
		t.Partitions = append(t.Partitions, p)
		q.Topics = append(q.Topics, t)
		req = q
	case 9:
		req = m.groupConfigs()
	}
	resp := m.send(req, true)
	if resp != nil {
		m.w.tally(kmsg.NameForKey(req.Key()), errorCodes(resp)...)
	}
}

// clobber writes hostile but well-formed share state over one of the
// member's share-partitions, as a buggy or malicious inter-broker client
// could: the epochs the coordinator holds (read from its summary) and
// batches over huge ranges, unsorted or overlapping. The partition leader
// must serve the share-partition afterwards without a record per offset.
func (m *shareMember) clobber() {
	r := m.rng
	p := int32(r.IntN(int(m.w.parts)))
	sum := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	sum.GroupID = m.group
	st := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	st.TopicID = m.w.topicID
	sp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	sp.Partition = p
	st.Partitions = append(st.Partitions, sp)
	sum.Topics = append(sum.Topics, st)
	sr, _ := m.send(sum, false).(*kmsg.ReadShareGroupStateSummaryResponse)
	if sr == nil || len(sr.Topics) != 1 || len(sr.Topics[0].Partitions) != 1 || sr.Topics[0].Partitions[0].ErrorCode != 0 {
		return
	}
	cur := sr.Topics[0].Partitions[0]
	q := kmsg.NewPtrWriteShareGroupStateRequest()
	q.GroupID = m.group
	t := kmsg.NewWriteShareGroupStateRequestTopic()
	t.TopicID = m.w.topicID
	wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	wp.Partition, wp.StateEpoch, wp.LeaderEpoch, wp.StartOffset, wp.DeliveryCompleteCount = p, cur.StateEpoch, cur.LeaderEpoch, -1, -1
	for range 1 + r.IntN(3) {
		b := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		b.FirstOffset = int64(r.IntN(40))
		b.LastOffset = []int64{b.FirstOffset + int64(r.IntN(20)), 1 << 40, math.MaxInt64, 1<<62 + 7}[r.IntN(4)]
		b.DeliveryState, b.DeliveryCount = []int8{0, 1, 2, 4}[r.IntN(4)], int16(r.IntN(8))
		wp.StateBatches = append(wp.StateBatches, b)
	}
	t.Partitions = append(t.Partitions, wp)
	q.Topics = append(q.Topics, t)
	if resp := m.send(q, false); resp != nil {
		m.w.tally("WriteShareGroupState/clobber", errorCodes(resp)...)
	}
}

// groupConfigs is a Describe/Alter/IncrementalAlterConfigs of a GROUP
// resource (type 32) with share settings of any value.
func (m *shareMember) groupConfigs() kmsg.Request {
	r := m.rng
	names := []string{"share.auto.offset.reset", "share.record.lock.duration.ms", "share.delivery.count.limit", "share.partition.max.record.locks", "share.isolation.level", "share.session.timeout.ms", "consumer.session.timeout.ms", "no.such.config", ""}
	values := []string{"earliest", "latest", "by_duration:PT1H", "by_duration:P99999999999D", "by_duration:", "-1", "0", "15000", "2147483648", "read_committed", "x", ""}
	group := m.groupID()
	if group == m.group && r.IntN(2) == 0 {
		group = "sg-cfg" // keep the consuming groups' settings sane mostly
	}
	switch r.IntN(3) {
	case 0:
		q := kmsg.NewPtrDescribeConfigsRequest()
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = 32, group
		if r.IntN(2) == 0 {
			res.ConfigNames = []string{names[r.IntN(len(names))]}
		}
		q.Resources = append(q.Resources, res)
		q.IncludeSynonyms, q.IncludeDocumentation = r.IntN(2) == 0, r.IntN(2) == 0
		return q
	case 1:
		q := kmsg.NewPtrAlterConfigsRequest()
		res := kmsg.NewAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = 32, group
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = names[r.IntN(len(names))], kmsg.StringPtr(values[r.IntN(len(values))])
		res.Configs = append(res.Configs, c)
		q.Resources = append(q.Resources, res)
		q.ValidateOnly = r.IntN(2) == 0
		return q
	default:
		q := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = 32, group
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = names[r.IntN(len(names))], kmsg.StringPtr(values[r.IntN(len(values))])
		c.Op = kmsg.IncrementalAlterConfigOp(int8(r.IntN(6)) - 1)
		if r.IntN(6) == 0 {
			c.Value = nil
		}
		res.Configs = append(res.Configs, c)
		q.Resources = append(q.Resources, res)
		q.ValidateOnly = r.IntN(2) == 0
		return q
	}
}

// errorCodes returns the top-level error codes of an admin response.
func errorCodes(resp kmsg.Response) []int16 {
	var out []int16
	switch r := resp.(type) {
	case *kmsg.ShareGroupDescribeResponse:
		for _, g := range r.Groups {
			out = append(out, g.ErrorCode)
		}
	case *kmsg.DescribeShareGroupOffsetsResponse:
		for _, g := range r.Groups {
			out = append(out, g.ErrorCode)
		}
	case *kmsg.AlterShareGroupOffsetsResponse:
		out = append(out, r.ErrorCode)
	case *kmsg.DeleteShareGroupOffsetsResponse:
		out = append(out, r.ErrorCode)
	case *kmsg.InitializeShareGroupStateResponse:
		for _, t := range r.Topics {
			out = appendCodes(out, t.Partitions, func(p kmsg.InitializeShareGroupStateResponseTopicPartition) int16 { return p.ErrorCode })
		}
	case *kmsg.ReadShareGroupStateResponse:
		for _, t := range r.Topics {
			out = appendCodes(out, t.Partitions, func(p kmsg.ReadShareGroupStateResponseTopicPartition) int16 { return p.ErrorCode })
		}
	case *kmsg.WriteShareGroupStateResponse:
		for _, t := range r.Topics {
			out = appendCodes(out, t.Partitions, func(p kmsg.WriteShareGroupStateResponseTopicPartition) int16 { return p.ErrorCode })
		}
	case *kmsg.DeleteShareGroupStateResponse:
		for _, t := range r.Topics {
			out = appendCodes(out, t.Partitions, func(p kmsg.DeleteShareGroupStateResponseTopicPartition) int16 { return p.ErrorCode })
		}
	case *kmsg.ReadShareGroupStateSummaryResponse:
		for _, t := range r.Topics {
			out = appendCodes(out, t.Partitions, func(p kmsg.ReadShareGroupStateSummaryResponseTopicPartition) int16 { return p.ErrorCode })
		}
	case *kmsg.DescribeConfigsResponse:
		for _, res := range r.Resources {
			out = append(out, res.ErrorCode)
		}
	case *kmsg.AlterConfigsResponse:
		for _, res := range r.Resources {
			out = append(out, res.ErrorCode)
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, res := range r.Resources {
			out = append(out, res.ErrorCode)
		}
	}
	return out
}

// appendCodes appends the error code of each element of es to out.
func appendCodes[E any](out []int16, es []E, code func(E) int16) []int16 {
	for _, e := range es {
		out = append(out, code(e))
	}
	return out
}

// run is one member's run of steps: join, then fetch, acknowledge,
// heartbeat and admin requests, each mutated a third of the time.
func (m *shareMember) run(steps int) {
	defer m.conn.close()
	for range steps {
		if m.w.failed() {
			return // fail fast: a broker that stopped answering would take two minutes a step
		}
		mutate := m.rng.IntN(3) == 0
		switch op := m.rng.IntN(10); {
		case m.epoch == 0 || op == 0:
			m.heartbeat(mutate)
		case op < 5:
			m.fetch(mutate)
		case op < 7:
			m.acknowledge(mutate)
		case op < 9:
			m.admin()
		default:
			if m.rng.IntN(4) == 0 {
				m.clobber()
			}
		}
	}
	// Leave the group and close the session, as a consumer does.
	if m.session > 0 {
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id), -1
		m.send(req, false)
	}
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, -1
	m.send(req, false)
}

// fuzzShare runs members members of steps steps each, from seed.
func fuzzShare(t testing.TB, w *shareWorld, seed uint64, members, steps int) {
	var wg sync.WaitGroup
	for i := range members {
		group := []string{"sg", "sg2"}[i%2]
		m := newShareMember(w, seed+uint64(i)*0x9e3779b9, group)
		wg.Go(func() { m.run(steps) })
	}
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.failures) > 0 {
		t.Fatalf("%d failures, first: %s", len(w.failures), w.failures[0])
	}
	if len(w.closed) > 0 {
		t.Fatalf("well-formed requests closed the connection: %v", w.closed)
	}
	if p := w.n.srv.PanicCount(); p > 0 {
		t.Fatalf("%d requests panicked in handlers (see the log)", p)
	}
}

// logCodes logs the error codes the run saw, per API.
func (w *shareWorld) logCodes(t testing.TB) {
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := make([]string, 0, len(w.codes))
	for k := range w.codes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s:%d ", k, w.codes[k])
	}
	t.Logf("codes: %s", b.String())
}

// checkShareGroupWorks consumes the whole topic with a new share group:
// one member that joins, fetches and accepts until it has every record.
func checkShareGroupWorks(t testing.TB, w *shareWorld) {
	m := newShareMember(w, 1, "sg-check")
	defer m.conn.close()
	deadline := time.Now().Add(2 * time.Minute)
	seen := map[string]bool{}
	for len(seen) < w.records {
		if time.Now().After(deadline) {
			t.Fatalf("a new share group consumed %d of %d records after fuzzing", len(seen), w.records)
		}
		if m.epoch == 0 || m.rng.IntN(20) == 0 {
			m.heartbeat(false)
			continue
		}
		fr := m.fetchEvery(t, "share fetch after fuzzing", 100, m.acquired)
		acquired := map[int32][]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{}
		for _, tp := range fr.Topics {
			for _, p := range tp.Partitions {
				if retriableShareCode(p.ErrorCode) {
					acquired[p.Partition] = m.acquired[p.Partition] // acknowledged again with the next fetch
					continue
				}
				if p.ErrorCode != 0 || p.AcknowledgeErrorCode != 0 {
					t.Fatalf("share fetch after fuzzing: partition %d error %d, ack error %d", p.Partition, p.ErrorCode, p.AcknowledgeErrorCode)
				}
				acquired[p.Partition] = p.AcquiredRecords
				for _, a := range p.AcquiredRecords {
					for o := a.FirstOffset; o <= a.LastOffset; o++ {
						seen[fmt.Sprintf("%d/%d", p.Partition, o)] = true
					}
				}
			}
		}
		m.acquired = acquired
	}
}

// probeShareGroup joins a fuzzed group once its members left (its
// share-partitions were dropped, so the leader reads their state again,
// whatever the fuzzers wrote into it) and fetches from it a few times:
// every fetch must be answered without a request-level error.
func probeShareGroup(t testing.TB, w *shareWorld, group string) {
	m := newShareMember(w, 2, group)
	defer m.conn.close()
	deadline := time.Now().Add(2 * time.Minute)
	for fetches := 0; fetches < 5; {
		if time.Now().After(deadline) {
			t.Fatalf("probing %s after fuzzing: no assignment", group)
		}
		if m.epoch == 0 {
			m.heartbeat(false)
			continue
		}
		fr := m.fetchEvery(t, "probing "+group+" after fuzzing", 10, nil)
		for _, t := range fr.Topics {
			for _, p := range t.Partitions {
				w.tally("probe/partition", p.ErrorCode)
				m.checkAcquired(p)
			}
		}
		fetches++
	}
}

// shareFuzzSteps is the steps per member of TestShareFuzzShort.
func shareFuzzSteps(t testing.TB) int {
	if s := os.Getenv("SAMSA_SHARE_FUZZ_STEPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if testing.Short() {
		return 60
	}
	return 150
}

// TestShareFuzzShort is the short, seeded run of the share-group fuzzer.
func TestShareFuzzShort(t *testing.T) {
	withFuzzNode(t, shareFuzzOverrides, "after-share-fuzz", func(n *Node) {
		w := setupShareWorld(t, n)
		fuzzShare(t, w, 27, 4, shareFuzzSteps(t))
		probeShareGroup(t, w, "sg")
		probeShareGroup(t, w, "sg2")
		w.logCodes(t)
		checkShareGroupWorks(t, w)
	})
}

// FuzzShareRequests: each input seeds a run of share-group members against
// one node.
func FuzzShareRequests(f *testing.F) {
	addFuzzSeeds(f, "", "a", "share", "kip-932")
	withFuzzNode(f, shareFuzzOverrides, "after-share-fuzz", func(n *Node) {
		w := setupShareWorld(f, n)
		f.Fuzz(func(t *testing.T, data []byte) {
			fuzzShare(t, w, fuzzSeed(data), 2, 40)
			probeShareGroup(t, w, "sg")
		})
		w.logCodes(f)
		checkShareGroupWorks(f, w)
	})
}
