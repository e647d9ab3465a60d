package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// This file holds the few record-batch helpers storage needs. They mirror
// package wire's API (ParseBatchHeader, SetBaseOffset, ...) and will be
// replaced by it once wire lands; they do no validation beyond what recovery
// and reads need.

// batchHeaderSize is the size of a v2 record batch header (wire.BatchHeaderSize).
const batchHeaderSize = 61

// batchLengthOffset is the number of bytes before the records of a batch that
// its BatchLength does not count (base offset + batch length).
const batchLengthOffset = 12

const (
	crcStart            = 21
	timestampTypeBit    = 0x08
	compressionCodecMsk = 0x07
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type batchHeader struct {
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

func (h batchHeader) totalSize() int    { return batchLengthOffset + int(h.BatchLength) }
func (h batchHeader) lastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// parseBatchHeader decodes the fixed header of a v2 batch and checks that its
// length and magic are plausible (it does not check the CRC).
func parseBatchHeader(b []byte) (batchHeader, error) {
	if len(b) < batchHeaderSize {
		return batchHeader{}, fmt.Errorf("%w: short batch header (%d bytes)", ErrCorrupt, len(b))
	}
	h := batchHeader{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[0:])),
		BatchLength:          int32(binary.BigEndian.Uint32(b[8:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[12:])),
		Magic:                int8(b[16]),
		CRC:                  binary.BigEndian.Uint32(b[17:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[21:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[23:])),
		BaseTimestamp:        int64(binary.BigEndian.Uint64(b[27:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[35:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[43:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[51:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[53:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[57:])),
	}
	if h.Magic != 2 {
		return h, fmt.Errorf("%w: batch magic %d", ErrCorrupt, h.Magic)
	}
	if h.BatchLength < batchHeaderSize-batchLengthOffset {
		return h, fmt.Errorf("%w: batch length %d", ErrCorrupt, h.BatchLength)
	}
	if h.LastOffsetDelta < 0 || h.BaseOffset < 0 {
		return h, fmt.Errorf("%w: batch offsets %d+%d", ErrCorrupt, h.BaseOffset, h.LastOffsetDelta)
	}
	return h, nil
}

func batchCRC(b []byte) uint32 { return crc32.Checksum(b[crcStart:], castagnoli) }

func setBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b[0:], uint64(off)) }

func setLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[21:]) | timestampTypeBit
	binary.BigEndian.PutUint16(b[21:], attrs)
	binary.BigEndian.PutUint64(b[35:], uint64(ts))
	binary.BigEndian.PutUint32(b[17:], batchCRC(b))
}

// recordPoint is the part of a record storage looks at.
type recordPoint struct {
	TimestampDelta int64
	OffsetDelta    int32
}

// decodeRecordPoints returns the timestamp and offset deltas of the records of
// an uncompressed batch. For compressed batches it returns ok=false and the
// caller falls back to batch-level timestamps.
func decodeRecordPoints(batch []byte, h batchHeader) (points []recordPoint, ok bool) {
	if h.Attributes&compressionCodecMsk != 0 || h.Attributes&timestampTypeBit != 0 {
		return nil, false
	}
	b := batch[batchHeaderSize:h.totalSize()]
	for len(b) > 0 {
		length, n := binary.Varint(b)
		if n <= 0 || length < 0 || int64(len(b)-n) < length {
			return nil, false
		}
		rec := b[n : n+int(length)]
		b = b[n+int(length):]
		if len(rec) < 1 {
			return nil, false
		}
		rec = rec[1:] // attributes
		tsDelta, n := binary.Varint(rec)
		if n <= 0 {
			return nil, false
		}
		offDelta, n2 := binary.Varint(rec[n:])
		if n2 <= 0 {
			return nil, false
		}
		points = append(points, recordPoint{TimestampDelta: tsDelta, OffsetDelta: int32(offDelta)})
	}
	return points, true
}
