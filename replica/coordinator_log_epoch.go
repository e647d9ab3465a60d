package replica

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// AppendUncommittedInEpoch is AppendUncommitted that also returns the
// leader epoch the batch was written in, for WaitCommittedInEpoch: the
// transaction coordinator installs a write only once the high watermark
// passes it in that epoch.
func (c CoordinatorLog) AppendUncommittedInEpoch(batch []byte) (end int64, epoch int32, err error) {
	info, epoch, code, err := c.p.AppendAsLeader(-1, func(l *storage.Log, e int32) (storage.AppendInfo, error) {
		if len(batch) >= wire.BatchHeaderSize {
			wire.SetPartitionLeaderEpoch(batch, e)
		}
		return l.Append(batch)
	})
	if err != nil {
		return 0, 0, err
	}
	if code != 0 {
		return 0, 0, fmt.Errorf("%w: %w", ErrNotCommitted, kerr.ErrorForCode(code))
	}
	return info.LastOffset + 1, epoch, nil
}

// WaitCommittedInEpoch is WaitCommitted for a write made in leader epoch
// epoch: it returns nil only while this node still leads the partition in
// that epoch, as Kafka completes an acks=all append only on the leader
// that made it. WaitCommitted answers from the high watermark alone, which
// a node that has become a follower also moves, over records of the new
// leader once its own uncommitted tail was truncated: a write that is no
// longer in the log would count as committed. The error wraps
// NOT_LEADER_OR_FOLLOWER when the node no longer leads in epoch,
// REQUEST_TIMED_OUT when the append timeout or ctx ran out.
func (c CoordinatorLog) WaitCommittedInEpoch(ctx context.Context, epoch int32, offset int64) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	code := c.p.WaitForHighWatermark(ctx, epoch, offset)
	if code != 0 && code != kerr.NotEnoughReplicasAfterAppend.Code {
		return fmt.Errorf("%w: %w", ErrNotCommitted, kerr.ErrorForCode(code))
	}
	return nil
}
