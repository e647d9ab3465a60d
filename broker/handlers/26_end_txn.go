package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EndTxn, key 26, versions 0-5.
//
//   - Commits or aborts the open transaction of a transactional id: the
//     coordinator records PrepareCommit/PrepareAbort, writes a control
//     batch (marker) to every partition of the transaction (and completes
//     the staged group offsets on __consumer_offsets), then records
//     CompleteCommit/CompleteAbort. See coordinator/txn for when the answer
//     is sent and what a retried EndTxn gets.
//   - v3 is flexible; v4 adds TRANSACTION_ABORTABLE. v5 is transaction
//     version 2 (KIP-890 part 2, the transaction.version feature that
//     ApiVersions advertises): the epoch bumps with every EndTxn and the
//     answer carries the producer id and epoch to continue with.
func handleEndTxn(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.EndTxnRequest)
	if c := txnCoordinator(d); c != nil {
		return c.EndTxn(context.Background(), req), nil
	}
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	return resp, nil
}
