package wire

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func benchSpec(c Compression) BatchSpec {
	s := testSpec(c, 0)
	for i := range 100 {
		s.Records = append(s.Records, Record{OffsetDelta: int32(i), Key: []byte("key"), Value: bytes.Repeat([]byte("value "), 160)})
	}
	return s
}

func BenchmarkValidateProduce(b *testing.B) {
	for _, c := range allCodecs {
		batch := mustBatch(b, benchSpec(c))
		for _, deep := range []bool{false, true} {
			name := c.String()
			if deep {
				name += "/deep"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := ValidateProduce(batch, ValidateOptions{ProduceVersion: 9, DeepValidate: deep}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkDecompress(b *testing.B) {
	raw := mustBatch(b, benchSpec(CompressionNone))[BatchHeaderSize:]
	for _, c := range allCodecs[1:] {
		comp, err := Compress(c, raw)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decompress(c, comp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateProduceLetters validates (deep, as the broker does)
// batches like kafka-producer-perf-test's: 1 KiB values of random capital
// letters, 16 records a batch (its batch.size of 16 KiB), each record its
// own value (so that the batch compresses as text does, not as one value
// repeated). Bytes per second are of the uncompressed records.
func BenchmarkValidateProduceLetters(b *testing.B) {
	benchValidateDeep(b, lettersSpec(16), allCodecs)
}

// lettersSpec is a batch of n records of 1 KiB of random capital letters
// (BenchmarkValidateProduceLetters' with n = 16).
func lettersSpec(n int) BatchSpec {
	s := testSpec(CompressionNone, 0)
	x := uint32(1)
	for i := range n {
		v := make([]byte, 1024)
		for j := range v {
			x = x*1664525 + 1013904223
			v[j] = 'A' + byte((x>>16)%26)
		}
		s.Records = append(s.Records, Record{OffsetDelta: int32(i), Value: v})
	}
	return s
}

// benchValidateDeep runs a sub-benchmark for each codec that validates
// (deep) spec's records compressed with it; bytes per second are of the
// uncompressed batch.
func benchValidateDeep(b *testing.B, s BatchSpec, codecs []Compression) {
	raw := mustBatch(b, s)
	for _, c := range codecs {
		s.Compression = c
		batch := mustBatch(b, s)
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ValidateProduce(batch, ValidateOptions{ProduceVersion: 9, DeepValidate: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRecompress re-encodes a kafka-producer-perf-test-like batch
// (lettersSpec) for a topic whose compression.type differs from the
// producer's, as the broker does before the append.
func BenchmarkRecompress(b *testing.B) {
	for _, p := range [][2]Compression{{CompressionNone, CompressionLZ4}, {CompressionNone, CompressionZstd},
		{CompressionNone, CompressionGzip}, {CompressionLZ4, CompressionZstd}, {CompressionZstd, CompressionNone}} {
		s := lettersSpec(16)
		s.Compression = p[0]
		batch := mustBatch(b, s)
		b.Run(p[0].String()+"-"+p[1].String(), func(b *testing.B) {
			b.SetBytes(int64(16 * 1024))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Recompress(batch, p[1]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateProduceLarge validates (deep) batches of 4 MiB of
// records (4096 letters records of 1 KiB): over inMemoryLimit, so streamed
// through the walk's window. Bytes per second are of the uncompressed
// records.
func BenchmarkValidateProduceLarge(b *testing.B) {
	benchValidateDeep(b, lettersSpec(4096), allCodecs[1:])
}

// BenchmarkValidateProduceMedium validates (deep) a batch under 1 MiB
// compressed whose records decompress to 1.5 MiB (96 records of 16 KiB
// letters of a 4-letter alphabet): over inMemoryLimit, so the walk
// streams. Before stop 31 the first MiB was decompressed twice (into the
// pooled buffer, then again streaming); now once for gzip, xerial snappy
// and zstd (its frame here declares its size: refused before decoding
// either way), and since stop 32 for LZ4 (1.97 MB/op before, 0.06 now).
// Bytes per second are of the uncompressed records.
func BenchmarkValidateProduceMedium(b *testing.B) {
	s := testSpec(CompressionNone, 0)
	x := uint32(1)
	for i := range 96 {
		v := make([]byte, 16<<10)
		for j := range v {
			x = x*1664525 + 1013904223
			v[j] = 'A' + byte((x>>16)%4)
		}
		s.Records = append(s.Records, Record{OffsetDelta: int32(i), Value: v})
	}
	raw := mustBatch(b, s)
	for _, c := range allCodecs[1:] {
		s.Compression = c
		batch := mustBatch(b, s)
		if c == CompressionSnappy {
			// As the Java client sends it: xerial-framed.
			framed := append(batch[:BatchHeaderSize:BatchHeaderSize], xerialFrame(raw[BatchHeaderSize:], 32<<10)...)
			binary.BigEndian.PutUint32(framed[8:], uint32(len(framed)-12))
			RecomputeCRC(framed)
			batch = framed
		}
		if len(batch) >= inMemoryLimit {
			b.Fatalf("%s: %d bytes compressed", c, len(batch))
		}
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ValidateProduce(batch, ValidateOptions{ProduceVersion: 9, DeepValidate: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
