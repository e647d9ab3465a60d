package wire

import (
	"encoding/binary"
	"fmt"
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
	const magic = 0x184D2204
	if len(src) < 7 {
		return nil, fmt.Errorf("%w: lz4: frame header truncated", ErrMalformed)
	}
	if binary.LittleEndian.Uint32(src) != magic {
		return nil, fmt.Errorf("%w: lz4: stream unsupported (invalid magic bytes)", ErrMalformed)
	}
	flg, bd := src[4], src[5]
	if flg>>6 != 1 || flg&0x03 != 0 || bd&0x8f != 0 {
		return nil, fmt.Errorf("%w: lz4: frame descriptor %02x %02x unsupported", ErrMalformed, flg, bd)
	}
	blockChecksum, contentSize := flg&0x10 != 0, flg&0x08 != 0
	sizeCode := bd >> 4 & 0x07
	if sizeCode < 4 {
		return nil, fmt.Errorf("%w: lz4: block size code %d", ErrMalformed, sizeCode)
	}
	maxBlock := 1 << (8 + 2*int(sizeCode)) // 4: 64 KiB ... 7: 4 MiB
	desc := 2
	if contentSize {
		desc += 8
	}
	if len(src) < 4+desc+1 {
		return nil, fmt.Errorf("%w: lz4: frame header truncated", ErrMalformed)
	}
	if byte(xxh32(src[4:4+desc])>>8) != src[4+desc] {
		return nil, fmt.Errorf("%w: lz4: stream frame descriptor corrupted", ErrMalformed)
	}
	src = src[4+desc+1:]
	for {
		if len(src) < 4 {
			return nil, fmt.Errorf("%w: lz4: stream ended prematurely", ErrMalformed)
		}
		n := binary.LittleEndian.Uint32(src)
		src = src[4:]
		stored := n&0x80000000 != 0
		n &= 0x7fffffff
		if n == 0 { // end mark
			if flg&0x04 != 0 && len(src) < 4 {
				// Kafka reads the content checksum (and drops it).
				return nil, fmt.Errorf("%w: lz4: content checksum truncated", ErrMalformed)
			}
			if dst == nil {
				dst = []byte{}
			}
			return dst, nil
		}
		if int(n) > maxBlock {
			return nil, fmt.Errorf("%w: lz4: block size %d exceeded max: %d", ErrMalformed, n, maxBlock)
		}
		if len(src) < int(n) {
			return nil, fmt.Errorf("%w: lz4: stream ended prematurely", ErrMalformed)
		}
		block := src[:n]
		src = src[n:]
		if blockChecksum {
			if len(src) < 4 {
				return nil, fmt.Errorf("%w: lz4: stream ended prematurely", ErrMalformed)
			}
			if xxh32(block) != binary.LittleEndian.Uint32(src) {
				return nil, fmt.Errorf("%w: lz4: block checksum mismatch", ErrMalformed)
			}
			src = src[4:]
		}
		if stored {
			if len(dst)+len(block) > limit {
				return nil, ErrTooLarge
			}
			dst = append(dst, block...)
			continue
		}
		// A block decodes to at most maxBlock bytes, and LZ4 expands
		// at most about 255 times.
		room := min(maxBlock, 255*len(block)+64)
		if room > limit-len(dst) {
			room = limit - len(dst)
		}
		start := len(dst)
		dst = grow(dst, room)
		k, err := lz4.UncompressBlock(block, dst[start:])
		if err != nil {
			if room < maxBlock && room == limit-start {
				return nil, ErrTooLarge
			}
			return nil, fmt.Errorf("%w: lz4: %v", ErrMalformed, err)
		}
		dst = dst[:start+k]
	}
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
