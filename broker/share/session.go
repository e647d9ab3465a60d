package share

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Share session epochs (KIP-932): 0 opens a session, -1 closes it, any
// other is the next epoch of an open session (wrapping from MaxInt32 to 1).
const (
	InitialEpoch int32 = 0
	FinalEpoch   int32 = -1
)

// nextEpoch is the epoch after e.
func nextEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// TopicPartition names a partition by topic ID, as share requests do.
type TopicPartition struct {
	TopicID   [16]byte
	Partition int32
}

// SessionKey names a share session: one member of one share group.
type SessionKey struct{ Group, Member string }

// ConnID names the client connection a share session was opened on (the
// broker numbers its connections); 0 is none, a session no connection
// close removes.
type ConnID uint64

// session is a member's share session on this broker: the partitions it
// fetches (with each one's PartitionMaxBytes, in the order they were
// added) and the epoch its next request must carry.
type session struct {
	// conn is the connection whose ShareFetch at epoch 0 opened it:
	// when that connection closes the session goes, as in Kafka 4.4.
	conn     ConnID
	epoch    int32
	parts    []TopicPartition
	maxBytes map[TopicPartition]int32
}

// sessionCache holds the share sessions (Kafka's ShareSessionCache), at
// most group.share.max.share.sessions of them.
//
// A session goes when its member closes it (epoch -1), when the
// connection that opened it closes (removeConn, as Kafka 4.4's
// ShareSessionCache with its connection disconnect listener), or when a
// new session of the same member replaces it (epoch 0). Nothing else
// evicts one: a full cache answers a new session
// SHARE_SESSION_LIMIT_REACHED until a session goes, as Kafka 4.4
// (ShareSessionCache.maybeCreateSession).
type sessionCache struct {
	max int
	mu  struct {
		sync.Mutex
		sessions map[SessionKey]*session
	}
}

func newSessionCache(max int) *sessionCache {
	c := &sessionCache{max: max}
	c.mu.sessions = make(map[SessionKey]*session)
	return c
}

// FetchPartition is one partition a share fetch names, with its
// PartitionMaxBytes (0: acknowledgements only, not fetched).
type FetchPartition struct {
	TopicPartition
	MaxBytes int32
}

// SessionFetch is what a ShareFetch's session says to do.
type SessionFetch struct {
	// Code is the request's error (SHARE_SESSION_NOT_FOUND,
	// INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED,
	// INVALID_REQUEST); when set nothing else is done.
	Code int16
	// Final: the request closes the session (epoch -1): acknowledgements
	// only, then the member's records are released.
	Final bool
	// Full: a new session, whose response names every partition.
	Full bool
	// Parts are the partitions to fetch and their byte limits.
	Parts []FetchPartition
}

// fetchContext resolves a ShareFetch against the session cache, as
// Kafka's SharePartitionManager.newContext: epoch 0 replaces any session
// of the member with a new one (acknowledgements are refused, there is
// nothing to acknowledge), -1 closes it (no partition may be fetched),
// any other must be the session's next epoch and adds, updates and
// forgets partitions.
//
// A new session remembers conn, the connection it was opened on.
func (c *sessionCache) fetchContext(conn ConnID, key SessionKey, epoch int32, parts []FetchPartition, forgotten []TopicPartition, hasAcks bool) SessionFetch {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch epoch {
	case FinalEpoch:
		for _, p := range parts {
			if p.MaxBytes > 0 {
				return SessionFetch{Code: kerr.InvalidRequest.Code}
			}
		}
		s := c.mu.sessions[key]
		if s == nil {
			return SessionFetch{Code: kerr.ShareSessionNotFound.Code}
		}
		return SessionFetch{Final: true}
	case InitialEpoch:
		if hasAcks {
			return SessionFetch{Code: kerr.InvalidRequest.Code}
		}
		delete(c.mu.sessions, key)
		if c.max > 0 && len(c.mu.sessions) >= c.max {
			return SessionFetch{Code: kerr.ShareSessionLimitReached.Code}
		}
		s := &session{conn: conn, epoch: 1, maxBytes: map[TopicPartition]int32{}}
		s.update(parts, nil)
		c.mu.sessions[key] = s
		return SessionFetch{Full: true, Parts: s.fetchParts()}
	}
	s := c.mu.sessions[key]
	if s == nil {
		return SessionFetch{Code: kerr.ShareSessionNotFound.Code}
	}
	if s.epoch != epoch {
		return SessionFetch{Code: kerr.InvalidShareSessionEpoch.Code}
	}
	s.update(parts, forgotten)
	s.epoch = nextEpoch(s.epoch)
	return SessionFetch{Parts: s.fetchParts()}
}

// acknowledgeContext checks a ShareAcknowledge's session, as Kafka's
// acknowledgeSessionUpdate: epoch 0 is INVALID_SHARE_SESSION_EPOCH, -1
// needs a session (closed by the caller after its acknowledgements), any
// other must be the session's next epoch. It returns a Kafka error code.
func (c *sessionCache) acknowledgeContext(key SessionKey, epoch int32) int16 {
	if epoch == InitialEpoch {
		return kerr.InvalidShareSessionEpoch.Code
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.mu.sessions[key]
	switch {
	case s == nil:
		return kerr.ShareSessionNotFound.Code
	case epoch == FinalEpoch:
		return 0
	case s.epoch != epoch:
		return kerr.InvalidShareSessionEpoch.Code
	}
	s.epoch = nextEpoch(s.epoch)
	return 0
}

// remove closes a session and returns its partitions (nil when there was
// none).
func (c *sessionCache) remove(key SessionKey) []TopicPartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.mu.sessions[key]
	if s == nil {
		return nil
	}
	delete(c.mu.sessions, key)
	return s.parts
}

// removeConn closes the sessions opened on conn and returns each one's
// partitions. A session of the same member opened since on another
// connection stays.
func (c *sessionCache) removeConn(conn ConnID) map[SessionKey][]TopicPartition {
	if conn == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out map[SessionKey][]TopicPartition
	for k, s := range c.mu.sessions {
		if s.conn != conn {
			continue
		}
		if out == nil {
			out = make(map[SessionKey][]TopicPartition)
		}
		out[k] = s.parts
		delete(c.mu.sessions, k)
	}
	return out
}

// len returns the number of open sessions.
func (c *sessionCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.sessions)
}

// update adds or updates the partitions with a byte limit (those with
// none are acknowledged only and not added) and forgets others.
func (s *session) update(parts []FetchPartition, forgotten []TopicPartition) {
	for _, p := range parts {
		if p.MaxBytes <= 0 {
			continue
		}
		if _, ok := s.maxBytes[p.TopicPartition]; !ok {
			s.parts = append(s.parts, p.TopicPartition)
		}
		s.maxBytes[p.TopicPartition] = p.MaxBytes
	}
	for _, f := range forgotten {
		if _, ok := s.maxBytes[f]; !ok {
			continue
		}
		delete(s.maxBytes, f)
		for i, p := range s.parts {
			if p == f {
				s.parts = append(s.parts[:i], s.parts[i+1:]...)
				break
			}
		}
	}
}

func (s *session) fetchParts() []FetchPartition {
	out := make([]FetchPartition, len(s.parts))
	for i, p := range s.parts {
		out[i] = FetchPartition{TopicPartition: p, MaxBytes: s.maxBytes[p]}
	}
	return out
}

// hasGroup reports whether a member of group has a session.
func (c *sessionCache) hasGroup(group string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.mu.sessions {
		if k.Group == group {
			return true
		}
	}
	return false
}
