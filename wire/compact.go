package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Streaming log compaction of compressed batches.
//
// The log cleaner reads, of each record, its offset delta, its key and
// whether its value is null; it keeps some records of a batch and drops
// the others. WalkCompactRecords and FilterCompactRecords do that on a
// compressed batch as its records stream out of the decompressor through
// the 64 KiB window of the produce validation (stream.go): values are
// skipped or copied through, never held, and a key longer than
// CompactKeyMax is reported by its SHA-256 digest, hashed as it streams.
// A batch of a few KB that decompresses to hundreds of MB (a value of
// 512 MiB) costs the cleaner the window, the codecs' state and its
// output, not its decompressed size. A section of at most 1 MiB
// decompressed (most batches) is decompressed once into a pooled buffer
// and walked there; a larger one is decompressed again by each pass.

// CompactKeyMax is the longest key the compaction walks report as bytes;
// a longer key is reported by its SHA-256 digest (Kafka's cleaner keys its
// offset map by a digest of every key).
const CompactKeyMax = 4096

// CompactRecord is what the compaction walks report of a record.
type CompactRecord struct {
	OffsetDelta int32
	// HasKey is false for a record with a null key.
	HasKey bool
	// Key is the key when it has at most CompactKeyMax bytes; it is valid
	// during the call only.
	Key []byte
	// LongKey reports a longer key, whose SHA-256 digest is KeyDigest.
	LongKey   bool
	KeyDigest [sha256.Size]byte
	// Tombstone reports a null value.
	Tombstone bool
}

// compactPrefixMax is the most bytes of a record read before its key: the
// attributes and three varints (timestamp delta, offset delta, key length).
const compactPrefixMax = 1 + 3*binary.MaxVarintLen64

// compactWalk reads the records of a batch by the cleaner's rules: a
// record's length (the bytes it spans), then, within it, the attributes,
// the timestamp and offset deltas, the key and the value length; the rest
// of the record (value, headers) is not parsed. It is the cleaner's
// in-memory parse (storage's splitRawRecords) on a stream.
type compactWalk struct {
	s  *recordStream
	rs recordStream // what s points to
	br bytes.Reader // the source of an uncompressed section
	// w receives the records kept (pass 2); nil to only read them.
	w    *recordWriter
	keep func(*CompactRecord) bool
	// long holds the decisions of pass 1 for the records of long keys,
	// which pass 2 takes in order rather than hashing their keys again
	// before it knows whether to copy them.
	long      []bool
	li        int
	kept      int
	keptBytes int64
	rec       CompactRecord
}

func compactErr(r int32, what string) error {
	return fmt.Errorf("%w: record %d: %s", ErrMalformed, r, what)
}

// walk reads n records, calling keep on each (pass 2: on each record of a
// short or no key) and copying the records kept to w when w is set.
func (c *compactWalk) walk(n int32) error {
	s := c.s
	for r := int32(0); r < n; r++ {
		b := s.avail(binary.MaxVarintLen64)
		length, lw := binary.Varint(b)
		if lw <= 0 || length < 0 {
			return compactErr(r, "record length")
		}
		size := int64(lw) + length // the record's bytes, its length included
		p := lw + int(min(length, compactPrefixMax))
		if b = s.avail(p); len(b) < p {
			return compactErr(r, "record length")
		}
		rb := b[lw:p]
		if len(rb) < 1 {
			return compactErr(r, "empty record")
		}
		i := 1 // the attributes
		if _, k := binary.Varint(rb[i:]); k <= 0 {
			return compactErr(r, "timestamp delta")
		} else {
			i += k
		}
		od, k := binary.Varint(rb[i:])
		if k <= 0 {
			return compactErr(r, "offset delta")
		}
		i += k
		kl, k := binary.Varint(rb[i:])
		rem := length - int64(i+k) // the record's bytes after the key length
		if k <= 0 || kl < -1 || rem < max(kl, 0) {
			return compactErr(r, "key")
		}
		i += k
		c.rec = CompactRecord{OffsetDelta: int32(od), HasKey: kl >= 0}
		var keep bool
		if kl <= CompactKeyMax {
			// The key and the value length, in the window at once.
			kEnd := lw + i + int(max(kl, 0))
			vEnd := kEnd + int(min(rem-max(kl, 0), binary.MaxVarintLen64))
			if b = s.avail(vEnd); len(b) < vEnd {
				return compactErr(r, "record length")
			}
			vl, k := binary.Varint(b[kEnd:vEnd])
			if k <= 0 || vl < -1 {
				return compactErr(r, "value")
			}
			if kl >= 0 {
				c.rec.Key = b[lw+i : kEnd : kEnd]
			}
			c.rec.Tombstone = vl == -1
			keep = c.keep(&c.rec)
		} else if c.w != nil {
			if c.li >= len(c.long) {
				return compactErr(r, "records changed between passes")
			}
			keep = c.long[c.li]
			c.li++
		} else {
			// Hash the key as it streams, then read the value length.
			s.i += lw + i
			h := sha256.New()
			for l := int(kl); l > 0; {
				b := s.avail(min(l, len(s.buf)))
				if len(b) == 0 {
					return compactErr(r, "record length")
				}
				m := min(len(b), l)
				h.Write(b[:m])
				s.i += m
				l -= m
			}
			rest := rem - kl
			vn := int(min(rest, binary.MaxVarintLen64))
			if b = s.avail(vn); len(b) < vn {
				return compactErr(r, "record length")
			}
			vl, k := binary.Varint(b[:vn])
			if k <= 0 || vl < -1 {
				return compactErr(r, "value")
			}
			c.rec.LongKey = true
			h.Sum(c.rec.KeyDigest[:0])
			c.rec.Tombstone = vl == -1
			keep = c.keep(&c.rec)
			c.long = append(c.long, keep)
			size = rest // what is left of the record to pass
		}
		if keep {
			c.kept++
			c.keptBytes += int64(lw) + length
		}
		if keep && c.w != nil {
			if !copyBytesN(s, c.w, size) {
				return compactErr(r, "record length")
			}
		} else if !s.skip64(size) {
			return compactErr(r, "record length")
		}
	}
	return nil
}

// skip64 is skip for a count that may not fit an int on 32-bit platforms.
func (s *recordStream) skip64(l int64) bool {
	for l > 1<<30 {
		if !s.skip(1 << 30) {
			return false
		}
		l -= 1 << 30
	}
	return s.skip(int(l))
}

// copyBytesN copies l bytes from s to w through the window.
func copyBytesN(s *recordStream, w *recordWriter, l int64) bool {
	for l > 0 {
		b := s.avail(int(min(l, int64(len(s.buf)))))
		if len(b) == 0 {
			return false
		}
		k := int(min(int64(len(b)), l))
		w.write(b[:k])
		s.i += k
		l -= int64(k)
	}
	return true
}

// compactPass runs one pass over the n records of body (compressed with
// codec c), ending with the check that no bytes follow them.
func compactPass(c Compression, body []byte, n int32, cw *compactWalk) error {
	if err := cw.rs.open(c, body, &cw.br); err != nil {
		return err
	}
	defer cw.rs.close()
	cw.s = &cw.rs
	werr := cw.walk(n)
	left, derr := cw.s.drain()
	switch {
	case derr != nil:
		return derr
	case werr != nil:
		return werr
	case left != 0:
		return fmt.Errorf("%w: %d bytes after the batch's %d records", ErrMalformed, left, n)
	}
	return nil
}

// WalkCompactRecords calls fn with each of the n records of the records
// section body, compressed with codec c, streaming (see above). The
// record passed is reused between calls. An error wraps ErrMalformed when
// the records do not read by the cleaner's rules or the section does not
// decompress, ErrTooLarge when it decompresses to more than
// MaxDecompressedSize.
func WalkCompactRecords(c Compression, body []byte, n int32, fn func(*CompactRecord)) error {
	c, body, scratch, err := compactSource(c, body)
	if err != nil {
		return err
	}
	defer releaseSource(scratch)
	return compactPass(c, body, n, &compactWalk{keep: func(r *CompactRecord) bool { fn(r); return false }})
}

// compactSource returns the records section to walk: body decompressed
// into a pooled buffer when it holds at most inMemoryLimit bytes (the
// passes then read memory, decompressing once), body itself to stream
// otherwise, with the buffer to give back with releaseSource.
func compactSource(c Compression, body []byte) (Compression, []byte, *[]byte, error) {
	if c == CompressionNone {
		return c, body, nil, nil
	}
	scratch := getScratch()
	out, err := decompressLimited(c, *scratch, body, inMemoryLimit)
	switch {
	case err == nil:
		*scratch = out[:0]
		return CompressionNone, out, scratch, nil
	case errors.Is(err, ErrTooLarge):
		putScratch(scratch)
		return c, body, nil, nil
	}
	putScratch(scratch)
	return c, nil, nil, err
}

func releaseSource(scratch *[]byte) {
	if scratch != nil {
		putScratch(scratch)
	}
}

// compactInMemory is the largest records section FilterCompactRecords
// builds whole before it compresses it, in one call of Compress (the same
// bytes as a producer's batch of those records compressed by Compress); a
// larger one streams into the compressor.
const compactInMemory = inMemoryLimit

// FilterCompactRecords returns the records section of the n records of
// body (compressed with codec c) that keep selects, compressed with c,
// appended to dst, and how many records it holds. keep is called twice
// for each record of a key of at most CompactKeyMax bytes and must give
// the same answer both times. When keep selects every record or none,
// nothing is built: dst is returned as it is, with kept n or 0.
//
// A section of at most compactInMemory bytes before compression is built
// whole and compressed with Compress; a larger one streams from the
// decompressor into the codec's stream writer (snappy in the xerial
// framing), which writes into chunks copied once into the result. The
// compressed section is refused with an error wrapping ErrRebuiltTooLarge
// as soon as it is over maxOut bytes (0: no limit).
func FilterCompactRecords(dst []byte, c Compression, body []byte, n int32, keep func(*CompactRecord) bool, maxOut int) ([]byte, int, error) {
	codec := c
	c, body, src, err := compactSource(c, body)
	if err != nil {
		return nil, 0, err
	}
	defer releaseSource(src)
	cw := &compactWalk{keep: keep}
	if err := compactPass(c, body, n, cw); err != nil {
		return nil, 0, err
	}
	if cw.kept == int(n) || cw.kept == 0 {
		return dst, cw.kept, nil
	}
	kept, keptBytes := cw.kept, cw.keptBytes
	pp := pendPool.Get().(*[]byte)
	defer func() { pendPool.Put(pp) }()
	pass2 := func(w io.Writer) error {
		rw := &recordWriter{w: w, pend: (*pp)[:0]}
		cw2 := &compactWalk{keep: keep, w: rw, long: cw.long}
		err := compactPass(c, body, n, cw2)
		ferr := rw.flush()
		*pp = rw.pend[:0]
		switch {
		case err != nil:
			return err
		case cw2.kept != kept || cw2.keptBytes != keptBytes || cw2.li != len(cw.long):
			return fmt.Errorf("%w: records changed between passes", ErrMalformed)
		}
		return ferr
	}
	if codec == CompressionNone || keptBytes <= compactInMemory {
		scratch := getScratch()
		defer putScratch(scratch)
		raw := bytes.NewBuffer((*scratch)[:0])
		raw.Grow(int(keptBytes))
		err := pass2(raw)
		*scratch = raw.Bytes()[:0]
		if err != nil {
			return nil, 0, err
		}
		out, err := Compress(codec, raw.Bytes())
		if err != nil {
			return nil, 0, err
		}
		if maxOut > 0 && len(out) > maxOut {
			return nil, 0, fmt.Errorf("%w: over %d bytes", ErrRebuiltTooLarge, maxOut)
		}
		return append(dst, out...), kept, nil
	}
	out := &chunkWriter{limit: maxOut}
	defer out.release()
	zw, finish, err := compressWriter(codec, out)
	if err != nil {
		return nil, 0, err
	}
	err = pass2(zw)
	if ferr := finish(); err == nil {
		err = ferr
	}
	if errors.Is(err, errOutputLimit) {
		return nil, 0, fmt.Errorf("%w: over %d bytes", ErrRebuiltTooLarge, maxOut)
	}
	if err != nil {
		return nil, 0, err
	}
	res := out.bytes(len(dst))
	copy(res, dst)
	return res, kept, nil
}
