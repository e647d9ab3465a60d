package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/storage"
)

// AddOffsetsToTxn, key 25, versions 0-4.
//
//   - Adds the group's __consumer_offsets partition (PartitionFor(group),
//     the partition TxnOffsetCommit will write to) to the transaction, as
//     Kafka does, so EndTxn writes the marker there too and the group's
//     staged offsets become visible on commit.
//   - Errors are AddPartitionsToTxn's; v3 is flexible, v4 adds
//     TRANSACTION_ABORTABLE.
func handleAddOffsetsToTxn(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddOffsetsToTxnRequest)
	c, g := txnCoordinator(d), groupCoordinator(d)
	if c == nil || g == nil {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	// No check of the group id: Kafka 4.4 adds the __consumer_offsets
	// partition of any id, "" included, to the transaction.
	tp := storage.TopicPartition{Topic: coordinator.OffsetsTopic, Partition: coordinator.PartitionFor(req.Group, g.NumPartitions())}
	return c.AddOffsetsToTxn(context.Background(), req, tp), nil
}
