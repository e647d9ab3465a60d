package broker

import (
	"sync/atomic"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/coordinator/sharecoord"
)

// shareTopicCleanup hands the topics each published image deletes to the
// share coordinator, which deletes their share-partitions' state, as
// Kafka 4.4's ShareCoordinatorService does with every metadata delta's
// deleted topic ids. coord is set once the share coordinator exists
// (wireShares): the controller publishes images before.
type shareTopicCleanup struct {
	coord atomic.Pointer[sharecoord.Coordinator]
}

// topicsDeleted is called with each published image (controller
// OnChange); it never blocks.
func (s *shareTopicCleanup) topicsDeleted(prev, next *controller.Image) {
	c := s.coord.Load()
	if c == nil {
		return
	}
	if ids := deletedTopicIDs(prev, next); len(ids) > 0 {
		c.TopicsDeleted(ids)
	}
}

// deletedTopicIDs returns the ids of the topics prev has and next does
// not.
func deletedTopicIDs(prev, next *controller.Image) [][16]byte {
	if prev == nil || next == nil {
		return nil
	}
	var out [][16]byte
	for id := range prev.TopicsByID {
		if _, ok := next.TopicsByID[id]; !ok {
			out = append(out, [16]byte(id))
		}
	}
	return out
}
