package coordinator

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// CommitWaiter is implemented by a Log whose records can sit in the log
// uncommitted: a replicated partition, whose appends (PipelinedLog) stay
// past the high watermark until the ISR has them. The
// coordinator then holds the answers of heartbeats, JoinGroup, SyncGroup,
// LeaveGroup and OffsetFetch with require_stable until every write its
// shard made before them is committed (commitBarrier). A Log without it
// (one node, a test's memory log) commits every append before Append
// returns, so there is nothing to wait for.
type CommitWaiter interface {
	// WaitCommitted returns nil once the partition's high watermark
	// reaches offset. Otherwise it returns an error wrapping the Kafka
	// error (*kerr.Error): REQUEST_TIMED_OUT when the coordinator's write
	// timeout (offsets.commit.timeout.ms) or ctx ran out first,
	// NOT_LEADER_OR_FOLLOWER when this node no longer leads the
	// partition.
	WaitCommitted(ctx context.Context, offset int64) error
}

// commitBarrier holds a response until the shard's writes up to offset
// (an end offset the shard stored in written) are committed, as Kafka's
// CoordinatorRuntime defers the answer of a write operation until the
// high watermark passes the last offset its shard wrote before it. It
// returns the error code to answer instead, 0 when committed.
//
// It runs on the caller's goroutine, never the shard's: a coordinator cut
// off from its replicas holds each answer up to the write timeout, and
// the shard keeps serving meanwhile (its own writes fail the same way).
//
// Without it, a coordinator cut off from the other replicas failed each
// offset commit after offsets.commit.timeout.ms and answered the next
// heartbeat from its memory, so its members went on consuming until the
// cut healed while the new coordinator, elsewhere, gave their partitions
// to others. With it the heartbeat fails too, and the member looks for
// the coordinator again.
//
// When the shard has appended to an EpochPipelinedLog the wait is in the
// leader epoch of its last append: a node that no longer leads the
// partition in that epoch may have truncated the writes, so the answer
// fails (NOT_COORDINATOR) even when the high watermark passed offset.
// The epoch is read here, after the caller took offset: a later append
// can only have moved it to a later epoch of a node still leading, and
// if that epoch ended too the wait fails.
func (s *shard) commitBarrier(ctx context.Context, offset int64) int16 {
	w, ok := s.log.(CommitWaiter)
	if !ok {
		return 0
	}
	wait := w.WaitCommitted
	if el, ok := s.log.(EpochPipelinedLog); ok {
		if e := s.writeEpoch.Load(); e >= 0 {
			wait = func(ctx context.Context, offset int64) error { return el.WaitCommittedInEpoch(ctx, int32(e), offset) }
		}
	}
	if err := wait(ctx, offset); err != nil {
		s.logger.Debug("coordinator: answer held for uncommitted writes failed", "offset", offset, "err", err)
		return writeError(err).Code
	}
	return 0
}

// noteWritten records the log end offset after a write attempt, failed or
// not: a write past the high watermark is in the log and may yet be
// committed, so later answers wait for it too.
// REQUIRES: on the shard goroutine.
func (s *shard) noteWritten() {
	s.written.Store(s.log.LogEndOffset())
}

// writeError is the Kafka error code a client gets when a write of its
// request fails, or when its answer waited for earlier writes that were
// not committed in time, as Kafka 4.4's coordinators map append errors
// (CoordinatorOperationExceptionHelper): NOT_ENOUGH_REPLICAS,
// REQUEST_TIMED_OUT and UNKNOWN_TOPIC_OR_PARTITION answer
// COORDINATOR_NOT_AVAILABLE; NOT_LEADER_OR_FOLLOWER and
// KAFKA_STORAGE_ERROR answer NOT_COORDINATOR (the partition moved or its
// disk failed: look the coordinator up again); a batch over the size
// limit (MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_FETCH_SIZE, or
// our own ErrRecordTooLarge) answers UNKNOWN_SERVER_ERROR, which the
// client cannot fix by retrying. Any other failure, a Kafka error or not,
// answers COORDINATOR_NOT_AVAILABLE, which the client retries (Kafka
// passes other Kafka errors through; the partition layer gives ours none
// that a client could act on).
func writeError(err error) *kerr.Error {
	if errors.Is(err, ErrRecordTooLarge) {
		return kerr.UnknownServerError
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
			return kerr.NotCoordinator
		case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
			return kerr.UnknownServerError
		}
	}
	return kerr.CoordinatorNotAvailable
}

// callWrite runs write on the shard goroutine and answers it as a write:
// when write reports that it answered without an error, only once what
// the shard wrote by then, write's records and every earlier write, is
// committed (commitBarrier). It returns the error code of the call or of
// the barrier (0: none).
func (s *shard) callWrite(ctx context.Context, write func() (ok bool)) int16 {
	var written int64
	ok := false
	code := s.call(ctx, func() {
		ok = write()
		written = s.written.Load()
	})
	if code == 0 && ok {
		code = s.commitBarrier(ctx, written)
	}
	return code
}
