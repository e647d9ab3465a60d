package main

import (
	"bytes"
	"errors"
	"testing"

	"github.com/samsa-broker/samsa/wire"
)

// rawBatch encodes n records of value size at base (wire.EncodeBatch, the
// broker's encoder: an independent writer for the load tool's reader).
func rawBatch(t *testing.T, base int64, n, size int, c wire.Compression) []byte {
	t.Helper()
	spec := wire.BatchSpec{BaseOffset: base, BaseTimestamp: 1_700_000_000_000, Compression: c,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1}
	for i := range n {
		r := wire.Record{OffsetDelta: int32(i), Value: bytes.Repeat([]byte{byte(i)}, size)}
		if i%3 == 0 {
			r.Key = []byte("key")
			r.Headers = []wire.RecordHeader{{Key: "h", Value: []byte("v")}}
		}
		spec.Records = append(spec.Records, r)
	}
	b, err := wire.EncodeBatch(spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWalkBatchesCounts: every record and value byte of whole batches is
// counted once, records before the fetch offset are not, a trailing
// partial batch (Kafka cuts a range inside a batch) is left for the next
// fetch, and a control batch moves the offset on without records.
func TestWalkBatchesCounts(t *testing.T) {
	a := rawBatch(t, 0, 10, 100, wire.CompressionNone)
	b := rawBatch(t, 10, 5, 7, wire.CompressionNone)
	ctl, err := wire.EncodeControlBatch(1, 0, true, 0, 0, 1_700_000_000_000)
	if err != nil {
		t.Fatal(err)
	}
	wire.SetBaseOffset(ctl, 15)
	wire.RecomputeCRC(ctl)
	c := rawBatch(t, 16, 3, 50, wire.CompressionNone)
	all := append(append(append(append([]byte{}, a...), b...), ctl...), c...)

	for _, tc := range []struct {
		name         string
		in           []byte
		from         int64
		recs, values int64
		next         int64
		batches      int64
		batchBytes   int
	}{
		{"all", all, 0, 18, 10*100 + 5*7 + 3*50, 19, 4, len(all)},
		{"from inside the first batch", all, 4, 14, 6*100 + 5*7 + 3*50, 19, 4, len(all)},
		{"partial last batch", all[:len(all)-5], 0, 15, 10*100 + 5*7, 16, 3, len(all) - len(c)},
		{"only a partial batch", a[:len(a)-1], 0, 0, 0, 0, 0, 0},
		{"empty", nil, 7, 0, 0, 7, 0, 0},
		{"control batch only", ctl, 15, 0, 0, 16, 1, len(ctl)},
	} {
		got, err := walkBatches(tc.in, tc.from)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got.records != tc.recs || got.valueBytes != tc.values || got.next != tc.next {
			t.Fatalf("%s: got %d records, %d value bytes, next %d; want %d, %d, %d", tc.name, got.records, got.valueBytes, got.next, tc.recs, tc.values, tc.next)
		}
		if got.batches != tc.batches || got.batchBytes != int64(tc.batchBytes) {
			t.Fatalf("%s: got %d whole batches of %d bytes; want %d of %d", tc.name, got.batches, got.batchBytes, tc.batches, tc.batchBytes)
		}
	}
}

// TestWalkBatchesRejects: a flipped byte fails the CRC, a record count
// that does not match the records fails the walk, compressed batches are
// refused.
func TestWalkBatchesRejects(t *testing.T) {
	good := rawBatch(t, 0, 4, 20, wire.CompressionNone)
	flipped := bytes.Clone(good)
	flipped[len(flipped)-3] ^= 0xff
	if _, err := walkBatches(flipped, 0); !errors.Is(err, errRawCorrupt) {
		t.Fatalf("flipped byte: %v", err)
	}
	short := bytes.Clone(good)
	short[60]-- // record count 4 -> 3: bytes left after the third record
	wire.RecomputeCRC(short)
	if _, err := walkBatches(short, 0); !errors.Is(err, errRawCorrupt) {
		t.Fatalf("record count one short: %v", err)
	}
	long := bytes.Clone(good)
	long[60]++ // 4 -> 5: runs out of bytes
	wire.RecomputeCRC(long)
	if _, err := walkBatches(long, 0); !errors.Is(err, errRawCorrupt) {
		t.Fatalf("record count one long: %v", err)
	}
	gz := rawBatch(t, 0, 4, 20, wire.CompressionGzip)
	if _, err := walkBatches(gz, 0); !errors.Is(err, errRawCompressed) {
		t.Fatalf("gzip batch: %v", err)
	}
	magic := bytes.Clone(good)
	magic[16] = 1
	if _, err := walkBatches(magic, 0); !errors.Is(err, errRawCorrupt) {
		t.Fatalf("magic 1: %v", err)
	}
}
