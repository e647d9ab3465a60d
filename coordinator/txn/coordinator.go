package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/internal/shards"
	"github.com/samsa-broker/samsa/storage"
)

// TopicPartition names a partition.
type TopicPartition = storage.TopicPartition

// Log is the slice of a __transaction_state partition the coordinator
// uses, the same shape as coordinator.Log. A Log that is also a
// coordinator.PipelinedLog (a replicated partition's leader) gets its
// writes pipelined (pipeline.go).
type Log interface {
	// Append writes one record batch and returns once it is committed
	// (durable and replicated as the partition requires).
	Append(batch []byte) error
	// Read returns whole batches from offset on, at most maxBytes unless
	// minOneBatch, none at or past maxOffset.
	Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error)
	LogStartOffset() int64
	LogEndOffset() int64
}

// StorageLog adapts a __transaction_state partition's storage.Log to Log:
// an append is committed once it is in the log (single node), and the
// high watermark follows it, as coordinator.StorageLog does.
func StorageLog(l *storage.Log) Log { return coordinator.StorageLog(l) }

// MarkerWriter writes commit/abort markers durably (the broker appends
// control batches to data partitions and, for __consumer_offsets
// partitions, completes the group's transactional offsets). It returns a
// Kafka error code per partition (0 = written); a partition missing from
// the map counts as not written. It must return soon after ctx ends.
type MarkerWriter interface {
	WriteMarkers(ctx context.Context, producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, partitions []TopicPartition) map[TopicPartition]int16
}

// MarkerWriterFunc adapts a function to MarkerWriter.
type MarkerWriterFunc func(ctx context.Context, producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, partitions []TopicPartition) map[TopicPartition]int16

// WriteMarkers calls f.
func (f MarkerWriterFunc) WriteMarkers(ctx context.Context, producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, partitions []TopicPartition) map[TopicPartition]int16 {
	return f(ctx, producerID, producerEpoch, commit, coordinatorEpoch, partitions)
}

// ProducerIDs hands out producer ids that never repeat
// (storage.ProducerIDAllocator).
type ProducerIDs interface{ Next() (int64, error) }

// Options configures a Coordinator. Zero durations take Kafka's defaults.
type Options struct {
	// NumPartitions is transaction.state.log.num.partitions (default 50).
	NumPartitions int32
	// Log returns the local __transaction_state partition p, false if this
	// node does not hold it.
	Log func(partition int32) (Log, bool)
	// ProducerIDs is the durable producer id allocator (required).
	ProducerIDs ProducerIDs
	// Markers writes transaction markers (required).
	Markers MarkerWriter
	// PartitionExists reports whether a data partition exists, for
	// AddPartitionsToTxn, and drops markers for partitions deleted since
	// (nil: every partition exists). __consumer_offsets partitions are
	// never asked about.
	PartitionExists func(topic string, partition int32) bool
	// CoordinatorEpoch is the leader epoch of a __transaction_state
	// partition, sent with markers (nil: 0).
	CoordinatorEpoch func(partition int32) int32
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger

	MaxTimeout            time.Duration // transaction.max.timeout.ms, default 15 min
	IDExpiration          time.Duration // transactional.id.expiration.ms, default 7 days
	AbortTimedOutInterval time.Duration // transaction.abort.timed.out.transaction.cleanup.interval.ms, default 10 s
	RemoveExpiredInterval time.Duration // transaction.remove.expired.transaction.cleanup.interval.ms, default 1 h
	// MarkerRetryBackoff is the wait before markers that failed are sent
	// again (default 100 ms, Kafka's retry.backoff.ms).
	MarkerRetryBackoff time.Duration
	// WriteTimeout bounds how long a request waits, from its arrival,
	// for its writes to be committed (then COORDINATOR_NOT_AVAILABLE)
	// and, EndTxn and InitProducerId, for the first marker round
	// (default 5 s). Kafka waits up to the transaction's own timeout for
	// a write, longer than a client's request.timeout.ms; samsa answers
	// within the client's request timeout so the client hears why.
	WriteTimeout time.Duration
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
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = 15 * time.Minute
	}
	if o.IDExpiration <= 0 {
		o.IDExpiration = 7 * 24 * time.Hour
	}
	if o.AbortTimedOutInterval <= 0 {
		o.AbortTimedOutInterval = 10 * time.Second
	}
	if o.RemoveExpiredInterval <= 0 {
		o.RemoveExpiredInterval = time.Hour
	}
	if o.MarkerRetryBackoff <= 0 {
		o.MarkerRetryBackoff = 100 * time.Millisecond
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 5 * time.Second
	}
	if o.PartitionExists == nil {
		o.PartitionExists = func(string, int32) bool { return true }
	}
	if o.CoordinatorEpoch == nil {
		o.CoordinatorEpoch = func(int32) int32 { return 0 }
	}
}

// Coordinator is the transaction coordinator. It owns the transactional
// ids of the __transaction_state partitions it has loaded, one goroutine
// per partition. Its methods are safe for concurrent use.
type Coordinator struct {
	opts   Options
	logger *slog.Logger

	shards *shards.Set[*shard] // by __transaction_state partition
}

// New returns a Coordinator with no partition loaded.
func New(o Options) (*Coordinator, error) {
	o.setDefaults()
	switch {
	case o.Log == nil:
		return nil, fmt.Errorf("%w: Options.Log is required", ErrOptions)
	case o.ProducerIDs == nil:
		return nil, fmt.Errorf("%w: Options.ProducerIDs is required", ErrOptions)
	case o.Markers == nil:
		return nil, fmt.Errorf("%w: Options.Markers is required", ErrOptions)
	}
	c := &Coordinator{opts: o, logger: o.Logger}
	c.shards = shards.New[*shard]()
	return c, nil
}

func (c *Coordinator) now() time.Time { return c.opts.Now() }

// NumPartitions returns transaction.state.log.num.partitions.
func (c *Coordinator) NumPartitions() int32 { return c.opts.NumPartitions }

// PartitionFor returns the __transaction_state partition of a
// transactional id, as Kafka computes it (abs(hashCode) % partitions).
func (c *Coordinator) PartitionFor(transactionalID string) int32 {
	return coordinator.PartitionFor(transactionalID, c.opts.NumPartitions)
}

// Owns reports whether this coordinator has loaded (or is loading) the
// partition of transactionalID, for FindCoordinator key type 1.
func (c *Coordinator) Owns(transactionalID string) bool {
	_, ok := c.shards.Get(c.PartitionFor(transactionalID))
	return ok
}

// LoadAll loads every partition Options.Log returns: what a single node,
// which leads all of them, does at start.
func (c *Coordinator) LoadAll() error {
	for p := range c.opts.NumPartitions {
		if log, ok := c.opts.Log(p); ok {
			if err := c.loadPartition(p, log); err != nil {
				return err
			}
		}
	}
	return nil
}

// LoadPartition starts serving the transactional ids of one partition,
// after reading it in the background (requests meanwhile get
// COORDINATOR_LOAD_IN_PROGRESS). Transactions found in PrepareCommit or
// PrepareAbort are completed: their markers are sent again, then the
// Complete state is written. Ongoing ones keep their start time, so their
// timeout runs on.
func (c *Coordinator) LoadPartition(p int32) error {
	if p < 0 || p >= c.opts.NumPartitions {
		return fmt.Errorf("%w: partition %d of %d", ErrNoPartition, p, c.opts.NumPartitions)
	}
	log, ok := c.opts.Log(p)
	if !ok {
		return fmt.Errorf("%w: partition %d", ErrNoPartition, p)
	}
	return c.loadPartition(p, log)
}

func (c *Coordinator) loadPartition(p int32, log Log) error {
	if !c.shards.Load(p, func() *shard { return newShard(c, p, log) }) {
		return ErrClosed
	}
	return nil
}

// UnloadPartition stops serving one partition: its ids get NOT_COORDINATOR,
// marker writes in flight are cancelled (the next leader resends them).
func (c *Coordinator) UnloadPartition(p int32) { c.shards.Unload(p) }

// WaitLoaded waits until every loaded partition finished reading its log,
// for tests and start-up.
func (c *Coordinator) WaitLoaded(ctx context.Context) error { return c.shards.WaitLoaded(ctx) }

// Close stops every partition and waits for their goroutines.
func (c *Coordinator) Close() { c.shards.Close() }

// shardFor returns the shard owning transactionalID, or NOT_COORDINATOR.
func (c *Coordinator) shardFor(transactionalID string) (*shard, int16) {
	s, ok := c.shards.Get(c.PartitionFor(transactionalID))
	if !ok {
		return nil, kerr.NotCoordinator.Code
	}
	return s, 0
}

// shardList returns the loaded shards in partition order.
func (c *Coordinator) shardList() []*shard { return c.shards.List() }

// Internal errors of the transaction coordinator.
var (
	// ErrOptions is returned by New for incomplete Options.
	ErrOptions = errors.New("txn: invalid options")
	// ErrNoPartition is returned by LoadPartition for a partition this node
	// does not hold.
	ErrNoPartition = errors.New("txn: no such __transaction_state partition")
	// ErrCorrupt is wrapped when a __transaction_state record does not
	// decode.
	ErrCorrupt = errors.New("txn: corrupt record")
	// ErrLoad is wrapped when a partition cannot be loaded.
	ErrLoad = errors.New("txn: load failed")
	// ErrWrite is wrapped when appending to __transaction_state fails.
	ErrWrite = errors.New("txn: write failed")
	// ErrClosed is returned by LoadPartition after Close.
	ErrClosed = errors.New("txn: closed")
)
