package replica

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// AppendUncommitted writes batch as leader, stamped with the leader epoch,
// and returns the log end offset after it without waiting for the ISR
// (coordinator.PipelinedLog): the group coordinator appends its writes in
// order, one after the other, and completes each answer when the high
// watermark passes its end offset (WaitCommitted), as Kafka's
// CoordinatorRuntime does, instead of holding its shard for each write's
// replication. An ISR below min.insync.replicas refuses the append with
// NOT_ENOUGH_REPLICAS, as Append does; the error wraps the Kafka error.
func (c CoordinatorLog) AppendUncommitted(batch []byte) (int64, error) {
	info, _, code, err := c.p.AppendAsLeader(-1, func(l *storage.Log, e int32) (storage.AppendInfo, error) {
		if len(batch) >= wire.BatchHeaderSize {
			wire.SetPartitionLeaderEpoch(batch, e)
		}
		return l.Append(batch)
	})
	if err != nil {
		return 0, err
	}
	if code != 0 {
		return 0, fmt.Errorf("%w: %w", ErrNotCommitted, kerr.ErrorForCode(code))
	}
	return info.LastOffset + 1, nil
}

// HighWatermark returns the partition's high watermark: the shard's
// writes below it are committed.
func (c CoordinatorLog) HighWatermark() int64 { return c.p.log.HighWatermark() }
