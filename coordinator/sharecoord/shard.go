package sharecoord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/internal/shards"
	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/wire"
)

// maxBarriers bounds the shard's map of last writes per key before the
// committed ones are dropped from it.
const maxBarriers = 1024

// barrier is the end of a write and the leader epoch it was appended in:
// an answer that depends on the write waits until the high watermark
// passes end in that epoch.
type barrier struct {
	end   int64
	epoch int32
}

// shard owns one __share_group_state partition: the state of its
// share-partitions and every write to its log. One goroutine (run) owns
// the state; callers hand it closures through its gate and wait for their
// writes to commit on their own goroutines, as the group coordinator's
// answers wait in commitBarrier.
type shard struct {
	c         *Coordinator
	partition int32
	log       coordinator.Log
	el        coordinator.EpochPipelinedLog // nil: every Append commits before it returns
	logger    *slog.Logger

	gate  *shards.Gate  // callers' work comes through it (do, keysOf)
	ready chan struct{} // closed when the load ended, well or not

	// Owned by run.
	states map[share.Key]*entry
	// lastWrite is the last write of each key that may not be committed
	// yet (pipelined logs only).
	lastWrite map[share.Key]barrier
}

func newShard(c *Coordinator, partition int32, log coordinator.Log) *shard {
	el, _ := log.(coordinator.EpochPipelinedLog)
	return &shard{
		c:         c,
		partition: partition,
		log:       log,
		el:        el,
		logger:    c.logger.With("partition", partition),
		gate:      shards.NewGate(),
		ready:     make(chan struct{}),
		states:    map[share.Key]*entry{},
		lastWrite: map[share.Key]barrier{},
	}
}

// Ready is closed when the shard's load ended, well or not.
func (s *shard) Ready() <-chan struct{} { return s.ready }

// Done is closed when Run returns.
func (s *shard) Done() <-chan struct{} { return s.gate.Done() }

// Run loads the partition, then serves work until ctx ends (shards.Set
// runs it in a goroutine of its own).
func (s *shard) Run(ctx context.Context) {
	defer s.gate.Close()
	defer s.gate.Unload()
	if err := s.load(); err != nil {
		s.logger.Error("share: loading partition failed", "err", err)
		s.gate.LoadFailed(err)
		close(s.ready)
		<-ctx.Done()
		return
	}
	s.gate.Loaded()
	close(s.ready)
	for {
		select {
		case <-ctx.Done():
			return
		case fn := <-s.gate.Work():
			coordinator.Guard(s.logger, "request", fn)
		}
	}
}

// op decides a request from the key's current state (nil: none): the
// state to answer with, whether to write it (a nil state written is the
// key's tombstone), or the Kafka error to answer. It runs on the shard
// goroutine and must not change e.
type op func(e *entry) (next *entry, write bool, err error)

// do runs fn for k on the shard goroutine, writes what it decided, and
// returns its state once that (and every earlier write of k) is
// committed.
func (s *shard) do(ctx context.Context, k share.Key, fn op) (*entry, error) {
	var r struct {
		e    *entry
		wait barrier
		err  error
	}
	// The gate answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS
	// while the shard does not serve, COORDINATOR_NOT_AVAILABLE when ctx
	// ends first, UNKNOWN_SERVER_ERROR when apply panicked.
	if code := s.gate.Call(ctx, func() { r.e, r.wait, r.err = s.apply(k, fn) }); code != 0 {
		return nil, kerr.ErrorForCode(code)
	}
	if r.err != nil || r.wait.end == 0 || s.el == nil {
		return r.e, r.err
	}
	if err := s.el.WaitCommittedInEpoch(ctx, r.wait.epoch, r.wait.end); err != nil {
		if errors.Is(err, kerr.NotLeaderForPartition) {
			return nil, kerr.NotCoordinator
		}
		return nil, coordinator.WriteError(err)
	}
	return r.e, nil
}

// apply runs fn and, if it decided so, appends and installs its state.
// REQUIRES: on the shard goroutine.
func (s *shard) apply(k share.Key, fn op) (*entry, barrier, error) {
	cur := s.states[k]
	next, write, err := fn(cur)
	if err != nil {
		return nil, barrier{}, err
	}
	if !write {
		return next, s.lastWrite[k], nil
	}
	now := s.c.opts.Now()
	var recs []wire.Record
	if next == nil {
		// Kafka tombstones both keys of a deleted share-partition.
		recs = []wire.Record{{Key: recordKey(recordSnapshot, k)}, {Key: recordKey(recordUpdate, k), OffsetDelta: 1}}
	} else {
		next.writeMs = now.UnixMilli()
		if cur == nil || next.createMs == 0 {
			next.createMs = next.writeMs
		}
		recs = []wire.Record{{Key: recordKey(recordSnapshot, k), Value: snapshotValue(next)}}
	}
	batch, err := encodeBatch(now, recs)
	if err != nil {
		return nil, barrier{}, fmt.Errorf("share: encoding: %w", err)
	}
	var wait barrier
	if s.el != nil {
		end, epoch, err := s.el.AppendUncommittedInEpoch(batch)
		if err != nil {
			s.logger.Warn("share: writing share-partition state failed", "key", CoordinatorKey(k), "err", err)
			return nil, barrier{}, coordinator.WriteError(err)
		}
		wait = barrier{end: end, epoch: epoch}
		s.noteWrite(k, wait)
	} else if err := s.log.Append(batch); err != nil {
		s.logger.Warn("share: writing share-partition state failed", "key", CoordinatorKey(k), "err", err)
		return nil, barrier{}, coordinator.WriteError(err)
	}
	if next == nil {
		delete(s.states, k)
	} else {
		s.states[k] = next
	}
	return next, wait, nil
}

// noteWrite records k's last write, dropping the committed ones when the
// map grows.
// REQUIRES: on the shard goroutine.
func (s *shard) noteWrite(k share.Key, b barrier) {
	s.lastWrite[k] = b
	if len(s.lastWrite) <= maxBarriers {
		return
	}
	hw := s.el.HighWatermark()
	for key, w := range s.lastWrite {
		if w.end <= hw {
			delete(s.lastWrite, key)
		}
	}
}

// load rebuilds the partition's share-partitions by reading its log from
// the start: the last snapshot of each key, the updates after it folded
// in, tombstones applied.
func (s *shard) load() error {
	var skipped, unknown int
	end, err := shards.Replay(s.log, s.partition, ErrLoad, func(data []byte, offset int64) (int64, error) {
		next, err := shards.WalkBatches(data, offset, func(h wire.BatchHeader, batch []byte) {
			if h.IsControl() {
				return
			}
			// Streamed (wire.StreamRecords), keys and values cut at
			// shards.LoadFieldMax bytes; a batch whose records do not
			// all read is skipped whole.
			if err := wire.StreamRecords(batch, shards.LoadFieldMax, func(r *wire.StreamedRecord) {
				switch err := s.replay(shards.Owned(h, r)); {
				case errors.Is(err, errUnknownType):
					unknown++
				case err != nil:
					skipped++
					s.logger.Error("share: skipped a record that does not decode while loading", "offset", h.BaseOffset+int64(r.OffsetDelta),
						"err", shards.CutErr(r, shards.LoadFieldMax, err))
				}
			}); err != nil {
				skipped++
				s.logger.Error("share: skipped a batch that does not decode while loading", "offset", h.BaseOffset, "err", err)
			}
		})
		if err != nil {
			return next, fmt.Errorf("at %d: %w", next, err)
		}
		return next, nil
	})
	if err != nil {
		return err
	}
	if unknown > 0 {
		s.logger.Warn("share: ignored records of unknown types while loading", "records", unknown)
	}
	s.logger.Debug("share: loaded partition", "share_partitions", len(s.states), "skipped", skipped, "end_offset", end)
	return nil
}

// errUnknownType is returned by replay for a record type other than
// ShareSnapshot and ShareUpdate (a newer broker's).
var errUnknownType = errors.New("share: unknown record type")

// replay folds one record into the loading state.
func (s *shard) replay(key, value []byte) error {
	typ, k, err := decodeKey(key)
	if err != nil {
		if len(key) >= 2 && typ != recordSnapshot && typ != recordUpdate {
			return errUnknownType
		}
		return err
	}
	switch typ {
	case recordSnapshot:
		if value == nil {
			delete(s.states, k)
			return nil
		}
		e, err := decodeSnapshot(value)
		if err != nil {
			return err
		}
		if err := checkLoaded(e.st.StartOffset, e.st.Batches); err != nil {
			return err
		}
		s.states[k] = e
	case recordUpdate:
		if value == nil {
			return nil
		}
		u, err := decodeUpdate(value)
		if err != nil {
			return err
		}
		if err := checkLoaded(u.startOffset, u.batches); err != nil {
			return err
		}
		if e := s.states[k]; e != nil && u.snapshotEpoch == e.snapshotEpoch {
			e.apply(u)
		}
	default:
		return errUnknownType
	}
	return nil
}
