package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// produceVerifyAnswer turns the transaction coordinator's answer to the
// verification (or, for Produce v12+, the implicit add) of a transactional
// batch into the code and message of the partition's Produce response, as
// Kafka 4.4's ReplicaManager and AddPartitionsToTxnManager do:
//
//   - a partition outside the transaction is TRANSACTION_ABORTABLE for
//     Produce v11 (the first version whose clients know that code) and
//     INVALID_TXN_STATE before it ("Partition was not added to the
//     transaction"); v12+ answers are the add's own (an
//     INVALID_TXN_STATE gets that message too);
//   - a coordinator that cannot answer now (NOT_COORDINATOR,
//     COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, a network
//     error) and, before v12, CONCURRENT_TRANSACTIONS are
//     NOT_ENOUGH_REPLICAS, which every producer retries without a
//     metadata refresh: older clients treat the coordinator codes as
//     fatal for the batch on a Produce and would abort the transaction
//     (librdkafka sends Produce v10);
//   - anything else is passed on (the fencing codes: PRODUCER_FENCED is
//     INVALID_PRODUCER_EPOCH already, see produceTxnCode).
func produceVerifyAnswer(code, version int16) (int16, string) {
	switch code {
	case kerr.InvalidTxnState.Code, kerr.TransactionAbortable.Code:
		switch {
		case version >= 12 && code == kerr.TransactionAbortable.Code, version == 11:
			return kerr.TransactionAbortable.Code, ""
		}
		return kerr.InvalidTxnState.Code, "Partition was not added to the transaction"
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NetworkException.Code:
		return kerr.NotEnoughReplicas.Code, unverifiedMessage(code)
	case kerr.ConcurrentTransactions.Code:
		if version < 12 {
			return kerr.NotEnoughReplicas.Code, unverifiedMessage(code)
		}
	}
	return code, ""
}

// unverifiedMessage is the message of a NOT_ENOUGH_REPLICAS that stands
// for a coordinator that could not answer the verification.
func unverifiedMessage(code int16) string {
	return "Unable to verify the partition has been added to the transaction. Underlying error: " + verifyErrName(code)
}

// verifyErrName is a Kafka error code's name (NOT_COORDINATOR, ...).
func verifyErrName(code int16) string {
	if err := kerr.TypedErrorForCode(code); err != nil {
		return err.Message
	}
	return "UNKNOWN_SERVER_ERROR"
}
