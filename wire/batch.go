package wire

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// BatchHeaderSize is the size of a record batch v2 (magic 2) header.
const BatchHeaderSize = 61

// Byte offsets of the record batch v2 header fields.
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offNumRecords      = 57

	// logOverhead is the base offset and batch length, which BatchLength does not count.
	logOverhead = 12
	// minBatchLength is the smallest valid BatchLength (a header with no records).
	minBatchLength = BatchHeaderSize - logOverhead
)

// Attribute bits of a record batch.
const (
	attrCompressionMask = 0x07
	attrLogAppendTime   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
)

// Compression is the codec of a record batch (attributes bits 0-2).
type Compression int8

// The compression codecs Kafka defines.
const (
	CompressionNone   Compression = 0
	CompressionGzip   Compression = 1
	CompressionSnappy Compression = 2
	CompressionLZ4    Compression = 3
	CompressionZstd   Compression = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the decoded 61-byte header of a record batch v2.
type BatchHeader struct {
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// ParseBatchHeader decodes the header at the start of b, which must hold at
// least BatchHeaderSize bytes. It checks nothing else: callers validate the
// magic, length and CRC (see ValidateProduce and SplitBatches).
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: batch header needs %d bytes, have %d", ErrMalformed, BatchHeaderSize, len(b))
	}
	be := binary.BigEndian
	return BatchHeader{
		BaseOffset:           int64(be.Uint64(b[offBaseOffset:])),
		BatchLength:          int32(be.Uint32(b[offBatchLength:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[offLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  be.Uint32(b[offCRC:]),
		Attributes:           int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:        int64(be.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[offBaseSequence:])),
		NumRecords:           int32(be.Uint32(b[offNumRecords:])),
	}, nil
}

// appendBatchHeader appends h's 61 bytes to dst as they are (no CRC computation).
func appendBatchHeader(dst []byte, h BatchHeader) []byte {
	be := binary.BigEndian
	dst = be.AppendUint64(dst, uint64(h.BaseOffset))
	dst = be.AppendUint32(dst, uint32(h.BatchLength))
	dst = be.AppendUint32(dst, uint32(h.PartitionLeaderEpoch))
	dst = append(dst, byte(h.Magic))
	dst = be.AppendUint32(dst, h.CRC)
	dst = be.AppendUint16(dst, uint16(h.Attributes))
	dst = be.AppendUint32(dst, uint32(h.LastOffsetDelta))
	dst = be.AppendUint64(dst, uint64(h.BaseTimestamp))
	dst = be.AppendUint64(dst, uint64(h.MaxTimestamp))
	dst = be.AppendUint64(dst, uint64(h.ProducerID))
	dst = be.AppendUint16(dst, uint16(h.ProducerEpoch))
	dst = be.AppendUint32(dst, uint32(h.BaseSequence))
	dst = be.AppendUint32(dst, uint32(h.NumRecords))
	return dst
}

// Compression returns the batch codec (attributes bits 0-2).
func (h BatchHeader) Compression() Compression {
	return Compression(h.Attributes & attrCompressionMask)
}

// IsTransactional reports attributes bit 4.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&attrTransactional != 0 }

// IsControl reports attributes bit 5 (a control batch: commit or abort marker).
func (h BatchHeader) IsControl() bool { return h.Attributes&attrControl != 0 }

// IsLogAppendTime reports attributes bit 3 (timestamps are the broker's append time).
func (h BatchHeader) IsLogAppendTime() bool { return h.Attributes&attrLogAppendTime != 0 }

// TotalSize is the size of the whole batch on the wire: 12 + BatchLength.
func (h BatchHeader) TotalSize() int { return logOverhead + int(h.BatchLength) }

// LastOffset is BaseOffset + LastOffsetDelta.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// BatchError is a rejected produce batch: Code is the Kafka error code (a
// kerr code) to return for the partition.
type BatchError struct {
	Code   int16
	Reason string
}

// Error returns the Kafka error name and the reason.
func (e *BatchError) Error() string {
	return fmt.Sprintf("wire: batch rejected: %s: %s", kerr.ErrorForCode(e.Code), e.Reason)
}

// Unwrap returns the kerr error of Code, so errors.Is(err, kerr.CorruptMessage) works.
func (e *BatchError) Unwrap() error { return kerr.ErrorForCode(e.Code) }

func batchErr(code *kerr.Error, format string, args ...any) *BatchError {
	return &BatchError{Code: code.Code, Reason: fmt.Sprintf(format, args...)}
}

// ValidateOptions configures ValidateProduce.
type ValidateOptions struct {
	// MaxBatchBytes is the largest accepted batch (max.message.bytes); 0 means no limit.
	MaxBatchBytes int32
	// ProduceVersion is the version of the produce request carrying the records.
	ProduceVersion int16
	// DeepValidate decompresses compressed batches and checks their records.
	DeepValidate bool
	// Stats, when not nil, receives what the walk of the (last) batch's
	// records learns besides their framing (compressed batches: only with
	// DeepValidate).
	Stats *RecordStats
}

// RecordStats is what ValidateProduce learns of a batch's records.
type RecordStats struct {
	// MaxTimestamp is the largest record timestamp, -1 when none is
	// larger (Kafka's NO_TIMESTAMP start): what Kafka 4.4 writes into
	// the batch's max timestamp whatever the producer wrote there. A
	// LogAppendTime batch's records all have its max timestamp.
	MaxTimestamp int64
	// OffsetsInOrder reports that record i's offset delta is i for every
	// record (always true of an uncompressed batch: Kafka keeps those
	// deltas as sent). Kafka 4.4 refuses a compressed batch it keeps in
	// its codec whose deltas are not in order with UNKNOWN_SERVER_ERROR
	// (its rebuild reads records whose keys and values it skipped) and
	// renumbers one it rebuilds in another codec (Recompress).
	OffsetsInOrder bool
}

// recordStats gathers RecordStats over a walk.
type recordStats struct {
	maxDelta int64 // the largest timestamp delta; math.MinInt64 before any
	inOrder  bool
}

func newRecordStats() recordStats { return recordStats{maxDelta: math.MinInt64, inOrder: true} }

func (st *recordStats) add(i int32, tsDelta int64, offDelta int32) {
	st.maxDelta = max(st.maxDelta, tsDelta)
	if offDelta != i {
		st.inOrder = false
	}
}

// result is the RecordStats of the batch with header h.
func (st *recordStats) result(h BatchHeader) RecordStats {
	out := RecordStats{MaxTimestamp: -1, OffsetsInOrder: st.inOrder}
	switch {
	case h.IsLogAppendTime():
		out.MaxTimestamp = max(h.MaxTimestamp, -1)
	case st.maxDelta != math.MinInt64:
		out.MaxTimestamp = max(h.BaseTimestamp+st.maxDelta, -1)
	}
	return out
}

// ValidateProduce checks the records field of one produce partition as
// Apache Kafka's broker does and returns the headers of its batches, in
// order. The error, when not nil, is a *BatchError carrying the Kafka error
// code for the partition.
//
// The checks, in order: the field is not empty (INVALID_RECORD); each batch
// has magic 2 (INVALID_RECORD); its length is consistent with the buffer
// (CORRUPT_MESSAGE); its base offset is 0 (INVALID_RECORD, as Kafka's
// analyzeAndValidateRecords); for produce v3+ there is exactly one batch
// (INVALID_RECORD; older versions may carry several); its size is at most
// MaxBatchBytes (MESSAGE_TOO_LARGE); the CRC-32C matches (CORRUPT_MESSAGE);
// the codec is known (CORRUPT_MESSAGE); zstd needs produce v7+
// (UNSUPPORTED_COMPRESSION_TYPE); the control bit is clear
// (INVALID_RECORD); NumRecords > 0 and equals LastOffsetDelta+1
// (INVALID_RECORD). Uncompressed records are then walked to check their
// framing (CORRUPT_MESSAGE) and count (INVALID_RECORD). With
// opts.DeepValidate, compressed records are decompressed (a stream that
// does not decompress: UNKNOWN_SERVER_ERROR, as Kafka 4.4) and walked by
// Kafka's rules for a batch kept as it came (checkCompressedRecords:
// INVALID_RECORD).
func ValidateProduce(records []byte, opts ValidateOptions) ([]BatchHeader, error) {
	if len(records) == 0 {
		return nil, batchErr(kerr.InvalidRecord, "produce partition has no record batch")
	}
	var hdrs []BatchHeader
	for len(records) > 0 {
		if len(hdrs) > 0 && opts.ProduceVersion >= 3 {
			if _, _, ok := looksLikeBatch(records); ok {
				return nil, batchErr(kerr.InvalidRecord, "produce v3+ must contain exactly one record batch")
			}
			return nil, batchErr(kerr.CorruptMessage, "%d trailing bytes after the record batch", len(records))
		}
		h, batch, err := validateBatch(records, opts)
		if err != nil {
			return nil, err
		}
		hdrs = append(hdrs, h)
		records = records[len(batch):]
	}
	return hdrs, nil
}

// looksLikeBatch reports whether b starts with a complete magic-2 batch
// (by header and length only).
func looksLikeBatch(b []byte) (BatchHeader, []byte, bool) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, nil, false
	}
	h, _ := ParseBatchHeader(b)
	if h.Magic != 2 || h.BatchLength < minBatchLength || h.TotalSize() > len(b) {
		return h, nil, false
	}
	return h, b[:h.TotalSize()], true
}

func validateBatch(b []byte, opts ValidateOptions) (BatchHeader, []byte, *BatchError) {
	if len(b) > offMagic && b[offMagic] != 2 {
		return BatchHeader{}, nil, batchErr(kerr.InvalidRecord, "record batch magic %d, only magic 2 is accepted", int8(b[offMagic]))
	}
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, nil, batchErr(kerr.CorruptMessage, "record batch of %d bytes is shorter than its %d-byte header", len(b), BatchHeaderSize)
	}
	h, _ := ParseBatchHeader(b)
	if h.BatchLength < minBatchLength {
		return h, nil, batchErr(kerr.CorruptMessage, "record batch length %d is below the minimum %d", h.BatchLength, minBatchLength)
	}
	if h.TotalSize() > len(b) {
		return h, nil, batchErr(kerr.CorruptMessage, "record batch of %d bytes truncated to %d", h.TotalSize(), len(b))
	}
	if h.BaseOffset != 0 {
		// Kafka 4.4's UnifiedLog.analyzeAndValidateRecords, before
		// the size and CRC checks.
		return h, nil, batchErr(kerr.InvalidRecord, "The baseOffset of the record batch in the append should be 0, but it is %d", h.BaseOffset)
	}
	if opts.MaxBatchBytes > 0 && h.TotalSize() > int(opts.MaxBatchBytes) {
		return h, nil, batchErr(kerr.MessageTooLarge, "record batch of %d bytes exceeds the maximum %d", h.TotalSize(), opts.MaxBatchBytes)
	}
	batch := b[:h.TotalSize()]
	if crc := crc32.Checksum(batch[offAttributes:], castagnoli); crc != h.CRC {
		return h, nil, batchErr(kerr.CorruptMessage, "record batch CRC %08x, computed %08x", h.CRC, crc)
	}
	c := h.Compression()
	if c > CompressionZstd {
		return h, nil, batchErr(kerr.CorruptMessage, "unknown compression codec %d", int8(c))
	}
	if c == CompressionZstd && opts.ProduceVersion < 7 {
		return h, nil, batchErr(kerr.UnsupportedCompressionType, "zstd needs produce v7+, request is v%d", opts.ProduceVersion)
	}
	if h.IsControl() {
		return h, nil, batchErr(kerr.InvalidRecord, "clients may not write control batches")
	}
	if h.NumRecords <= 0 {
		return h, nil, batchErr(kerr.InvalidRecord, "record batch declares %d records", h.NumRecords)
	}
	if int64(h.LastOffsetDelta)+1 != int64(h.NumRecords) {
		return h, nil, batchErr(kerr.InvalidRecord, "record batch offset range %d does not match its %d records", int64(h.LastOffsetDelta)+1, h.NumRecords)
	}
	if c == CompressionNone || opts.DeepValidate {
		body := batch[BatchHeaderSize:]
		var st *recordStats
		if opts.Stats != nil {
			s := newRecordStats()
			st = &s
		}
		if c != CompressionNone {
			// At most inMemoryLimit bytes decompressed at once;
			// larger streams are walked through a small window
			// (stream.go).
			if berr := checkCompressed(c, body, h.NumRecords, st); berr != nil {
				return h, nil, berr
			}
		} else if maxDelta, err := checkRecords(body, h.NumRecords); err != nil {
			return h, nil, err
		} else if st != nil {
			st.maxDelta = maxDelta
		}
		if st != nil {
			*opts.Stats = st.result(h)
		}
	}
	return h, batch, nil
}

// SetBaseOffset writes base into the batch's base offset (bytes 0-7, not
// covered by the CRC).
func SetBaseOffset(batch []byte, base int64) {
	binary.BigEndian.PutUint64(batch[offBaseOffset:], uint64(base))
}

// SetPartitionLeaderEpoch writes epoch into the batch's partition leader
// epoch (bytes 12-15, not covered by the CRC).
func SetPartitionLeaderEpoch(batch []byte, epoch int32) {
	binary.BigEndian.PutUint32(batch[offLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime marks the batch's timestamps as log append time (bit 3),
// sets MaxTimestamp to ts, as Kafka does, and recomputes the CRC.
func SetLogAppendTime(batch []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(batch[offAttributes:])
	binary.BigEndian.PutUint16(batch[offAttributes:], attrs|attrLogAppendTime)
	binary.BigEndian.PutUint64(batch[offMaxTimestamp:], uint64(ts))
	RecomputeCRC(batch)
}

// SetMaxTimestamp writes ts into the batch's max timestamp with timestamp
// type CreateTime, as Kafka's setMaxTimestamp(CREATE_TIME, ts) does for a
// batch it keeps, and recomputes the CRC.
func SetMaxTimestamp(batch []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(batch[offAttributes:])
	binary.BigEndian.PutUint16(batch[offAttributes:], attrs&^attrLogAppendTime)
	binary.BigEndian.PutUint64(batch[offMaxTimestamp:], uint64(ts))
	RecomputeCRC(batch)
}

// RecomputeCRC sets the batch CRC to the CRC-32C of the bytes from the
// attributes to the end of the batch (by its BatchLength, or the slice end
// when the slice is shorter).
func RecomputeCRC(batch []byte) {
	end := len(batch)
	if n := logOverhead + int(int32(binary.BigEndian.Uint32(batch[offBatchLength:]))); n >= BatchHeaderSize && n < end {
		end = n
	}
	binary.BigEndian.PutUint32(batch[offCRC:], crc32.Checksum(batch[offAttributes:end], castagnoli))
}

// SplitBatches calls fn for each batch of the concatenated batches in b, in
// order; batch is capped to its own bytes. It stops at the first truncated
// or corrupt batch (short header, magic other than 2, bad length or CRC)
// with an error wrapping ErrMalformed, or at the first error fn returns
// (returned as is). validBytes is the length of the prefix of b made of
// whole, good batches that fn accepted.
func SplitBatches(b []byte, fn func(batch []byte, h BatchHeader) error) (validBytes int, err error) {
	for validBytes < len(b) {
		rest := b[validBytes:]
		if len(rest) < BatchHeaderSize {
			return validBytes, fmt.Errorf("%w: truncated batch header at byte %d (%d bytes left)", ErrMalformed, validBytes, len(rest))
		}
		h, _ := ParseBatchHeader(rest)
		switch {
		case h.Magic != 2:
			return validBytes, fmt.Errorf("%w: batch at byte %d has magic %d", ErrMalformed, validBytes, h.Magic)
		case h.BatchLength < minBatchLength:
			return validBytes, fmt.Errorf("%w: batch at byte %d has length %d", ErrMalformed, validBytes, h.BatchLength)
		case h.TotalSize() > len(rest):
			return validBytes, fmt.Errorf("%w: batch at byte %d of %d bytes truncated to %d", ErrMalformed, validBytes, h.TotalSize(), len(rest))
		}
		batch := rest[:h.TotalSize():h.TotalSize()]
		if crc := crc32.Checksum(batch[offAttributes:], castagnoli); crc != h.CRC {
			return validBytes, fmt.Errorf("%w: batch at byte %d has CRC %08x, computed %08x", ErrMalformed, validBytes, h.CRC, crc)
		}
		if err := fn(batch, h); err != nil {
			return validBytes, err
		}
		validBytes += len(batch)
	}
	return validBytes, nil
}
