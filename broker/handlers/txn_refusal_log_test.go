package handlers

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/storage"
)

// TestStaleGuardIsReported checks that appendIdempotent says when its
// INVALID_TXN_STATE comes from a marker appended after the verification
// (the produce path logs that check by name), and not when the refusal is
// the producer state's own (a sequence gap).
func TestStaleGuardIsReported(t *testing.T) {
	l := memLog(t)
	i := NewIdempotence(nil)
	tp := storage.TopicPartition{Topic: "t", Partition: 0}
	now := time.UnixMilli(1000)
	h := hdr(0, 0, 1)
	h.Attributes = 0x10
	batch := encodeHdr(t, h)
	_, guard := i.txnGuard(tp, l, 7, 0, now)
	marker := func() (storage.AppendInfo, error) {
		return l.AppendControl(storage.ControlMarker{ProducerID: 7, ProducerEpoch: 0, LeaderEpoch: -1})
	}
	if code, err := i.appendMarker(tp, l, 7, 0, 0, now, marker); code != 0 || err != nil {
		t.Fatalf("marker: %d %v", code, err)
	}
	res := i.appendIdempotent(tp, l, h, now, &guard, func() (storage.AppendInfo, error) { return l.Append(batch) })
	if res.code != kerr.InvalidTxnState.Code || !res.staleGuard {
		t.Fatalf("stale verification: %+v, want INVALID_TXN_STATE with staleGuard", res)
	}
	_, guard = i.txnGuard(tp, l, 7, 0, now)
	if res := i.appendIdempotent(tp, l, h, now, &guard, func() (storage.AppendInfo, error) { return l.Append(batch) }); res.code != 0 || res.staleGuard {
		t.Fatalf("fresh verification: %+v", res)
	}
	gap := hdr(0, 5, 1)
	gap.Attributes = 0x10
	_, guard = i.txnGuard(tp, l, 7, 0, now)
	res = i.appendIdempotent(tp, l, gap, now, &guard, func() (storage.AppendInfo, error) { return l.Append(encodeHdr(t, gap)) })
	if res.code != kerr.OutOfOrderSequenceNumber.Code || res.staleGuard {
		t.Fatalf("sequence gap: %+v, want OUT_OF_ORDER_SEQUENCE_NUMBER without staleGuard", res)
	}
}

// TestLogTxnRefusal checks the line the produce path logs for a refused
// transactional batch: INVALID_TXN_STATE at info level with the check,
// the coordinator's answer, the batch's producer fields and the
// partition's producer state; fencing and retriable answers only at debug
// level.
func TestLogTxnRefusal(t *testing.T) {
	l := memLog(t)
	i := NewIdempotence(nil)
	tp := storage.TopicPartition{Topic: "t", Partition: 2}
	now := time.UnixMilli(1000)
	h := hdr(3, 0, 2)
	h.Attributes = 0x10
	batch := encodeHdr(t, h)
	if res := i.appendIdempotent(tp, l, h, now, nil, func() (storage.AppendInfo, error) { return l.Append(batch) }); res.code != 0 || res.err != nil {
		t.Fatalf("append: %+v", res)
	}
	var buf bytes.Buffer
	d := &Deps{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), Idempotence: i}

	next := hdr(3, 2, 1)
	next.Attributes = 0x10
	d.logTxnRefusal("transaction coordinator verification", "tx-1", next, tp, l, kerr.TransactionAbortable.Code, kerr.InvalidTxnState.Code)
	line := buf.String()
	for _, want := range []string{"level=INFO", `check="transaction coordinator verification"`, "cause=TRANSACTION_ABORTABLE", "code=INVALID_TXN_STATE", "transactional_id=tx-1",
		"producer=7", "epoch=3", "base_sequence=2", "topic=t", "partition=2", "state_epoch=3", "state_last_sequence=1",
		"state_txn_first_offset=0", "markers=0"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line lacks %q: %s", want, line)
		}
	}

	buf.Reset()
	other := next
	other.ProducerID = 8
	d.logTxnRefusal("no transactional id in the request", "", other, tp, l, kerr.InvalidTxnState.Code, kerr.InvalidTxnState.Code)
	if line := buf.String(); !strings.Contains(line, "state=none") {
		t.Errorf("producer without state: %s", line)
	}

	buf.Reset()
	d.logTxnRefusal("transaction coordinator verification", "tx-1", next, tp, l, kerr.ProducerFenced.Code, kerr.InvalidProducerEpoch.Code)
	d.logTxnRefusal("transaction coordinator verification", "tx-1", next, tp, l, kerr.NotCoordinator.Code, kerr.NotEnoughReplicas.Code)
	if buf.Len() != 0 {
		t.Errorf("a fencing or retriable answer is logged at info level: %s", buf.String())
	}
}
