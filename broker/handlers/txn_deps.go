package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
//
// A partition led by another broker gets its marker through that broker's
// WriteTxnMarkers (one request per broker), as Kafka's transaction marker
// channel sends them.
func (m MarkerWriter) WriteMarkers(ctx context.Context, producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, partitions []txn.TopicPartition) map[txn.TopicPartition]int16 {
	out := make(map[txn.TopicPartition]int16, len(partitions))
	img := m.D.Controller.Image()
	remote := map[int32][]txn.TopicPartition{}
	for _, tp := range partitions {
		if m.D.SendToBroker != nil && m.D.Config != nil {
			if t := topicByName(img, tp.Topic); t != nil && tp.Partition >= 0 && int(tp.Partition) < len(t.Partitions) {
				if leader := t.Partitions[tp.Partition].Leader; leader >= 0 && leader != m.D.Config.NodeID {
					remote[leader] = append(remote[leader], tp)
					continue
				}
			}
		}
		out[tp] = m.D.writeMarker(ctx, producerID, producerEpoch, commit, coordinatorEpoch, tp)
	}
	for leader, tps := range remote {
		m.D.sendMarkers(ctx, leader, producerID, producerEpoch, commit, coordinatorEpoch, tps, out)
	}
	return out
}

// sendMarkers writes the markers of tps through broker leader's
// WriteTxnMarkers and records each partition's code in out; a failed
// request is NOT_LEADER_OR_FOLLOWER for all of them (the coordinator
// retries, and by then the image may name another leader).
func (d *Deps) sendMarkers(ctx context.Context, leader int32, producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, tps []txn.TopicPartition, out map[txn.TopicPartition]int16) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = producerID, producerEpoch, commit, coordinatorEpoch
	byTopic := map[string]int{}
	for _, tp := range tps {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(mk.Topics)
			byTopic[tp.Topic] = i
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic = tp.Topic
			mk.Topics = append(mk.Topics, mt)
		}
		mk.Topics[i].Partitions = append(mk.Topics[i].Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, mk)
	for _, tp := range tps {
		out[tp] = kerr.NotLeaderForPartition.Code
	}
	resp, err := d.SendToBroker(ctx, leader, req)
	if err != nil {
		d.Logger.Warn("cannot send transaction markers to the partition leader", "broker", leader, "producer", producerID, "err", err)
		return
	}
	for _, rm := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				out[storage.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = rp.ErrorCode
			}
		}
	}
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
