package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/pierrec/lz4/v4"
)

func lz4Frame(t testing.TB, data []byte, opts ...lz4.Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if err := w.Apply(opts...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecodeLZ4FrameRoundTrip decodes frames written by pierrec/lz4's
// Writer with each block size, with and without block checksums, content
// checksum and content size, over compressible and incompressible data
// (stored blocks), several blocks each.
func TestDecodeLZ4FrameRoundTrip(t *testing.T) {
	random := make([]byte, 300_000)
	x := uint32(7)
	for i := range random {
		x = x*1664525 + 1013904223
		random[i] = byte(x >> 24)
	}
	inputs := map[string][]byte{
		"empty":    {},
		"short":    []byte("samsa"),
		"text":     bytes.Repeat([]byte("value of a record in a batch "), 20_000),
		"random":   random,
		"mixed":    append(bytes.Repeat([]byte{'a'}, 100_000), random[:100_000]...),
		"one byte": {0},
	}
	for name, data := range inputs {
		for _, bs := range []lz4.BlockSize{lz4.Block64Kb, lz4.Block256Kb, lz4.Block1Mb, lz4.Block4Mb} {
			for _, opts := range [][]lz4.Option{
				nil,
				{lz4.BlockChecksumOption(true)},
				{lz4.ChecksumOption(false)},
				{lz4.SizeOption(uint64(len(data)))},
				{lz4.BlockChecksumOption(true), lz4.ChecksumOption(false), lz4.SizeOption(uint64(len(data)))},
			} {
				frame := lz4Frame(t, data, append([]lz4.Option{lz4.BlockSizeOption(bs)}, opts...)...)
				got, err := decodeLZ4Frame(nil, frame, 1<<30)
				if err != nil {
					t.Fatalf("%s, %v, %d options: %v", name, bs, len(opts), err)
				}
				if !bytes.Equal(got, data) {
					t.Fatalf("%s, %v, %d options: %d bytes back, want %d", name, bs, len(opts), len(got), len(data))
				}
				// Into a buffer that already holds bytes: appended.
				got, err = decodeLZ4Frame([]byte("xy"), frame, 1<<30)
				if err != nil || !bytes.Equal(got, append([]byte("xy"), data...)) {
					t.Fatalf("%s: append: %v", name, err)
				}
			}
		}
	}
}

// TestDecodeLZ4FrameRefuses checks frames Kafka's Lz4BlockInputStream
// refuses, and that nothing is read past a truncated input or written past
// the limit.
func TestDecodeLZ4FrameRefuses(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 10_000)
	good := lz4Frame(t, data, lz4.BlockSizeOption(lz4.Block64Kb), lz4.BlockChecksumOption(true))
	flip := func(i int) []byte {
		b := append([]byte(nil), good...)
		b[i] ^= 0x01
		return b
	}
	cases := map[string][]byte{
		"magic":              flip(0),
		"version":            func() []byte { b := append([]byte(nil), good...); b[4] ^= 0xc0; return b }(),
		"dictionary id flag": flip(4),
		"descriptor hash":    flip(6),
		"block checksum":     flip(len(good) - 9), // the last block's checksum (before the end mark and content checksum)
		"block size over max": func() []byte {
			b := append([]byte(nil), good...)
			binary.LittleEndian.PutUint32(b[7:], 1<<16+1)
			return b
		}(),
		"no end mark": good[:len(good)-8],
	}
	for name, b := range cases {
		if _, err := decodeLZ4Frame(nil, b, 1<<30); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	for i := range good {
		if _, err := decodeLZ4Frame(nil, good[:i], 1<<30); err == nil {
			t.Fatalf("prefix of %d bytes decoded", i)
		}
	}
	if _, err := decodeLZ4Frame(nil, good, len(data)-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("limit: %v, want ErrTooLarge", err)
	}
	if out, err := decodeLZ4Frame(nil, good, len(data)); err != nil || len(out) != len(data) {
		t.Fatalf("limit exactly the size: %d bytes, %v", len(out), err)
	}
	// Bytes after the frame are not read (Kafka stops at the end mark).
	if out, err := decodeLZ4Frame(nil, append(append([]byte(nil), good...), 1, 2, 3), 1<<30); err != nil || !bytes.Equal(out, data) {
		t.Fatalf("trailing bytes: %v", err)
	}
}

func TestXXH32(t *testing.T) {
	// Reference values of xxHash32, seed 0.
	for in, want := range map[string]uint32{
		"":    0x02cc5d05,
		"a":   0x550d7456,
		"abc": 0x32d153ff,
		"Nobody inspects the spammish repetition": 0xe2293b2f,
	} {
		if got := xxh32([]byte(in)); got != want {
			t.Errorf("xxh32(%q) = %08x, want %08x", in, got, want)
		}
	}
}

// TestCompressLZ4FrameLikeKafka checks the frame descriptor Compress writes,
// also after the pooled writer was reused: 64 KiB blocks (BD 0x40), no
// content checksum, no block checksum, independent blocks (FLG 0x60).
func TestCompressLZ4FrameLikeKafka(t *testing.T) {
	for range 3 {
		out, err := Compress(CompressionLZ4, bytes.Repeat([]byte("kafka "), 50_000))
		if err != nil {
			t.Fatal(err)
		}
		if out[4] != 0x60 || out[5] != 0x40 {
			t.Fatalf("descriptor %02x %02x, want 60 40", out[4], out[5])
		}
	}
}

// FuzzDecodeLZ4Frame: any input decodes or fails without a panic, never past
// the limit; what decodes starts what pierrec's Reader decodes from the
// same bytes when that Reader takes them too.
func FuzzDecodeLZ4Frame(f *testing.F) {
	f.Add(lz4Frame(f, []byte("records of a batch, records of a batch"), lz4.BlockSizeOption(lz4.Block64Kb)))
	f.Add(lz4Frame(f, bytes.Repeat([]byte{1, 2, 3}, 30_000), lz4.BlockChecksumOption(true), lz4.ChecksumOption(false)))
	f.Add(lz4Frame(f, nil))
	f.Fuzz(func(t *testing.T, frame []byte) {
		const limit = 1 << 20
		out, err := decodeLZ4Frame(nil, frame, limit)
		if err != nil {
			return
		}
		if len(out) > limit {
			t.Fatalf("%d bytes out, limit %d", len(out), limit)
		}
		var buf bytes.Buffer
		if _, rerr := buf.ReadFrom(lz4.NewReader(bytes.NewReader(frame))); rerr == nil && buf.Len() <= limit {
			// pierrec reads on into a frame that follows; Kafka and
			// decodeLZ4Frame stop at the end mark.
			if !bytes.HasPrefix(buf.Bytes(), out) {
				t.Fatalf("decoded %d bytes, pierrec %d, not a prefix of its", len(out), buf.Len())
			}
		}
	})
}
