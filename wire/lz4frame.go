package wire

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"

	"github.com/pierrec/lz4/v4"
)

// decodeLZ4Frame decodes the LZ4 frame in src into dst (appending) the way
// Kafka 4.4's Lz4BlockInputStream reads a batch's records: the magic number,
// a frame descriptor whose version is 1 and whose reserved bits (the
// dictionary-id flag among them) are clear, a block maximum size of 64 KiB
// to 4 MiB, the descriptor checksum; then blocks of at most that size, each
// decoded on its own (no dictionary of earlier blocks), with its xxHash32
// checked when the frame says blocks carry one; the end mark ends the frame,
// the content checksum after it must be there but is not checked (Kafka
// reads and drops it; the batch CRC covers those bytes) and bytes after the
// frame are not read.
//
// Blocks are decoded straight into dst: no intermediate block buffer, no
// copy, and no hash over the decompressed bytes, which were most of the
// cost of pierrec/lz4's Reader (bench/README.md, "Other workloads (stop
// 30)"). Output beyond limit bytes is refused with ErrTooLarge.
func decodeLZ4Frame(dst, src []byte, limit int) ([]byte, error) {
	f, err := parseLZ4Frame(src)
	if err != nil {
		return nil, err
	}
	for {
		var done bool
		dst, done, err = f.next(dst, limit)
		if err != nil {
			return nil, err
		}
		if done {
			if dst == nil {
				dst = []byte{}
			}
			return dst, nil
		}
	}
}

// lz4FrameState is an LZ4 frame being decoded block by block.
type lz4FrameState struct {
	src             []byte // the blocks not decoded yet
	maxBlock        int
	blockChecksum   bool
	contentChecksum bool
}

// parseLZ4Frame reads the frame header of src (decodeLZ4Frame's rules).
func parseLZ4Frame(src []byte) (lz4FrameState, error) {
	const magic = 0x184D2204
	if len(src) < 7 {
		return lz4FrameState{}, fmt.Errorf("%w: lz4: frame header truncated", ErrMalformed)
	}
	if binary.LittleEndian.Uint32(src) != magic {
		return lz4FrameState{}, fmt.Errorf("%w: lz4: stream unsupported (invalid magic bytes)", ErrMalformed)
	}
	flg, bd := src[4], src[5]
	if flg>>6 != 1 || flg&0x03 != 0 || bd&0x8f != 0 {
		return lz4FrameState{}, fmt.Errorf("%w: lz4: frame descriptor %02x %02x unsupported", ErrMalformed, flg, bd)
	}
	blockChecksum, contentSize := flg&0x10 != 0, flg&0x08 != 0
	sizeCode := bd >> 4 & 0x07
	if sizeCode < 4 {
		return lz4FrameState{}, fmt.Errorf("%w: lz4: block size code %d", ErrMalformed, sizeCode)
	}
	maxBlock := 1 << (8 + 2*int(sizeCode)) // 4: 64 KiB ... 7: 4 MiB
	desc := 2
	if contentSize {
		desc += 8
	}
	if len(src) < 4+desc+1 {
		return lz4FrameState{}, fmt.Errorf("%w: lz4: frame header truncated", ErrMalformed)
	}
	if byte(xxh32(src[4:4+desc])>>8) != src[4+desc] {
		return lz4FrameState{}, fmt.Errorf("%w: lz4: stream frame descriptor corrupted", ErrMalformed)
	}
	return lz4FrameState{src: src[4+desc+1:], maxBlock: maxBlock, blockChecksum: blockChecksum, contentChecksum: flg&0x04 != 0}, nil
}

// next appends the next block's bytes to dst, refusing to grow dst past
// limit bytes (ErrTooLarge); done reports the end mark.
func (f *lz4FrameState) next(dst []byte, limit int) (out []byte, done bool, err error) {
	src := f.src
	if len(src) < 4 {
		return nil, false, fmt.Errorf("%w: lz4: stream ended prematurely", ErrMalformed)
	}
	n := binary.LittleEndian.Uint32(src)
	src = src[4:]
	stored := n&0x80000000 != 0
	n &= 0x7fffffff
	if n == 0 { // end mark
		if f.contentChecksum && len(src) < 4 {
			// Kafka reads the content checksum (and drops it).
			return nil, false, fmt.Errorf("%w: lz4: content checksum truncated", ErrMalformed)
		}
		f.src = nil
		return dst, true, nil
	}
	if int(n) > f.maxBlock {
		return nil, false, fmt.Errorf("%w: lz4: block size %d exceeded max: %d", ErrMalformed, n, f.maxBlock)
	}
	if len(src) < int(n) {
		return nil, false, fmt.Errorf("%w: lz4: stream ended prematurely", ErrMalformed)
	}
	block := src[:n]
	src = src[n:]
	if f.blockChecksum {
		if len(src) < 4 {
			return nil, false, fmt.Errorf("%w: lz4: stream ended prematurely", ErrMalformed)
		}
		if xxh32(block) != binary.LittleEndian.Uint32(src) {
			return nil, false, fmt.Errorf("%w: lz4: block checksum mismatch", ErrMalformed)
		}
		src = src[4:]
	}
	f.src = src
	if stored {
		if len(dst)+len(block) > limit {
			return nil, false, ErrTooLarge
		}
		return append(dst, block...), false, nil
	}
	// A block decodes to at most maxBlock bytes, and LZ4 expands
	// at most about 255 times.
	room := min(f.maxBlock, 255*len(block)+64)
	if room > limit-len(dst) {
		room = limit - len(dst)
	}
	start := len(dst)
	dst = grow(dst, room)
	k, err := lz4.UncompressBlock(block, dst[start:])
	if err != nil {
		if room < f.maxBlock && room == limit-start {
			return nil, false, ErrTooLarge
		}
		return nil, false, fmt.Errorf("%w: lz4: %v", ErrMalformed, err)
	}
	return dst[:start+k], false, nil
}

// lz4FrameReader decodes an LZ4 frame one block at a time (a buffer of at
// most the frame's block maximum, 4 MiB).
type lz4FrameReader struct {
	f    lz4FrameState
	buf  []byte
	pos  int
	done bool
}

func newLZ4FrameReader(src []byte) (*lz4FrameReader, error) {
	f, err := parseLZ4Frame(src)
	if err != nil {
		return nil, err
	}
	return &lz4FrameReader{f: f}, nil
}

func (r *lz4FrameReader) Read(p []byte) (int, error) {
	for r.pos == len(r.buf) {
		if r.done {
			return 0, io.EOF
		}
		out, done, err := r.f.next(r.buf[:0], MaxDecompressedSize)
		if err != nil {
			return 0, fmt.Errorf("lz4: %w", err)
		}
		r.buf, r.pos, r.done = out, 0, done
	}
	k := copy(p, r.buf[r.pos:])
	r.pos += k
	return k, nil
}

const (
	xxPrime1 uint32 = 2654435761
	xxPrime2 uint32 = 2246822519
	xxPrime3 uint32 = 3266489917
	xxPrime4 uint32 = 668265263
	xxPrime5 uint32 = 374761393
)

// xxh32 is xxHash32 of b with seed 0 (the LZ4 frame's descriptor and block
// checksums).
func xxh32(b []byte) uint32 {
	n := len(b)
	var h uint32
	if n >= 16 {
		p1 := xxPrime1 // a variable: the sums below wrap
		v1 := p1 + xxPrime2
		v2 := xxPrime2
		v3 := uint32(0)
		v4 := 0 - p1
		round := func(v, x uint32) uint32 {
			return bits.RotateLeft32(v+x*xxPrime2, 13) * xxPrime1
		}
		for len(b) >= 16 {
			v1 = round(v1, binary.LittleEndian.Uint32(b))
			v2 = round(v2, binary.LittleEndian.Uint32(b[4:]))
			v3 = round(v3, binary.LittleEndian.Uint32(b[8:]))
			v4 = round(v4, binary.LittleEndian.Uint32(b[12:]))
			b = b[16:]
		}
		h = bits.RotateLeft32(v1, 1) + bits.RotateLeft32(v2, 7) + bits.RotateLeft32(v3, 12) + bits.RotateLeft32(v4, 18)
	} else {
		h = xxPrime5
	}
	h += uint32(n)
	for ; len(b) >= 4; b = b[4:] {
		h += binary.LittleEndian.Uint32(b) * xxPrime3
		h = bits.RotateLeft32(h, 17) * xxPrime4
	}
	for _, c := range b {
		h += uint32(c) * xxPrime5
		h = bits.RotateLeft32(h, 11) * xxPrime1
	}
	h ^= h >> 15
	h *= xxPrime2
	h ^= h >> 13
	h *= xxPrime3
	h ^= h >> 16
	return h
}
