package txn

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/wire"
)

// A shard's writes to a replicated __transaction_state partition are
// pipelined, as Kafka's TransactionStateManager appends each transition
// at once and completes it when the high watermark passes it: the shard
// appends a write (coordinator.PipelinedLog) and goes on serving; a
// watcher goroutine reports the high watermark each time it passes the
// oldest write in flight, and only then does the shard install the new
// state and go on with what the write's request does next (answer,
// markers, the Complete write). A request waits for its answer on its
// own goroutine, at most Options.WriteTimeout after it arrived, so
// requests queued at a shard cut off from its replicas each fail at
// their own deadline instead of one write timeout after the one before
// (issue 14).
//
// A write whose answer timed out stays in flight: its batch is in the
// log, so it is installed if the high watermark passes it, as the next
// leader would load it (Kafka instead resets the pending transition and
// keeps the old state in memory, which the log then contradicts). A
// write whose append failed is not in the log and is never installed.
//
// Requests of one transactional id run in order: while a write of the
// id is in flight the next ones wait for it (forID), each at most to its
// own deadline, and one whose caller gave up meanwhile is dropped, not
// run behind the client's back. Requests of other ids do not wait.
// Where Kafka answers CONCURRENT_TRANSACTIONS to a request that finds a
// transition of its id pending, samsa lets it wait for the transition.
//
// A Log that is not a PipelinedLog (one node's storage.Log, tests)
// commits each Append before it returns: writes are installed at once.

// watchRetryBackoff is how long the watcher waits before asking the log
// again after an error other than the wait running out (the partition is
// no longer led here: the shard is about to be unloaded).
const watchRetryBackoff = 100 * time.Millisecond

// txnWrite is a write of one transactional id's state appended to a
// PipelinedLog and not yet committed.
type txnWrite struct {
	id    string
	next  *txnMeta // nil: id's tombstone
	end   int64    // the log end offset after the batch
	epoch int32    // the leader epoch of the append (coordinator.EpochPipelinedLog)
	done  func(code int16)
}

// watchPoint is the oldest write in flight, which the watcher waits for.
type watchPoint struct {
	end   int64
	epoch int32
}

// request is a request's side of its wait for the shard: whether its
// caller gave up (the shard then drops it if it is still queued), and, for
// InitProducerId, whether its answer waits for a write (a timeout then
// answers COORDINATOR_NOT_AVAILABLE) or for markers
// (CONCURRENT_TRANSACTIONS).
type request struct {
	gaveUp        atomic.Bool
	awaitingWrite atomic.Bool
}

// await waits for the shard's answer to r on ch until ctx (the request's
// deadline) ends or the shard stops; then r counts as given up, and an
// answer sent meanwhile still wins. stopped reports the shard stopped.
func await[T any](ctx context.Context, s *shard, r *request, ch <-chan T) (v T, ok, stopped bool) {
	select {
	case v = <-ch:
		return v, true, false
	case <-s.gate.Done():
	case <-ctx.Done():
	}
	r.gaveUp.Store(true)
	select {
	case v = <-ch:
		return v, true, false
	default:
	}
	select {
	case <-s.gate.Done():
		stopped = true
	default:
	}
	return v, false, stopped
}

// timedOutCode is the code of a request that got no answer from its
// shard: NOT_COORDINATOR when the shard stopped (the partition moved),
// else COORDINATOR_NOT_AVAILABLE, as Kafka answers a write that timed
// out (REQUEST_TIMED_OUT from the append).
func timedOutCode(stopped bool) int16 {
	if stopped {
		return kerr.NotCoordinator.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// forID runs fn for a request of id now, or, while a write of id is in
// flight, once the writes of id before it are settled; a request whose
// caller gave up by then is dropped (r nil: never).
// REQUIRES: on the shard goroutine.
func (s *shard) forID(id string, r *request, fn func()) {
	if s.writing[id] == nil {
		fn()
		return
	}
	s.queued[id] = append(s.queued[id], func() {
		if r == nil || !r.gaveUp.Load() {
			fn()
		}
	})
}

// drain runs the requests queued for id until one starts a write of id.
// REQUIRES: on the shard goroutine.
func (s *shard) drain(id string) {
	for s.writing[id] == nil {
		q := s.queued[id]
		if len(q) == 0 {
			delete(s.queued, id)
			return
		}
		fn := q[0]
		q[0] = nil
		s.queued[id] = q[1:]
		fn()
	}
}

// write appends next as id's state (a nil next: id's tombstone) and calls
// done once the write is settled: 0 once it is committed and installed,
// or the code the client gets when the append failed, nothing installed.
// With a PipelinedLog, done runs later, on the shard goroutine, when the
// high watermark passes the batch. done must not rely on anything but
// the shard's state then.
// REQUIRES: on the shard goroutine; no write of id in flight.
func (s *shard) write(id string, next *txnMeta, done func(code int16)) {
	if done == nil {
		done = func(int16) {}
	}
	rec := wire.Record{Key: txnKey(id)}
	if next != nil {
		rec.Value = logValue(next)
	}
	batch, err := encodeBatch(s.now(), []wire.Record{rec})
	if err != nil {
		done(s.writeFailed(id, fmt.Errorf("%w: encoding: %w", ErrWrite, err)))
		return
	}
	if s.pl == nil {
		if err := s.log.Append(batch); err != nil {
			done(s.writeFailed(id, fmt.Errorf("%w: %w", ErrWrite, err)))
			return
		}
		s.install(id, next)
		done(0)
		return
	}
	var end int64
	var epoch int32
	if s.el != nil {
		end, epoch, err = s.el.AppendUncommittedInEpoch(batch)
	} else {
		end, err = s.pl.AppendUncommitted(batch)
	}
	if err != nil {
		done(s.writeFailed(id, fmt.Errorf("%w: %w", ErrWrite, err)))
		return
	}
	w := &txnWrite{id: id, next: next, end: end, epoch: epoch, done: done}
	s.inFlight = append(s.inFlight, w)
	s.writing[id] = w
	if len(s.inFlight) == 1 {
		s.watchFrom(w)
	}
}

// writeFailed logs a write that is not in the log and returns the code
// its request answers, as Kafka 4.4's TransactionStateManager maps
// append errors (coordinator.WriteError).
func (s *shard) writeFailed(id string, err error) int16 {
	s.logger.Warn("txn: writing transaction state failed", "transactional_id", id, "err", err)
	return coordinator.WriteError(err).Code
}

// install makes next id's state (nil: forget id).
// REQUIRES: on the shard goroutine.
func (s *shard) install(id string, next *txnMeta) {
	if next == nil {
		delete(s.txns, id)
	} else {
		s.txns[id] = next
	}
}

// settle installs, in log order, the writes in flight that the high
// watermark hw passed, runs what each write's request does next, and the
// requests of its id that waited for it.
// REQUIRES: on the shard goroutine.
func (s *shard) settle(hw int64) {
	for len(s.inFlight) > 0 && s.inFlight[0].end <= hw {
		w := s.inFlight[0]
		s.inFlight[0] = nil
		s.inFlight = s.inFlight[1:]
		delete(s.writing, w.id)
		s.install(w.id, w.next)
		w.done(0)
		s.drain(w.id)
	}
	if len(s.inFlight) > 0 {
		s.watchFrom(s.inFlight[0])
	}
}

// watchFrom tells the watcher the oldest write in flight.
// REQUIRES: on the shard goroutine.
func (s *shard) watchFrom(w *txnWrite) {
	s.watchTarget.Store(&watchPoint{end: w.end, epoch: w.epoch})
	select {
	case s.watchWake <- struct{}{}:
	default:
	}
}

// watch reports to the shard (committed) how far its writes are
// committed each time the high watermark passes the oldest write in
// flight, until ctx ends: with a coordinator.EpochPipelinedLog the end of that write, once
// the high watermark passed it in its epoch, else the high watermark. It
// waits with WaitCommittedInEpoch or CommitWaiter.WaitCommitted, which
// wake on the partition's own notification; a wait that ran out is
// started again.
func (s *shard) watch(ctx context.Context) {
	reported := int64(-1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.watchWake:
		}
		for target := s.watchTarget.Load(); target.end > reported; target = s.watchTarget.Load() {
			var err error
			committed := target.end
			if s.el != nil {
				err = s.el.WaitCommittedInEpoch(ctx, target.epoch, target.end)
			} else {
				err = s.pl.WaitCommitted(ctx, target.end)
				committed = s.pl.HighWatermark()
			}
			if ctx.Err() != nil {
				return
			}
			if err == nil && committed >= target.end {
				select {
				case s.committed <- committed:
					reported = committed
				case <-ctx.Done():
					return
				}
				continue
			}
			var ke *kerr.Error
			if err == nil || !errors.As(err, &ke) || ke != kerr.RequestTimedOut {
				s.logger.Debug("txn: waiting for writes to commit", "offset", target.end, "leader_epoch", target.epoch, "err", err)
				timer := time.NewTimer(watchRetryBackoff)
				select {
				case <-timer.C:
				case <-ctx.Done():
					timer.Stop()
					return
				}
			}
		}
	}
}
