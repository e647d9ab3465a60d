package sharecoord

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator/share"
)

// DeliveryComplete is the DeliveryCompleteCount of a share-partition's
// state (KIP-1226): how many records at or above start (all of them for
// start -1) are acknowledged or archived. A Kafka partition leader sends
// it with each WriteShareGroupState v1; samsa's Persister derives it from
// the batches it writes, which are exactly the leader's in-flight records
// that are not plain available (an acquired record is written as
// available and is not complete). The group coordinator's
// DescribeShareGroupOffsets v1 subtracts it from HWM - start to get Lag.
func DeliveryComplete(batches []share.Batch, start int64) int32 {
	var n int64
	for _, b := range batches {
		if b.DeliveryState != share.StateAcknowledged && b.DeliveryState != share.StateArchived {
			continue
		}
		first := b.FirstOffset
		if start >= 0 && first < start {
			first = start
		}
		if b.LastOffset >= first {
			// Saturating: batches over 2^63 offsets (a hostile
			// WriteShareGroupState) overflowed the sum into garbage.
			span := uint64(b.LastOffset) - uint64(first) // exact: LastOffset >= first
			n = min(n+int64(min(span, math.MaxInt32-1))+1, math.MaxInt32)
		}
	}
	return int32(n)
}

// SummaryReader is implemented by the Persister of NewPersister and by
// *Coordinator: ReadSummary with the DeliveryCompleteCount, which
// share.State does not carry.
type SummaryReader interface {
	Summary(ctx context.Context, k share.Key) (Summary, bool, error)
}

var (
	_ SummaryReader = (*Coordinator)(nil)
	_ SummaryReader = (*router)(nil)
)

// Summary is ReadSummary with the DeliveryCompleteCount (-1 when unknown),
// from this node's coordinator or the ReadShareGroupStateSummary v1 of the
// node leading k's __share_group_state partition.
func (r *router) Summary(ctx context.Context, k share.Key) (sum Summary, ok bool, err error) {
	sum.DeliveryCompleteCount = -1
	err = r.route(ctx, k, func() error {
		var err error
		sum, ok, err = r.o.Local.Summary(ctx, k)
		if ok && uninitializedSummary(sum.State) {
			// As a remote answer reads (below), whichever node leads.
			sum, ok = Summary{DeliveryCompleteCount: -1}, false
		}
		return err
	}, func(leader int32) error {
		req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		req.GroupID = k.Group
		t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
		t.TopicID = k.TopicID
		p := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		p.Partition = k.Partition
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		resp, err := r.send(ctx, leader, req)
		if err != nil {
			return err
		}
		for _, t := range resp.(*kmsg.ReadShareGroupStateSummaryResponse).Topics {
			for _, p := range t.Partitions {
				if t.TopicID != k.TopicID || p.Partition != k.Partition {
					continue
				}
				if err := codeErr(p.ErrorCode, p.ErrorMessage); err != nil {
					return err
				}
				st := share.State{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset}
				// Kafka answers a share-partition never initialized with
				// start offset -1 and epochs 0 (see uninitializedSummary).
				ok = !uninitializedSummary(st)
				sum = Summary{DeliveryCompleteCount: -1}
				if ok {
					sum = Summary{State: st, DeliveryCompleteCount: p.DeliveryCompleteCount}
				}
				return nil
			}
		}
		return errShortResponse
	})
	return sum, ok, err
}
