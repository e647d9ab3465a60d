package coordinator

import "context"

// SharePersister is the part of the share coordinator's Persister
// (coordinator/share.Persister) that the group coordinator uses: it
// initializes a share-partition's state before first assigning it, and
// reads, resets and deletes it for the admin APIs. It is declared here,
// with keys of its own, because coordinator/share builds on this package
// (its shards use Log, EpochPipelinedLog, Guard): importing it back would
// be a cycle. The broker adapts a share.Persister to it
// (broker/share_persister.go). Errors a client should see are, or wrap,
// a *kerr.Error; others are answered UNKNOWN_SERVER_ERROR.
type SharePersister interface {
	// Initialize creates or resets the state: StateEpoch stateEpoch,
	// StartOffset startOffset (-1: to be chosen by the partition leader
	// from share.auto.offset.reset), nothing in flight.
	Initialize(ctx context.Context, k SharePartitionKey, stateEpoch int32, startOffset int64) error
	// Delete removes the state; an absent one is not an error.
	Delete(ctx context.Context, k SharePartitionKey) error
	// ReadSummary returns the state's start offset and epochs without
	// fencing anything; ok is false when it was never initialized.
	ReadSummary(ctx context.Context, k SharePartitionKey) (s ShareStateSummary, ok bool, err error)
}

// SharePartitionKey names one share-partition: a share group and a
// partition of a topic, by topic ID (share.Key).
type SharePartitionKey struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// ShareStateSummary is what DescribeShareGroupOffsets shows of a
// share-partition's state.
type ShareStateSummary struct {
	StateEpoch  int32
	LeaderEpoch int32
	StartOffset int64
}

// SetPersister sets (or replaces) the share Persister after New, for a
// broker that starts its share coordinator after its group coordinator.
// Heartbeats before it initialize share-partitions without state, as with
// no Persister.
func (c *Coordinator) SetPersister(p SharePersister) {
	if p == nil {
		c.persister.Store(nil)
		return
	}
	c.persister.Store(&p)
}

// sharePersister returns the Persister in use, nil for none.
func (c *Coordinator) sharePersister() SharePersister {
	if p := c.persister.Load(); p != nil {
		return *p
	}
	return nil
}
