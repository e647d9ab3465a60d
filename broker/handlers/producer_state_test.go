package handlers

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire"
)

func hdr(epoch int16, seq int32, records int32) wire.BatchHeader {
	return wire.BatchHeader{ProducerID: 7, ProducerEpoch: epoch, BaseSequence: seq, LastOffsetDelta: records - 1, NumRecords: records}
}

// memLog opens an empty log on an in-memory file system.
func memLog(t testing.TB) *storage.Log {
	t.Helper()
	l, err := storage.OpenLog(storage.LogOptions{FS: vfs.NewMem(), Dir: "/p-0", Config: storage.DefaultLogConfig(), RecoveryPoint: -1, LogStartOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// encodeHdr builds a batch with h's producer fields and record count.
func encodeHdr(t testing.TB, h wire.BatchHeader) []byte {
	t.Helper()
	recs := make([]wire.Record, h.NumRecords)
	for i := range recs {
		recs[i] = wire.Record{Value: []byte("v")}
	}
	ts := h.MaxTimestamp // the batch's timestamp when set, else 1000
	if ts == 0 {
		ts = 1_000
	}
	b, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
		Transactional: h.IsTransactional(), BaseTimestamp: ts, Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// entryWith returns the log's state of producer 7 after appending batches
// like hs in order, starting at offset 100.
func entryWith(t testing.TB, hs ...wire.BatchHeader) *storage.ProducerEntry {
	t.Helper()
	l := memLog(t)
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if _, err := l.Append(encodeHdr(t, h)); err != nil {
			t.Fatal(err)
		}
	}
	e, ok := l.Producer(7)
	if !ok {
		t.Fatal("producer 7 unknown to the log")
	}
	return &e
}

func TestCheckBatch(t *testing.T) {
	// Seven batches of 2 records: sequences 0-1, 2-3, ... 12-13 at
	// offsets 100, 102, ... 112; only the last five (seq 4..13) are kept.
	var seven []wire.BatchHeader
	for i := int32(0); i < 7; i++ {
		seven = append(seven, hdr(1, 2*i, 2))
	}
	last7 := entryWith(t, seven...)
	nearWrap := entryWith(t, hdr(0, math.MaxInt32-1, 2)) // seq MaxInt32-1, MaxInt32
	tests := []struct {
		name    string
		e       *storage.ProducerEntry
		h       wire.BatchHeader
		code    int16
		dupBase int64 // -1: not a duplicate
	}{
		{"unknown producer seq 0", nil, hdr(0, 0, 1), 0, -1},
		{"unknown producer any seq (Kafka 2.5+)", nil, hdr(3, 42, 1), 0, -1},
		{"next in sequence", last7, hdr(1, 14, 3), 0, -1},
		{"gap", last7, hdr(1, 15, 1), kerr.OutOfOrderSequenceNumber.Code, -1},
		{"older than window", last7, hdr(1, 2, 2), kerr.OutOfOrderSequenceNumber.Code, -1},
		{"duplicate of last", last7, hdr(1, 12, 2), 0, 112},
		{"duplicate of oldest kept", last7, hdr(1, 4, 2), 0, 104},
		{"same first seq, other length", last7, hdr(1, 12, 1), kerr.OutOfOrderSequenceNumber.Code, -1},
		{"old epoch", last7, hdr(0, 14, 1), kerr.InvalidProducerEpoch.Code, -1},
		{"new epoch at 0", last7, hdr(2, 0, 1), 0, -1},
		{"new epoch not at 0", last7, hdr(2, 14, 1), kerr.OutOfOrderSequenceNumber.Code, -1},
		{"wraps to 0", nearWrap, hdr(0, 0, 1), 0, -1},
		{"wrap gap", nearWrap, hdr(0, 1, 1), kerr.OutOfOrderSequenceNumber.Code, -1},
		{"batch spanning the wrap", entryWith(t, hdr(0, math.MaxInt32-3, 2)), hdr(0, math.MaxInt32-1, 4), 0, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := checkBatch(tc.e, tc.h)
			if got.code != tc.code {
				t.Fatalf("code %d, want %d", got.code, tc.code)
			}
			switch {
			case tc.dupBase < 0 && got.duplicate != nil:
				t.Fatalf("duplicate of %+v, want none", *got.duplicate)
			case tc.dupBase >= 0 && (got.duplicate == nil || got.duplicate.FirstOffset != tc.dupBase):
				t.Fatalf("duplicate %+v, want base offset %d", got.duplicate, tc.dupBase)
			}
		})
	}
}

// TestAppendIdempotentConcurrentRetries sends the same batch from many
// goroutines at once, as retries on several connections would: exactly
// one copy lands and every caller gets its offset.
func TestAppendIdempotentConcurrentRetries(t *testing.T) {
	l := memLog(t)
	idem := NewIdempotence(&countingIDs{})
	tp := storage.TopicPartition{Topic: "p", Partition: 0}
	now := time.UnixMilli(1_000_000)
	send := func(seq int32) idempotentAppend {
		b, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: 9, BaseSequence: seq, Records: []wire.Record{{Value: []byte("a")}, {Value: []byte("b")}}})
		if err != nil {
			t.Error(err)
			return idempotentAppend{}
		}
		h, _ := wire.ParseBatchHeader(b)
		return idem.appendIdempotent(tp, l, h, now, nil, func() (storage.AppendInfo, error) { return l.Append(b) })
	}
	const n = 16
	results := make(chan idempotentAppend, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); results <- send(0) }()
	}
	wg.Wait()
	close(results)
	appended := 0
	for r := range results {
		switch {
		case r.err != nil || r.code != 0:
			t.Fatalf("err %v code %d", r.err, r.code)
		case r.duplicate == nil:
			appended++
		case r.duplicate.FirstOffset != 0:
			t.Fatalf("duplicate answered offset %d, want 0", r.duplicate.FirstOffset)
		}
	}
	if appended != 1 || l.LogEndOffset() != 2 {
		t.Fatalf("%d appends, log end %d; want 1 append, log end 2", appended, l.LogEndOffset())
	}
	if r := send(2); r.code != 0 || r.duplicate != nil || r.info.FirstOffset != 2 {
		t.Fatalf("next batch: %+v", r)
	}

	// A fresh Idempotence (a restart of the broker, same log) finds the
	// state in the log.
	idem = NewIdempotence(&countingIDs{})
	if r := send(2); r.duplicate == nil || r.duplicate.FirstOffset != 2 {
		t.Fatalf("retry after restart: %+v", r)
	}
	if r := send(7); r.code != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap after restart: %+v", r)
	}
	// Once the log expires the idle producer (producer.id.expiration.ms
	// after its last batch) it is unknown again and any sequence is
	// accepted, as in Kafka.
	if n := l.ExpireProducers(time.Now().Add(time.Hour).UnixMilli(), time.Hour.Milliseconds()); n != 1 {
		t.Fatalf("expired %d producers, want 1", n)
	}
	if r := send(7); r.code != 0 || r.duplicate != nil {
		t.Fatalf("after expiry: %+v", r)
	}
}

// TestExpiryKeepsOpenTransactions: the log's expiry removes idle
// producers but keeps one with an open transaction;
// a zombie batch with the epoch before an abort marker's bumped epoch is
// fenced.
func TestExpiryKeepsOpenTransactions(t *testing.T) {
	l := memLog(t)
	idem := NewIdempotence(nil)
	tp := storage.TopicPartition{Topic: "t", Partition: 0}
	now := time.UnixMilli(1_000_000)
	appendHdr := func(h wire.BatchHeader) idempotentAppend {
		b := encodeHdr(t, h)
		return idem.appendIdempotent(tp, l, h, now, nil, func() (storage.AppendInfo, error) { return l.Append(b) })
	}
	txnHdr := func(pid int64, epoch int16, seq int32) wire.BatchHeader {
		h := hdr(epoch, seq, 2)
		h.ProducerID, h.Attributes = pid, 0x10 // transactional
		return h
	}
	for _, h := range []wire.BatchHeader{txnHdr(7, 3, 0), txnHdr(7, 3, 2), txnHdr(8, 0, 0)} {
		if r := appendHdr(h); r.code != 0 || r.err != nil {
			t.Fatalf("append %+v: %+v", h, r)
		}
	}
	idle := hdr(0, 0, 1)
	idle.ProducerID = 9
	if r := appendHdr(idle); r.code != 0 || r.err != nil {
		t.Fatalf("append idle: %+v", r)
	}
	// The coordinator aborts producer 7 with a bumped epoch.
	marker := storage.ControlMarker{ProducerID: 7, ProducerEpoch: 4, CoordinatorEpoch: 1, LeaderEpoch: -1, Timestamp: now.UnixMilli()}
	if code, err := idem.appendMarker(tp, l, 7, 4, 1, now, func() (storage.AppendInfo, error) { return l.AppendControl(marker) }); code != 0 || err != nil {
		t.Fatalf("marker: %d %v", code, err)
	}
	if r := appendHdr(txnHdr(7, 3, 4)); r.code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("zombie batch after the marker: %+v, want INVALID_PRODUCER_EPOCH", r)
	}
	// The log's expiry a minute after the last batches: 7 and 9 are
	// idle, 8 has its transaction open; 10 wrote just before.
	probe := hdr(0, 0, 1)
	probe.ProducerID, probe.MaxTimestamp = 10, now.Add(time.Minute).UnixMilli()
	if r := appendHdr(probe); r.code != 0 {
		t.Fatalf("probe: %+v", r)
	}
	l.ExpireProducers(now.Add(time.Minute).UnixMilli(), time.Minute.Milliseconds())
	for pid, want := range map[int64]bool{7: false, 8: true, 9: false, 10: true} {
		if _, ok := l.Producer(pid); ok != want {
			t.Errorf("producer %d known %v after the sweep, want %v", pid, ok, want)
		}
	}
	if !idem.txnOngoing(tp, l, 8, 0) {
		t.Fatal("open transaction of producer 8 lost")
	}
}

func TestAppendMarkerFencesOlderEpochs(t *testing.T) {
	l := memLog(t)
	i := NewIdempotence(nil)
	tp := storage.TopicPartition{Topic: "t", Partition: 0}
	now := time.UnixMilli(1000)
	appends := 0
	marker := func(epoch int16, coordinatorEpoch int32) func() (storage.AppendInfo, error) {
		return func() (storage.AppendInfo, error) {
			appends++
			return l.AppendControl(storage.ControlMarker{ProducerID: 9, ProducerEpoch: epoch, CoordinatorEpoch: coordinatorEpoch, LeaderEpoch: -1, Timestamp: 1000})
		}
	}
	if code, err := i.appendMarker(tp, l, 9, 5, 2, now, marker(5, 2)); code != 0 || err != nil || appends != 1 {
		t.Fatalf("first marker: code %d err %v appends %d", code, err, appends)
	}
	if code, _ := i.appendMarker(tp, l, 9, 4, 2, now, marker(4, 2)); code != kerr.InvalidProducerEpoch.Code || appends != 1 {
		t.Fatalf("marker with an older epoch: code %d appends %d", code, appends)
	}
	if code, _ := i.appendMarker(tp, l, 9, 5, 1, now, marker(5, 1)); code != kerr.TransactionCoordinatorFenced.Code || appends != 1 {
		t.Fatalf("marker from an older coordinator epoch: code %d appends %d", code, appends)
	}
	if i.txnOngoing(tp, l, 9, 5) {
		t.Fatal("transaction reported open after its marker")
	}
	ps := i.producers(tp, l, now)
	if len(ps) != 1 || ps[0].epoch != 5 || ps[0].txnFirstOffset != -1 || ps[0].coordinatorEpoch != 2 || ps[0].lastTimestamp != 1000 || ps[0].lastSequence != -1 {
		t.Fatalf("producers %+v", ps)
	}
}

func TestVerificationGuardRejectsBatchAfterMarker(t *testing.T) {
	l := memLog(t)
	i := NewIdempotence(nil)
	tp := storage.TopicPartition{Topic: "t", Partition: 0}
	now := time.UnixMilli(1000)
	h := hdr(0, 0, 1)
	h.Attributes = 0x10
	batch := encodeHdr(t, h)
	ongoing, guard := i.txnGuard(tp, l, 7, 0, now)
	if ongoing {
		t.Fatal("txnGuard before any batch: ongoing")
	}
	// The transaction ends (a marker) between the verification and the append.
	marker := func() (storage.AppendInfo, error) {
		return l.AppendControl(storage.ControlMarker{ProducerID: 7, ProducerEpoch: 0, LeaderEpoch: -1})
	}
	if code, err := i.appendMarker(tp, l, 7, 0, 0, now, marker); code != 0 || err != nil {
		t.Fatalf("marker: %d %v", code, err)
	}
	appended := false
	res := i.appendIdempotent(tp, l, h, now, &guard, func() (storage.AppendInfo, error) { appended = true; return l.Append(batch) })
	if res.code != kerr.InvalidTxnState.Code || appended {
		t.Fatalf("stale verification: code %d appended %v, want INVALID_TXN_STATE and no append", res.code, appended)
	}
	_, guard = i.txnGuard(tp, l, 7, 0, now)
	if res := i.appendIdempotent(tp, l, h, now, &guard, func() (storage.AppendInfo, error) { return l.Append(batch) }); res.code != 0 || res.err != nil {
		t.Fatalf("fresh verification: %+v", res)
	}
	if !i.txnOngoing(tp, l, 7, 0) {
		t.Fatal("transaction not open after its first batch")
	}
}
