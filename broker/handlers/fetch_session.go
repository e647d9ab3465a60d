package handlers

import (
	"sync"
	"time"
)

// KIP-227 incremental fetch sessions.
//
// A client opens a session with session_id 0 and epoch 0 (a full fetch);
// we answer with a new session id. It then sends epoch 1, 2, ... with only
// the partitions whose fetch position changed, plus forgotten_topics; the
// broker remembers the rest and answers only partitions that have news
// (records, a changed high watermark, last stable offset or log start
// offset, or an error). Epoch -1 closes the session and makes the request a
// sessionless full fetch.

// sessionKey names a partition in a session. Fetch v13+ names topics by
// id, older versions by name; a session only ever sees one of the two.
type sessionKey struct {
	topic     string
	topicID   [16]byte
	partition int32
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

type fetchSession struct {
	mu        sync.Mutex // held for a whole fetch; one client uses a session at a time
	id        int32
	nextEpoch int32
	order     []sessionKey // response order
	parts     map[sessionKey]*sessionPartition
	lastUsed  time.Time
}

// fetchSessionCache holds sessions by id, evicting the least recently used
// one beyond max (max.incremental.fetch.session.cache.slots, Kafka's default 1000).
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

// create registers a new session and returns it.
func (c *fetchSessionCache) create(now time.Time) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.sessions) >= c.max {
		var oldest *fetchSession
		for _, s := range c.mu.sessions {
			if oldest == nil || s.lastUsed.Before(oldest.lastUsed) {
				oldest = s
			}
		}
		delete(c.mu.sessions, oldest.id)
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
	s := &fetchSession{id: c.mu.nextID, nextEpoch: 1, parts: make(map[sessionKey]*sessionPartition), lastUsed: now}
	c.mu.sessions[s.id] = s
	return s
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

// set adds or updates a partition, keeping first-seen order.
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
