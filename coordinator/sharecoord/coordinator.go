package sharecoord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/internal/shards"
	"github.com/samsa-broker/samsa/coordinator/share"
)

// Options configures a Coordinator. Zero values take Kafka's defaults.
type Options struct {
	// NumPartitions is share.coordinator.state.topic.num.partitions
	// (default 50): the partitions the coordinator may load. Keys are
	// hashed over the partition count of the topic as it exists.
	NumPartitions int32
	// Log returns the local __share_group_state partition p, false if
	// this node does not hold it. A Log that is a
	// coordinator.EpochPipelinedLog (replica.CoordinatorLog) gets its
	// writes pipelined: appended at once, answered once committed in the
	// leader epoch they were appended in.
	Log func(partition int32) (coordinator.Log, bool)
	// Partitions returns the partition count of __share_group_state as it
	// exists (0: not yet), over which keys are hashed, as FindCoordinator
	// and the Persister hash them (nil or 0: NumPartitions).
	Partitions func() int32
	// PartitionExists reports whether a topic partition exists (by topic
	// id); requests for others get UNKNOWN_TOPIC_OR_PARTITION, as Kafka
	// checks its metadata image. Nil: every partition exists.
	PartitionExists func(topicID [16]byte, partition int32) bool
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.NumPartitions <= 0 {
		o.NumPartitions = 50
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.PartitionExists == nil {
		o.PartitionExists = func([16]byte, int32) bool { return true }
	}
}

// Coordinator is the share coordinator: it owns the share-partition state
// of the __share_group_state partitions it has loaded, one goroutine per
// partition (a shard). Its methods are safe for concurrent use. It
// answers for the loaded partitions only (NOT_COORDINATOR for the others);
// Persister routes each key to the node that leads its partition.
type Coordinator struct {
	opts   Options
	logger *slog.Logger

	// shards are the loaded __share_group_state partitions; the topic
	// cleaner runs as one of the set's goroutines.
	shards  *shards.Set[*shard]
	cleaner topicCleaner // topics_deleted.go
}

// New returns a Coordinator with no partition loaded.
func New(o Options) (*Coordinator, error) {
	o.setDefaults()
	if o.Log == nil {
		return nil, fmt.Errorf("%w: Options.Log is required", ErrOptions)
	}
	c := &Coordinator{opts: o, logger: o.Logger}
	c.shards = shards.New[*shard]()
	c.startTopicCleaner()
	return c, nil
}

// NumPartitions returns share.coordinator.state.topic.num.partitions.
func (c *Coordinator) NumPartitions() int32 { return c.opts.NumPartitions }

// LoadAll loads every partition Options.Log returns: what a single node,
// which leads all of them, does (tests).
func (c *Coordinator) LoadAll() error {
	for p := range c.opts.NumPartitions {
		if _, ok := c.opts.Log(p); ok {
			if err := c.LoadPartition(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// LoadPartition starts serving the share-partitions of one
// __share_group_state partition, after reading it in the background
// (requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS).
func (c *Coordinator) LoadPartition(p int32) error {
	if n := max(c.opts.NumPartitions, c.partitions()); p < 0 || p >= n {
		return fmt.Errorf("%w: partition %d of %d", ErrNoPartition, p, n)
	}
	log, ok := c.opts.Log(p)
	if !ok {
		return fmt.Errorf("%w: partition %d", ErrNoPartition, p)
	}
	if !c.shards.Load(p, func() *shard { return newShard(c, p, log) }) {
		return ErrClosed
	}
	return nil
}

// UnloadPartition stops serving one partition; its keys get
// NOT_COORDINATOR. Writes in flight stay in the log, which the next
// leader loads.
func (c *Coordinator) UnloadPartition(p int32) { c.shards.Unload(p) }

// Loaded reports whether partition p is loaded (or loading).
func (c *Coordinator) Loaded(p int32) bool {
	_, ok := c.shards.Get(p)
	return ok
}

// WaitLoaded waits until every loaded partition finished reading its log.
func (c *Coordinator) WaitLoaded(ctx context.Context) error { return c.shards.WaitLoaded(ctx) }

// Close stops every partition and the topic cleaner, and waits for their
// goroutines.
func (c *Coordinator) Close() { c.shards.Close() }

// partitions is the partition count keys are hashed over.
func (c *Coordinator) partitions() int32 {
	if c.opts.Partitions != nil {
		if n := c.opts.Partitions(); n > 0 {
			return n
		}
	}
	return c.opts.NumPartitions
}

// shardFor returns the shard owning k's partition, or NOT_COORDINATOR.
func (c *Coordinator) shardFor(k share.Key) (*shard, error) {
	s, ok := c.shards.Get(PartitionFor(k, c.partitions()))
	if !ok {
		return nil, kerr.NotCoordinator
	}
	return s, nil
}

// Summary is what ReadShareGroupStateSummary answers for a share-partition.
type Summary struct {
	share.State
	// DeliveryCompleteCount is the last count a partition leader wrote
	// (KIP-1226, WriteShareGroupState v1), -1 when unknown.
	DeliveryCompleteCount int32
}

// The methods below check a request in the order Kafka 4.4's
// ShareCoordinatorShard does, after routing (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS): malformed fields (INVALID_REQUEST), the
// share-partition's state (uninitialized, fenced), then whether the topic
// partition exists (UNKNOWN_TOPIC_OR_PARTITION).

// Initialize creates or resets k's state (Persister.Initialize): an older
// stateEpoch than the stored one is FENCED_STATE_EPOCH.
func (c *Coordinator) Initialize(ctx context.Context, k share.Key, stateEpoch int32, startOffset int64) error {
	s, err := c.shardFor(k)
	if err != nil {
		return err
	}
	_, err = s.do(ctx, k, func(e *entry) (*entry, bool, error) {
		switch {
		case k.Partition < 0 || stateEpoch < 0:
			return nil, false, kerr.InvalidRequest
		case e != nil && e.st.StateEpoch > stateEpoch:
			return nil, false, kerr.FencedStateEpoch
		case !c.exists(k):
			return nil, false, kerr.UnknownTopicOrPartition
		}
		// As Kafka 4.4 (ShareGroupOffset.fromRequest): leader epoch 0,
		// a delivery-complete count of 0, or -1 without a start offset.
		next := &entry{st: share.State{StateEpoch: stateEpoch, StartOffset: startOffset}}
		if startOffset == -1 {
			next.deliveryComplete = -1
		}
		if e != nil {
			next.snapshotEpoch = e.snapshotEpoch + 1
		}
		return next, true, nil
	})
	return err
}

// Read returns k's state for a partition leader at leaderEpoch
// (Persister.Read), recording a newer leaderEpoch (a write) so that older
// leaders are fenced. ok is false when k was never initialized (Kafka
// answers INVALID_REQUEST, ReadUninitializedMessage).
func (c *Coordinator) Read(ctx context.Context, k share.Key, leaderEpoch int32) (share.State, bool, error) {
	s, err := c.shardFor(k)
	if err != nil {
		return share.State{}, false, err
	}
	e, err := s.do(ctx, k, func(e *entry) (*entry, bool, error) {
		switch {
		case k.Partition < 0 || leaderEpoch < 0:
			return nil, false, kerr.InvalidRequest
		case e == nil:
			return nil, false, nil
		case e.st.LeaderEpoch > leaderEpoch:
			return nil, false, kerr.FencedLeaderEpoch
		case !c.exists(k):
			return nil, false, kerr.UnknownTopicOrPartition
		case e.st.LeaderEpoch == leaderEpoch:
			return e, false, nil
		}
		next := e.clone()
		next.st.LeaderEpoch = leaderEpoch
		next.snapshotEpoch++
		return next, true, nil
	})
	if err != nil || e == nil {
		return share.State{}, false, err
	}
	return e.clone().st, true, nil
}

// Write replaces k's state (Persister.Write), with the
// DeliveryCompleteCount its batches give (DeliveryComplete).
func (c *Coordinator) Write(ctx context.Context, k share.Key, st share.State) error {
	return c.WriteState(ctx, k, st, DeliveryComplete(st.Batches, st.StartOffset))
}

// WriteState is Write with the DeliveryCompleteCount of
// WriteShareGroupState v1 (-1: unknown). A write to a share-partition
// never initialized is INVALID_REQUEST, one with an older leader or state
// epoch than recorded FENCED_LEADER_EPOCH or FENCED_STATE_EPOCH, as Kafka
// 4.4 answers. A start offset of -1 keeps the stored one.
func (c *Coordinator) WriteState(ctx context.Context, k share.Key, st share.State, deliveryComplete int32) error {
	s, err := c.shardFor(k)
	if err != nil {
		return err
	}
	_, err = s.do(ctx, k, func(e *entry) (*entry, bool, error) {
		switch {
		case k.Partition < 0 || st.LeaderEpoch < 0 || st.StateEpoch < 0 || validBatches(st.Batches) != nil:
			return nil, false, kerr.InvalidRequest
		case e == nil:
			return nil, false, errUninitializedWrite
		case e.st.LeaderEpoch > st.LeaderEpoch:
			return nil, false, kerr.FencedLeaderEpoch
		case e.st.StateEpoch > st.StateEpoch:
			return nil, false, kerr.FencedStateEpoch
		case !c.exists(k):
			return nil, false, kerr.UnknownTopicOrPartition
		}
		start := st.StartOffset
		if start == -1 {
			start = e.st.StartOffset
		}
		next := &entry{
			st:               share.State{StateEpoch: st.StateEpoch, LeaderEpoch: st.LeaderEpoch, StartOffset: start, Batches: clipBatches(st.Batches, start)},
			deliveryComplete: deliveryComplete,
			snapshotEpoch:    e.snapshotEpoch + 1,
			createMs:         e.createMs,
		}
		return next, true, nil
	})
	return err
}

// Delete removes k's state (Persister.Delete); an absent key is not an
// error.
func (c *Coordinator) Delete(ctx context.Context, k share.Key) error {
	s, err := c.shardFor(k)
	if err != nil {
		return err
	}
	_, err = s.do(ctx, k, func(e *entry) (*entry, bool, error) {
		switch {
		case k.Partition < 0:
			return nil, false, kerr.InvalidRequest
		case !c.exists(k):
			return nil, false, kerr.UnknownTopicOrPartition
		}
		return nil, e != nil, nil
	})
	return err
}

// ReadSummary returns k's state without fencing anything
// (Persister.ReadSummary).
func (c *Coordinator) ReadSummary(ctx context.Context, k share.Key) (share.State, bool, error) {
	sum, ok, err := c.Summary(ctx, k)
	return sum.State, ok, err
}

// Summary is ReadSummary with the DeliveryCompleteCount last written.
func (c *Coordinator) Summary(ctx context.Context, k share.Key) (Summary, bool, error) {
	s, err := c.shardFor(k)
	if err != nil {
		return Summary{}, false, err
	}
	e, err := s.do(ctx, k, func(e *entry) (*entry, bool, error) {
		switch {
		case k.Partition < 0:
			return nil, false, kerr.InvalidRequest
		case !c.exists(k):
			return nil, false, kerr.UnknownTopicOrPartition
		}
		return e, false, nil
	})
	if err != nil || e == nil {
		return Summary{DeliveryCompleteCount: -1}, false, err
	}
	e = e.clone()
	return Summary{State: e.st, DeliveryCompleteCount: e.deliveryComplete}, true, nil
}

// exists reports whether k's topic partition exists.
func (c *Coordinator) exists(k share.Key) bool { return c.opts.PartitionExists(k.TopicID, k.Partition) }

// errUninitializedWrite is Kafka 4.4's answer to a write to a
// share-partition never initialized: INVALID_REQUEST with this message.
var errUninitializedWrite = fmt.Errorf("%w: %s", kerr.InvalidRequest, WriteUninitializedMessage)

// WriteUninitializedMessage is the error message of Kafka 4.4's
// INVALID_REQUEST to a WriteShareGroupState of a share-partition never
// initialized.
const WriteUninitializedMessage = "Write operation on uninitialized share partition not allowed."

// ErrorCode returns the Kafka error code of an error from the
// Coordinator's methods (0 for nil; UNKNOWN_SERVER_ERROR for errors that
// are not Kafka's) and the message to send with it, if any.
func ErrorCode(err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.UnknownServerError.Code, nil
	}
	if errors.Is(err, errUninitializedWrite) {
		msg := WriteUninitializedMessage
		return ke.Code, &msg
	}
	return ke.Code, nil
}

// ReadUninitializedMessage is the error message of Kafka 4.4's
// INVALID_REQUEST to a ReadShareGroupState of a share-partition never
// initialized; the Persister reads it as "not initialized".
const ReadUninitializedMessage = "Read operation on uninitialized share partition not allowed."

// validBatches refuses inverted batches and unknown delivery states.
// Overlapping batches are allowed: clipBatches merges them, later ones
// winning, as Kafka's coordinator merges what a leader sends.
func validBatches(bs []share.Batch) error {
	for _, b := range bs {
		if b.FirstOffset > b.LastOffset || b.FirstOffset < 0 {
			return kerr.InvalidRequest
		}
		switch b.DeliveryState {
		case share.StateAvailable, share.StateAcquired, share.StateAcknowledged, share.StateArchived:
		default:
			return kerr.InvalidRequest
		}
	}
	return nil
}

// clipBatches returns bs in offset order without overlaps (a later batch
// of bs wins over an earlier one) and without what lies below start,
// Acquired written as Available (persister.go: an acquisition does not
// survive a change of leader).
func clipBatches(bs []share.Batch, start int64) []share.Batch {
	var out []share.Batch
	sorted := true
	for i, b := range bs {
		if b.DeliveryState == share.StateAcquired {
			b.DeliveryState = share.StateAvailable
		}
		if i > 0 && b.FirstOffset <= bs[i-1].LastOffset {
			sorted = false
		}
		out = append(out, b)
	}
	if !sorted {
		out = paint(out)
	}
	if start < 0 {
		return out
	}
	return overlay(out, nil, start)
}

func (e *entry) clone() *entry {
	c := *e
	c.st.Batches = append([]share.Batch(nil), e.st.Batches...)
	return &c
}
