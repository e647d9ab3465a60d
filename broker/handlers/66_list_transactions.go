package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListTransactions, key 66, versions 0-2 (KIP-664; v1 adds the duration
// filter of KIP-994, v2 the transactional id pattern of KIP-1152): the
// transactional ids this coordinator owns, filtered by state, producer id,
// duration and a regular expression (RE2, as Kafka's re2j) that must match
// the whole id; an invalid one is INVALID_REGULAR_EXPRESSION. Unknown
// state names are listed in unknown_state_filters.
func handleListTransactions(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListTransactionsRequest)
	if c := txnCoordinator(d); c != nil {
		return c.ListTransactions(context.Background(), req), nil
	}
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	return resp, nil
}
