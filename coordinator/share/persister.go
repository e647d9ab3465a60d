// Package share is samsa's share coordinator (KIP-932): the durable state of
// every share-partition (a share group's view of one topic partition: its
// start offset and the delivery state of the records in flight), kept in the
// internal compacted topic __share_group_state.
//
// Partition leaders (broker/share) read a share-partition's state when they
// first serve it and write it back whenever it changes; the group
// coordinator initializes it when a share group first gets the partition
// assigned, and reads, alters and deletes it for the admin APIs
// (DescribeShareGroupOffsets, AlterShareGroupOffsets,
// DeleteShareGroupOffsets, DeleteGroups). All of them go through a
// Persister, which routes each call to the node leading the key's
// __share_group_state partition (a local call, or Kafka's own
// InitializeShareGroupState / ReadShareGroupState / WriteShareGroupState /
// DeleteShareGroupState / ReadShareGroupStateSummary on the wire).
package share

import "context"

// StateTopic is the internal topic the share coordinator keeps its state in.
const StateTopic = "__share_group_state"

// Key names one share-partition: a share group and one partition of a topic
// (by topic ID, as Kafka's share state is keyed).
type Key struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// Delivery states of a batch of records in flight, as Kafka stores them
// (RecordState of KIP-932): only Available, Acknowledged and Archived are
// durable; an Acquired batch is written as Available (its acquisition does not
// survive a change of leader).
const (
	StateAvailable    int8 = 0
	StateAcquired     int8 = 1
	StateAcknowledged int8 = 2
	StateArchived     int8 = 4
)

// Batch is a run of offsets [FirstOffset, LastOffset] with one delivery
// state and delivery count.
type Batch struct {
	FirstOffset   int64
	LastOffset    int64
	DeliveryState int8
	DeliveryCount int16
}

// State is a share-partition's durable state.
//
// StartOffset is the share-partition start offset (SPSO): every record
// below it is done (acknowledged or archived). -1 means initialized without
// an offset yet: the partition leader picks one from the group's
// share.auto.offset.reset when it first serves the partition, and writes it.
// Batches are the records at or above StartOffset whose state is not plain
// "available, never delivered", in offset order, not overlapping.
//
// StateEpoch is bumped by Initialize (AlterShareGroupOffsets and a
// re-initialization reset the state); a Write with an older StateEpoch is
// refused (FENCED_STATE_EPOCH). LeaderEpoch is the partition leader's epoch
// when it wrote: a Write or Read with a lower LeaderEpoch than the last one
// seen is refused (FENCED_LEADER_EPOCH), so a deposed leader cannot
// overwrite its successor's state.
type State struct {
	StateEpoch  int32
	LeaderEpoch int32
	StartOffset int64
	Batches     []Batch
}

// Persister stores share-partition state durably. Errors that a Kafka
// client or partition leader should see are returned as (or wrap) a
// *kerr.Error: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
// COORDINATOR_LOAD_IN_PROGRESS (retry elsewhere or later),
// FENCED_STATE_EPOCH, FENCED_LEADER_EPOCH, INVALID_REQUEST; anything else is
// an internal failure (UNKNOWN_SERVER_ERROR to a client). Implementations
// are safe for concurrent use and return once the change is committed
// (replicated to the __share_group_state partition's ISR).
type Persister interface {
	// Initialize creates or resets a share-partition's state: StateEpoch
	// becomes stateEpoch, StartOffset startOffset (-1: to be chosen by the
	// partition leader), no batches.
	Initialize(ctx context.Context, k Key, stateEpoch int32, startOffset int64) error

	// Read returns the state for a partition leader about to serve the
	// share-partition at leaderEpoch (which it records, fencing older
	// leaders). ok is false when the share-partition was never initialized
	// (or was deleted).
	Read(ctx context.Context, k Key, leaderEpoch int32) (st State, ok bool, err error)

	// Write replaces the state (start offset and batches) of an
	// initialized share-partition; st.StateEpoch and st.LeaderEpoch are
	// checked as State says.
	Write(ctx context.Context, k Key, st State) error

	// Delete removes the share-partition's state (DeleteShareGroupOffsets,
	// DeleteGroups). Deleting an absent key is not an error.
	Delete(ctx context.Context, k Key) error

	// ReadSummary returns the state without fencing anything (the admin
	// APIs): StartOffset, StateEpoch and LeaderEpoch; Batches may be nil.
	// ok is false when the share-partition was never initialized.
	ReadSummary(ctx context.Context, k Key) (st State, ok bool, err error)
}
