package wire

import (
	"bytes"
	"fmt"
	"testing"
)

// streamed is StreamRecords' records, their key and value copied.
func streamed(b []byte, limit int) ([]StreamedRecord, error) {
	var out []StreamedRecord
	err := StreamRecords(b, limit, func(r *StreamedRecord) {
		c := *r
		c.Key, c.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
		out = append(out, c)
	})
	return out, err
}

// sameAsDecoded fails unless got are recs as StreamRecords reports them
// with limit.
func sameAsDecoded(t *testing.T, got []StreamedRecord, recs []Record, limit int) {
	t.Helper()
	if len(got) != len(recs) {
		t.Fatalf("%d records streamed, %d decoded", len(got), len(recs))
	}
	cut := func(b []byte) []byte {
		if len(b) > limit {
			return b[:limit]
		}
		return b
	}
	length := func(b []byte) int32 {
		if b == nil {
			return -1
		}
		return int32(len(b))
	}
	for i, r := range recs {
		g := got[i]
		if g.OffsetDelta != r.OffsetDelta || !bytes.Equal(g.Key, cut(r.Key)) || (g.Key == nil) != (r.Key == nil) ||
			!bytes.Equal(g.Value, cut(r.Value)) || (g.Value == nil) != (r.Value == nil) ||
			g.KeyLen != length(r.Key) || g.ValueLen != length(r.Value) {
			t.Fatalf("record %d: streamed %d %q (%d) %d bytes (%d), decoded %d %q %d bytes", i,
				g.OffsetDelta, g.Key, g.KeyLen, len(g.Value), g.ValueLen, r.OffsetDelta, r.Key, len(r.Value))
		}
		if g.Cut() != (len(r.Key) > limit || len(r.Value) > limit) {
			t.Fatalf("record %d: Cut() = %v with a %d-byte key and a %d-byte value, limit %d", i, g.Cut(), len(r.Key), len(r.Value), limit)
		}
	}
}

// TestStreamRecordsAsDecode reads batches of every codec, small (decompressed
// at once) and over 1 MiB (streamed), with keys and values null, empty,
// short and long, headers among them, and cut at several limits: the
// records are DecodeRecords', cut.
func TestStreamRecordsAsDecode(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 100_000) // 1.6 MB
	recs := []Record{
		{Key: []byte("k1"), Value: []byte("v1")},
		{Key: nil, Value: []byte{}},
		{Key: []byte{}, Value: nil, Headers: []RecordHeader{{Key: "h", Value: []byte("hv")}, {Key: "n"}}},
		{Key: bytes.Repeat([]byte("K"), 70_000), Value: big},
		{Key: []byte("last"), Value: []byte("x")},
	}
	for _, c := range []Compression{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		for _, rs := range [][]Record{recs[:3], recs} {
			b, err := EncodeBatch(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Compression: c, Records: rs})
			if err != nil {
				t.Fatal(err)
			}
			_, want, err := DecodeRecords(b)
			if err != nil {
				t.Fatal(err)
			}
			for _, limit := range []int{0, 1, 2, 100, 65_536, 70_000, len(big), 1 << 30} {
				t.Run(fmt.Sprintf("%s/%d/%d", c, len(rs), limit), func(t *testing.T) {
					got, err := streamed(b, limit)
					if err != nil {
						t.Fatal(err)
					}
					sameAsDecoded(t, got, want, limit)
				})
			}
		}
	}
}

// TestStreamRecordsBad: a batch whose records do not all read fails with
// no record reported (as DecodeRecords fails it whole): a bad record after
// a good one, bytes after the records, records missing.
func TestStreamRecordsBad(t *testing.T) {
	rs := []Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}}
	b, err := EncodeBatch(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Records: rs})
	if err != nil {
		t.Fatal(err)
	}
	// The second record's key length (2 after its length, attributes and
	// deltas) claims more bytes than the record has.
	bad := bytes.Clone(b)
	second := BatchHeaderSize + 1 + int(bad[BatchHeaderSize])/2
	bad[second+4] = 40
	RecomputeCRC(bad)
	got, err := streamed(bad, 10)
	if err == nil || len(got) != 0 {
		t.Fatalf("streamed %+v, %v; want an error alone", got, err)
	}
	if _, _, derr := DecodeRecords(bad); derr == nil {
		t.Fatal("DecodeRecords took the bad batch")
	}
	// One record declared of two: bytes after the records.
	short := bytes.Clone(b)
	short[57+3] = 1 // the record count's low byte
	RecomputeCRC(short)
	if got, err := streamed(short, 10); err == nil || len(got) != 0 {
		t.Fatalf("streamed %+v, %v; want an error alone", got, err)
	}
	// Three declared of two: the batch ends early.
	long := bytes.Clone(b)
	long[57+3] = 3
	RecomputeCRC(long)
	if got, err := streamed(long, 10); err == nil || len(got) != 0 {
		t.Fatalf("streamed %+v, %v; want an error alone", got, err)
	}
}

// FuzzStreamRecords holds StreamRecords to DecodeRecords: a batch that
// decodes streams to the same records (cut at the limit); one that
// streams decodes.
func FuzzStreamRecords(f *testing.F) {
	fuzzBatchSeeds(f)
	f.Fuzz(func(t *testing.T, batch []byte, limit int16, _ bool) {
		got, serr := streamed(batch, int(limit))
		_, recs, derr := DecodeRecords(batch)
		switch {
		case derr == nil && serr != nil:
			t.Fatalf("decodes, does not stream: %v", serr)
		case derr != nil && serr == nil:
			t.Fatalf("streams, does not decode: %v", derr)
		case serr != nil && len(got) != 0:
			t.Fatalf("%d records reported before the error %v", len(got), serr)
		case derr == nil:
			sameAsDecoded(t, got, recs, max(int(limit), 0))
		}
	})
}
