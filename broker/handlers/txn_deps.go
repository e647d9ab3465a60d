package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/txn"
	"github.com/samsa-broker/samsa/storage"
)

// Transactions (KIP-98): the handlers of keys 24-28, 61, 65 and 66 hand
// their requests to the transaction coordinator (coordinator/txn) and the
// group coordinator; this file holds what they share, and the marker
// writer the transaction coordinator calls to end a transaction in the
// partitions it touched.

// txnCoordinator returns the transaction coordinator or nil.
func txnCoordinator(d *Deps) *txn.Coordinator { return d.Transactions }

// MarkerWriter writes commit and abort markers for the transaction
// coordinator: a control batch appended to each data partition (through
// the partition's producer state, so the marker's epoch fences older
// producers), and for __consumer_offsets partitions the group
// coordinator's CompleteTxn, which writes the marker and makes the
// transaction's offsets visible or drops them.
type MarkerWriter struct{ D *Deps }

var _ txn.MarkerWriter = MarkerWriter{}

// WriteMarkers implements txn.MarkerWriter. Partitions that no longer
// exist (the topic was deleted) are reported as written, as Kafka's
// marker channel drops them.
func (m MarkerWriter) WriteMarkers(ctx context.Context, producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, partitions []txn.TopicPartition) map[txn.TopicPartition]int16 {
	out := make(map[txn.TopicPartition]int16, len(partitions))
	for _, tp := range partitions {
		out[tp] = m.D.writeMarker(ctx, producerID, producerEpoch, commit, coordinatorEpoch, tp)
	}
	return out
}

// writeMarker writes one marker and returns a Kafka error code.
func (d *Deps) writeMarker(ctx context.Context, producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, tp storage.TopicPartition) int16 {
	img := d.Controller.Image()
	t := topicByName(img, tp.Topic)
	if t == nil || int(tp.Partition) >= len(t.Partitions) || tp.Partition < 0 {
		return 0
	}
	if tp.Topic == coordinator.OffsetsTopic {
		c := groupCoordinator(d)
		if c == nil {
			return kerr.CoordinatorNotAvailable.Code
		}
		return c.CompleteTxn(ctx, tp.Partition, producerID, producerEpoch, commit, coordinatorEpoch)
	}
	ref := d.lookupPartition(img, t, tp.Partition)
	if ref.code != 0 {
		return ref.code
	}
	// Markers are written with acks=-1, as Kafka's WriteTxnMarkers: the
	// transaction is complete once the ISR has its markers.
	var code int16
	var last int64 = -1
	_, epoch, lcode, err := ref.replica.AppendAsLeader(-1, func(l *storage.Log, leaderEpoch int32) (storage.AppendInfo, error) {
		marker := storage.ControlMarker{
			ProducerID: producerID, ProducerEpoch: producerEpoch, Commit: commit,
			CoordinatorEpoch: coordinatorEpoch, LeaderEpoch: leaderEpoch, Timestamp: d.Now().UnixMilli(),
		}
		doAppend := func() (storage.AppendInfo, error) {
			info, err := l.AppendControl(marker)
			if err == nil {
				last = info.LastOffset
			}
			return info, err
		}
		if d.Idempotence != nil {
			var err error
			code, err = d.Idempotence.appendMarker(tp, l, producerID, producerEpoch, coordinatorEpoch, d.Now(), doAppend)
			return storage.AppendInfo{}, err
		}
		return doAppend()
	})
	if err != nil {
		d.Logger.Error("writing a transaction marker failed", "topic", tp.Topic, "partition", tp.Partition, "producer", producerID, "err", err)
		return kerr.KafkaStorageError.Code
	}
	if lcode != 0 {
		return lcode
	}
	if code == 0 && last >= 0 {
		code = ref.replica.WaitForHighWatermark(ctx, epoch, last+1)
	}
	return code
}
