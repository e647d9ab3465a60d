package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestProduceVerifyAnswer checks the Produce answer to each coordinator
// answer of a transactional batch's verification, per Produce version,
// against Kafka 4.4 (ReplicaManager.handleProduceAppend and
// AddPartitionsToTxnManager, read from the 4.4.0 jars): librdkafka sends
// Produce v10, the Java client v11 (transaction version 1) or v12+.
func TestProduceVerifyAnswer(t *testing.T) {
	const notAdded = "Partition was not added to the transaction"
	for _, c := range []struct {
		coord   *kerr.Error
		version int16
		want    *kerr.Error
		msg     string
	}{
		// Outside the transaction: the verify-only answer
		// (TRANSACTION_ABORTABLE) and the local check's
		// (INVALID_TXN_STATE) mean the same.
		{kerr.TransactionAbortable, 10, kerr.InvalidTxnState, notAdded},
		{kerr.InvalidTxnState, 10, kerr.InvalidTxnState, notAdded},
		{kerr.InvalidTxnState, 3, kerr.InvalidTxnState, notAdded},
		{kerr.TransactionAbortable, 11, kerr.TransactionAbortable, ""},
		{kerr.InvalidTxnState, 11, kerr.TransactionAbortable, ""},
		{kerr.TransactionAbortable, 12, kerr.TransactionAbortable, ""},
		{kerr.InvalidTxnState, 12, kerr.InvalidTxnState, notAdded},
		// A coordinator that cannot answer now: retriable everywhere.
		{kerr.NotCoordinator, 10, kerr.NotEnoughReplicas, "Unable to verify the partition has been added to the transaction. Underlying error: NOT_COORDINATOR"},
		{kerr.CoordinatorNotAvailable, 11, kerr.NotEnoughReplicas, "Unable to verify the partition has been added to the transaction. Underlying error: COORDINATOR_NOT_AVAILABLE"},
		{kerr.CoordinatorLoadInProgress, 12, kerr.NotEnoughReplicas, "Unable to verify the partition has been added to the transaction. Underlying error: COORDINATOR_LOAD_IN_PROGRESS"},
		{kerr.NetworkException, 9, kerr.NotEnoughReplicas, "Unable to verify the partition has been added to the transaction. Underlying error: NETWORK_EXCEPTION"},
		// CONCURRENT_TRANSACTIONS: retriable before v12, where the
		// client bumps the epoch on it.
		{kerr.ConcurrentTransactions, 10, kerr.NotEnoughReplicas, "Unable to verify the partition has been added to the transaction. Underlying error: CONCURRENT_TRANSACTIONS"},
		{kerr.ConcurrentTransactions, 11, kerr.NotEnoughReplicas, "Unable to verify the partition has been added to the transaction. Underlying error: CONCURRENT_TRANSACTIONS"},
		{kerr.ConcurrentTransactions, 12, kerr.ConcurrentTransactions, ""},
		// Fencing passes on.
		{kerr.InvalidProducerEpoch, 10, kerr.InvalidProducerEpoch, ""},
		{kerr.InvalidProducerIDMapping, 11, kerr.InvalidProducerIDMapping, ""},
	} {
		code, msg := produceVerifyAnswer(c.coord.Code, c.version)
		if code != c.want.Code || msg != c.msg {
			t.Errorf("%s at Produce v%d: %s %q, want %s %q", c.coord.Message, c.version, verifyErrName(code), msg, c.want.Message, c.msg)
		}
	}
}
