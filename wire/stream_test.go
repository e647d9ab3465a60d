package wire

import (
	"bytes"
	"encoding/binary"
	"io"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
)

// xerialWriter writes xerial-framed snappy as the Java client does (32 KiB
// chunks).
type xerialWriter struct {
	w   io.Writer
	buf []byte
}

func (x *xerialWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), 32<<10-len(x.buf))
		x.buf = append(x.buf, p[:k]...)
		p = p[k:]
		if len(x.buf) == 32<<10 {
			if err := x.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (x *xerialWriter) flush() error {
	enc := snappy.Encode(nil, x.buf)
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(enc)))
	x.buf = x.buf[:0]
	if _, err := x.w.Write(l[:]); err != nil {
		return err
	}
	_, err := x.w.Write(enc)
	return err
}

func (x *xerialWriter) Close() error {
	if len(x.buf) > 0 {
		return x.flush()
	}
	return nil
}

// compressingWriter returns a writer compressing into dst with codec c, as
// producers stream it.
func compressingWriter(t testing.TB, c Compression, dst *bytes.Buffer) io.WriteCloser {
	t.Helper()
	switch c {
	case CompressionGzip:
		return gzip.NewWriter(dst)
	case CompressionSnappy:
		dst.Write(xerialMagic)
		dst.Write([]byte{0, 0, 0, 1, 0, 0, 0, 1})
		return &xerialWriter{w: dst}
	case CompressionLZ4:
		w := lz4.NewWriter(dst)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false)); err != nil {
			t.Fatal(err)
		}
		return w
	case CompressionZstd:
		w, err := zstd.NewWriter(dst, zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	t.Fatalf("codec %v", c)
	return nil
}

// zipBomb returns a batch of codec c holding count records, each of a
// zero-filled value of valueSize bytes, compressed as it is written (never
// held whole), with extra appended after the records.
func zipBomb(t testing.TB, c Compression, count int32, valueSize int, extra []byte) []byte {
	t.Helper()
	var body bytes.Buffer
	w := compressingWriter(t, c, &body)
	var rec []byte
	rec = binary.AppendVarint(rec, 0) // placeholder: the length, below
	zeros := make([]byte, 64<<10)
	for i := range count {
		var fields []byte
		fields = append(fields, 0)                             // attributes
		fields = binary.AppendVarint(fields, 0)                // timestamp delta
		fields = binary.AppendVarint(fields, int64(i))         // offset delta
		fields = binary.AppendVarint(fields, -1)               // null key
		fields = binary.AppendVarint(fields, int64(valueSize)) // value length
		rec = binary.AppendVarint(rec[:0], int64(len(fields)+valueSize+1))
		rec = append(rec, fields...)
		if _, err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		for left := valueSize; left > 0; {
			k := min(left, len(zeros))
			if _, err := w.Write(zeros[:k]); err != nil {
				t.Fatal(err)
			}
			left -= k
		}
		if _, err := w.Write([]byte{0}); err != nil { // no headers
			t.Fatal(err)
		}
	}
	if _, err := w.Write(extra); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return withCompressedBody(mustBatch(t, testSpec(c, 1)), body.Bytes(), count)
}

// validateAllocs returns ValidateProduce's answer to batch and the bytes
// allocated while it ran.
func validateAllocs(batch []byte) (int16, uint64) {
	var err error
	runtime.GC()
	alloc := allocated(func() { _, err = ValidateProduce(batch, ValidateOptions{ProduceVersion: 9, DeepValidate: true}) })
	var code int16
	if err != nil {
		code = err.(*BatchError).Code
	}
	return code, alloc
}

// TestValidateZipBomb validates small batches that decompress to hundreds
// of MB: one record of a zero-filled value, and many records. Kafka 4.4
// accepts such a batch when its records are well formed (it streams them);
// so must samsa, and its validation must allocate a bounded amount (the
// walk's window, a codec's block or window), not the decompressed size.
func TestValidateZipBomb(t *testing.T) {
	size := 512 << 20
	if raceEnabled || testing.Short() {
		size = 48 << 20
	}
	// The bound: the 64 KiB window, the 1 MiB first try, a zstd window
	// (klauspost's encoder writes 8 MiB ones), an LZ4 or snappy block,
	// and the decoders' state.
	const bound = 24 << 20
	for _, c := range allCodecs[1:] {
		for _, shape := range []struct {
			name  string
			count int32
			value int
		}{{"one record", 1, size}, {"many records", int32(size / (16 << 10)), 16<<10 - 16}} {
			t.Run(c.String()+"/"+shape.name, func(t *testing.T) {
				batch := zipBomb(t, c, shape.count, shape.value, nil)
				code, alloc := validateAllocs(batch)
				t.Logf("%d-byte batch, %d MiB decompressed: code %d, %d KiB allocated", len(batch), size>>20, code, alloc>>10)
				if code != 0 {
					t.Fatalf("code %d, want 0 (Kafka 4.4 accepts well formed records)", code)
				}
				if !raceEnabled && alloc > bound {
					t.Fatalf("validation allocated %d bytes for %d decompressed, want <= %d", alloc, size, bound)
				}
				// The same stream with one byte after its records,
				// and declaring one record more: INVALID_RECORD,
				// as the records' walk answers in memory.
				if code, _ := validateAllocs(zipBomb(t, c, shape.count, shape.value, []byte{7})); code != kerr.InvalidRecord.Code {
					t.Fatalf("trailing byte: code %d, want INVALID_RECORD", code)
				}
				more := withCompressedBody(batch, batch[BatchHeaderSize:], shape.count+1)
				if code, _ := validateAllocs(more); code != kerr.InvalidRecord.Code {
					t.Fatalf("one record more declared: code %d, want INVALID_RECORD", code)
				}
				// Cut short: the stream does not decompress.
				cut := withCompressedBody(batch, batch[BatchHeaderSize:len(batch)-len(batch)/3], shape.count)
				if code, _ := validateAllocs(cut); code != kerr.UnknownServerError.Code {
					t.Fatalf("cut stream: code %d, want UNKNOWN_SERVER_ERROR", code)
				}
			})
		}
	}
}

// TestCheckCompressedStreamAsInMemory checks that the streamed walk answers
// what decompressing whole and walking answers (the codes of
// TestValidateCompressedAsKafka), on good bodies of every codec, their
// prefixes, a byte flipped at every position, and records corrupted before
// compression.
func TestCheckCompressedStreamAsInMemory(t *testing.T) {
	inMemory := func(c Compression, body []byte, n int32) int16 {
		out, err := decompressInto(c, nil, body)
		if err != nil {
			return decompressErr(c, err).Code
		}
		if berr := checkCompressedRecords(out, n); berr != nil {
			return berr.Code
		}
		return 0
	}
	streamed := func(c Compression, body []byte, n int32) int16 {
		if berr := checkCompressedStream(c, body, n); berr != nil {
			return berr.Code
		}
		return 0
	}
	checked := func(c Compression, body []byte, n int32) int16 {
		if berr := checkCompressed(c, body, n, nil); berr != nil {
			return berr.Code
		}
		return 0
	}
	raw := mustBatch(t, testSpec(CompressionNone, 5))[BatchHeaderSize:]
	for _, c := range allCodecs[1:] {
		// Around inMemoryLimit, as producers stream them (xerial
		// snappy, size-less zstd: checkCompressed reads them once).
		for _, size := range []int{inMemoryLimit - 40, inMemoryLimit - 20, inMemoryLimit, inMemoryLimit + 40} {
			rec := appendRecord(nil, &Record{Value: bytes.Repeat([]byte("ab"), size/2)})
			for _, cut := range []int{0, 1, 20} {
				var buf bytes.Buffer
				w := compressingWriter(t, c, &buf)
				if _, err := w.Write(append(rec[:len(rec)-cut:len(rec)-cut], rec[:min(len(rec), 30)]...)); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				for _, n := range []int32{1, 2} {
					if want, got := inMemory(c, buf.Bytes(), n), checked(c, buf.Bytes(), n); got != want {
						t.Fatalf("%v record of %d bytes cut %d, %d records: checkCompressed %d, in memory %d", c, len(rec), cut, n, got, want)
					}
				}
			}
		}
		var bodies [][]byte
		comp, err := Compress(c, raw)
		if err != nil {
			t.Fatal(err)
		}
		for i := range comp {
			bodies = append(bodies, comp[:i])
			b := append([]byte(nil), comp...)
			b[i] ^= 0x5a
			bodies = append(bodies, b)
		}
		for i := range raw {
			r := append([]byte(nil), raw...)
			r[i] ^= 0xff
			b, err := Compress(c, r)
			if err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, b)
			b, err = Compress(c, raw[:i])
			if err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, b)
		}
		bodies = append(bodies, comp)
		for i, b := range bodies {
			for _, n := range []int32{4, 5, 6} {
				if want, got := inMemory(c, b, n), streamed(c, b, n); got != want {
					t.Fatalf("%v body %d (%x), %d records: streamed %d, in memory %d", c, i, b, n, got, want)
				}
				if want, got := inMemory(c, b, n), checked(c, b, n); got != want {
					t.Fatalf("%v body %d (%x), %d records: checkCompressed %d, in memory %d", c, i, b, n, got, want)
				}
			}
		}
	}
}

// FuzzCheckCompressedStream feeds arbitrary payloads of every codec to the
// streamed walk: it must not panic and must answer what decompressing whole
// and walking answers.
func FuzzCheckCompressedStream(f *testing.F) {
	raw := mustBatch(f, testSpec(CompressionNone, 3))[BatchHeaderSize:]
	for _, c := range allCodecs[1:] {
		comp, err := Compress(c, raw)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(c), int32(3), comp)
	}
	f.Fuzz(func(t *testing.T, codec uint8, n int32, body []byte) {
		c := Compression(codec%4 + 1)
		n = n%8 + 1
		if n <= 0 {
			n = -n + 1
		}
		if c == CompressionZstd {
			// A window over zstdMaxStreamWindow does not stream
			// (as zstd-jni); whole, it decodes.
			var fh zstd.Header
			if fh.Decode(body) == nil && (fh.WindowSize > zstdMaxStreamWindow || fh.SingleSegment && fh.FrameContentSize > zstdMaxStreamWindow) {
				t.Skip("zstd window over the streaming limit")
			}
		}
		want := int16(0)
		if out, err := decompressInto(c, nil, body); err != nil {
			want = decompressErr(c, err).Code
		} else if berr := checkCompressedRecords(out, n); berr != nil {
			want = berr.Code
		}
		got := int16(0)
		if berr := checkCompressedStream(c, body, n); berr != nil {
			got = berr.Code
		}
		if got != want {
			t.Fatalf("%v, %d records: streamed %d, in memory %d", c, n, got, want)
		}
		st := newRecordStats()
		got = 0
		if berr := checkCompressed(c, body, n, &st); berr != nil {
			got = berr.Code
		}
		if got != want {
			t.Fatalf("%v, %d records: checkCompressed %d, in memory %d", c, n, got, want)
		}
	})
}

// TestVisitRecordsAsDecodeRecords checks that VisitRecords reports what
// DecodeRecords decodes of well formed batches of every codec, and fails
// where the records do not decode.
func TestVisitRecordsAsDecodeRecords(t *testing.T) {
	for _, c := range allCodecs {
		s := testSpec(c, 0)
		for i := range 40 {
			r := Record{OffsetDelta: int32(i), TimestampDelta: int64(i*i*1000 - 7), Value: bytes.Repeat([]byte{byte(i)}, i*100)}
			if i%3 != 0 {
				r.Key = []byte("k")
			}
			s.Records = append(s.Records, r)
		}
		b := mustBatch(t, s)
		_, recs, err := DecodeRecords(b)
		if err != nil {
			t.Fatal(err)
		}
		var got []RecordInfo
		if err := VisitRecords(b, func(i int32, r RecordInfo) {
			if int(i) != len(got) {
				t.Fatalf("%v: record %d reported as %d", c, len(got), i)
			}
			got = append(got, r)
		}); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if len(got) != len(recs) {
			t.Fatalf("%v: %d records visited, %d decoded", c, len(got), len(recs))
		}
		for i, r := range recs {
			if want := (RecordInfo{TimestampDelta: r.TimestampDelta, OffsetDelta: r.OffsetDelta, KeyNull: r.Key == nil}); got[i] != want {
				t.Fatalf("%v record %d: visited %+v, decoded %+v", c, i, got[i], want)
			}
		}
		var until []int32
		if err := VisitRecordsUntil(b, func(i int32, r RecordInfo) bool {
			until = append(until, i)
			return i < 5
		}); err != nil || len(until) != 6 || until[5] != 5 {
			t.Fatalf("%v: VisitRecordsUntil stopping at record 5 visited %v: %v", c, until, err)
		}
		short := withCompressedBody(b, b[BatchHeaderSize:], 41)
		if err := VisitRecords(short, func(int32, RecordInfo) {}); err == nil {
			t.Fatalf("%v: 41 records declared, 40 held: no error", c)
		}
	}
}

// TestValidateZstdWindowAsKafka checks the zstd window limit of the
// streamed walk: a single-segment frame (its window is its content size)
// of 200 MiB is UNKNOWN_SERVER_ERROR and one of 100 MiB is taken, as Kafka
// 4.4 answered the same Produce v9 on 2026-12-07 (kafka-ref.sh, a raw kmsg
// request; zstd-jni's default windowLogMax 27, 128 MiB).
func TestValidateZstdWindowAsKafka(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("allocates 200 MiB to build the frame")
	}
	enc, err := zstd.NewWriter(nil, zstd.WithSingleSegment(true), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		size int
		want int16
	}{{100 << 20, 0}, {200 << 20, kerr.UnknownServerError.Code}} {
		var raw []byte
		raw = binary.AppendVarint(raw, int64(5+varintLen(int64(tc.size))+tc.size))
		raw = append(raw, 0, 0, 0, 1) // attributes, timestamp and offset deltas, null key
		raw = binary.AppendVarint(raw, int64(tc.size))
		raw = append(raw, make([]byte, tc.size+1)...) // the value, no headers
		body := enc.EncodeAll(raw, nil)
		raw = nil
		batch := withCompressedBody(mustBatch(t, testSpec(CompressionZstd, 1)), body, 1)
		if code, _ := validateAllocs(batch); code != tc.want {
			t.Fatalf("single-segment frame of %d MiB: code %d, want %d", tc.size>>20, code, tc.want)
		}
	}
}
