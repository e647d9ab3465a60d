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
	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Streaming validation of compressed batches.
//
// checkCompressedStream walks the records of a compressed batch as they come
// out of the decompressor, through a window of streamWindow bytes: a batch
// that decompresses to hundreds of MB (a "zip bomb", which Kafka 4.4 accepts
// when its records are well formed) costs a validation the window and the
// codec's own state, not its decompressed size. The codec state is bounded:
// gzip's 32 KiB dictionary; an LZ4 block (at most 4 MiB, the frame's block
// maximum); a snappy block (at most maxSnappyRatio times its compressed
// bytes, which the request carries); a zstd window (at most
// zstdMaxStreamWindow, the 128 MiB zstd's own streaming decoder, and so Kafka
// 4.4's zstd-jni, allows by default; producers write 2 to 8 MiB windows).

// inMemoryLimit is the largest decompressed size a batch is validated in
// one buffer (the fast path: batches are rarely larger). A larger one is
// walked as it streams on, the bytes already decompressed first.
const inMemoryLimit = 1 << 20

// checkCompressed checks the records of a compressed batch: decompressed
// whole into a pooled buffer when they fit in inMemoryLimit bytes, streamed
// (checkCompressedStream) when not. The codes are the same either way.
// Each byte is decompressed once: a gzip, xerial snappy, LZ4 or size-less
// zstd stream found larger than inMemoryLimit goes on from where the
// buffer stopped (a zstd frame that declares its size, or a raw snappy
// block, is sized before it is decoded).
func checkCompressed(c Compression, body []byte, n int32, st *recordStats) *BatchError {
	if len(body) >= inMemoryLimit {
		// Its records will hardly fit: stream at once.
		return checkCompressedStreamStats(c, body, n, st)
	}
	switch {
	case c == CompressionGzip, c == CompressionSnappy && bytes.HasPrefix(body, xerialMagic):
		return checkCompressedOnce(c, body, n, st)
	case c == CompressionLZ4:
		return checkLZ4Once(body, n, st)
	case c == CompressionZstd:
		var fh zstd.Header
		if fh.Decode(body) != nil || !fh.HasFCS {
			// No declared size: the stream decoder, once.
			return checkCompressedOnce(c, body, n, st)
		}
	}
	scratch := getScratch()
	out, err := decompressLimited(c, *scratch, body, inMemoryLimit)
	if err != nil {
		putScratch(scratch)
		if errors.Is(err, ErrTooLarge) {
			return checkCompressedStreamStats(c, body, n, st)
		}
		return decompressErr(c, err)
	}
	berr := checkCompressedRecordsStats(out, n, st)
	*scratch = out[:0]
	putScratch(scratch)
	return berr
}

// checkCompressedOnce reads the decompressed records into a pooled buffer
// up to inMemoryLimit bytes and checks them there when the stream ends
// within it; otherwise it walks them streaming, the buffer's bytes first
// and then the rest of the same decompressor.
func checkCompressedOnce(c Compression, body []byte, n int32, st *recordStats) *BatchError {
	r, release, err := compressedReader(c, body)
	if err != nil {
		return decompressErr(c, err)
	}
	defer release()
	scratch := getScratch()
	defer putScratch(scratch)
	buf := (*scratch)[:0]
	if cap(buf) < streamWindow {
		buf = make([]byte, 0, streamWindow)
	}
	for {
		if len(buf) == cap(buf) {
			if len(buf) > inMemoryLimit {
				break
			}
			nb := make([]byte, len(buf), min(2*cap(buf), inMemoryLimit+1))
			copy(nb, buf)
			buf = nb
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			*scratch = buf[:0]
			return checkCompressedRecordsStats(buf, n, st)
		}
		if err != nil {
			*scratch = buf[:0]
			return decompressErr(c, err)
		}
	}
	*scratch = buf[:0]
	return walkCompressed(c, io.MultiReader(bytes.NewReader(buf), r), n, st)
}

// checkLZ4Once is checkCompressedOnce for an LZ4 frame: its blocks are
// decoded straight into a pooled buffer (no block buffer, no copy) while
// it holds at most inMemoryLimit bytes; past that (by at most a block,
// 4 MiB at most) the records are walked streaming, the buffer's bytes
// first and then the frame's blocks from where the buffer stopped.
func checkLZ4Once(body []byte, n int32, st *recordStats) *BatchError {
	f, err := parseLZ4Frame(body)
	if err != nil {
		return decompressErr(CompressionLZ4, fmt.Errorf("lz4: %w", err))
	}
	scratch := getScratch()
	defer putScratch(scratch)
	buf := (*scratch)[:0]
	for len(buf) <= inMemoryLimit {
		// As decompressLimited's inMemoryLimit, the size limit is the
		// stream's (MaxDecompressedSize, counted by recordStream).
		out, done, err := f.next(buf, math.MaxInt)
		if err != nil {
			return decompressErr(CompressionLZ4, fmt.Errorf("lz4: %w", err))
		}
		buf = out
		*scratch = buf[:0]
		if done {
			return checkCompressedRecordsStats(buf, n, st)
		}
	}
	blocks := getScratch()
	defer putScratch(blocks)
	r := &lz4FrameReader{f: f, buf: (*blocks)[:0]}
	berr := walkCompressed(CompressionLZ4, io.MultiReader(bytes.NewReader(buf), r), n, st)
	*blocks = r.buf[:0]
	return berr
}

// streamWindow is the size of the buffer records are walked through.
const streamWindow = 64 << 10

// zstdMaxStreamWindow is the largest zstd window accepted when a batch is
// streamed: zstd's default windowLogMax (27) for streaming decompression,
// which Kafka 4.4's ZstdInputStream applies.
const zstdMaxStreamWindow = 1 << 27

var (
	zstdStreams sync.Pool // *zstd.Decoder, single-goroutine stream decoders
	windowPool  = sync.Pool{New: func() any { b := make([]byte, streamWindow); return &b }}
)

// compressedReader returns a reader of src decompressed with codec c and a
// function that releases it.
func compressedReader(c Compression, src []byte) (io.Reader, func(), error) {
	switch c {
	case CompressionGzip:
		var zr *gzip.Reader
		if v := gzipReaders.Get(); v != nil {
			zr = v.(*gzip.Reader)
			if err := zr.Reset(bytes.NewReader(src)); err != nil {
				gzipReaders.Put(zr)
				return nil, nil, fmt.Errorf("%w: gzip: %v", ErrMalformed, err)
			}
		} else {
			var err error
			zr, err = gzip.NewReader(bytes.NewReader(src))
			if err != nil {
				return nil, nil, fmt.Errorf("%w: gzip: %v", ErrMalformed, err)
			}
		}
		return zr, func() { gzipReaders.Put(zr) }, nil
	case CompressionSnappy:
		if bytes.HasPrefix(src, xerialMagic) {
			if len(src) < 16 {
				return nil, nil, fmt.Errorf("%w: snappy: xerial header truncated", ErrMalformed)
			}
			scratch := getScratch()
			x := &xerialReader{src: src[16:], buf: *scratch}
			return x, func() {
				*scratch = x.buf[:0]
				putScratch(scratch)
			}, nil
		}
		// A raw snappy stream is one block: decoded whole, at most
		// maxSnappyRatio times its compressed size.
		scratch := getScratch()
		out, err := decodeSnappyBlock(*scratch, src, MaxDecompressedSize)
		if err != nil {
			putScratch(scratch)
			return nil, nil, err
		}
		return bytes.NewReader(out), func() {
			*scratch = out[:0]
			putScratch(scratch)
		}, nil
	case CompressionLZ4:
		r, err := newLZ4FrameReader(src)
		if err != nil {
			return nil, nil, fmt.Errorf("lz4: %w", err)
		}
		scratch := getScratch()
		r.buf = (*scratch)[:0]
		return r, func() {
			*scratch = r.buf[:0]
			putScratch(scratch)
		}, nil
	case CompressionZstd:
		// DecodeAll refuses a frame whose declared content size is
		// over the limit before reading its blocks; so does this.
		var fh zstd.Header
		if fh.Decode(src) == nil && fh.DictionaryID == 0 && fh.HasFCS && fh.FrameContentSize > uint64(MaxDecompressedSize) {
			return nil, nil, fmt.Errorf("zstd: %w", ErrTooLarge)
		}
		var d *zstd.Decoder
		if v := zstdStreams.Get(); v != nil {
			d = v.(*zstd.Decoder)
		} else {
			var err error
			d, err = zstd.NewReader(nil,
				zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderLowmem(true),
				zstd.WithDecodeBuffersBelow(0), // never decode the whole stream at once
				zstd.WithDecoderMaxWindow(zstdMaxStreamWindow),
				// The size limit is recordStream's count (and the
				// content size check above), so that the decoder's
				// size errors are only its window's.
				zstd.WithDecoderMaxMemory(1<<40),
			)
			if err != nil {
				return nil, nil, fmt.Errorf("zstd: %w", err)
			}
		}
		br := bytes.NewReader(src)
		if err := d.Reset(br); err != nil {
			zstdStreams.Put(d)
			return nil, nil, zstdStreamErr(err)
		}
		return zstdErrReader{d, br}, func() {
			_ = d.Reset(nil)
			zstdStreams.Put(d)
		}, nil
	}
	return nil, nil, fmt.Errorf("%w: %d", ErrUnknownCodec, int8(c))
}

// zstdErrReader maps the zstd decoder's errors (zstdStreamErr).
type zstdErrReader struct {
	d   *zstd.Decoder
	src *bytes.Reader
}

func (z zstdErrReader) Read(p []byte) (int, error) {
	n, err := z.d.Read(p)
	if err == io.EOF && z.src.Len() > 0 {
		// The stream decoder ends at bytes too few for a frame
		// header; DecodeAll (and zstd-jni) refuse them.
		return n, fmt.Errorf("%w: zstd: %d bytes after the last frame", ErrMalformed, z.src.Len())
	}
	if err != nil && err != io.EOF {
		err = zstdStreamErr(err)
	}
	return n, err
}

// zstdStreamErr maps a zstd stream decoder's error: a stream that does not
// decode, a window over zstdMaxStreamWindow among them (zstd-jni's "Frame
// requires too much memory for decoding"; a single-segment frame's window
// is its content size). The size over MaxDecompressedSize is counted by
// recordStream.
func zstdStreamErr(err error) error {
	return fmt.Errorf("%w: zstd: %v", ErrMalformed, err)
}

// xerialReader decodes xerial-framed snappy chunk by chunk.
type xerialReader struct {
	src []byte
	buf []byte // the current chunk, decoded
	pos int
}

func (x *xerialReader) Read(p []byte) (int, error) {
	for x.pos == len(x.buf) {
		if len(x.src) == 0 {
			return 0, io.EOF
		}
		if len(x.src) < 4 {
			return 0, fmt.Errorf("%w: snappy: xerial chunk length truncated", ErrMalformed)
		}
		n := binary.BigEndian.Uint32(x.src)
		x.src = x.src[4:]
		if uint64(n) > uint64(len(x.src)) {
			return 0, fmt.Errorf("%w: snappy: xerial chunk of %d bytes with %d left", ErrMalformed, n, len(x.src))
		}
		out, err := decodeSnappyBlock(x.buf[:0], x.src[:n], MaxDecompressedSize)
		if err != nil {
			return 0, err
		}
		x.src = x.src[n:]
		x.buf, x.pos = out, 0
	}
	k := copy(p, x.buf[x.pos:])
	x.pos += k
	return k, nil
}

// recordStream reads a decompressed record stream through a fixed window.
// open makes s read the records section body, compressed with codec c,
// through a pooled window; close returns the window and the decompressor.
// plain, when not nil, is reset to read an uncompressed body (a reader
// the caller reuses); otherwise a new one is made.
func (s *recordStream) open(c Compression, body []byte, plain *bytes.Reader) error {
	var r io.Reader
	var release func()
	if c == CompressionNone {
		if plain == nil {
			plain = new(bytes.Reader)
		}
		plain.Reset(body)
		r = plain
	} else {
		cr, rel, err := compressedReader(c, body)
		if err != nil {
			return err
		}
		r, release = cr, rel
	}
	wp := windowPool.Get().(*[]byte)
	*s = recordStream{r: r, buf: *wp, window: wp, release: release}
	return nil
}

// close returns what open took; s is not read after it.
func (s *recordStream) close() {
	if s.window != nil {
		windowPool.Put(s.window)
		s.window = nil
	}
	if s.release != nil {
		s.release()
		s.release = nil
	}
}

type recordStream struct {
	r     io.Reader
	buf   []byte
	i, n  int   // buf[i:n] is read and not consumed
	total int64 // bytes read from r
	err   error // r's error once it returned one (io.EOF at the end)

	window  *[]byte // buf's entry of windowPool, when open took it
	release func()  // the decompressor's release, when open took one
}

// fill makes at least k bytes (k <= len(buf)) available unless the stream
// ends or fails first.
func (s *recordStream) fill(k int) {
	if s.i > 0 {
		s.n = copy(s.buf, s.buf[s.i:s.n])
		s.i = 0
	}
	for s.n < k && s.err == nil {
		m, err := s.r.Read(s.buf[s.n:])
		s.n += m
		s.total += int64(m)
		if err != nil {
			s.err = err
		} else if s.total > int64(MaxDecompressedSize) {
			s.err = ErrTooLarge
		}
	}
}

// avail returns the unconsumed bytes, at least k of them when the stream
// holds them.
func (s *recordStream) avail(k int) []byte {
	if s.n-s.i < k && s.err == nil {
		s.fill(k)
	}
	return s.buf[s.i:s.n]
}

// skip consumes l bytes; it reports false when the stream ends first.
func (s *recordStream) skip(l int) bool {
	for {
		if have := s.n - s.i; l <= have {
			s.i += l
			return true
		} else {
			l -= have
			s.i, s.n = 0, 0
		}
		if s.err != nil {
			return false
		}
		s.fill(min(l, len(s.buf)))
	}
}

// drain reads the rest of the stream, returning the number of bytes left
// and the stream's error (nil at a clean end).
func (s *recordStream) drain() (int64, error) {
	left := int64(s.n - s.i)
	s.i, s.n = 0, 0
	for s.err == nil {
		before := s.total
		s.fill(len(s.buf))
		left += s.total - before
		s.i, s.n = 0, 0
	}
	if s.err == io.EOF {
		return left, nil
	}
	return left, s.err
}

// checkCompressedStream decompresses the records of a batch with codec c
// and checks them as checkCompressedRecords does, streaming (see above).
// The codes are those of decompressing the batch whole and then walking
// it: a stream that does not decompress fails with UNKNOWN_SERVER_ERROR,
// even when a record before the bad part was already found wrong (the rest
// of the stream is then read to tell), one over MaxDecompressedSize with
// INVALID_RECORD, and records that do not match checkCompressedRecords'
// rules with INVALID_RECORD.
func checkCompressedStream(c Compression, body []byte, n int32) *BatchError {
	return checkCompressedStreamStats(c, body, n, nil)
}

// checkCompressedStreamStats is checkCompressedStream adding each record's
// deltas to st when st is not nil.
func checkCompressedStreamStats(c Compression, body []byte, n int32, st *recordStats) *BatchError {
	r, release, err := compressedReader(c, body)
	if err != nil {
		return decompressErr(c, err)
	}
	defer release()
	return walkCompressed(c, r, n, st)
}

// walkCompressed is checkCompressedStreamStats on the records read from r
// (decompressed with codec c).
func walkCompressed(c Compression, r io.Reader, n int32, st *recordStats) *BatchError {
	wp := windowPool.Get().(*[]byte)
	defer windowPool.Put(wp)
	s := &recordStream{r: r, buf: *wp}
	var fn func(int32, RecordInfo) bool
	if st != nil {
		fn = func(i int32, r RecordInfo) bool { st.add(i, r.TimestampDelta, r.OffsetDelta); return true }
	}
	berr := walkStream(s, n, fn)
	left, err := s.drain()
	if err != nil {
		return decompressErr(c, err)
	}
	if berr != nil {
		return berr
	}
	if left != 0 {
		return batchErr(kerr.InvalidRecord, "Incorrect declared batch size, records still remaining in file: %d bytes after the batch's %d records", left, n)
	}
	return nil
}

func decompressErr(c Compression, err error) *BatchError {
	// Kafka 4.4 fails such a batch with UNKNOWN_SERVER_ERROR ("Failed to
	// decompress record stream"); a size over the limit is its
	// INVALID_RECORD "exceeds the configured maximum record size".
	if errors.Is(err, ErrTooLarge) {
		return batchErr(kerr.InvalidRecord, "decompressing %s records: %v", c, err)
	}
	return batchErr(kerr.UnknownServerError, "Failed to decompress record stream: %s: %v", c, err)
}

// RecordInfo is what VisitRecords reports of a record.
type RecordInfo struct {
	TimestampDelta int64
	OffsetDelta    int32
	KeyNull        bool
}

// VisitRecords calls fn with each record of the batch at the start of b,
// in order, read by Kafka's partial rules (checkCompressedRecords: a
// record's fields are not held to its length) as Kafka's LogValidator
// reads them to check keys and timestamps. A compressed batch's records
// are streamed through a small window (memory O(window), not
// O(decompressed size)). It does not check the CRC; an error means the
// records do not decode.
func VisitRecords(b []byte, fn func(i int32, r RecordInfo)) error {
	return visitRecords(b, func(i int32, r RecordInfo) bool { fn(i, r); return true })
}

// VisitRecordsUntil is VisitRecords stopping, with a nil error, at the
// first record for which fn returns false: the records after it are not
// read (nor decompressed).
func VisitRecordsUntil(b []byte, fn func(i int32, r RecordInfo) bool) error {
	return visitRecords(b, fn)
}

func visitRecords(b []byte, fn func(i int32, r RecordInfo) bool) error {
	h, batch, err := batchBounds(b)
	if err != nil {
		return err
	}
	if h.NumRecords < 0 {
		return fmt.Errorf("%w: batch declares %d records", ErrMalformed, h.NumRecords)
	}
	s := new(recordStream)
	if err := s.open(h.Compression(), batch[BatchHeaderSize:], nil); err != nil {
		return err
	}
	defer s.close()
	berr := walkStream(s, h.NumRecords, fn)
	if berr == errStopped {
		return nil
	}
	left, err := s.drain()
	if err != nil {
		return err
	}
	if berr != nil {
		return fmt.Errorf("%w: %s", ErrMalformed, berr.Reason)
	}
	if left != 0 {
		return fmt.Errorf("%w: %d bytes after the batch's %d records", ErrMalformed, left, h.NumRecords)
	}
	return nil
}

// errStopped is walkStream's answer when fn stopped it.
var errStopped = &BatchError{Reason: "stopped"}

// walkStream is checkCompressedRecords over a stream, calling fn (when not
// nil) with each record, and stopping with errStopped when fn returns
// false; the bytes after the n records are left to the caller.
func walkStream(s *recordStream, n int32, fn func(int32, RecordInfo) bool) *BatchError {
	for r := range n {
		b := s.avail(binary.MaxVarintLen64)
		if len(b) == 0 {
			return batchErr(kerr.InvalidRecord, "Incorrect declared batch size, premature EOF reached: the batch declares %d records and holds %d", n, r)
		}
		size, w := varint32(b, 0)
		if w == 0 {
			return batchErr(kerr.InvalidRecord, "Found invalid record structure: record %d's length", r)
		}
		if size < 0 {
			return batchErr(kerr.InvalidRecord, "Invalid record size: %d is negative.", size)
		}
		i := w + 1 // the length, the attributes
		if i > len(b) {
			return batchErr(kerr.InvalidRecord, "Incorrect declared batch size, premature EOF reached in record %d", r)
		}
		s.i += i
		var info RecordInfo
		b = s.avail(binary.MaxVarintLen64)
		if len(b) > 0 && b[0] < 0x80 { // timestamp delta: a varlong
			info.TimestampDelta = int64(b[0]>>1) ^ -int64(b[0]&1)
			s.i++
		} else {
			ts, w := binary.Varint(b)
			if w <= 0 {
				return batchErr(kerr.InvalidRecord, "Found invalid record structure: record %d's timestamp delta", r)
			}
			info.TimestampDelta = ts
			s.i += w
		}
		if info.OffsetDelta, w = varint32(s.avail(binary.MaxVarintLen64), 0); w == 0 { // offset delta
			return batchErr(kerr.InvalidRecord, "Found invalid record structure: record %d's offset delta", r)
		}
		s.i += w
		for k := range 2 { // key, value
			l, w := varint32(s.avail(binary.MaxVarintLen64), 0)
			if w == 0 {
				return batchErr(kerr.InvalidRecord, "Found invalid record structure: record %d's key or value length", r)
			}
			if k == 0 {
				info.KeyNull = l < 0
			}
			s.i += w
			if l > 0 && !s.skip(int(l)) {
				return batchErr(kerr.InvalidRecord, "Incorrect declared batch size, premature EOF reached in record %d", r)
			}
		}
		nh, w := varint32(s.avail(binary.MaxVarintLen64), 0)
		if w == 0 {
			return batchErr(kerr.InvalidRecord, "Found invalid record structure: record %d's header count", r)
		}
		if nh < 0 {
			return batchErr(kerr.InvalidRecord, "Found invalid number of record headers %d", nh)
		}
		s.i += w
		for range nh {
			for k := range 2 { // header key (not nullable), header value
				l, w := varint32(s.avail(binary.MaxVarintLen64), 0)
				if w == 0 {
					return batchErr(kerr.InvalidRecord, "Found invalid record structure: record %d's header", r)
				}
				if k == 0 && l < 0 {
					return batchErr(kerr.InvalidRecord, "Invalid negative header key size %d", l)
				}
				s.i += w
				if l > 0 && !s.skip(int(l)) {
					return batchErr(kerr.InvalidRecord, "Incorrect declared batch size, premature EOF reached in record %d", r)
				}
			}
		}
		if fn != nil && !fn(r, info) {
			return errStopped
		}
	}
	return nil
}
