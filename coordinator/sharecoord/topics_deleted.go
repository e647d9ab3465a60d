package sharecoord

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator/share"
)

// deletedTopicsRetry is how long the share coordinator keeps trying to
// delete the state of a deleted topic's share-partitions in partitions
// that are loading (or whose writes fail) when the deletion is published;
// deletedTopicsBackoff is the wait between tries.
const (
	deletedTopicsRetry   = 2 * time.Minute
	deletedTopicsBackoff = 500 * time.Millisecond
)

// topicCleaner holds the deleted topics whose share state the
// coordinator still has to delete (TopicsDeleted).
type topicCleaner struct {
	wake chan struct{}
	mu   struct {
		sync.Mutex
		pending map[[16]byte]time.Time // topic id -> when to give up
	}
}

// startTopicCleaner starts the goroutine that deletes the state of
// deleted topics; Close stops it.
func (c *Coordinator) startTopicCleaner() {
	c.cleaner.wake = make(chan struct{}, 1)
	c.cleaner.mu.pending = map[[16]byte]time.Time{}
	c.shards.Go(c.runTopicCleaner)
}

// TopicsDeleted tells the coordinator that topics were deleted (the
// metadata image no longer has them). As Kafka 4.4's share coordinator
// does on a metadata delta with deleted topics
// (ShareCoordinatorShard.maybeCleanupShareState), it then writes a
// tombstone for every share-partition of those topics in each
// __share_group_state partition it has loaded, in the background: share
// groups' state does not outlive its topic, and a topic re-created under
// the same name (a new topic id) starts without it. It never blocks. A
// partition still loading is retried for a while; one not loaded here is
// the business of the node that loads it (and, as in Kafka, keeps the
// records if it did not see the deletion).
func (c *Coordinator) TopicsDeleted(ids [][16]byte) {
	if len(ids) == 0 {
		return
	}
	until := c.opts.Now().Add(deletedTopicsRetry)
	c.cleaner.mu.Lock()
	for _, id := range ids {
		c.cleaner.mu.pending[id] = until
	}
	c.cleaner.mu.Unlock()
	select {
	case c.cleaner.wake <- struct{}{}:
	default:
	}
}

func (c *Coordinator) runTopicCleaner(ctx context.Context) {
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.cleaner.wake:
		case <-retry:
		}
		retry = nil
		c.cleaner.mu.Lock()
		ids := make(map[[16]byte]bool, len(c.cleaner.mu.pending))
		for id := range c.cleaner.mu.pending {
			ids[id] = true
		}
		c.cleaner.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		n, err := c.DeleteTopicsState(ctx, ids)
		now := c.opts.Now()
		c.cleaner.mu.Lock()
		for id := range ids {
			until, ok := c.cleaner.mu.pending[id]
			switch {
			case !ok:
			case err == nil:
				delete(c.cleaner.mu.pending, id)
			case !now.Before(until):
				delete(c.cleaner.mu.pending, id)
				c.logger.Warn("share: gave up deleting the share state of a deleted topic", "topic_id", id, "err", err)
			}
		}
		left := len(c.cleaner.mu.pending)
		c.cleaner.mu.Unlock()
		if n > 0 {
			c.logger.Info("share: deleted the share state of deleted topics", "share_partitions", n, "topics", len(ids))
		}
		if err != nil && ctx.Err() == nil {
			c.logger.Debug("share: deleting the share state of deleted topics failed, will retry", "err", err)
		}
		if left > 0 {
			retry = time.After(deletedTopicsBackoff)
		}
	}
}

// DeleteTopicsState writes a tombstone for every share-partition of the
// topics in ids held by the loaded partitions, and returns how many it
// deleted once they are committed. The error is the first failure (a
// partition still loading, a failed write); the other partitions are
// done anyway, and calling again finishes the job.
func (c *Coordinator) DeleteTopicsState(ctx context.Context, ids map[[16]byte]bool) (int, error) {
	var errs []error
	n := 0
	for _, s := range c.shards.List() {
		keys, err := s.keysOf(ctx, ids)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, k := range keys {
			_, err := s.do(ctx, k, func(e *entry) (*entry, bool, error) { return nil, e != nil, nil })
			if err != nil {
				errs = append(errs, err)
				break
			}
			n++
		}
	}
	if len(errs) > 0 {
		return n, errs[0]
	}
	return n, nil
}

// keysOf returns the keys of the shard's share-partitions whose topic is
// in ids, read on the shard goroutine.
func (s *shard) keysOf(ctx context.Context, ids map[[16]byte]bool) ([]share.Key, error) {
	if code := s.gate.NotServingCode(); code != 0 {
		return nil, kerr.ErrorForCode(code)
	}
	var keys []share.Key
	switch code := s.gate.Call(ctx, func() {
		for k := range s.states {
			if ids[k.TopicID] {
				keys = append(keys, k)
			}
		}
	}); code {
	case 0:
		return keys, nil
	case kerr.NotCoordinator.Code: // stopped since the check above
		return nil, errShardStopped
	case kerr.CoordinatorNotAvailable.Code:
		return nil, ctx.Err()
	default:
		return nil, kerr.ErrorForCode(code)
	}
}

// errShardStopped: the shard stopped (unloaded) while asked.
var errShardStopped = errors.New("share: partition unloaded")
