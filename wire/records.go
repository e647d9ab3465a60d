package wire

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// RecordHeader is one record header. A nil Value is a null value.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Record is one record of a batch. A nil Key or Value is null; an empty,
// non-nil one is empty.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	Headers        []RecordHeader
}

// minRecordSize is the smallest encoded record: length, attributes,
// timestamp delta, offset delta, key length, value length, header count.
const minRecordSize = 7

// readVarint reads a zigzag varint that must fit an int32 (Kafka "varint").
func readVarint(b []byte) (int32, []byte, bool) {
	v, n := binary.Varint(b)
	if n <= 0 || n > 5 || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, b, false
	}
	return int32(v), b[n:], true
}

// readVarlong reads a zigzag varint of up to 10 bytes (Kafka "varlong").
func readVarlong(b []byte) (int64, []byte, bool) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, b, false
	}
	return v, b[n:], true
}

// readVarBytes reads varint-length bytes; length -1 is null (nil) when nullable.
func readVarBytes(b []byte, nullable bool) ([]byte, []byte, bool) {
	n, b, ok := readVarint(b)
	if !ok {
		return nil, b, false
	}
	if n == -1 && nullable {
		return nil, b, true
	}
	if n < 0 || int(n) > len(b) {
		return nil, b, false
	}
	return b[:n:n], b[n:], true
}

// parseRecord decodes the record at the start of b. With out nil it only
// checks the framing. It returns the bytes after the record.
func parseRecord(b []byte, out *Record) ([]byte, error) {
	length, b, ok := readVarint(b)
	if !ok {
		return b, fmt.Errorf("%w: bad record length varint", ErrMalformed)
	}
	if length < minRecordSize-1 || int(length) > len(b) {
		return b, fmt.Errorf("%w: record length %d with %d bytes left", ErrMalformed, length, len(b))
	}
	body, rest := b[:length], b[length:]
	attrs := int8(body[0])
	body = body[1:]
	tsDelta, body, ok := readVarlong(body)
	if !ok {
		return rest, fmt.Errorf("%w: bad record timestamp delta", ErrMalformed)
	}
	offDelta, body, ok := readVarint(body)
	if !ok {
		return rest, fmt.Errorf("%w: bad record offset delta", ErrMalformed)
	}
	key, body, ok := readVarBytes(body, true)
	if !ok {
		return rest, fmt.Errorf("%w: bad record key", ErrMalformed)
	}
	val, body, ok := readVarBytes(body, true)
	if !ok {
		return rest, fmt.Errorf("%w: bad record value", ErrMalformed)
	}
	nh, body, ok := readVarint(body)
	if !ok || nh < 0 || int(nh) > len(body)/2 {
		return rest, fmt.Errorf("%w: bad record header count", ErrMalformed)
	}
	var hdrs []RecordHeader
	if out != nil && nh > 0 {
		hdrs = make([]RecordHeader, 0, nh)
	}
	for range nh {
		var hk, hv []byte
		hk, body, ok = readVarBytes(body, false)
		if !ok {
			return rest, fmt.Errorf("%w: bad record header key", ErrMalformed)
		}
		hv, body, ok = readVarBytes(body, true)
		if !ok {
			return rest, fmt.Errorf("%w: bad record header value", ErrMalformed)
		}
		if out != nil {
			hdrs = append(hdrs, RecordHeader{Key: string(hk), Value: hv})
		}
	}
	if len(body) != 0 {
		return rest, fmt.Errorf("%w: record length %d leaves %d unread bytes", ErrMalformed, length, len(body))
	}
	if out != nil {
		*out = Record{Attributes: attrs, TimestampDelta: tsDelta, OffsetDelta: offDelta, Key: key, Value: val, Headers: hdrs}
	}
	return rest, nil
}

// checkRecords checks that body holds exactly n well-framed records and
// returns their largest timestamp delta (recordsFramed).
func checkRecords(body []byte, n int32) (int64, *BatchError) {
	if maxDelta, ok := recordsFramed(body, n); ok {
		return maxDelta, nil
	}
	return 0, walkRecords(body, n)
}

// walkRecords is checkRecords with parseRecord, which says what is wrong.
func walkRecords(body []byte, n int32) *BatchError {
	for i := range n {
		if len(body) == 0 {
			return batchErr(kerr.InvalidRecord, "batch declares %d records but holds %d", n, i)
		}
		var err error
		body, err = parseRecord(body, nil)
		if err != nil {
			// Kafka 4.4: InvalidRecordException ("Found invalid
			// record structure", "Invalid record size: ...").
			return batchErr(kerr.InvalidRecord, "record %d: %v", i, err)
		}
	}
	if len(body) != 0 {
		return batchErr(kerr.InvalidRecord, "batch declares %d records but %d bytes remain after them", n, len(body))
	}
	return nil
}

// batchBounds parses b's header and returns it with the batch's own bytes.
func batchBounds(b []byte) (BatchHeader, []byte, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return h, nil, err
	}
	if h.Magic != 2 {
		return h, nil, fmt.Errorf("%w: batch magic %d", ErrMalformed, h.Magic)
	}
	if h.BatchLength < minBatchLength || h.TotalSize() > len(b) {
		return h, nil, fmt.Errorf("%w: batch length %d with %d bytes", ErrMalformed, h.BatchLength, len(b))
	}
	return h, b[:h.TotalSize()], nil
}

// DecodeRecords decodes the batch at the start of b, decompressing its
// records as needed. It does not check the CRC (see ValidateProduce and
// SplitBatches). Keys and values alias b (or the decompressed buffer).
func DecodeRecords(b []byte) (BatchHeader, []Record, error) {
	h, batch, err := batchBounds(b)
	if err != nil {
		return h, nil, err
	}
	body := batch[BatchHeaderSize:]
	if c := h.Compression(); c != CompressionNone {
		body, err = Decompress(c, body)
		if err != nil {
			return h, nil, err
		}
	}
	if h.NumRecords < 0 {
		return h, nil, fmt.Errorf("%w: batch declares %d records", ErrMalformed, h.NumRecords)
	}
	if int(h.NumRecords) > len(body)/minRecordSize {
		return h, nil, fmt.Errorf("%w: batch declares %d records in %d bytes", ErrMalformed, h.NumRecords, len(body))
	}
	recs := make([]Record, h.NumRecords)
	for i := range recs {
		body, err = parseRecord(body, &recs[i])
		if err != nil {
			return h, nil, fmt.Errorf("record %d: %w", i, err)
		}
	}
	if len(body) != 0 {
		return h, nil, fmt.Errorf("%w: %d bytes after the batch's %d records", ErrMalformed, len(body), h.NumRecords)
	}
	return h, recs, nil
}

// BatchSpec describes a batch for EncodeBatch.
type BatchSpec struct {
	BaseOffset    int64
	BaseTimestamp int64
	// MaxTimestamp is the batch max timestamp; when 0 (and LogAppendTime is
	// not set) EncodeBatch computes it from the records.
	MaxTimestamp  int64
	Compression   Compression
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32

	Transactional, Control, LogAppendTime bool

	PartitionLeaderEpoch int32
	// Records are encoded with their own OffsetDelta, except that when every
	// record has OffsetDelta 0 they are numbered 0, 1, 2...
	Records []Record
}

// appendRecord appends r in the record encoding (varint length first).
func appendRecord(dst []byte, r *Record) []byte {
	size := 1 + varintLen(r.TimestampDelta) + varintLen(int64(r.OffsetDelta)) +
		bytesLen(r.Key) + bytesLen(r.Value) + varintLen(int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		size += varintLen(int64(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	dst = binary.AppendVarint(dst, int64(size))
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendVarBytes(dst, r.Key)
	dst = appendVarBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendVarBytes(dst, h.Value)
	}
	return dst
}

func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func bytesLen(b []byte) int {
	if b == nil {
		return 1
	}
	return varintLen(int64(len(b))) + len(b)
}

func appendVarBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, 1) // zigzag(-1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// EncodeBatch builds a complete record batch v2 from s, compressing the
// records section with s.Compression, and sets its CRC. Setting ProducerID
// to -1 (no producer) is the caller's job.
func EncodeBatch(s BatchSpec) ([]byte, error) {
	if s.Compression < CompressionNone || s.Compression > CompressionZstd {
		return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, int8(s.Compression))
	}
	number := len(s.Records) > 1
	for i := range s.Records {
		if s.Records[i].OffsetDelta != 0 {
			number = false
			break
		}
	}
	var body []byte
	lastDelta := int32(-1)
	maxTS := s.BaseTimestamp
	for i := range s.Records {
		r := &s.Records[i]
		if number {
			rr := *r
			rr.OffsetDelta = int32(i)
			r = &rr
		}
		body = appendRecord(body, r)
		lastDelta = r.OffsetDelta
		if ts := s.BaseTimestamp + r.TimestampDelta; ts > maxTS {
			maxTS = ts
		}
	}
	if s.MaxTimestamp != 0 || s.LogAppendTime {
		maxTS = s.MaxTimestamp
	}
	attrs := int16(s.Compression)
	if s.LogAppendTime {
		attrs |= attrLogAppendTime
	}
	if s.Transactional {
		attrs |= attrTransactional
	}
	if s.Control {
		attrs |= attrControl
	}
	h := BatchHeader{
		BaseOffset:           s.BaseOffset,
		PartitionLeaderEpoch: s.PartitionLeaderEpoch,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      lastDelta,
		BaseTimestamp:        s.BaseTimestamp,
		MaxTimestamp:         maxTS,
		ProducerID:           s.ProducerID,
		ProducerEpoch:        s.ProducerEpoch,
		BaseSequence:         s.BaseSequence,
		NumRecords:           int32(len(s.Records)),
	}
	return assembleBatch(h, body)
}

// assembleBatch compresses the raw records section with h's codec and
// returns the batch with BatchLength and CRC set.
func assembleBatch(h BatchHeader, raw []byte) ([]byte, error) {
	body, err := Compress(h.Compression(), raw)
	if err != nil {
		return nil, err
	}
	if len(body) > math.MaxInt32-minBatchLength {
		return nil, fmt.Errorf("%w: records section of %d bytes", ErrTooLarge, len(body))
	}
	h.BatchLength = int32(minBatchLength + len(body))
	out := make([]byte, 0, BatchHeaderSize+len(body))
	out = appendBatchHeader(out, h)
	out = append(out, body...)
	RecomputeCRC(out)
	return out, nil
}
