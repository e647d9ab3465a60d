package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// MaxDecompressedSize caps the output of Decompress, guarding against
// decompression bombs. Set it once at start-up, before the first
// Decompress call (the shared zstd decoder reads it when it is created).
var MaxDecompressedSize = 1 << 30

var (
	// ErrUnknownCodec is wrapped when a batch names a compression codec above zstd.
	ErrUnknownCodec = errors.New("wire: unknown compression codec")
	// ErrTooLarge is wrapped when decompressed output would exceed MaxDecompressedSize.
	ErrTooLarge = errors.New("wire: decompressed data too large")
)

// String returns Kafka's name of the codec.
func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionGzip:
		return "gzip"
	case CompressionSnappy:
		return "snappy"
	case CompressionLZ4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", int8(c))
}

// xerialMagic starts a snappy payload framed the way the Java client's
// xerial snappy-java output stream does it.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

var (
	gzipReaders sync.Pool // *gzip.Reader
	gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}
	// LZ4 frames are written as Kafka's Lz4BlockOutputStream writes
	// them: 64 KiB independent blocks, no content checksum (pierrec's
	// default, 4 MiB blocks and an xxHash32 of every byte, cost a 4 MiB
	// buffer per writer and the hash; readers, Kafka's included, take
	// either).
	lz4Writers = sync.Pool{New: func() any {
		w := lz4.NewWriter(nil)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false)); err != nil {
			panic("wire: lz4 writer options: " + err.Error()) // invariant: valid constant options
		}
		return w
	}}

	zstdOnce sync.Once
	zstdDec  *zstd.Decoder
	// zstdSmallDec refuses output over inMemoryLimit (checkCompressed's
	// first try) before allocating it.
	zstdSmallDec *zstd.Decoder
	zstdEnc      *zstd.Encoder
	zstdErr      error
)

func zstdCodecs() (*zstd.Decoder, *zstd.Encoder, error) {
	zstdOnce.Do(func() {
		zstdDec, zstdErr = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(uint64(MaxDecompressedSize)),
		)
		if zstdErr != nil {
			return
		}
		zstdSmallDec, zstdErr = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(inMemoryLimit),
		)
		if zstdErr != nil {
			return
		}
		zstdEnc, zstdErr = zstd.NewWriter(nil,
			zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithZeroFrames(true),
		)
	})
	return zstdDec, zstdEnc, zstdErr
}

// Decompress returns src decompressed with codec c. Snappy accepts both the
// raw block format (what franz-go and librdkafka send) and the xerial
// framing (the Java client). LZ4 is the LZ4 frame format. Output larger than
// MaxDecompressedSize is refused with an error wrapping ErrTooLarge.
// CompressionNone returns src itself.
func Decompress(c Compression, src []byte) ([]byte, error) {
	return decompressInto(c, nil, src)
}

// decompressInto is Decompress writing into dst's capacity when it can
// (dst's contents are discarded). CompressionNone still returns src.
func decompressInto(c Compression, dst, src []byte) ([]byte, error) {
	return decompressLimited(c, dst, src, MaxDecompressedSize)
}

// decompressLimited is decompressInto refusing more than limit bytes
// (ErrTooLarge) before it allocates them.
func decompressLimited(c Compression, dst, src []byte, limit int) ([]byte, error) {
	dst = dst[:0]
	switch c {
	case CompressionNone:
		return src, nil
	case CompressionGzip:
		var zr *gzip.Reader
		if v := gzipReaders.Get(); v != nil {
			zr = v.(*gzip.Reader)
			if err := zr.Reset(bytes.NewReader(src)); err != nil {
				gzipReaders.Put(zr)
				return nil, fmt.Errorf("%w: gzip: %v", ErrMalformed, err)
			}
		} else {
			var err error
			zr, err = gzip.NewReader(bytes.NewReader(src))
			if err != nil {
				return nil, fmt.Errorf("%w: gzip: %v", ErrMalformed, err)
			}
		}
		out, err := readLimited(dst, zr, limit, len(src)*4)
		gzipReaders.Put(zr)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return out, nil
	case CompressionSnappy:
		if bytes.HasPrefix(src, xerialMagic) {
			return decodeXerial(dst, src, limit)
		}
		return decodeSnappyBlock(dst, src, limit)
	case CompressionLZ4:
		out, err := decodeLZ4Frame(dst, src, limit)
		if err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		return out, nil
	case CompressionZstd:
		dec, _, err := zstdCodecs()
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		if limit <= inMemoryLimit {
			dec = zstdSmallDec
		}
		out, err := dec.DecodeAll(src, dst)
		if err != nil {
			if errors.Is(err, zstd.ErrDecoderSizeExceeded) ||
				dec == zstdSmallDec && errors.Is(err, zstd.ErrWindowSizeExceeded) {
				// zstdSmallDec also refuses a window over its
				// limit: the caller then streams the batch.
				return nil, fmt.Errorf("zstd: %w", ErrTooLarge)
			}
			return nil, fmt.Errorf("%w: zstd: %v", ErrMalformed, err)
		}
		if len(out) > limit {
			return nil, fmt.Errorf("zstd: %w", ErrTooLarge)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, int8(c))
}

// readLimited reads r to EOF, refusing more than limit bytes.
func readLimited(dst []byte, r io.Reader, limit, sizeHint int) ([]byte, error) {
	if sizeHint < 512 {
		sizeHint = 512
	}
	if sizeHint > limit {
		sizeHint = limit
	}
	if cap(dst) < sizeHint {
		dst = make([]byte, 0, sizeHint)
	}
	buf := bytes.NewBuffer(dst[:0])
	n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if n > int64(limit) {
		return nil, ErrTooLarge
	}
	return buf.Bytes(), nil
}

const maxSnappyRatio = 22

func decodeSnappyBlock(dst, src []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrMalformed, err)
	}
	if n > limit-len(dst) {
		return nil, fmt.Errorf("snappy: %w", ErrTooLarge)
	}
	// A snappy element expands at most 64 bytes out of 3 in, so a larger
	// claimed length is a lie; refuse it before allocating.
	if n > maxSnappyRatio*len(src)+64 {
		return nil, fmt.Errorf("%w: snappy: block of %d bytes claims %d", ErrMalformed, len(src), n)
	}
	start := len(dst)
	dst = grow(dst, n)
	out, err := snappy.Decode(dst[start:start+n], src)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrMalformed, err)
	}
	if len(out) != n {
		return nil, fmt.Errorf("%w: snappy: short block", ErrMalformed)
	}
	return dst[:start+n], nil
}

// grow returns b with len(b)+n length available (contents of the new part
// unspecified) but keeps len(b) as the visible length's start.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		c := 2 * cap(b)
		if c < len(b)+n {
			c = len(b) + n
		}
		nb := make([]byte, len(b), c)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// decodeXerial decodes xerial framing: the 8-byte magic, int32 version,
// int32 compatible version, then [int32 length][snappy block] chunks.
func decodeXerial(out, src []byte, limit int) ([]byte, error) {
	if len(src) < 16 {
		return nil, fmt.Errorf("%w: snappy: xerial header truncated", ErrMalformed)
	}
	src = src[16:]
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, fmt.Errorf("%w: snappy: xerial chunk length truncated", ErrMalformed)
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return nil, fmt.Errorf("%w: snappy: xerial chunk of %d bytes with %d left", ErrMalformed, n, len(src))
		}
		var err error
		out, err = decodeSnappyBlock(out, src[:n], limit)
		if err != nil {
			return nil, err
		}
		src = src[n:]
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// scratchPool holds buffers for decompressing records that are only
// checked, not kept (deep validation).
var scratchPool sync.Pool // *[]byte

// maxPooledScratch is the largest buffer put back in scratchPool.
const maxPooledScratch = 8 << 20

func getScratch() *[]byte {
	if v := scratchPool.Get(); v != nil {
		return v.(*[]byte)
	}
	return new([]byte)
}

func putScratch(b *[]byte) {
	if cap(*b) <= maxPooledScratch {
		scratchPool.Put(b)
	}
}

// Compress returns src compressed with codec c: gzip, a raw snappy block
// (as franz-go and librdkafka send), an LZ4 frame, or a zstd frame.
// CompressionNone returns src itself.
func Compress(c Compression, src []byte) ([]byte, error) {
	switch c {
	case CompressionNone:
		return src, nil
	case CompressionGzip:
		var buf bytes.Buffer
		zw := gzipWriters.Get().(*gzip.Writer)
		zw.Reset(&buf)
		_, err := zw.Write(src)
		if err == nil {
			err = zw.Close()
		}
		zw.Reset(nil)
		gzipWriters.Put(zw)
		if err != nil {
			return nil, fmt.Errorf("wire: gzip: %w", err)
		}
		return buf.Bytes(), nil
	case CompressionSnappy:
		return snappy.Encode(nil, src), nil
	case CompressionLZ4:
		var buf bytes.Buffer
		zw := lz4Writers.Get().(*lz4.Writer)
		zw.Reset(&buf)
		_, err := zw.Write(src)
		if err == nil {
			err = zw.Close()
		}
		zw.Reset(nil)
		lz4Writers.Put(zw)
		if err != nil {
			return nil, fmt.Errorf("wire: lz4: %w", err)
		}
		return buf.Bytes(), nil
	case CompressionZstd:
		_, enc, err := zstdCodecs()
		if err != nil {
			return nil, fmt.Errorf("wire: zstd: %w", err)
		}
		return enc.EncodeAll(src, nil), nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, int8(c))
}
