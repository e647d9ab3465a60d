package shards

import (
	"fmt"

	"github.com/samsa-broker/samsa/wire"
)

// loadReadBytes is how much one Read asks for while a shard loads.
const loadReadBytes = 1 << 20

// Reader is the part of a coordinator partition's log a load reads.
type Reader interface {
	// Read returns whole batches from offset on, at most maxBytes unless
	// minOneBatch, none at or past maxOffset.
	Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error)
	LogStartOffset() int64
	LogEndOffset() int64
}

// Replay reads a shard's partition from its log start offset to its end
// offset as of the call and hands each read to apply, which applies the
// whole batches of data (read at offset) and returns the offset after the
// last one. It returns that end offset. A read that comes back empty ends
// the replay early (the log was truncated meanwhile); a read apply makes
// no progress on is an error. Its errors wrap errLoad (the coordinator's
// load error) and name the partition.
func Replay(log Reader, partition int32, errLoad error, apply func(data []byte, offset int64) (next int64, err error)) (end int64, err error) {
	offset, end := log.LogStartOffset(), log.LogEndOffset()
	for offset < end {
		data, err := log.Read(offset, loadReadBytes, end, true)
		if err != nil {
			return end, fmt.Errorf("%w: reading partition %d at %d: %w", errLoad, partition, offset, err)
		}
		next, err := apply(data, offset)
		if err != nil {
			return end, fmt.Errorf("%w: partition %d: %w", errLoad, partition, err)
		}
		if next <= offset {
			if len(data) == 0 {
				break // the log ended early (truncated while we read)
			}
			return end, fmt.Errorf("%w: partition %d: no progress at offset %d", errLoad, partition, offset)
		}
		offset = next
	}
	return end, nil
}

// WalkBatches hands fn each whole record batch at the start of data (read
// at offset from), with its parsed header, and returns the offset after
// the last one (from when data holds no whole batch). A partial batch at
// the end of data is left for the next read. A header that does not parse
// ends the walk with its error, and the offset of the batch it heads.
func WalkBatches(data []byte, from int64, fn func(h wire.BatchHeader, batch []byte)) (next int64, err error) {
	next = from
	for len(data) >= wire.BatchHeaderSize {
		h, err := wire.ParseBatchHeader(data)
		if err != nil {
			return next, err
		}
		size := h.TotalSize()
		if size <= 0 || size > len(data) {
			break // a partial batch at the end of the read
		}
		fn(h, data[:size])
		next = h.LastOffset() + 1
		data = data[size:]
	}
	return next, nil
}

// LoadFieldMax is the most bytes of a record's key or value a load reads
// (the rest of a longer one is read past, never held): far more than any
// record a coordinator writes (its batches are at most max.message.bytes,
// 1 MiB by default; the group coordinator raises the limit to its
// max.message.bytes when that is larger). A client whose client id is
// "__admin_client" may produce to the internal topics, as in Kafka, so a
// batch of a few KB there may hold a record of hundreds of MB: such a
// record costs a load this much, not its size.
//
// A cut key or value is decoded from its first LoadFieldMax bytes. The
// records' decoders (kmsg's, as Kafka's) read their fields and ignore the
// bytes after them, so when the fields fit, the record decodes as it would
// whole (512 MiB of zeros after a valid offset commit is that commit, in
// Kafka 4.4 too); when they do not, the record does not decode and is
// skipped (CutErr), where Kafka, which reads each record whole, loads it
// if its heap holds it.
const LoadFieldMax = 8 << 20

// Owned returns r's key and value (nil when null) as a load may keep
// them: the decoders alias what they decode (kmsg's bytes fields). Those
// of an uncompressed batch (h its header) alias the batch, the log's read
// that the load does not reuse, and are returned as they are; those of a
// compressed one are valid during StreamRecords' call only and are copied,
// in one allocation.
func Owned(h wire.BatchHeader, r *wire.StreamedRecord) (key, value []byte) {
	if h.Compression() == wire.CompressionNone {
		return r.Key, r.Value
	}
	buf := make([]byte, len(r.Key)+len(r.Value))
	if r.Key != nil {
		key = buf[:len(r.Key):len(r.Key)]
		copy(key, r.Key)
	}
	if r.Value != nil {
		value = buf[len(r.Key):]
		copy(value, r.Value)
	}
	return key, value
}

// CutErr returns err, the error of decoding record r, saying so when r's
// key or value was cut at limit bytes.
func CutErr(r *wire.StreamedRecord, limit int, err error) error {
	if err == nil || !r.Cut() {
		return err
	}
	return fmt.Errorf("%w (a key of %d bytes and a value of %d, read up to %d bytes each)", err, r.KeyLen, r.ValueLen, limit)
}
