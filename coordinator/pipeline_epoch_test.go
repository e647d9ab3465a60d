package coordinator

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/twmb/franz-go/pkg/kerr"
)

// epochReplicatedLog is a replicatedLog that leads in one leader epoch at
// a time (EpochPipelinedLog): moving epoch stands for the node losing the
// partition, after which its high watermark moves on over the new
// leader's records as a follower's does.
type epochReplicatedLog struct {
	*replicatedLog
	epoch atomic.Int32
}

func (l *epochReplicatedLog) AppendUncommittedInEpoch(batch []byte) (int64, int32, error) {
	e := l.epoch.Load()
	end, err := l.AppendUncommitted(batch)
	return end, e, err
}

func (l *epochReplicatedLog) WaitCommittedInEpoch(ctx context.Context, epoch int32, offset int64) error {
	if err := l.WaitCommitted(ctx, offset); err != nil {
		return err
	}
	if l.epoch.Load() != epoch {
		return fmt.Errorf("epochlog: %w", kerr.NotLeaderForPartition)
	}
	return nil
}

var _ EpochPipelinedLog = (*epochReplicatedLog)(nil)

// TestAnswerWaitsInTheWriteEpoch: an offset commit appended while the
// coordinator's replicas are cut off, after which the node stops leading
// the partition and its high watermark passes the commit's offset over
// the new leader's records (its own write truncated). The commit must
// fail (NOT_COORDINATOR), not be acknowledged; before the shard waited in
// its write's leader epoch the high watermark alone answered it, and an
// acknowledged commit could be lost.
func TestAnswerWaitsInTheWriteEpoch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := map[int32]*epochReplicatedLog{}
		for p := range int32(testPartitions) {
			logs[p] = &epochReplicatedLog{replicatedLog: newReplicatedLog()}
		}
		c := newTestCoordinator(t, nil, func(o *Options) {
			o.OpenLog = func(p int32) (Log, error) { return logs[p], nil }
		})
		ctx := t.Context()
		const group = "g-epoch"
		log := logs[PartitionFor(group, testPartitions)]
		commit := func(p int32, off int64) int16 {
			return commitCodes(c.OffsetCommit(ctx, commitReq(group, "", -1, "orders", map[int32]int64{p: off})))[0]
		}
		wantCode(t, "commit in epoch 0", commit(0, 5), nil)

		log.set(true, false)
		answered := make(chan int16, 1)
		go func() { answered <- commit(0, 10) }()
		synctest.Wait()
		log.epoch.Store(1)
		log.set(false, false)
		wantCode(t, "commit whose leader epoch ended before it was committed", <-answered, kerr.NotCoordinator)

		// A heartbeat-like wait of a shard that wrote in the ended epoch
		// fails too, however far the high watermark got.
		if _, code := fetchOne(t, c, group, 0, true); code != kerr.NotCoordinator.Code {
			t.Fatalf("require_stable fetch after the epoch ended: %s, want NOT_COORDINATOR", errName(code))
		}
	})
}
