package replica

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// ErrNotCommitted is returned by CoordinatorLog.Append when the append
// was refused or not replicated to the ISR in time; it wraps the Kafka
// error.
var ErrNotCommitted = errors.New("replica: append not committed")

// CoordinatorLog is the log of an internal-topic partition as the group
// and transaction coordinators use it (coordinator.Log, txn.Log): an
// append is a leader append with acks=-1 that returns once the ISR has
// it, as Kafka's coordinators write.
type CoordinatorLog struct {
	p       *Partition
	timeout time.Duration
}

// CoordinatorLog returns the partition's coordinator log; appends wait at
// most timeout (offsets.commit.timeout.ms; 5 s if <= 0) for the ISR.
func (p *Partition) CoordinatorLog(timeout time.Duration) CoordinatorLog {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return CoordinatorLog{p: p, timeout: timeout}
}

// Append writes batch as leader, stamped with the leader epoch, and
// waits until the high watermark passes it.
func (c CoordinatorLog) Append(batch []byte) error {
	info, epoch, code, err := c.p.AppendAsLeader(-1, func(l *storage.Log, e int32) (storage.AppendInfo, error) {
		if len(batch) >= wire.BatchHeaderSize {
			wire.SetPartitionLeaderEpoch(batch, e)
		}
		return l.Append(batch)
	})
	if err != nil {
		return err
	}
	if code == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		defer cancel()
		code = c.p.WaitForHighWatermark(ctx, epoch, info.LastOffset+1)
	}
	if code != 0 {
		return fmt.Errorf("%w: %w", ErrNotCommitted, kerr.ErrorForCode(code))
	}
	return nil
}

// WaitCommitted waits, at most the append timeout, until the high
// watermark reaches offset (coordinator.CommitWaiter): the group
// coordinator holds a heartbeat's answer until its shard's earlier writes
// are committed, as Kafka's CoordinatorRuntime does. The error wraps
// REQUEST_TIMED_OUT when the time ran out, NOT_LEADER_OR_FOLLOWER when
// this node does not lead the partition, even when the high watermark
// passed offset: a node that became a follower moves its high watermark
// over the new leader's records, past writes of its own it truncated. A
// shrunk ISR does not matter here: what is below the high watermark is
// committed. Writes whose leader epoch is known wait with
// WaitCommittedInEpoch.
func (c CoordinatorLog) WaitCommitted(ctx context.Context, offset int64) error {
	_, epoch := c.p.Leader() // WaitForHighWatermark checks it is ours
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	code := c.p.WaitForHighWatermark(ctx, epoch, offset)
	if code != 0 && code != kerr.NotEnoughReplicasAfterAppend.Code {
		return fmt.Errorf("%w: %w", ErrNotCommitted, kerr.ErrorForCode(code))
	}
	return nil
}

// Read reads the log (coordinator.Log).
func (c CoordinatorLog) Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error) {
	return c.p.log.Read(offset, maxBytes, maxOffset, minOneBatch)
}

// LogStartOffset returns the log start offset.
func (c CoordinatorLog) LogStartOffset() int64 { return c.p.log.LogStartOffset() }

// LogEndOffset returns the log end offset.
func (c CoordinatorLog) LogEndOffset() int64 { return c.p.log.LogEndOffset() }
