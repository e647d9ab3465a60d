package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Streaming record reads for the coordinators' loads.
//
// A coordinator rebuilds its state by reading every record of its
// internal topic (__consumer_offsets, __transaction_state,
// __share_group_state). Kafka lets clients whose client id is
// "__admin_client" produce to those topics, so a batch of a few KB there
// may hold a record of hundreds of MB (a zip bomb). StreamRecords reads a
// batch's records as they come out of the decompressor, through the 64 KiB
// window of the produce validation (stream.go), and hands each key and
// value to its caller cut at a limit: memory is the window, the codec's
// state and the key and value kept, never the decompressed size.

// StreamedRecord is what StreamRecords reports of a record.
type StreamedRecord struct {
	OffsetDelta int32
	// Key and Value are the record's key and value (nil when null), cut
	// to their first limit bytes (see StreamRecords). Those of an
	// uncompressed batch alias the batch; those of a compressed one are
	// valid during the call only.
	Key, Value []byte
	// KeyLen and ValueLen are the key's and value's lengths in the record
	// (-1 when null): more than len(Key) or len(Value) when cut.
	KeyLen, ValueLen int32
}

// Cut reports whether the record's key or value was cut at the limit.
func (r *StreamedRecord) Cut() bool {
	return int(r.KeyLen) > len(r.Key) || int(r.ValueLen) > len(r.Value)
}

// StreamRecords calls fn with each record of the batch at the start of b,
// in order, by DecodeRecords' rules (each record well framed, its length
// included; no bytes after the batch's records), streaming the records of
// a compressed batch (a section of at most 1 MiB decompressed is
// decompressed once into a pooled buffer). A key or value longer than
// limit bytes is reported by its first limit bytes, the rest read past. It
// does not check the CRC.
//
// As DecodeRecords, it reports the records of a batch that reads whole
// and none of one that does not: a section in memory is read once and its
// records reported after, a section streamed (over 1 MiB decompressed) is
// read twice, checked and then reported (decompressed twice). The zstd frames it reads are those the produce
// validation takes (a window of at most 128 MiB, as Kafka 4.4's zstd
// stream), where DecodeRecords takes any up to MaxDecompressedSize.
func StreamRecords(b []byte, limit int, fn func(*StreamedRecord)) error {
	h, batch, err := batchBounds(b)
	if err != nil {
		return err
	}
	if h.NumRecords < 0 {
		return fmt.Errorf("%w: batch declares %d records", ErrMalformed, h.NumRecords)
	}
	c, body, src, err := compactSource(h.Compression(), batch[BatchHeaderSize:])
	if err != nil {
		return err
	}
	defer releaseSource(src)
	limit = max(limit, 0)
	if c == CompressionNone {
		return streamInMemory(body, h.NumRecords, limit, fn)
	}
	if err := streamPass(c, body, h.NumRecords, 0, nil); err != nil {
		return err
	}
	return streamPass(c, body, h.NumRecords, limit, fn)
}

// streamInMemory is StreamRecords on a records section in memory (an
// uncompressed batch's, or one decompressed into a buffer): its records
// are read once, with DecodeRecords' parseRecord, and reported from it.
func streamInMemory(body []byte, n int32, limit int, fn func(*StreamedRecord)) error {
	if int(n) > len(body)/minRecordSize {
		return fmt.Errorf("%w: batch declares %d records in %d bytes", ErrMalformed, n, len(body))
	}
	recs := make([]StreamedRecord, n)
	var r Record
	for i := range recs {
		var err error
		if body, err = parseRecord(body, &r); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		recs[i] = StreamedRecord{OffsetDelta: r.OffsetDelta, Key: cut(r.Key, limit), Value: cut(r.Value, limit),
			KeyLen: int32(len(r.Key)), ValueLen: int32(len(r.Value))}
		if r.Key == nil {
			recs[i].KeyLen = -1
		}
		if r.Value == nil {
			recs[i].ValueLen = -1
		}
	}
	if len(body) != 0 {
		return fmt.Errorf("%w: %d bytes after the batch's %d records", ErrMalformed, len(body), n)
	}
	for i := range recs {
		fn(&recs[i])
	}
	return nil
}

// cut returns b's first limit bytes (b itself when shorter; nil for nil).
func cut(b []byte, limit int) []byte {
	if len(b) > limit {
		return b[:limit:limit]
	}
	return b
}

// streamPass reads the n records of body (compressed with codec c),
// reporting each to fn when fn is not nil, their keys and values cut at
// limit bytes.
func streamPass(c Compression, body []byte, n int32, limit int, fn func(*StreamedRecord)) error {
	var s recordStream
	if err := s.open(c, body, nil); err != nil {
		return err
	}
	defer s.close()
	rr := recordReader{s: &s, limit: limit}
	if fn != nil {
		rr.keep = true
		scratch := getScratch()
		defer func() {
			*scratch = rr.kv[:0]
			putScratch(scratch)
		}()
		rr.kv = (*scratch)[:0]
		if rr.kv == nil {
			rr.kv = make([]byte, 0, 256) // so that an empty key or value is not nil
		}
	}
	var rec StreamedRecord
	var rerr error
	for r := range n {
		if rerr = rr.next(&rec); rerr != nil {
			rerr = fmt.Errorf("record %d: %w", r, rerr)
			break
		}
		if fn != nil {
			fn(&rec)
		}
	}
	left, derr := s.drain()
	switch {
	case derr != nil: // the stream's error first, as walkStream
		return derr
	case rerr != nil:
		return rerr
	case left != 0:
		return fmt.Errorf("%w: %d bytes after the batch's %d records", ErrMalformed, left, n)
	}
	return nil
}

// recordReader reads records from a stream by parseRecord's rules.
type recordReader struct {
	s     *recordStream
	left  int64  // bytes of the current record not read yet
	kv    []byte // the key and value kept
	keep  bool   // whether to keep them
	limit int
}

// next reads the next record into rec.
func (rr *recordReader) next(rec *StreamedRecord) error {
	s := rr.s
	b := s.avail(binary.MaxVarintLen64)
	if len(b) == 0 {
		return fmt.Errorf("%w: the batch ends before its records", ErrMalformed)
	}
	v, w := binary.Varint(b)
	if w <= 0 || w > 5 || v < minRecordSize-1 || v > math.MaxInt32 {
		return fmt.Errorf("%w: bad record length", ErrMalformed)
	}
	s.i += w
	rr.left = v
	if b = s.avail(1); len(b) == 0 {
		return fmt.Errorf("%w: the batch ends in a record", ErrMalformed)
	}
	s.i++ // the attributes
	rr.left--
	if _, ok := rr.varint(10); !ok {
		return fmt.Errorf("%w: bad record timestamp delta", ErrMalformed)
	}
	od, ok := rr.varint(5)
	if !ok {
		return fmt.Errorf("%w: bad record offset delta", ErrMalformed)
	}
	rr.kv = rr.kv[:0]
	kl, ok := rr.bytes(true, rr.keep)
	if !ok {
		return fmt.Errorf("%w: bad record key", ErrMalformed)
	}
	kEnd := len(rr.kv)
	vl, ok := rr.bytes(true, rr.keep)
	if !ok {
		return fmt.Errorf("%w: bad record value", ErrMalformed)
	}
	nh, ok := rr.varint(5)
	if !ok || nh < 0 || nh > rr.left/2 {
		return fmt.Errorf("%w: bad record header count", ErrMalformed)
	}
	for range nh {
		if _, ok := rr.bytes(false, false); !ok {
			return fmt.Errorf("%w: bad record header key", ErrMalformed)
		}
		if _, ok := rr.bytes(true, false); !ok {
			return fmt.Errorf("%w: bad record header value", ErrMalformed)
		}
	}
	if rr.left != 0 {
		return fmt.Errorf("%w: record length %d leaves %d unread bytes", ErrMalformed, v, rr.left)
	}
	*rec = StreamedRecord{OffsetDelta: int32(od), KeyLen: kl, ValueLen: vl}
	if !rr.keep {
		return nil
	}
	if kl >= 0 {
		rec.Key = rr.kv[:kEnd:kEnd]
	}
	if vl >= 0 {
		rec.Value = rr.kv[kEnd:]
	}
	return nil
}

// varint reads a zigzag varint of at most width bytes (5: Kafka's varint,
// which must fit an int32; 10: its varlong) within the record.
func (rr *recordReader) varint(width int) (int64, bool) {
	b := rr.s.avail(binary.MaxVarintLen64)
	b = b[:min(int64(len(b)), rr.left)]
	v, n := binary.Varint(b)
	if n <= 0 || n > width || width == 5 && (v < math.MinInt32 || v > math.MaxInt32) {
		return 0, false
	}
	rr.s.i += n
	rr.left -= int64(n)
	return v, true
}

// bytes reads varint-length bytes within the record (length -1: null when
// nullable), appending their first limit bytes to rr.kv when keep, and
// returns their length.
func (rr *recordReader) bytes(nullable, keep bool) (int32, bool) {
	l, ok := rr.varint(5)
	if !ok {
		return 0, false
	}
	if l == -1 && nullable {
		return -1, true
	}
	if l < 0 || l > rr.left {
		return 0, false
	}
	rr.left -= l
	s, rest := rr.s, l
	if keep {
		k := min(l, int64(rr.limit))
		rr.kv = slices.Grow(rr.kv, int(k)) // at once, not by doubling
		for k > 0 {
			b := s.avail(int(min(k, int64(len(s.buf)))))
			if len(b) == 0 {
				return 0, false
			}
			m := min(len(b), int(k))
			rr.kv = append(rr.kv, b[:m]...)
			s.i += m
			k -= int64(m)
			rest -= int64(m)
		}
	}
	return int32(l), s.skip64(rest)
}
