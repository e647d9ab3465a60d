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
