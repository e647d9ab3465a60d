package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTransactions, key 65, version 0 (KIP-664): state, producer id
// and epoch, timeout, start time and partitions of each transactional id
// (TRANSACTIONAL_ID_NOT_FOUND for unknown ids).
func handleDescribeTransactions(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeTransactionsRequest)
	if c := txnCoordinator(d); c != nil {
		return c.DescribeTransactions(context.Background(), req), nil
	}
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ErrorCode = id, kerr.CoordinatorNotAvailable.Code
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
