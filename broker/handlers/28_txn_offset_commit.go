package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/storage"
)

// TxnOffsetCommit, key 28, versions 0-5.
//
//   - Stages a transaction's offsets in the group's __consumer_offsets
//     partition (a transactional batch); OffsetFetch shows them only after
//     the transaction commits (the marker from EndTxn), and an abort drops
//     them. v3 adds generation, member id and group.instance.id, checked
//     like OffsetCommit's (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
//     FENCED_INSTANCE_ID); v3 is flexible; v4 adds TRANSACTION_ABORTABLE.
//   - With transaction.partition.verification.enable (default true) the
//     group's offsets partition must have been added by AddOffsetsToTxn,
//     else the whole request fails with the transaction coordinator's
//     answer (INVALID_TXN_STATE, PRODUCER_FENCED, ...).
//   - v5 is transaction version 2 (KIP-890 part 2): the client sends no
//     AddOffsetsToTxn, so the group's partition is added to the
//     transaction here (starting one if none is ongoing).
//   - Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION and are
//     not staged, as in OffsetCommit.
func handleTxnOffsetCommit(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	fill := func(code func(topic string, partition int32) int16) {
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code(t.Topic, p.Partition)})
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	g, tc := groupCoordinator(d), txnCoordinator(d)
	if g == nil || tc == nil {
		fill(func(string, int32) int16 { return kerr.CoordinatorNotAvailable.Code })
		return resp, nil
	}
	ctx := context.Background()
	tp := storage.TopicPartition{Topic: coordinator.OffsetsTopic, Partition: coordinator.PartitionFor(req.Group, g.NumPartitions())}
	switch {
	case req.Version >= 5:
		// Transaction version 2: no AddOffsetsToTxn came first.
		// The transaction coordinator may be on another broker than
		// this group coordinator: txnCheck asks it there.
		if code := d.txnCheck(ctx, tc, true, req.TransactionalID, req.ProducerID, req.ProducerEpoch, tp); code != 0 {
			fill(func(string, int32) int16 { return code })
			return resp, nil
		}
	case d.Config.TransactionPartitionVerificationEnable:
		if code := d.txnCheck(ctx, tc, false, req.TransactionalID, req.ProducerID, req.ProducerEpoch, tp); code != 0 {
			fill(func(string, int32) int16 { return code })
			return resp, nil
		}
	}
	img := d.Controller.Image()
	filtered := *req
	filtered.Topics = nil
	for _, t := range req.Topics {
		topic := topicByName(img, t.Topic)
		if topic == nil {
			continue
		}
		ft := t
		ft.Partitions = nil
		for _, p := range t.Partitions {
			if p.Partition >= 0 && int(p.Partition) < len(topic.Partitions) {
				ft.Partitions = append(ft.Partitions, p)
			}
		}
		if len(ft.Partitions) > 0 {
			filtered.Topics = append(filtered.Topics, ft)
		}
	}
	type key struct {
		topic     string
		partition int32
	}
	codes := map[key]int16{}
	if len(filtered.Topics) > 0 {
		got := g.TxnOffsetCommit(ctx, &filtered)
		resp.ThrottleMillis = got.ThrottleMillis
		for _, t := range got.Topics {
			for _, p := range t.Partitions {
				codes[key{t.Topic, p.Partition}] = p.ErrorCode
			}
		}
	}
	fill(func(topic string, partition int32) int16 {
		if code, ok := codes[key{topic, partition}]; ok {
			return code
		}
		return kerr.UnknownTopicOrPartition.Code
	})
	return resp, nil
}
