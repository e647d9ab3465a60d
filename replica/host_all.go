package replica

import (
	"errors"
	"sync"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// hostWorkers is how many partitions Apply moves to their new state at
// once. A partition this node now leads writes its leader-epoch checkpoint
// (a file write and two fsyncs), so a node that takes the leadership of
// thousands of partitions at once (a new topic, a failover) spent seconds
// per thousand one after another, and the image (and a CreateTopics
// waiting on it) with them. Partitions are independent: each has its own
// locks and log; Manager.mu guards the shared maps.
const hostWorkers = 8

// hostParallelMin is the fewest partitions worth the goroutines.
const hostParallelMin = 16

// hostWork is one partition of an image this node replicates.
type hostWork struct {
	topic     *controller.Topic
	partition controller.Partition
}

// hostAll hosts each partition of work (host), several at once when there
// are many; a failure is logged.
func (m *Manager) hostAll(work []hostWork) {
	one := func(w hostWork) {
		if _, err := m.host(w.topic, w.partition); err != nil && !errors.Is(err, ErrClosed) {
			m.logger.Error("cannot apply partition state", "topic", w.topic.Name, "partition", w.partition.Partition, "err", err)
		}
	}
	// Most images change few partitions: those whose leader epoch stays
	// are quick and done here, in order.
	var slow []hostWork
	for _, w := range work {
		if m.newEpoch(w.topic, w.partition) {
			slow = append(slow, w)
		} else {
			one(w)
		}
	}
	if len(slow) < hostParallelMin {
		for _, w := range slow {
			one(w)
		}
		return
	}
	next := make(chan hostWork)
	var wg sync.WaitGroup
	for range hostWorkers {
		wg.Go(func() {
			for w := range next {
				one(w)
			}
		})
	}
	for _, w := range slow {
		next <- w
	}
	close(next)
	wg.Wait()
}

// newEpoch says whether cp is news to this node's Partition: none hosted
// yet (or one of another topic id), none applied, or another leader epoch.
func (m *Manager) newEpoch(t *controller.Topic, cp controller.Partition) bool {
	m.mu.Lock()
	p, ok := m.mu.partitions[storage.TopicPartition{Topic: t.Name, Partition: cp.Partition}]
	m.mu.Unlock()
	if !ok || p.topicID != t.ID {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.role == RoleNone || p.mu.leaderEpoch != cp.LeaderEpoch
}
