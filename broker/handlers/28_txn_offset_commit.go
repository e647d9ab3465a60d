package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/storage"
)

// TxnOffsetCommit, key 28, versions 0-6.
//
//   - Stages a transaction's offsets in the group's __consumer_offsets
//     partition (a transactional batch); OffsetFetch shows them only after
//     the transaction commits (the marker from EndTxn), and an abort drops
//     them. v3 adds generation, member id and group.instance.id, checked
//     like OffsetCommit's (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
//     FENCED_INSTANCE_ID); v3 is flexible; v4 adds TRANSACTION_ABORTABLE.
//   - With transaction.partition.verification.enable (default true) the
//     group's offsets partition must have been added by AddOffsetsToTxn,
//     else the partitions to stage fail with the transaction coordinator's
//     answer (INVALID_TXN_STATE, PRODUCER_FENCED, ...).
//   - v5 is transaction version 2 (KIP-890 part 2): the client sends no
//     AddOffsetsToTxn, so the group's partition is added to the
//     transaction here (starting one if none is ongoing).
//   - v6 names topics by id (KIP-1319, as OffsetCommit v10): an unknown or
//     zero id is UNKNOWN_TOPIC_ID; the answer carries the ids. From v6 a
//     member's commit to a group that does not exist is GROUP_ID_NOT_FOUND
//     and a stale KIP-848 member epoch STALE_MEMBER_EPOCH (both
//     ILLEGAL_GENERATION before, as Kafka 4.4's OffsetMetadataManager).
//   - Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION (v6:
//     UNKNOWN_TOPIC_ID) and are not staged, as in OffsetCommit. As in
//     Kafka 4.4's KafkaApis they are sorted out first: when no partition
//     is left, nothing is verified nor added to the transaction.
func handleTxnOffsetCommit(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.TxnOffsetCommitRequest)
	img := d.Controller.Image()

	// codes holds each requested partition's answer; the partitions to
	// stage go to the coordinator in filtered, in request order, and
	// staged records where each came from.
	codes := make([][]int16, len(req.Topics))
	filtered := *req
	filtered.Topics = nil
	type position struct{ topic, partition int }
	var staged []position
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
		var topic *controller.Topic
		missing := kerr.UnknownTopicOrPartition.Code
		if req.Version >= 6 {
			topic, missing = topicByID(img, t.TopicID), kerr.UnknownTopicID.Code
		} else {
			topic = topicByName(img, t.Topic)
		}
		ft := t
		ft.Partitions = nil
		if topic != nil {
			ft.Topic = topic.Name
		}
		for j, p := range t.Partitions {
			switch {
			case topic == nil:
				codes[i][j] = missing
			case p.Partition < 0 || int(p.Partition) >= len(topic.Partitions):
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			default:
				ft.Partitions = append(ft.Partitions, p)
				staged = append(staged, position{i, j})
			}
		}
		if len(ft.Partitions) > 0 {
			filtered.Topics = append(filtered.Topics, ft)
		}
	}
	setStaged := func(code int16) {
		for _, at := range staged {
			codes[at.topic][at.partition] = code
		}
	}

	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	if len(staged) > 0 {
		resp.ThrottleMillis = d.stageTxnOffsets(&filtered, func(got *kmsg.TxnOffsetCommitResponse, code int16) {
			if got == nil {
				setStaged(code)
				return
			}
			k := 0
			for _, t := range got.Topics {
				for _, p := range t.Partitions {
					if k < len(staged) {
						codes[staged[k].topic][staged[k].partition] = p.ErrorCode
					}
					k++
				}
			}
		})
	}
	for i, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for j, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: codes[i][j]})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// stageTxnOffsets verifies the transaction (or, from v5, adds the group's
// offsets partition to it) and hands req, the partitions that exist, to
// the group coordinator. done gets the coordinator's answer, or nil and
// the code every partition fails with. It returns the throttle time.
func (d *Deps) stageTxnOffsets(req *kmsg.TxnOffsetCommitRequest, done func(got *kmsg.TxnOffsetCommitResponse, code int16)) int32 {
	g, tc := groupCoordinator(d), txnCoordinator(d)
	if g == nil || tc == nil {
		done(nil, kerr.CoordinatorNotAvailable.Code)
		return 0
	}
	ctx := context.Background()
	tp := storage.TopicPartition{Topic: coordinator.OffsetsTopic, Partition: coordinator.PartitionFor(req.Group, g.NumPartitions())}
	switch {
	case req.Version >= 5:
		// Transaction version 2: no AddOffsetsToTxn came first.
		// The transaction coordinator may be on another broker than
		// this group coordinator: txnCheck asks it there.
		if code := d.txnCheck(ctx, tc, true, req.TransactionalID, req.ProducerID, req.ProducerEpoch, tp); code != 0 {
			done(nil, code)
			return 0
		}
	case d.Config.TransactionPartitionVerificationEnable:
		if code := d.txnCheck(ctx, tc, false, req.TransactionalID, req.ProducerID, req.ProducerEpoch, tp); code != 0 {
			done(nil, code)
			return 0
		}
	}
	got := g.TxnOffsetCommit(ctx, req)
	done(got, 0)
	return got.ThrottleMillis
}
