package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func testRecords(n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{
			TimestampDelta: int64(i * 3),
			OffsetDelta:    int32(i),
			Key:            []byte{byte('k'), byte(i)},
			Value:          bytes.Repeat([]byte{byte(i)}, i*10),
		}
		if i%2 == 1 {
			recs[i].Key = nil
			recs[i].Headers = []RecordHeader{{Key: "h", Value: []byte("v")}, {Key: "", Value: nil}}
		}
		if i == 2 {
			recs[i].Value = nil
		}
	}
	return recs
}

func testSpec(c Compression, n int) BatchSpec {
	return BatchSpec{
		BaseOffset:           0,
		BaseTimestamp:        1_700_000_000_000,
		Compression:          c,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
		PartitionLeaderEpoch: -1,
		Records:              testRecords(n),
	}
}

func mustBatch(t testing.TB, s BatchSpec) []byte {
	t.Helper()
	b, err := EncodeBatch(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncodeBatchMatchesKmsg builds the same batch with kmsg's RecordBatch
// and Record encoders (the layout franz-go's kgo produces) and compares bytes.
func TestEncodeBatchMatchesKmsg(t *testing.T) {
	recs := testRecords(5)
	var raw []byte
	for i, r := range recs {
		kr := kmsg.Record{
			Attributes:       r.Attributes,
			TimestampDelta64: r.TimestampDelta,
			OffsetDelta:      r.OffsetDelta,
			Key:              r.Key,
			Value:            r.Value,
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1) // length prefix is 1 byte here
		raw = kr.AppendTo(raw)
		_ = i
	}
	kb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           0,
		LastOffsetDelta:      4,
		FirstTimestamp:       1_700_000_000_000,
		MaxTimestamp:         1_700_000_000_012,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           5,
		Records:              raw,
	}
	kb.Length = int32(49 + len(raw))
	want := kb.AppendTo(nil)
	binary.BigEndian.PutUint32(want[17:], crc32.Checksum(want[21:], crc32.MakeTable(crc32.Castagnoli)))

	got := mustBatch(t, testSpec(CompressionNone, 5))
	if !bytes.Equal(got, want) {
		t.Fatalf("EncodeBatch differs from kmsg encoding:\n got %x\nwant %x", got, want)
	}

	// And kmsg decodes ours.
	var back kmsg.RecordBatch
	if err := back.ReadFrom(got); err != nil {
		t.Fatal(err)
	}
	if back.NumRecords != 5 || int32(binary.BigEndian.Uint32(got[17:])) != back.CRC {
		t.Fatalf("kmsg read back %+v", back)
	}
}

func TestDecodeRecordsAllCodecs(t *testing.T) {
	for _, c := range allCodecs {
		s := testSpec(c, 7)
		s.Transactional = true
		s.ProducerID, s.ProducerEpoch, s.BaseSequence = 42, 3, 100
		b := mustBatch(t, s)
		if _, err := ValidateProduce(b, ValidateOptions{ProduceVersion: 9, DeepValidate: true}); err != nil {
			t.Fatalf("%s: validate: %v", c, err)
		}
		h, recs, err := DecodeRecords(b)
		if err != nil {
			t.Fatalf("%s: decode: %v", c, err)
		}
		if h.Compression() != c || !h.IsTransactional() || h.IsControl() || h.ProducerID != 42 || h.NumRecords != 7 || h.LastOffsetDelta != 6 {
			t.Fatalf("%s: header %+v", c, h)
		}
		if h.MaxTimestamp != s.BaseTimestamp+18 {
			t.Fatalf("%s: max timestamp %d", c, h.MaxTimestamp)
		}
		checkRecordsEqual(t, recs, s.Records)

		for _, to := range allCodecs {
			rb, err := Recompress(b, to)
			if err != nil {
				t.Fatalf("%s->%s: %v", c, to, err)
			}
			rh, rrecs, err := DecodeRecords(rb)
			if err != nil {
				t.Fatalf("%s->%s: decode: %v", c, to, err)
			}
			if rh.Compression() != to || rh.ProducerID != 42 || rh.BaseSequence != 100 || rh.MaxTimestamp != h.MaxTimestamp {
				t.Fatalf("%s->%s: header %+v", c, to, rh)
			}
			checkRecordsEqual(t, rrecs, s.Records)
			if _, err := ValidateProduce(rb, ValidateOptions{ProduceVersion: 9, DeepValidate: true}); err != nil {
				t.Fatalf("%s->%s: validate: %v", c, to, err)
			}
		}
	}
}

func checkRecordsEqual(t *testing.T, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Attributes != w.Attributes || g.TimestampDelta != w.TimestampDelta || g.OffsetDelta != w.OffsetDelta ||
			!bytes.Equal(g.Key, w.Key) || (g.Key == nil) != (w.Key == nil) ||
			!bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) || len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: got %+v want %+v", i, g, w)
		}
		for j := range g.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !bytes.Equal(g.Headers[j].Value, w.Headers[j].Value) ||
				(g.Headers[j].Value == nil) != (w.Headers[j].Value == nil) {
				t.Fatalf("record %d header %d: got %+v want %+v", i, j, g.Headers[j], w.Headers[j])
			}
		}
	}
}

func TestEncodeBatchNumbersOffsets(t *testing.T) {
	s := testSpec(CompressionNone, 3)
	for i := range s.Records {
		s.Records[i].OffsetDelta = 0
	}
	h, recs, err := DecodeRecords(mustBatch(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if h.LastOffsetDelta != 2 || recs[2].OffsetDelta != 2 {
		t.Fatalf("not numbered: %+v %+v", h, recs[2])
	}
}

// edit returns a copy of b changed by fn, with the CRC recomputed when crc is set.
func edit(b []byte, crc bool, fn func(b []byte) []byte) []byte {
	c := fn(append([]byte(nil), b...))
	if crc && len(c) >= BatchHeaderSize {
		RecomputeCRC(c)
	}
	return c
}

func TestValidateProduce(t *testing.T) {
	good := mustBatch(t, testSpec(CompressionNone, 3))
	goodLZ4 := mustBatch(t, testSpec(CompressionLZ4, 3))
	goodZstd := mustBatch(t, testSpec(CompressionZstd, 3))
	setAttr := func(v int16) func([]byte) []byte {
		return func(b []byte) []byte {
			binary.BigEndian.PutUint16(b[21:], uint16(v))
			return b
		}
	}
	putI32 := func(off int, v int32) func([]byte) []byte {
		return func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[off:], uint32(v))
			return b
		}
	}
	// A compressed batch whose inner records claim 4 but the header says 3.
	badInner := func() []byte {
		var raw []byte
		for _, r := range testRecords(4) {
			raw = appendRecord(raw, &r)
		}
		h, _ := ParseBatchHeader(goodLZ4)
		b, err := assembleBatch(h, raw)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}()

	cases := []struct {
		name    string
		records []byte
		opts    ValidateOptions
		code    int16 // 0: valid
		batches int
	}{
		{"good", good, ValidateOptions{ProduceVersion: 3}, 0, 1},
		{"good lz4 deep", goodLZ4, ValidateOptions{ProduceVersion: 3, DeepValidate: true}, 0, 1},
		{"good zstd v7", goodZstd, ValidateOptions{ProduceVersion: 7}, 0, 1},
		{"empty", nil, ValidateOptions{ProduceVersion: 3}, kerr.InvalidRecord.Code, 0},
		{"magic 1", edit(good, false, func(b []byte) []byte { b[16] = 1; return b }), ValidateOptions{ProduceVersion: 3}, kerr.InvalidRecord.Code, 0},
		{"short header", good[:40], ValidateOptions{ProduceVersion: 3}, kerr.CorruptMessage.Code, 0},
		{"truncated", good[:len(good)-1], ValidateOptions{ProduceVersion: 3}, kerr.CorruptMessage.Code, 0},
		{"trailing bytes", append(append([]byte(nil), good...), 1, 2, 3), ValidateOptions{ProduceVersion: 3}, kerr.CorruptMessage.Code, 0},
		{"two batches v3", append(append([]byte(nil), good...), good...), ValidateOptions{ProduceVersion: 3}, kerr.InvalidRecord.Code, 0},
		{"two batches v2", append(append([]byte(nil), good...), good...), ValidateOptions{ProduceVersion: 2}, 0, 2},
		{"too large", good, ValidateOptions{ProduceVersion: 3, MaxBatchBytes: int32(len(good) - 1)}, kerr.MessageTooLarge.Code, 0},
		{"exactly max", good, ValidateOptions{ProduceVersion: 3, MaxBatchBytes: int32(len(good))}, 0, 1},
		{"bad crc", edit(good, false, func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ValidateOptions{ProduceVersion: 3}, kerr.CorruptMessage.Code, 0},
		{"length below min", edit(good, false, putI32(8, 10)), ValidateOptions{ProduceVersion: 3}, kerr.CorruptMessage.Code, 0},
		{"codec 5", edit(good, true, setAttr(5)), ValidateOptions{ProduceVersion: 3}, kerr.CorruptMessage.Code, 0},
		{"zstd v6", goodZstd, ValidateOptions{ProduceVersion: 6}, kerr.UnsupportedCompressionType.Code, 0},
		{"control", edit(good, true, setAttr(0x20)), ValidateOptions{ProduceVersion: 3}, kerr.InvalidRecord.Code, 0},
		{"zero records", edit(good, true, putI32(57, 0)), ValidateOptions{ProduceVersion: 3}, kerr.InvalidRecord.Code, 0},
		{"count vs delta", edit(good, true, putI32(23, 5)), ValidateOptions{ProduceVersion: 3}, kerr.InvalidRecord.Code, 0},
		{"count vs records", edit(good, true, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[23:], 1)
			binary.BigEndian.PutUint32(b[57:], 2)
			return b
		}), ValidateOptions{ProduceVersion: 3}, kerr.InvalidRecord.Code, 0},
		// Kafka 4.4 answers INVALID_RECORD (87) for a record whose framing is wrong (its
		// DefaultRecord.readFrom throws InvalidRecordException), not CORRUPT_MESSAGE.
		{"record framing", edit(good, true, func(b []byte) []byte { b[61] = 0x7f; return b }), ValidateOptions{ProduceVersion: 3}, kerr.InvalidRecord.Code, 0},
		{"deep inner count", badInner, ValidateOptions{ProduceVersion: 3, DeepValidate: true}, kerr.InvalidRecord.Code, 0},
		{"shallow inner count", badInner, ValidateOptions{ProduceVersion: 3}, 0, 1},
		{"deep garbage payload", edit(goodLZ4, true, func(b []byte) []byte { b[70] ^= 0xff; b[71] ^= 0xff; return b }),
			ValidateOptions{ProduceVersion: 3, DeepValidate: true}, kerr.UnknownServerError.Code, 0}, // Kafka 4.4: "Failed to decompress record stream"
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdrs, err := ValidateProduce(tc.records, tc.opts)
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if len(hdrs) != tc.batches {
					t.Fatalf("got %d headers, want %d", len(hdrs), tc.batches)
				}
				return
			}
			var be *BatchError
			if !errors.As(err, &be) {
				t.Fatalf("want *BatchError code %d, got %v", tc.code, err)
			}
			if be.Code != tc.code {
				t.Fatalf("code %d (%v), want %d", be.Code, err, tc.code)
			}
			if !errors.Is(err, kerr.ErrorForCode(tc.code)) {
				t.Fatalf("errors.Is kerr failed for %v", err)
			}
		})
	}
}

func TestInPlaceEdits(t *testing.T) {
	b := mustBatch(t, testSpec(CompressionSnappy, 4))
	SetBaseOffset(b, 1000)
	SetPartitionLeaderEpoch(b, 7)
	// A client's batch must have base offset 0 (Kafka 4.4: INVALID_RECORD
	// before the CRC is checked); the CRC does not cover the edits.
	if _, err := ValidateProduce(b, ValidateOptions{ProduceVersion: 9}); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("base offset 1000: %v, want INVALID_RECORD", err)
	}
	if h, _ := ParseBatchHeader(b); crc32.Checksum(b[offAttributes:], castagnoli) != h.CRC {
		t.Fatal("offset/epoch edits broke the CRC")
	}
	SetBaseOffset(b, 0)
	if _, err := ValidateProduce(b, ValidateOptions{ProduceVersion: 9}); err != nil {
		t.Fatalf("offset/epoch edits broke the batch: %v", err)
	}
	SetLogAppendTime(b, 1_800_000_000_000)
	if _, err := ValidateProduce(b, ValidateOptions{ProduceVersion: 9, DeepValidate: true}); err != nil {
		t.Fatalf("log append time broke the batch: %v", err)
	}
	h, _ := ParseBatchHeader(b)
	if h.BaseOffset != 0 || h.PartitionLeaderEpoch != 7 || !h.IsLogAppendTime() || h.MaxTimestamp != 1_800_000_000_000 ||
		h.LastOffset() != 3 || h.Compression() != CompressionSnappy || h.TotalSize() != len(b) {
		t.Fatalf("header after edits: %+v", h)
	}
}

func TestSplitBatches(t *testing.T) {
	var log []byte
	var sizes []int
	for i, c := range allCodecs {
		s := testSpec(c, i+1)
		s.BaseOffset = int64(i * 10)
		b := mustBatch(t, s)
		sizes = append(sizes, len(b))
		log = append(log, b...)
	}
	var seen []int64
	n, err := SplitBatches(log, func(batch []byte, h BatchHeader) error {
		if len(batch) != h.TotalSize() || cap(batch) != len(batch) {
			t.Fatalf("batch slice %d/%d for size %d", len(batch), cap(batch), h.TotalSize())
		}
		seen = append(seen, h.BaseOffset)
		return nil
	})
	if err != nil || n != len(log) || len(seen) != 5 || seen[4] != 40 {
		t.Fatalf("n %d err %v seen %v", n, err, seen)
	}

	// A truncated tail: valid prefix is the first four batches.
	prefix := len(log) - sizes[4]
	for _, cut := range []int{1, 30, sizes[4] - 1} {
		n, err = SplitBatches(log[:prefix+cut], func([]byte, BatchHeader) error { return nil })
		if n != prefix || !errors.Is(err, ErrMalformed) {
			t.Fatalf("cut %d: n %d (want %d) err %v", cut, n, prefix, err)
		}
	}
	// A corrupt batch in the middle.
	bad := append([]byte(nil), log...)
	bad[sizes[0]+BatchHeaderSize] ^= 0xff
	n, err = SplitBatches(bad, func([]byte, BatchHeader) error { return nil })
	if n != sizes[0] || !errors.Is(err, ErrMalformed) {
		t.Fatalf("corrupt: n %d err %v", n, err)
	}
	// fn's error stops the walk and is returned as is.
	stop := errors.New("stop")
	n, err = SplitBatches(log, func(_ []byte, h BatchHeader) error {
		if h.BaseOffset == 20 {
			return stop
		}
		return nil
	})
	if n != sizes[0]+sizes[1] || err != stop {
		t.Fatalf("stop: n %d err %v", n, err)
	}
	if n, err := SplitBatches(nil, nil); n != 0 || err != nil {
		t.Fatalf("empty: %d %v", n, err)
	}
}

func TestRecompressControlUnchanged(t *testing.T) {
	s := testSpec(CompressionNone, 1)
	s.Control = true
	b := mustBatch(t, s)
	out, err := Recompress(b, CompressionZstd)
	if err != nil || !bytes.Equal(out, b) {
		t.Fatalf("control batch recompressed: %v", err)
	}
	if _, err := Recompress(b[:50], CompressionGzip); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short: %v", err)
	}
}

// oddBatch is a batch of three records as sent by a producer that numbers
// them 0, 2, 4, with a first timestamp delta of 2, attributes 0x7f on the
// first record and a max timestamp that is not the records'.
func oddBatch(t *testing.T, c Compression) []byte {
	t.Helper()
	var body []byte
	for _, r := range []Record{
		{Attributes: 0x7f, TimestampDelta: 2, OffsetDelta: 0, Key: []byte("a"), Value: []byte("v-a"), Headers: []RecordHeader{{Key: "h", Value: []byte("x")}}},
		{TimestampDelta: 5, OffsetDelta: 2, Key: []byte("b"), Value: []byte("v-b")},
		{TimestampDelta: -20, OffsetDelta: 4, Value: []byte("v-c"), Headers: []RecordHeader{{Key: "n"}}},
	} {
		body = appendRecord(body, &r)
	}
	payload, err := Compress(c, body)
	if err != nil {
		t.Fatal(err)
	}
	h := BatchHeader{PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(c), LastOffsetDelta: 2,
		BaseTimestamp: 1_700_000_000_000 - 10, MaxTimestamp: 1_700_000_000_000 + 100, ProducerID: 42, ProducerEpoch: 3, BaseSequence: 9, NumRecords: 3}
	h.BatchLength = int32(minBatchLength + len(payload))
	b := append(appendBatchHeader(nil, h), payload...)
	RecomputeCRC(b)
	return b
}

// TestRecompressAsKafka checks the batch Recompress builds against what
// Kafka 4.4 stored for the same batch sent to a topic of another codec
// (compat-tests/FINDINGS.md "inner offsets"): records renumbered 0..n-1,
// attributes 0, the base timestamp the first record's, the max timestamp
// the largest record timestamp; and the RecordStats ValidateProduce
// reports of the batch as sent.
func TestRecompressAsKafka(t *testing.T) {
	const base = 1_700_000_000_000 - 10
	for _, from := range allCodecs {
		b := oddBatch(t, from)
		var st RecordStats
		if _, err := ValidateProduce(b, ValidateOptions{ProduceVersion: 9, DeepValidate: true, Stats: &st}); err != nil {
			t.Fatalf("%s: validate: %v", from, err)
		}
		// Kafka keeps an uncompressed batch's deltas as sent.
		if st.MaxTimestamp != base+5 || st.OffsetsInOrder != (from == CompressionNone) {
			t.Fatalf("%s: stats %+v", from, st)
		}
		for _, to := range allCodecs {
			if to == from {
				continue
			}
			out, err := Recompress(b, to)
			if err != nil {
				t.Fatalf("%s->%s: %v", from, to, err)
			}
			h, recs, err := DecodeRecords(out)
			if err != nil {
				t.Fatalf("%s->%s: decode: %v", from, to, err)
			}
			if h.Compression() != to || h.BaseTimestamp != base+2 || h.MaxTimestamp != base+5 || h.LastOffsetDelta != 2 ||
				h.ProducerID != 42 || h.ProducerEpoch != 3 || h.BaseSequence != 9 || h.NumRecords != 3 {
				t.Fatalf("%s->%s: header %+v", from, to, h)
			}
			for i, want := range []struct {
				tsd       int64
				key, val  string
				nullKey   bool
				nHeaders  int
				headerVal []byte
			}{{0, "a", "v-a", false, 1, []byte("x")}, {3, "b", "v-b", false, 0, nil}, {-22, "", "v-c", true, 1, nil}} {
				r := recs[i]
				if r.Attributes != 0 || r.OffsetDelta != int32(i) || r.TimestampDelta != want.tsd || string(r.Key) != want.key ||
					(r.Key == nil) != want.nullKey || string(r.Value) != want.val || len(r.Headers) != want.nHeaders ||
					(want.nHeaders > 0 && !bytes.Equal(r.Headers[0].Value, want.headerVal)) || (want.nHeaders > 0 && (r.Headers[0].Value == nil) != (want.headerVal == nil)) {
					t.Fatalf("%s->%s: record %d: %+v", from, to, i, r)
				}
			}
			var st2 RecordStats
			if _, err := ValidateProduce(out, ValidateOptions{ProduceVersion: 9, DeepValidate: true, Stats: &st2}); err != nil || !st2.OffsetsInOrder || st2.MaxTimestamp != base+5 {
				t.Fatalf("%s->%s: rebuilt batch: %v %+v", from, to, err, st2)
			}
		}
	}
}

// TestRecompressStrict checks that Recompress refuses what Kafka's full
// record read refuses (parseRecord's rules) at every cut and corruption of
// the records, never panicking, and agrees with DecodeRecords.
func TestRecompressStrict(t *testing.T) {
	good := oddBatch(t, CompressionNone)
	body := good[BatchHeaderSize:]
	for i := range body {
		for _, v := range []byte{0x00, 0x01, 0x7f, 0x80, 0xff} {
			b := append([]byte(nil), good...)
			b[BatchHeaderSize+i] = v
			_, _, derr := DecodeRecords(b)
			out, rerr := Recompress(b, CompressionLZ4)
			if (derr == nil) != (rerr == nil) {
				t.Fatalf("byte %d = %#x: DecodeRecords %v, Recompress %v", i, v, derr, rerr)
			}
			if rerr != nil && !errors.Is(rerr, ErrMalformed) {
				t.Fatalf("byte %d = %#x: %v", i, v, rerr)
			}
			if rerr == nil {
				if _, _, err := DecodeRecords(out); err != nil {
					t.Fatalf("byte %d = %#x: rebuilt batch: %v", i, v, err)
				}
			}
		}
	}
}
