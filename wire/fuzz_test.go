package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func FuzzParseRequest(f *testing.F) {
	for _, v := range []int16{0, 3} {
		f.Add(AppendRequest(nil, RequestHeader{APIVersion: v, CorrelationID: 1, ClientID: strp("c")}, kmsg.NewPtrApiVersionsRequest())[4:])
	}
	p := kmsg.NewPtrProduceRequest()
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "t"
	tp.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 1, Records: mustBatch(f, testSpec(CompressionNone, 1))}}
	p.Topics = append(p.Topics, tp)
	for _, v := range []int16{3, 9} {
		f.Add(AppendRequest(nil, RequestHeader{APIVersion: v, ClientID: strp("p")}, p)[4:])
	}
	f.Add(AppendRequest(nil, RequestHeader{APIVersion: 12}, kmsg.NewPtrMetadataRequest())[4:])
	f.Add(AppendRequest(nil, RequestHeader{APIVersion: 0}, kmsg.NewPtrControlledShutdownRequest())[4:])
	f.Fuzz(func(t *testing.T, frame []byte) {
		hdr, req, err := ParseRequest(frame)
		if err != nil {
			if req != nil {
				t.Fatal("request with error")
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownAPIKey) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("unexpected error kind %v", err)
			}
			return
		}
		// Re-encode and re-parse: the second encoding must equal the first.
		enc := AppendRequest(nil, hdr, req)
		hdr2, req2, err := ParseRequest(enc[4:])
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if hdr2.APIKey != hdr.APIKey || hdr2.APIVersion != hdr.APIVersion || hdr2.CorrelationID != hdr.CorrelationID ||
			(hdr2.ClientID == nil) != (hdr.ClientID == nil) || (hdr.ClientID != nil && *hdr.ClientID != *hdr2.ClientID) {
			t.Fatalf("header %+v became %+v", hdr, hdr2)
		}
		enc2 := AppendRequest(nil, hdr2, req2)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("re-encoding differs:\n%x\n%x", enc, enc2)
		}
	})
}

func fuzzBatchSeeds(f *testing.F) {
	for _, c := range allCodecs {
		f.Add(mustBatch(f, testSpec(c, 3)), int16(9), true)
		f.Add(mustBatch(f, testSpec(c, 3)), int16(0x109), true)
	}
	f.Add(mustBatch(f, testSpec(CompressionNone, 0)), int16(3), false)
	f.Add([]byte{}, int16(3), false)
}

func FuzzValidateProduce(f *testing.F) {
	fuzzBatchSeeds(f)
	f.Fuzz(func(t *testing.T, records []byte, version int16, deep bool) {
		// Half the inputs get a correct CRC so that the checks behind it are reached.
		if version&0x100 != 0 && len(records) >= BatchHeaderSize {
			records = append([]byte(nil), records...)
			RecomputeCRC(records)
		}
		hdrs, err := ValidateProduce(records, ValidateOptions{MaxBatchBytes: 1 << 20, ProduceVersion: version, DeepValidate: deep})
		if err != nil {
			var be *BatchError
			if !errors.As(err, &be) || be.Code == 0 {
				t.Fatalf("error is not a *BatchError with a code: %v", err)
			}
			return
		}
		total := 0
		for _, h := range hdrs {
			total += h.TotalSize()
		}
		if total != len(records) {
			t.Fatalf("headers cover %d of %d bytes", total, len(records))
		}
		if deep && len(hdrs) == 1 && hdrs[0].Compression() == CompressionNone {
			// A deeply validated uncompressed batch decodes. (A
			// compressed one is walked by Kafka's lenient rules for
			// batches kept as they came, checkCompressedRecords, which
			// do not hold a record's fields to its length.)
			h, recs, err := DecodeRecords(records)
			if err != nil {
				t.Fatalf("valid batch does not decode: %v", err)
			}
			if len(recs) != int(h.NumRecords) {
				t.Fatalf("decoded %d of %d records", len(recs), h.NumRecords)
			}
		}
	})
}

func FuzzDecodeRecords(f *testing.F) {
	fuzzBatchSeeds(f)
	f.Fuzz(func(t *testing.T, batch []byte, _ int16, _ bool) {
		var visited []RecordInfo
		verr := VisitRecords(batch, func(_ int32, r RecordInfo) { visited = append(visited, r) })
		h, recs, err := DecodeRecords(batch)
		if err != nil {
			return
		}
		// What decodes strictly is visited alike (Kafka's partial
		// read accepts more, never less).
		if verr != nil {
			t.Fatalf("decodes but not visited: %v", verr)
		}
		if len(visited) != len(recs) {
			t.Fatalf("%d records decoded, %d visited", len(recs), len(visited))
		}
		for i, r := range recs {
			if want := (RecordInfo{TimestampDelta: r.TimestampDelta, OffsetDelta: r.OffsetDelta, KeyNull: r.Key == nil}); visited[i] != want {
				t.Fatalf("record %d: visited %+v, decoded %+v", i, visited[i], want)
			}
		}
		if h.Compression() == CompressionNone {
			crossCheckKmsg(t, batch[BatchHeaderSize:h.TotalSize()], recs)
		}
		// Re-encode what we decoded and decode again.
		spec := BatchSpec{
			BaseOffset: h.BaseOffset, BaseTimestamp: h.BaseTimestamp, MaxTimestamp: h.MaxTimestamp,
			Compression: h.Compression(), ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch,
			BaseSequence: h.BaseSequence, Transactional: h.IsTransactional(), Control: h.IsControl(),
			LogAppendTime: h.IsLogAppendTime(), PartitionLeaderEpoch: h.PartitionLeaderEpoch, Records: recs,
		}
		enc, err := EncodeBatch(spec)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		_, recs2, err := DecodeRecords(enc)
		if err != nil {
			t.Fatalf("decode re-encoded: %v", err)
		}
		if len(recs2) != len(recs) {
			t.Fatalf("%d records became %d", len(recs), len(recs2))
		}
		for i := range recs {
			a, b := recs[i], recs2[i]
			if !bytes.Equal(a.Key, b.Key) || (a.Key == nil) != (b.Key == nil) || !bytes.Equal(a.Value, b.Value) ||
				(a.Value == nil) != (b.Value == nil) || a.TimestampDelta != b.TimestampDelta || len(a.Headers) != len(b.Headers) {
				t.Fatalf("record %d: %+v became %+v", i, a, b)
			}
		}
		if h.Compression() == CompressionZstd {
			// A window over zstdMaxStreamWindow does not stream
			// (as zstd-jni; such a batch never passes
			// ValidateProduce); whole, it decodes.
			var fh zstd.Header
			if body := batch[BatchHeaderSize:h.TotalSize()]; fh.Decode(body) == nil && (fh.WindowSize > zstdMaxStreamWindow || fh.SingleSegment && fh.FrameContentSize > zstdMaxStreamWindow) {
				return
			}
		}
		to := CompressionSnappy
		if h.Compression() == CompressionSnappy {
			to = CompressionGzip
		}
		out, err := Recompress(batch, to)
		if err != nil {
			t.Fatalf("recompress decodable batch: %v", err)
		}
		if h.IsControl() {
			return
		}
		// Rebuilt as Kafka does: renumbered, attributes 0, the same
		// timestamps, keys, values and headers.
		rh, recs3, err := DecodeRecords(out)
		if err != nil || len(recs3) != len(recs) || rh.Compression() != to {
			t.Fatalf("rebuilt batch: %v, %d records of %d, codec %v", err, len(recs3), len(recs), rh.Compression())
		}
		ts := func(h BatchHeader, r Record) int64 {
			if h.IsLogAppendTime() {
				return h.MaxTimestamp
			}
			return h.BaseTimestamp + r.TimestampDelta
		}
		for i := range recs {
			a, b := recs[i], recs3[i]
			if b.OffsetDelta != int32(i) || b.Attributes != 0 || ts(h, a) != ts(rh, b) || !bytes.Equal(a.Key, b.Key) || (a.Key == nil) != (b.Key == nil) ||
				!bytes.Equal(a.Value, b.Value) || (a.Value == nil) != (b.Value == nil) || len(a.Headers) != len(b.Headers) {
				t.Fatalf("record %d: %+v rebuilt as %+v", i, a, b)
			}
		}
	})
}

func FuzzDecompress(f *testing.F) {
	for _, c := range allCodecs {
		comp, err := Compress(c, []byte("hello hello hello hello samsa"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(int8(c), comp)
	}
	f.Add(int8(CompressionSnappy), xerialFrame([]byte("framed framed framed"), 7))
	f.Fuzz(func(t *testing.T, c int8, src []byte) {
		out, err := Decompress(Compression(c), src)
		if err != nil {
			return
		}
		if Compression(c) < CompressionNone || Compression(c) > CompressionZstd {
			t.Fatalf("codec %d accepted", c)
		}
		comp, err := Compress(Compression(c), out)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decompress(Compression(c), comp)
		if err != nil || !bytes.Equal(back, out) {
			t.Fatalf("round trip of decompressed output failed: %v", err)
		}
	})
}

// crossCheckKmsg decodes the uncompressed records section with kmsg's
// record decoder and compares with ours.
func crossCheckKmsg(t *testing.T, body []byte, recs []Record) {
	t.Helper()
	for i, r := range recs {
		l, n := binary.Varint(body)
		end := n + int(l)
		var kr kmsg.Record
		if err := kr.ReadFrom(body[:end]); err != nil {
			t.Fatalf("record %d: kmsg rejects what we accepted: %v", i, err)
		}
		body = body[end:]
		if kr.Attributes != r.Attributes || kr.TimestampDelta64 != r.TimestampDelta || kr.OffsetDelta != r.OffsetDelta ||
			!bytes.Equal(kr.Key, r.Key) || (kr.Key == nil) != (r.Key == nil) || !bytes.Equal(kr.Value, r.Value) ||
			(kr.Value == nil) != (r.Value == nil) || len(kr.Headers) != len(r.Headers) {
			t.Fatalf("record %d: kmsg %+v, ours %+v", i, kr, r)
		}
		for j, h := range kr.Headers {
			if h.Key != r.Headers[j].Key || !bytes.Equal(h.Value, r.Headers[j].Value) {
				t.Fatalf("record %d header %d: kmsg %+v, ours %+v", i, j, h, r.Headers[j])
			}
		}
	}
}
