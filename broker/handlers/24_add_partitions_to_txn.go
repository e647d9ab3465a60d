package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AddPartitionsToTxn, key 24, versions 0-5.
//
//   - v0-v3 (clients): add partitions to the open transaction of one
//     transactional id; the coordinator checks the producer id and epoch
//     (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED / INVALID_PRODUCER_EPOCH),
//     answers CONCURRENT_TRANSACTIONS while the previous transaction is
//     still being completed, UNKNOWN_TOPIC_OR_PARTITION for partitions that
//     do not exist (the others then OPERATION_NOT_ATTEMPTED), and writes
//     the new partition set to __transaction_state before answering.
//   - v4+ (brokers, KIP-890 part 1): several transactions per request, each
//     possibly verify_only (answer whether the partitions are already in
//     the transaction, INVALID_TXN_STATE if not, without a write). v3 is
//     flexible.
func handleAddPartitionsToTxn(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddPartitionsToTxnRequest)
	if c := txnCoordinator(d); c != nil {
		return c.AddPartitionsToTxn(context.Background(), req), nil
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	code := kerr.CoordinatorNotAvailable.Code
	if req.Version >= 4 {
		resp.ErrorCode = code
		return resp, nil
	}
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
