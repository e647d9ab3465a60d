package controller

import (
	"slices"
	"time"
)

// Broker liveness is in memory only, as in KRaft: heartbeats are not
// records. After a restart, and whenever this node becomes the active
// controller, every registered broker gets a full session from then before
// it can be fenced.

// decideExpired returns, in ascending order, the unfenced brokers whose last
// heartbeat (or started, if none was seen since) is more than timeout
// before now.
func decideExpired(img *Image, lastSeen map[int32]time.Time, started, now time.Time, timeout time.Duration) []int32 {
	if timeout <= 0 {
		return nil
	}
	var expired []int32
	for id, b := range img.Brokers {
		if b.Fenced {
			continue
		}
		seen, ok := lastSeen[id]
		if !ok || seen.Before(started) {
			seen = started
		}
		if now.Sub(seen) > timeout {
			expired = append(expired, id)
		}
	}
	slices.Sort(expired)
	return expired
}

// Heartbeat records that broker id is alive. A fenced broker that
// heartbeats is unfenced (and takes over leaderless partitions whose ISR
// holds it).
func (c *Controller) Heartbeat(id int32) error {
	c.liveness.Lock()
	c.liveness.lastSeen[id] = c.opts.Now()
	c.liveness.Unlock()
	if b, ok := c.Image().Brokers[id]; ok && !b.Fenced {
		return nil
	}
	return c.FenceBroker(id, false)
}

// ExpireSessions fences every broker whose session (Options.SessionTimeout)
// has run out and returns their ids. The owner of the controller calls it
// from a ticker; it does nothing when SessionTimeout is 0.
func (c *Controller) ExpireSessions() ([]int32, error) {
	// Sessions start when this node became the active controller, not
	// when its process started: brokers heartbeat to the active
	// controller only, so a node that takes over later than one session
	// timeout after its start has seen none of them (or only before an
	// earlier term), and would fence every other broker at its first
	// tick (Kafka's new active controller likewise gives every broker a
	// fresh session).
	started := c.started
	if ls, ok := c.quorum.(leadingSince); ok {
		if since := ls.LeadingSince(); since.After(started) {
			started = since
		}
	}
	c.liveness.Lock()
	expired := decideExpired(c.Image(), c.liveness.lastSeen, started, c.opts.Now(), c.opts.SessionTimeout)
	c.liveness.Unlock()
	// The active controller's own broker shares its process: it is alive
	// while this runs, whatever its heartbeats say (a stalled heartbeat
	// goroutine must not make a single node fence itself).
	expired = slices.DeleteFunc(expired, func(id int32) bool { return id == c.opts.NodeID })
	for _, id := range expired {
		if err := c.FenceBroker(id, true); err != nil {
			return nil, err
		}
	}
	return expired, nil
}

// leadingSince is a Quorum that knows when this node last became the
// active controller (controller/quorum); session expiry counts from then.
type leadingSince interface {
	LeadingSince() time.Time
}
