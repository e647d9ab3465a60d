package storage

import (
	"fmt"
	"hash/crc32"

	"github.com/samsa-broker/samsa/wire"
)

// This file adapts package wire's record-batch helpers to what storage
// needs: header parsing with the plausibility checks recovery relies on,
// and per-record timestamps for OffsetForTimestamp.

// batchHeaderSize is the size of a v2 record batch header.
const batchHeaderSize = wire.BatchHeaderSize

// batchLengthOffset is the number of bytes before the records of a batch that
// its BatchLength does not count (base offset + batch length).
const batchLengthOffset = 12

const timestampTypeBit = 0x08

type batchHeader = wire.BatchHeader

// parseBatchHeader decodes the fixed header of a v2 batch and checks that its
// length, magic and offsets are plausible (it does not check the CRC).
func parseBatchHeader(b []byte) (batchHeader, error) {
	h, err := wire.ParseBatchHeader(b)
	if err != nil {
		return h, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if h.Magic != 2 {
		return h, fmt.Errorf("%w: batch magic %d", ErrCorrupt, h.Magic)
	}
	if h.BatchLength < batchHeaderSize-batchLengthOffset {
		return h, fmt.Errorf("%w: batch length %d", ErrCorrupt, h.BatchLength)
	}
	if h.LastOffsetDelta < 0 || h.BaseOffset < 0 || h.LastOffset() < h.BaseOffset {
		return h, fmt.Errorf("%w: batch offsets %d+%d", ErrCorrupt, h.BaseOffset, h.LastOffsetDelta)
	}
	return h, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchCRC computes the CRC-32C of a whole batch (bytes [21:], attributes to end).
func batchCRC(b []byte) uint32 { return crc32.Checksum(b[21:], castagnoli) }

func setBaseOffset(b []byte, off int64) { wire.SetBaseOffset(b, off) }

func setLogAppendTime(b []byte, ts int64) { wire.SetLogAppendTime(b, ts) }

// firstRecordPoint returns the offset and timestamp of the first record
// of batch (header h) for which match is true, reading the records
// streaming (wire.VisitRecordsUntil): a compressed batch is decompressed
// only up to that record, through a small window, never whole (a batch of
// a few KB may hold records of hundreds of MB). ok is false if the records
// do not decode, or for LogAppendTime batches, whose records all carry the
// batch's max timestamp.
func firstRecordPoint(batch []byte, h batchHeader, match func(offset, ts int64) bool) (offset, ts int64, found, ok bool) {
	if h.Attributes&timestampTypeBit != 0 {
		return 0, 0, false, false
	}
	err := wire.VisitRecordsUntil(batch, func(_ int32, r wire.RecordInfo) bool {
		off, rts := h.BaseOffset+int64(r.OffsetDelta), h.BaseTimestamp+r.TimestampDelta
		if match(off, rts) {
			offset, ts, found = off, rts, true
			return false
		}
		return true
	})
	if err != nil {
		return 0, 0, false, false
	}
	return offset, ts, found, true
}
