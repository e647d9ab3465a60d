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
