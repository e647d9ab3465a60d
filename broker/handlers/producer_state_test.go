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

// entryWith builds the state of a producer that appended the given
// batches in order, starting at offset 100.
func entryWith(hs ...wire.BatchHeader) *producerEntry {
	var e *producerEntry
	off := int64(100)
	for _, h := range hs {
		e = recordBatch(e, h, off, 0)
		off += int64(h.LastOffsetDelta) + 1
	}
	return e
}

func TestCheckBatch(t *testing.T) {
	// Seven batches of 2 records: sequences 0-1, 2-3, ... 12-13 at
	// offsets 100, 102, ... 112; only the last five (seq 4..13) are kept.
	var seven []wire.BatchHeader
	for i := int32(0); i < 7; i++ {
		seven = append(seven, hdr(1, 2*i, 2))
	}
	nearWrap := entryWith(hdr(0, math.MaxInt32-1, 2)) // seq MaxInt32-1, MaxInt32
	tests := []struct {
		name    string
		e       *producerEntry
		h       wire.BatchHeader
		code    int16
		dupBase int64 // -1: not a duplicate
	}{
		{"unknown producer seq 0", nil, hdr(0, 0, 1), 0, -1},
		{"unknown producer any seq (Kafka 2.5+)", nil, hdr(3, 42, 1), 0, -1},
		{"next in sequence", entryWith(seven...), hdr(1, 14, 3), 0, -1},
		{"gap", entryWith(seven...), hdr(1, 15, 1), kerr.OutOfOrderSequenceNumber.Code, -1},
		{"older than window", entryWith(seven...), hdr(1, 2, 2), kerr.OutOfOrderSequenceNumber.Code, -1},
		{"duplicate of last", entryWith(seven...), hdr(1, 12, 2), 0, 112},
		{"duplicate of oldest kept", entryWith(seven...), hdr(1, 4, 2), 0, 104},
		{"same first seq, other length", entryWith(seven...), hdr(1, 12, 1), kerr.OutOfOrderSequenceNumber.Code, -1},
		{"old epoch", entryWith(seven...), hdr(0, 14, 1), kerr.InvalidProducerEpoch.Code, -1},
		{"new epoch at 0", entryWith(seven...), hdr(2, 0, 1), 0, -1},
		{"new epoch not at 0", entryWith(seven...), hdr(2, 14, 1), kerr.OutOfOrderSequenceNumber.Code, -1},
		{"wraps to 0", nearWrap, hdr(0, 0, 1), 0, -1},
		{"wrap gap", nearWrap, hdr(0, 1, 1), kerr.OutOfOrderSequenceNumber.Code, -1},
		{"batch spanning the wrap", entryWith(hdr(0, math.MaxInt32-3, 2)), hdr(0, math.MaxInt32-1, 4), 0, -1},
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
			case tc.dupBase >= 0 && (got.duplicate == nil || got.duplicate.firstOffset != tc.dupBase):
				t.Fatalf("duplicate %+v, want base offset %d", got.duplicate, tc.dupBase)
			}
		})
	}
}

func TestBatchLastSeqWraps(t *testing.T) {
	for _, tc := range []struct {
		first, delta, want int32
	}{
		{0, 0, 0},
		{5, 4, 9},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 1, 3, 1},
	} {
		if got := batchLastSeq(wire.BatchHeader{BaseSequence: tc.first, LastOffsetDelta: tc.delta}); got != tc.want {
			t.Errorf("lastSeq(%d+%d) = %d, want %d", tc.first, tc.delta, got, tc.want)
		}
	}
}

func TestRecordBatchKeepsWindowAndResetsOnEpoch(t *testing.T) {
	var e *producerEntry
	for i := int32(0); i < 8; i++ {
		e = recordBatch(e, hdr(0, i, 1), int64(i), 10)
	}
	if len(e.batches) != producerBatchWindow || e.batches[0].firstSeq != 3 || e.batches[4].firstSeq != 7 {
		t.Fatalf("window %+v", e.batches)
	}
	e = recordBatch(e, hdr(1, 0, 1), 8, 20)
	if e.epoch != 1 || len(e.batches) != 1 || e.lastWrite != 20 {
		t.Fatalf("after epoch bump %+v", e)
	}
}

func TestExpireProducers(t *testing.T) {
	m := map[int64]*producerEntry{1: {lastWrite: 0}, 2: {lastWrite: 500}, 3: {lastWrite: 1000}}
	expireProducers(m, 1000, 500)
	if _, ok := m[1]; ok {
		t.Fatal("producer 1 not expired")
	}
	if _, ok := m[2]; ok {
		t.Fatal("producer 2 (exactly at expiry) not expired")
	}
	if _, ok := m[3]; !ok {
		t.Fatal("producer 3 expired")
	}
}

// TestAppendIdempotentConcurrentRetries sends the same batch from many
// goroutines at once, as retries on several connections would: exactly
// one copy lands and every caller gets its offset.
func TestAppendIdempotentConcurrentRetries(t *testing.T) {
	l, err := storage.OpenLog(storage.LogOptions{FS: vfs.NewMem(), Dir: "/p-0", Config: storage.DefaultLogConfig()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	idem := NewIdempotence(&countingIDs{}, time.Hour)
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
		case r.duplicate.firstOffset != 0:
			t.Fatalf("duplicate answered offset %d, want 0", r.duplicate.firstOffset)
		}
	}
	if appended != 1 || l.LogEndOffset() != 2 {
		t.Fatalf("%d appends, log end %d; want 1 append, log end 2", appended, l.LogEndOffset())
	}
	if r := send(2); r.code != 0 || r.duplicate != nil || r.info.FirstOffset != 2 {
		t.Fatalf("next batch: %+v", r)
	}

	// A fresh Idempotence (a restart) rebuilds the state from the log.
	idem = NewIdempotence(&countingIDs{}, time.Hour)
	if r := send(2); r.duplicate == nil || r.duplicate.firstOffset != 2 {
		t.Fatalf("retry after replay: %+v", r)
	}
	if r := send(7); r.code != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap after replay: %+v", r)
	}
	// After producer.id.expiration.ms the producer is unknown again and
	// any sequence is accepted, as in Kafka.
	now = now.Add(time.Hour)
	if r := send(7); r.code != 0 || r.duplicate != nil {
		t.Fatalf("after expiry: %+v", r)
	}
}

func TestRecordBatchTracksTransactions(t *testing.T) {
	txnHdr := func(epoch int16, seq int32) wire.BatchHeader {
		h := hdr(epoch, seq, 2)
		h.Attributes = 0x10 // transactional
		return h
	}
	e := recordBatch(nil, txnHdr(3, 0), 40, 1)
	e = recordBatch(e, txnHdr(3, 2), 50, 2)
	if !e.txnOpen || e.txnFirstOffset != 40 {
		t.Fatalf("open txn %+v", e)
	}
	// The coordinator aborts with a bumped epoch: the marker ends the
	// transaction and becomes the producer's epoch.
	marker := wire.BatchHeader{ProducerID: 7, ProducerEpoch: 4, Attributes: 0x30, BaseSequence: -1}
	e = recordBatch(e, marker, 60, 3)
	if e.txnOpen || e.epoch != 4 || len(e.batches) != 0 {
		t.Fatalf("after marker %+v", e)
	}
	if r := checkBatch(e, txnHdr(3, 4)); r.code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("zombie batch after the marker: %+v, want INVALID_PRODUCER_EPOCH", r)
	}
	// Expiry keeps producers with an open transaction.
	m := map[int64]*producerEntry{1: recordBatch(nil, txnHdr(0, 0), 0, 0), 2: recordBatch(nil, hdr(0, 0, 1), 0, 0)}
	expireProducers(m, 1000, 500)
	if _, ok := m[1]; !ok {
		t.Fatal("producer with an open transaction expired")
	}
	if _, ok := m[2]; ok {
		t.Fatal("idle producer without a transaction kept")
	}
}

func TestAppendMarkerFencesOlderEpochs(t *testing.T) {
	l, err := storage.OpenLog(storage.LogOptions{FS: vfs.NewMem(), Dir: "/p-0", Config: storage.DefaultLogConfig(), RecoveryPoint: -1, LogStartOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	i := NewIdempotence(nil, time.Hour)
	tp := storage.TopicPartition{Topic: "t", Partition: 0}
	now := time.UnixMilli(1000)
	appends := 0
	doAppend := func() (storage.AppendInfo, error) {
		appends++
		return storage.AppendInfo{FirstOffset: int64(appends)}, nil
	}
	if code, err := i.appendMarker(tp, l, 9, 5, 0, now, doAppend); code != 0 || err != nil || appends != 1 {
		t.Fatalf("first marker: code %d err %v appends %d", code, err, appends)
	}
	if code, _ := i.appendMarker(tp, l, 9, 4, 0, now, doAppend); code != kerr.InvalidProducerEpoch.Code || appends != 1 {
		t.Fatalf("marker with an older epoch: code %d appends %d", code, appends)
	}
	if i.txnOngoing(tp, l, 9, 5) {
		t.Fatal("transaction reported open after its marker")
	}
	ps, err := i.producers(tp, l, now)
	if err != nil || len(ps) != 1 || ps[0].epoch != 5 || ps[0].txnFirstOffset != -1 || ps[0].coordinatorEpoch != 0 {
		t.Fatalf("producers %+v err %v", ps, err)
	}
}

func TestVerificationGuardRejectsBatchAfterMarker(t *testing.T) {
	l, err := storage.OpenLog(storage.LogOptions{FS: vfs.NewMem(), Dir: "/p-0", Config: storage.DefaultLogConfig(), RecoveryPoint: -1, LogStartOffset: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	i := NewIdempotence(nil, time.Hour)
	tp := storage.TopicPartition{Topic: "t", Partition: 0}
	now := time.UnixMilli(1000)
	h := hdr(0, 0, 1)
	h.Attributes = 0x10
	ongoing, guard, err := i.txnGuard(tp, l, 7, 0, now)
	if err != nil || ongoing {
		t.Fatalf("txnGuard before any batch: ongoing %v err %v", ongoing, err)
	}
	// The transaction ends (a marker) between the verification and the append.
	nop := func() (storage.AppendInfo, error) { return storage.AppendInfo{}, nil }
	if code, err := i.appendMarker(tp, l, 7, 0, 0, now, nop); code != 0 || err != nil {
		t.Fatalf("marker: %d %v", code, err)
	}
	appended := false
	res := i.appendIdempotent(tp, l, h, now, &guard, func() (storage.AppendInfo, error) { appended = true; return storage.AppendInfo{}, nil })
	if res.code != kerr.InvalidTxnState.Code || appended {
		t.Fatalf("stale verification: code %d appended %v, want INVALID_TXN_STATE and no append", res.code, appended)
	}
	_, guard, _ = i.txnGuard(tp, l, 7, 0, now)
	if res := i.appendIdempotent(tp, l, h, now, &guard, nop); res.code != 0 {
		t.Fatalf("fresh verification: code %d", res.code)
	}
	if !i.txnOngoing(tp, l, 7, 0) {
		t.Fatal("transaction not open after its first batch")
	}
}
