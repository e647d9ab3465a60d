package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/klauspost/compress/snappy"
)

var allCodecs = []Compression{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd}

func TestCodecRoundTrip(t *testing.T) {
	inputs := [][]byte{
		{},
		[]byte("a"),
		bytes.Repeat([]byte("samsa kafka wire "), 10000),
		func() []byte { // incompressible-ish
			b := make([]byte, 70000)
			x := uint32(1)
			for i := range b {
				x = x*1664525 + 1013904223
				b[i] = byte(x >> 24)
			}
			return b
		}(),
	}
	for _, c := range allCodecs {
		for i, in := range inputs {
			comp, err := Compress(c, in)
			if err != nil {
				t.Fatalf("%s input %d: compress: %v", c, i, err)
			}
			out, err := Decompress(c, comp)
			if err != nil {
				t.Fatalf("%s input %d: decompress: %v", c, i, err)
			}
			if !bytes.Equal(out, in) {
				t.Fatalf("%s input %d: round trip mismatch (%d vs %d bytes)", c, i, len(out), len(in))
			}
		}
	}
}

// xerialFrame frames src the way snappy-java's SnappyOutputStream does:
// magic, version 1, compatible version 1, then [int32 len][block] chunks of
// at most chunk uncompressed bytes.
func xerialFrame(src []byte, chunk int) []byte {
	out := append([]byte(nil), xerialMagic...)
	out = binary.BigEndian.AppendUint32(out, 1)
	out = binary.BigEndian.AppendUint32(out, 1)
	for len(src) > 0 {
		n := min(chunk, len(src))
		blk := snappy.Encode(nil, src[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(blk)))
		out = append(out, blk...)
		src = src[n:]
	}
	return out
}

func TestXerialSnappy(t *testing.T) {
	in := bytes.Repeat([]byte("xerial framed snappy "), 5000)
	for _, chunk := range []int{1, 7, 1000, 32 << 10, 1 << 20} {
		if chunk == 1 {
			in := in[:300]
			out, err := Decompress(CompressionSnappy, xerialFrame(in, chunk))
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("chunk %d: err %v, equal %v", chunk, err, bytes.Equal(out, in))
			}
			continue
		}
		out, err := Decompress(CompressionSnappy, xerialFrame(in, chunk))
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("chunk %d: err %v, equal %v", chunk, err, bytes.Equal(out, in))
		}
	}
	// Empty xerial stream.
	out, err := Decompress(CompressionSnappy, xerialFrame(nil, 10))
	if err != nil || len(out) != 0 {
		t.Fatalf("empty xerial: %v %d", err, len(out))
	}
	// Truncations are errors, not panics.
	fr := xerialFrame(in, 1000)
	for _, n := range []int{9, 15, 17, 19, 25, len(fr) - 1} {
		if _, err := Decompress(CompressionSnappy, fr[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("truncated at %d: err %v", n, err)
		}
	}
}

func TestDecompressGarbage(t *testing.T) {
	garbage := []byte("this is not compressed at all, really not")
	for _, c := range allCodecs[1:] {
		if _, err := Decompress(c, garbage); err == nil {
			t.Errorf("%s: garbage decompressed without error", c)
		}
	}
	if _, err := Decompress(Compression(5), garbage); !errors.Is(err, ErrUnknownCodec) {
		t.Errorf("codec 5: %v", err)
	}
	if _, err := Compress(Compression(7), garbage); !errors.Is(err, ErrUnknownCodec) {
		t.Errorf("codec 7: %v", err)
	}
}

func TestDecompressBomb(t *testing.T) {
	if _, _, err := zstdCodecs(); err != nil { // create with the default cap
		t.Fatal(err)
	}
	old := MaxDecompressedSize
	MaxDecompressedSize = 1 << 20
	defer func() { MaxDecompressedSize = old }()
	big := make([]byte, 4<<20)
	for _, c := range allCodecs[1:] {
		comp, err := Compress(c, big)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decompress(c, comp); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: want ErrTooLarge, got %v", c, err)
		}
		if c == CompressionSnappy {
			if _, err := Decompress(c, xerialFrame(big, 64<<10)); !errors.Is(err, ErrTooLarge) {
				t.Errorf("xerial: want ErrTooLarge, got %v", err)
			}
		}
	}
}
