package handlers

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-227 incremental fetch sessions.
//
// A client opens a session with session_id 0 and epoch 0 (a full fetch);
// the response carries the new session id and the session expects epoch 1.
// The client then sends epoch 1, 2, ... (wrapping from 2^31-1 to 1) with
// only the partitions whose fetch position changed, plus forgotten_topics;
// the broker remembers the rest and answers only partitions that have news
// (records, a changed high watermark, last stable offset or log start
// offset, or an error). Each accepted incremental fetch advances the
// expected epoch by one; the full fetch that creates a session does not.
//
// As Kafka's FetchManager decides:
//   - epoch 0 or -1 (a full fetch) closes the session it names; epoch 0
//     opens a new one (if the cache has or can make room, else the answer
//     carries session id 0 and the fetch is sessionless), -1 never does;
//   - any other epoch names a session: an unknown id is
//     FETCH_SESSION_ID_NOT_FOUND, an epoch other than the expected one is
//     INVALID_FETCH_SESSION_EPOCH, a session opened by topic name (v7-v12)
//     used by topic id (v13+) or back is FETCH_SESSION_TOPIC_ID_ERROR, and
//     a session left with no partition is closed (session id 0 in the answer);
//   - partitions that returned records move to the end of the session's
//     order, so a partition that always has data cannot starve the others
//     of the response's max_bytes.
//
// The cache holds max.incremental.fetch.session.cache.slots sessions
// (Kafka's default 1000). When it is full, a new session may evict, as
// Kafka's FetchSessionCacheShard.tryEvict does: first the least recently
// used session if it has been idle longer than fetchSessionEvictionMs; else
// the least valuable session that is older than fetchSessionEvictionMs
// (followers' sessions are worth more than consumers', then more
// partitions are worth more) when the new one is worth more; a follower
// may also evict a consumer's session however young. Otherwise no session
// is created.

// fetchSessionEvictionMs is how long a session is protected from eviction
// after it is created, and how long it may be idle before any new session
// may evict it (Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS).
const fetchSessionEvictionMs = 120_000 * time.Millisecond

// sessionKey names a partition in a session. Fetch v13+ names topics by
// id, older versions by name; a session only ever sees one of the two.
type sessionKey struct {
	topic     string
	topicID   [16]byte
	partition int32
	// byID: the request named the topic by id (v13+); below, an empty
	// name is an unknown topic, not an unknown id.
	byID bool
}

// sessionPartition is what a session remembers of one partition: the
// client's position and what we last told it.
type sessionPartition struct {
	fetchOffset        int64
	maxBytes           int32
	currentLeaderEpoch int32

	sentHighWatermark int64
	sentLogStart      int64
	sentLastStable    int64
}

// fetchSession is one KIP-227 session.
//
// Lock order: fetchSessionCache.mu is never taken while it waits for a
// session's mu (the session lock is held for a whole fetch, long poll
// included); a fetch may take the cache lock while it holds its session's.
type fetchSession struct {
	id         int32
	privileged bool // opened by a follower
	byID       bool // opened by Fetch v13+ (topics by id)
	created    time.Time

	mu        sync.Mutex // held for a whole fetch; one client uses a session at a time
	nextEpoch int32
	order     []sessionKey // response order
	parts     map[sessionKey]*sessionPartition

	// Guarded by the cache's mu, for eviction.
	lastUsed time.Time
	size     int
}

// fetchSessionCache holds sessions by id.
type fetchSessionCache struct {
	mu struct {
		sync.Mutex
		nextID   int32
		sessions map[int32]*fetchSession
	}
	max int
}

func newFetchSessionCache(max int) *fetchSessionCache {
	c := &fetchSessionCache{max: max}
	c.mu.sessions = make(map[int32]*fetchSession)
	return c
}

// evictionKey orders sessions by worth, like Kafka's EvictableKey:
// consumers' before followers', fewer partitions before more, then by id.
// A new session has id 0, so it is never worth more than an existing
// session of the same kind and size.
type evictionKey struct {
	privileged bool
	size       int
	id         int32
}

func (a evictionKey) less(b evictionKey) bool {
	if a.privileged != b.privileged {
		return !a.privileged
	}
	if a.size != b.size {
		return a.size < b.size
	}
	return a.id < b.id
}

// create registers a new session of size partitions, evicting another if
// the cache is full and the rules allow; it returns nil when there is no
// room. REQUIRES: nothing held.
func (c *fetchSessionCache) create(now time.Time, privileged, byID bool, size int) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.sessions) >= c.max && !c.tryEvictLocked(now, evictionKey{privileged: privileged, size: size}) {
		return nil
	}
	for {
		c.mu.nextID++
		if c.mu.nextID <= 0 {
			c.mu.nextID = 1
		}
		if _, taken := c.mu.sessions[c.mu.nextID]; !taken {
			break
		}
	}
	s := &fetchSession{id: c.mu.nextID, privileged: privileged, byID: byID, created: now,
		nextEpoch: 1, parts: make(map[sessionKey]*sessionPartition), lastUsed: now, size: size}
	c.mu.sessions[s.id] = s
	return s
}

// tryEvictLocked removes one session to make room for a new one with key
// want, and reports whether it did. REQUIRES: c.mu held.
func (c *fetchSessionCache) tryEvictLocked(now time.Time, want evictionKey) bool {
	var idlest, cheapest *fetchSession
	for _, s := range c.mu.sessions {
		if idlest == nil || s.lastUsed.Before(idlest.lastUsed) || (s.lastUsed.Equal(idlest.lastUsed) && s.id < idlest.id) {
			idlest = s
		}
		old := now.Sub(s.created) > fetchSessionEvictionMs
		if !old && !(want.privileged && !s.privileged) {
			continue
		}
		if cheapest == nil || s.evictionKey().less(cheapest.evictionKey()) {
			cheapest = s
		}
	}
	if idlest == nil {
		return false
	}
	if now.Sub(idlest.lastUsed) > fetchSessionEvictionMs {
		delete(c.mu.sessions, idlest.id)
		return true
	}
	if cheapest == nil || want.less(cheapest.evictionKey()) {
		return false
	}
	delete(c.mu.sessions, cheapest.id)
	return true
}

// evictionKey returns the session's worth. REQUIRES: the cache's mu held.
func (s *fetchSession) evictionKey() evictionKey {
	return evictionKey{privileged: s.privileged, size: s.size, id: s.id}
}

func (c *fetchSessionCache) get(id int32) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.sessions[id]
}

func (c *fetchSessionCache) remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.mu.sessions, id)
}

// touch records a use of s and its current size, for eviction.
func (c *fetchSessionCache) touch(s *fetchSession, now time.Time, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.lastUsed, s.size = now, size
}

// len returns the number of cached sessions.
func (c *fetchSessionCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.sessions)
}

// set adds or updates a partition, keeping first-seen order.
// REQUIRES: s.mu held.
func (s *fetchSession) set(k sessionKey, p sessionPartition) {
	if old, ok := s.parts[k]; ok {
		old.fetchOffset = p.fetchOffset
		old.maxBytes = p.maxBytes
		old.currentLeaderEpoch = p.currentLeaderEpoch
		return
	}
	p.sentHighWatermark, p.sentLogStart, p.sentLastStable = -1, -1, -1
	s.parts[k] = &p
	s.order = append(s.order, k)
}

// forget removes a partition. REQUIRES: s.mu held.
func (s *fetchSession) forget(k sessionKey) {
	if _, ok := s.parts[k]; !ok {
		return
	}
	delete(s.parts, k)
	for i, o := range s.order {
		if o == k {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

// fetchContext is what one Fetch reads: the partitions and the session
// (if any) they belong to. Call done when the response is built.
type fetchContext struct {
	sess        *fetchSession // nil: sessionless
	incremental bool
	wants       []sessionKey // response order
	parts       map[sessionKey]*sessionPartition
	moved       []sessionKey // partitions that returned records, for the round robin
}

// newFetchContext resolves req's session and partition list, as Kafka's
// FetchManager.newContext does (see the comment at the top of this file).
// A non-zero code is a whole-response session error; the context is then
// nil. On success the session, if any, stays locked until done.
func (c *fetchSessionCache) newFetchContext(req *kmsg.FetchRequest, v int16, now time.Time) (*fetchContext, int16) {
	byID := v >= 13
	requested := func(fc *fetchContext) {
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				k := sessionKey{partition: rp.Partition, byID: byID}
				if byID {
					k.topicID = rt.TopicID
				} else {
					k.topic = rt.Topic
				}
				sp := sessionPartition{fetchOffset: rp.FetchOffset, maxBytes: rp.PartitionMaxBytes, currentLeaderEpoch: rp.CurrentLeaderEpoch}
				if fc.sess != nil {
					fc.sess.set(k, sp)
					continue
				}
				if _, dup := fc.parts[k]; !dup {
					fc.wants = append(fc.wants, k)
				}
				sp.sentHighWatermark, sp.sentLogStart, sp.sentLastStable = -1, -1, -1
				fc.parts[k] = &sp
			}
		}
		if fc.sess != nil {
			fc.wants, fc.parts = fc.sess.order, fc.sess.parts
		}
	}
	sessionless := func() *fetchContext {
		fc := &fetchContext{parts: make(map[sessionKey]*sessionPartition)}
		requested(fc)
		return fc
	}

	if v < 7 {
		return sessionless(), 0
	}
	if req.SessionEpoch == 0 || req.SessionEpoch == -1 {
		if req.SessionID != 0 {
			c.remove(req.SessionID)
		}
		if req.SessionEpoch == -1 {
			return sessionless(), 0
		}
		fc := sessionless() // resolves the partition list and its size
		privileged := req.ReplicaID >= 0 || req.ReplicaState.ID >= 0
		sess := c.create(now, privileged, byID, len(fc.wants))
		if sess == nil {
			return fc, 0
		}
		sess.mu.Lock()
		fc.sess = sess
		requested(fc)
		return fc, 0
	}

	sess := c.get(req.SessionID)
	if sess == nil {
		return nil, kerr.FetchSessionIDNotFound.Code
	}
	sess.mu.Lock()
	if req.SessionEpoch != sess.nextEpoch {
		sess.mu.Unlock()
		return nil, kerr.InvalidFetchSessionEpoch.Code
	}
	if sess.byID != byID {
		sess.mu.Unlock()
		return nil, kerr.FetchSessionTopicIDError.Code
	}
	fc := &fetchContext{sess: sess, incremental: true}
	for _, ft := range req.ForgottenTopics {
		for _, p := range ft.Partitions {
			k := sessionKey{partition: p, byID: byID}
			if byID {
				k.topicID = ft.TopicID
			} else {
				k.topic = ft.Topic
			}
			sess.forget(k)
		}
	}
	requested(fc)
	if len(sess.parts) == 0 {
		// Kafka closes a session left empty and answers sessionless.
		sess.mu.Unlock()
		c.remove(sess.id)
		return sessionless(), 0
	}
	if sess.nextEpoch == 1<<31-1 {
		sess.nextEpoch = 1
	} else {
		sess.nextEpoch++
	}
	c.touch(sess, now, len(sess.parts))
	return fc, 0
}

// sessionID is the session id the response carries: 0 when sessionless.
func (fc *fetchContext) sessionID() int32 {
	if fc.sess == nil {
		return 0
	}
	return fc.sess.id
}

// respond reports whether partition k, whose read gave res, goes into the
// response, and remembers what the client is told. An incremental fetch
// leaves out partitions with nothing new.
func (fc *fetchContext) respond(k sessionKey, res *fetchResult) bool {
	sp := fc.parts[k]
	if fc.incremental && res.size() == 0 && res.code == 0 && !res.redirect &&
		res.highWatermark == sp.sentHighWatermark && res.logStart == sp.sentLogStart && res.lastStable == sp.sentLastStable {
		return false
	}
	sp.sentHighWatermark, sp.sentLogStart, sp.sentLastStable = res.highWatermark, res.logStart, res.lastStable
	if fc.incremental && res.size() > 0 {
		fc.moved = append(fc.moved, k)
	}
	return true
}

// done moves the partitions that returned records to the end of the
// session's order (Kafka's round robin) and unlocks the session.
func (fc *fetchContext) done() {
	s := fc.sess
	if s == nil {
		return
	}
	if len(fc.moved) > 0 {
		isMoved := make(map[sessionKey]bool, len(fc.moved))
		for _, k := range fc.moved {
			isMoved[k] = true
		}
		order := make([]sessionKey, 0, len(s.order))
		for _, k := range s.order {
			if !isMoved[k] {
				order = append(order, k)
			}
		}
		s.order = append(order, fc.moved...)
	}
	s.mu.Unlock()
}
