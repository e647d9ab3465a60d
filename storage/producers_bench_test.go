package storage

import (
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// BenchmarkIdempotentAppend measures Append of 5-record batches of an
// idempotent (not transactional) producer, without fsync.
func BenchmarkIdempotentAppend(b *testing.B) {
	l := openTestLog(b, vfs.NewMem(), "/d/t-0", DefaultLogConfig(), newClock())
	defer l.Close()
	batch := producerBatch(b, 11, 5, false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlainAppend is BenchmarkIdempotentAppend without a producer id.
func BenchmarkPlainAppend(b *testing.B) {
	l := openTestLog(b, vfs.NewMem(), "/d/t-0", DefaultLogConfig(), newClock())
	defer l.Close()
	batch := producerBatch(b, -1, 5, false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProducerStatesApply measures the per-batch update of the
// producer state alone (what Append adds for a batch with a producer id),
// over 1000 producers.
func BenchmarkProducerStatesApply(b *testing.B) {
	ps := producerStates{}
	h := batchHeader{ProducerEpoch: 1, LastOffsetDelta: 4, MaxTimestamp: 1}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.ProducerID = int64(i % 1000)
		h.BaseOffset = int64(i) * 5
		h.BaseSequence = int32(i/1000) * 5
		ps.apply(h, txnMarker{})
	}
}

// BenchmarkLogProducer measures the produce path's read of one producer's
// state (a copy under Log.mu).
func BenchmarkLogProducer(b *testing.B) {
	l := openTestLog(b, vfs.NewMem(), "/d/t-0", DefaultLogConfig(), newClock())
	defer l.Close()
	for i := 0; i < 5; i++ {
		mustAppend(b, l, producerBatch(b, 11, 5, false))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if e, ok := l.Producer(11); !ok || len(e.Batches()) != 5 {
			b.Fatal("producer 11 missing")
		}
	}
}
