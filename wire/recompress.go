package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Recompress rebuilds the batch at the start of batch in codec to, as
// Kafka 4.4's LogValidator rebuilds a batch whose codec is not the topic's
// compression.type (MemoryRecordsBuilder; probed against Kafka 4.4, see
// compat-tests/FINDINGS.md "inner offsets"): the records are numbered
// 0..n-1 (their offset deltas as sent are dropped), their attributes are
// 0, the base timestamp is the first record's timestamp and each record's
// delta is from it, the max timestamp is the largest record timestamp and
// the timestamp type is CreateTime (a LogAppendTime topic stamps the
// batch afterwards); the base offset, producer fields, transactional bit
// and leader epoch are kept. Each record is read by Kafka's full rules
// (parseRecord's: its fields fill its length exactly); a record that does
// not is ErrMalformed.
//
// The records stream from the decompressor through a small window into the
// compressor, which writes into the one buffer returned (it grows with
// what comes out): a batch that decompresses to hundreds of MB costs the
// window, the codecs' state and the output, not its decompressed size
// (an uncompressed target is as large as the records, which are stored).
// Snappy is written in the xerial framing Kafka's own SnappyOutputStream
// writes (32 KiB blocks), which every client reads.
//
// Control batches are returned unchanged (Kafka never compresses them);
// so is a batch already in to.
func Recompress(batch []byte, to Compression) ([]byte, error) {
	return RecompressLimited(batch, to, 0)
}

// ErrRebuiltTooLarge is wrapped when a rebuilt batch is larger than the
// limit given to RecompressLimited: Kafka 4.4 answers MESSAGE_TOO_LARGE
// for a batch whose rebuilt size is over max.message.bytes (a small
// compressed batch rebuilt uncompressed, for one).
var ErrRebuiltTooLarge = errors.New("wire: rebuilt batch exceeds the maximum batch size")

// RecompressLimited is Recompress stopping, with an error wrapping
// ErrRebuiltTooLarge, as soon as the rebuilt batch is over maxBytes bytes
// (0: no limit), so that rebuilding costs at most that much output.
func RecompressLimited(batch []byte, to Compression, maxBytes int) ([]byte, error) {
	if to < CompressionNone || to > CompressionZstd {
		return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, int8(to))
	}
	h, b, err := batchBounds(batch)
	if err != nil {
		return nil, err
	}
	from := h.Compression()
	if from == to || h.IsControl() {
		return append([]byte(nil), b...), nil
	}
	if h.NumRecords < 0 {
		return nil, fmt.Errorf("%w: batch declares %d records", ErrMalformed, h.NumRecords)
	}
	body := b[BatchHeaderSize:]
	var r io.Reader
	if from == CompressionNone {
		r = bytes.NewReader(body)
	} else {
		cr, release, err := compressedReader(from, body)
		if err != nil {
			return nil, err
		}
		defer release()
		r = cr
	}
	wp := windowPool.Get().(*[]byte)
	defer windowPool.Put(wp)
	s := &recordStream{r: r, buf: *wp}

	// The records go to pooled chunks, copied once into the batch
	// returned, its header written in front at the end.
	out := &chunkWriter{}
	if maxBytes > 0 {
		out.limit = max(maxBytes-BatchHeaderSize, 0)
	}
	defer out.release()
	var dst io.Writer = out
	finish := func() error { return nil }
	if to != CompressionNone {
		if dst, finish, err = compressWriter(to, out); err != nil {
			return nil, err
		}
	}
	pp := pendPool.Get().(*[]byte)
	rw := &recordWriter{w: dst, pend: (*pp)[:0]}
	tsOf := func(delta int64) int64 { return h.BaseTimestamp + delta }
	if h.IsLogAppendTime() {
		// Kafka reads every record of a LogAppendTime batch at the
		// batch's max timestamp.
		tsOf = func(int64) int64 { return h.MaxTimestamp }
	}
	firstTS, maxTS, rerr := rebuildRecords(s, h.NumRecords, tsOf, rw)
	left, derr := s.drain()
	werr := rw.flush()
	*pp = rw.pend[:0]
	pendPool.Put(pp)
	if ferr := finish(); werr == nil {
		werr = ferr
	}

	// Kafka reads every record before it builds the batch, so a record
	// that does not read is INVALID_RECORD even when the output would
	// be too large: past the limit, the records are still read (the
	// writer drops them).
	switch {
	case derr != nil:
		return nil, derr
	case rerr != nil:
		return nil, rerr
	case left != 0:
		return nil, fmt.Errorf("%w: %d bytes after the batch's %d records", ErrMalformed, left, h.NumRecords)
	case errors.Is(werr, errOutputLimit):
		return nil, fmt.Errorf("%w: over %d bytes", ErrRebuiltTooLarge, maxBytes)
	case werr != nil:
		return nil, fmt.Errorf("wire: %s: %w", to, werr)
	}
	if out.n > math.MaxInt32-minBatchLength {
		return nil, fmt.Errorf("%w: records section of %d bytes", ErrTooLarge, out.n)
	}
	res := out.bytes(BatchHeaderSize)
	h.Attributes = h.Attributes&^(attrCompressionMask|attrLogAppendTime) | int16(to)
	h.LastOffsetDelta = max(h.NumRecords-1, 0)
	if h.NumRecords > 0 {
		h.BaseTimestamp = firstTS
	}
	h.MaxTimestamp = maxTS
	h.BatchLength = int32(len(res) - logOverhead)
	appendBatchHeader(res[:0], h)
	RecomputeCRC(res)
	return res, nil
}

// rebuildRecords reads n records from s by parseRecord's rules and writes
// each to w renumbered, with attributes 0 and its timestamp as a delta from
// the first record's; tsOf maps a record's timestamp delta as sent to its
// timestamp. It returns the first record's timestamp and the largest (-1
// when none is larger: Kafka's NO_TIMESTAMP start).
func rebuildRecords(s *recordStream, n int32, tsOf func(int64) int64, w *recordWriter) (first, maxTS int64, err error) {
	maxTS = -1
	bad := func(r int32, what string) error {
		return fmt.Errorf("%w: record %d: %s", ErrMalformed, r, what)
	}
	for r := range n {
		b := s.avail(binary.MaxVarintLen32)
		if len(b) == 0 {
			return 0, 0, fmt.Errorf("%w: batch declares %d records but holds %d", ErrMalformed, n, r)
		}
		length, lw := varint32(b, 0)
		if lw == 0 {
			return 0, 0, bad(r, "bad record length varint")
		}
		if length < minRecordSize-1 {
			return 0, 0, bad(r, fmt.Sprintf("record length %d", length))
		}
		s.i += lw
		rem := int(length)
		// Attributes, timestamp delta, offset delta.
		b = s.avail(1 + binary.MaxVarintLen64 + binary.MaxVarintLen32)
		b = b[:min(len(b), rem)]
		if len(b) == 0 {
			return 0, 0, bad(r, "premature end of the records")
		}
		tsd, tw := binary.Varint(b[1:])
		if tw <= 0 {
			return 0, 0, bad(r, "bad record timestamp delta")
		}
		if _, ow := varint32(b, 1+tw); ow == 0 {
			return 0, 0, bad(r, "bad record offset delta")
		} else {
			s.i += 1 + tw + ow
			rem -= 1 + tw + ow
		}
		ts := tsOf(tsd)
		if r == 0 {
			first = ts
		}
		maxTS = max(maxTS, ts)
		ntsd := ts - first
		w.varint(int64(1 + varintLen(ntsd) + varintLen(int64(r)) + rem))
		w.byte(0)
		w.varint(ntsd)
		w.varint(int64(r))
		// Key, value (nullable), the header count, the headers: copied.
		for k := range 2 {
			l, ok := copyVarint(s, w, &rem)
			if !ok || l < -1 || int(l) > rem {
				return 0, 0, bad(r, [2]string{"bad record key", "bad record value"}[k])
			}
			if l > 0 && !copyBytes(s, w, int(l), &rem) {
				return 0, 0, bad(r, "premature end of the records")
			}
		}
		nh, ok := copyVarint(s, w, &rem)
		if !ok || nh < 0 || int(nh) > rem/2 {
			return 0, 0, bad(r, "bad record header count")
		}
		for range nh {
			for k := range 2 { // header key (not nullable), header value
				l, ok := copyVarint(s, w, &rem)
				if !ok || l < -int32(k) || int(l) > rem {
					return 0, 0, bad(r, "bad record header")
				}
				if l > 0 && !copyBytes(s, w, int(l), &rem) {
					return 0, 0, bad(r, "premature end of the records")
				}
			}
		}
		if rem != 0 {
			return 0, 0, bad(r, fmt.Sprintf("record length %d leaves %d unread bytes", length, rem))
		}
	}
	return first, maxTS, nil
}

// copyVarint reads a varint of at most *rem bytes from s, writes its bytes
// to w and takes them from *rem.
func copyVarint(s *recordStream, w *recordWriter, rem *int) (int32, bool) {
	b := s.avail(binary.MaxVarintLen32)
	b = b[:min(len(b), *rem)]
	v, n := varint32(b, 0)
	if n == 0 {
		return 0, false
	}
	w.write(b[:n])
	s.i += n
	*rem -= n
	return v, true
}

// copyBytes copies l bytes (l <= *rem) from s to w through the window.
func copyBytes(s *recordStream, w *recordWriter, l int, rem *int) bool {
	*rem -= l
	for l > 0 {
		b := s.avail(min(l, len(s.buf)))
		if len(b) == 0 {
			return false
		}
		k := min(len(b), l)
		w.write(b[:k])
		s.i += k
		l -= k
	}
	return true
}

// recordWriter gathers small writes before they go to the compressor.
type recordWriter struct {
	w    io.Writer
	pend []byte
	err  error
}

const pendSize = 32 << 10

var pendPool = sync.Pool{New: func() any { b := make([]byte, 0, pendSize); return &b }}

func (w *recordWriter) flush() error {
	if len(w.pend) > 0 && w.err == nil {
		_, w.err = w.w.Write(w.pend)
	}
	w.pend = w.pend[:0]
	return w.err
}

func (w *recordWriter) write(p []byte) {
	if len(w.pend)+len(p) > cap(w.pend) {
		w.flush()
		if len(p) >= cap(w.pend) {
			if w.err == nil {
				_, w.err = w.w.Write(p)
			}
			return
		}
	}
	w.pend = append(w.pend, p...)
}

func (w *recordWriter) byte(c byte) {
	if len(w.pend) == cap(w.pend) {
		w.flush()
	}
	w.pend = append(w.pend, c)
}

func (w *recordWriter) varint(v int64) {
	if cap(w.pend)-len(w.pend) < binary.MaxVarintLen64 {
		w.flush()
	}
	w.pend = binary.AppendVarint(w.pend, v)
}

// chunkWriter is an io.Writer gathering what is written in pooled chunks,
// refusing more than limit bytes in all when limit is not 0
// (errOutputLimit); bytes returns it in one buffer of its exact size, so
// the output is allocated once, whatever its size.
type chunkWriter struct {
	chunks []*[]byte
	n      int
	limit  int
}

const outChunk = 256 << 10

var chunkPool = sync.Pool{New: func() any { b := make([]byte, 0, outChunk); return &b }}

var errOutputLimit = errors.New("wire: output limit")

func (c *chunkWriter) Write(p []byte) (int, error) {
	if c.limit > 0 && c.n+len(p) > c.limit {
		return 0, errOutputLimit
	}
	n := len(p)
	c.n += n
	for len(p) > 0 {
		if len(c.chunks) == 0 || len(*c.chunks[len(c.chunks)-1]) == outChunk {
			c.chunks = append(c.chunks, chunkPool.Get().(*[]byte))
		}
		last := c.chunks[len(c.chunks)-1]
		k := min(len(p), outChunk-len(*last))
		*last = append(*last, p[:k]...)
		p = p[k:]
	}
	return n, nil
}

// bytes returns the prefix followed by everything written, in a new
// buffer of that size, and releases the chunks.
func (c *chunkWriter) bytes(prefix int) []byte {
	out := make([]byte, prefix, prefix+c.n)
	for _, b := range c.chunks {
		out = append(out, *b...)
	}
	c.release()
	return out
}

func (c *chunkWriter) release() {
	for _, b := range c.chunks {
		*b = (*b)[:0]
		chunkPool.Put(b)
	}
	c.chunks, c.n = nil, 0
}

// zstdWriters are stream encoders for Recompress: one goroutine each, a
// 2 MiB window (zstd level 3's, what Kafka's zstd-jni writes).
var zstdWriters sync.Pool // *zstd.Encoder

// compressWriter returns a writer compressing into w with codec c (not
// CompressionNone) and the function that ends the stream and releases the
// writer.
func compressWriter(c Compression, w io.Writer) (io.Writer, func() error, error) {
	switch c {
	case CompressionGzip:
		zw := gzipWriters.Get().(*gzip.Writer)
		zw.Reset(w)
		return zw, func() error {
			err := zw.Close()
			zw.Reset(nil)
			gzipWriters.Put(zw)
			return err
		}, nil
	case CompressionLZ4:
		zw := lz4Writers.Get().(*lz4.Writer)
		zw.Reset(w)
		return zw, func() error {
			err := zw.Close()
			zw.Reset(nil)
			lz4Writers.Put(zw)
			return err
		}, nil
	case CompressionZstd:
		var zw *zstd.Encoder
		if v := zstdWriters.Get(); v != nil {
			zw = v.(*zstd.Encoder)
			zw.Reset(w)
		} else {
			var err error
			zw, err = zstd.NewWriter(w,
				zstd.WithEncoderConcurrency(1),
				zstd.WithEncoderLevel(zstd.SpeedDefault),
				zstd.WithWindowSize(2<<20),
				zstd.WithLowerEncoderMem(true),
				zstd.WithZeroFrames(true),
			)
			if err != nil {
				return nil, nil, err
			}
		}
		return zw, func() error {
			err := zw.Close()
			zw.Reset(nil)
			zstdWriters.Put(zw)
			return err
		}, nil
	case CompressionSnappy:
		x := &xerialEncoder{w: w}
		x.raw = getScratch()
		x.enc = getScratch()
		_, err := w.Write(xerialHeader)
		return x, func() error {
			ferr := x.flush()
			*x.raw, *x.enc = (*x.raw)[:0], (*x.enc)[:0]
			putScratch(x.raw)
			putScratch(x.enc)
			if err != nil {
				return err
			}
			return ferr
		}, nil
	}
	return nil, nil, fmt.Errorf("%w: %d", ErrUnknownCodec, int8(c))
}

// xerialHeader starts a snappy-java stream: the magic, version 1,
// compatible version 1.
var xerialHeader = append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)

// xerialBlock is snappy-java's default block size (SnappyOutputStream).
const xerialBlock = 32 << 10

// xerialEncoder writes snappy in xerial framing: [int32 length][block]
// chunks of xerialBlock bytes each before compression.
type xerialEncoder struct {
	w        io.Writer
	raw, enc *[]byte
	err      error
}

func (x *xerialEncoder) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && x.err == nil {
		if cap(*x.raw) < xerialBlock {
			*x.raw = make([]byte, 0, xerialBlock)
		}
		k := min(len(p), xerialBlock-len(*x.raw))
		*x.raw = append(*x.raw, p[:k]...)
		p = p[k:]
		if len(*x.raw) == xerialBlock {
			x.flush()
		}
	}
	return n, x.err
}

func (x *xerialEncoder) flush() error {
	if len(*x.raw) == 0 || x.err != nil {
		return x.err
	}
	need := 4 + snappy.MaxEncodedLen(len(*x.raw))
	if cap(*x.enc) < need {
		*x.enc = make([]byte, need)
	}
	enc := snappy.Encode((*x.enc)[4:need], *x.raw)
	out := (*x.enc)[:4+len(enc)]
	binary.BigEndian.PutUint32(out, uint32(len(enc)))
	_, x.err = x.w.Write(out)
	*x.raw = (*x.raw)[:0]
	return x.err
}
