package storage

import "fmt"

// PadSlice extends s, a range of whole batches from ReadSlice, into the
// batch that follows it in the same segment file so that s holds limit
// bytes, when that batch starts below maxOffset and does not fit whole. It
// returns the bytes added (0 when it changed nothing).
//
// This is how Kafka fills a partition's share of a consumer fetch: its
// segment read returns min(limit, bytes below the high watermark), ending
// inside a batch that every client drops and fetches again next time. So
// Kafka's responses keep one size while samsa's, ending at whole batches,
// varied by up to a batch per partition; a client that allocates a buffer
// per response (franz-go, the Java client) then could not reuse the memory
// the previous response freed, and paid page faults and zeroing for fresh
// memory on every response: 0.81-0.91 CPU seconds per GB consumed against
// 0.61-0.69 with the ranges padded (bench/README.md, issue 15). s.LastOffset
// stays the last offset of the last whole batch.
func (l *Log) PadSlice(s *FileSlice, limit, maxOffset int64) int64 {
	if s.seg == nil || s.Length <= 0 || s.Length >= limit {
		return 0
	}
	pos := s.Offset + s.Length
	l.mu.Lock()
	size := s.seg.size
	l.mu.Unlock()
	if pos+batchHeaderSize > size {
		return 0
	}
	hs := newHeaderScanner(s.seg)
	defer hs.release()
	h, err := hs.header(pos, size)
	if err != nil || h.BaseOffset >= maxOffset || s.Length+int64(h.TotalSize()) <= limit {
		// Damaged, not readable yet, or it would fit whole: ReadSlice
		// stopped before it for another reason than the limit.
		return 0
	}
	add := limit - s.Length
	s.Length = limit
	s.dropCache() // it held the whole batches only
	return add
}

// Bytes returns a copy of the range's bytes, for a caller that cannot
// send the file range itself.
func (s *FileSlice) Bytes() ([]byte, error) {
	if c := s.Cached(); c != nil {
		return append([]byte(nil), c...), nil
	}
	b := make([]byte, s.Length)
	if _, err := s.File.ReadAt(b, s.Offset); err != nil {
		return nil, fmt.Errorf("storage: read range: %w", err)
	}
	return b, nil
}
