package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// logTxnRefusal logs a transactional produce batch the produce path
// refused, with the check that refused it, what the check said (cause),
// the code the client gets (code) and the partition's producer state at
// that moment: a refusal the client does not expect (docs/DURABILITY.md
// finding 14) can then be told apart from a stale client. A batch found
// outside the transaction (INVALID_TXN_STATE, TRANSACTION_ABORTABLE) is
// logged at info level, as the client aborts its transaction on it; the
// fencing and retriable answers at debug level.
func (d *Deps) logTxnRefusal(check, txnID string, h wire.BatchHeader, tp storage.TopicPartition, l *storage.Log, cause, code int16) {
	if d.Logger == nil {
		return
	}
	level := d.Logger.Debug
	if code == kerr.InvalidTxnState.Code || code == kerr.TransactionAbortable.Code {
		level = d.Logger.Info
	}
	args := []any{"check", check, "cause", verifyErrName(cause), "code", verifyErrName(code), "transactional_id", txnID,
		"producer", h.ProducerID, "epoch", h.ProducerEpoch, "base_sequence", h.BaseSequence,
		"topic", tp.Topic, "partition", tp.Partition}
	if l != nil {
		if e, ok := l.Producer(h.ProducerID); ok {
			args = append(args, "state_epoch", e.ProducerEpoch, "state_last_sequence", e.LastSequence(),
				"state_txn_first_offset", e.CurrentTxnFirstOffset, "state_coordinator_epoch", e.CoordinatorEpoch)
		} else {
			args = append(args, "state", "none")
		}
	}
	if d.Idempotence != nil {
		args = append(args, "markers", d.Idempotence.markerCount(tp, h.ProducerID))
	}
	level("transactional produce refused", args...)
}

// txnIDString is the request's transactional id, "" for none.
func txnIDString(id *string) string {
	if id == nil {
		return ""
	}
	return *id
}
