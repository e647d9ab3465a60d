package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerId, key 22, versions 0-5.
//
//   - transactional_id null: a new producer id with epoch 0, as Kafka's
//     coordinator does ("blindly accept"): the producer_id/producer_epoch
//     of v3+ (KIP-360) are ignored for a null transactional id, because
//     the new id already fences nothing and restarts every sequence at 0.
//     Ids come from a durable allocator (storage.ProducerIDAllocator) and
//     never repeat after a restart. An allocator IO failure is
//     UNKNOWN_SERVER_ERROR, as in Kafka.
//   - transactional_id "" is INVALID_REQUEST (Kafka).
//   - transactional_id set: the transaction coordinator (coordinator/txn)
//     answers: a new id gets a producer id with epoch 0, a known one an
//     epoch bump that fences the previous producer (aborting its open
//     transaction first); transaction_timeout_ms over
//     transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT.
//   - v3+: exactly one of producer_id and producer_epoch being -1 is
//     INVALID_REQUEST (Kafka).
//   - v2 is flexible; v4 adds PRODUCER_FENCED for a stale epoch, v5
//     TRANSACTION_ABORTABLE.
func handleInitProducerID(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case (req.ProducerID == -1) != (req.ProducerEpoch == -1):
		resp.ErrorCode = kerr.InvalidRequest.Code
	case req.TransactionalID != nil && *req.TransactionalID == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
	case req.TransactionalID != nil:
		if c := txnCoordinator(d); c != nil {
			return c.InitProducerID(context.Background(), req), nil
		}
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	case d.Idempotence == nil:
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	default:
		id, err := d.Idempotence.ids.Next()
		if err != nil {
			d.Logger.Error("cannot allocate a producer id", "err", err)
			resp.ErrorCode = kerr.UnknownServerError.Code
			break
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
	}
	return resp, nil
}
