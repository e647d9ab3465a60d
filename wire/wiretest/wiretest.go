package wiretest

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/samsa-broker/samsa/wire"
)

// Allocated returns the bytes the heap allocated while f ran (the
// TotalAlloc delta, after a GC so that f does not pay for earlier
// garbage). Figures are not the real ones under the race detector.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// BombRecord is a record of a ZstdBomb batch: its key (nil: null) and a
// value of Value followed by Zeros zero bytes.
type BombRecord struct {
	Key   []byte
	Value []byte
	Zeros int
}

// BombSize is the size of a test's zip-bomb value: 512 MiB, or 48 MiB
// under the race detector or -short (where decompressing 512 MiB is slow).
func BombSize() int {
	if RaceEnabled || testing.Short() {
		return 48 << 20
	}
	return 512 << 20
}

// ZstdBomb returns a zstd batch of recs, compressed as they are written
// (a value is never held whole), of base timestamp ts, base offset 0 and
// no producer id (-1, as a producer that is not idempotent sends). Record
// i has timestamp and offset delta i and no headers.
func ZstdBomb(t testing.TB, ts int64, recs ...BombRecord) []byte {
	t.Helper()
	var body bytes.Buffer
	w, err := zstd.NewWriter(&body, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 64<<10)
	for i, r := range recs {
		var fields []byte
		fields = append(fields, 0)                     // attributes
		fields = binary.AppendVarint(fields, int64(i)) // timestamp delta
		fields = binary.AppendVarint(fields, int64(i)) // offset delta
		if r.Key == nil {
			fields = binary.AppendVarint(fields, -1)
		} else {
			fields = binary.AppendVarint(fields, int64(len(r.Key)))
			fields = append(fields, r.Key...)
		}
		size := len(r.Value) + r.Zeros
		fields = binary.AppendVarint(fields, int64(size))
		fields = append(fields, r.Value...)
		rec := binary.AppendVarint(nil, int64(len(fields)+r.Zeros+1))
		rec = append(rec, fields...)
		if _, err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		for left := r.Zeros; left > 0; left -= len(zeros) {
			if _, err := w.Write(zeros[:min(left, len(zeros))]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Write([]byte{0}); err != nil { // no headers
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// A batch of as many records for the header, its body replaced.
	spec := wire.BatchSpec{BaseTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1,
		Compression: wire.CompressionZstd, Records: make([]wire.Record, len(recs))}
	for i := range spec.Records {
		spec.Records[i] = wire.Record{Key: []byte("k"), OffsetDelta: int32(i), TimestampDelta: int64(i)}
	}
	b, err := wire.EncodeBatch(spec)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b[:wire.BatchHeaderSize], body.Bytes()...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12)) // batch length
	wire.RecomputeCRC(b)
	return b
}
