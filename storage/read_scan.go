package storage

import (
	"fmt"
	"sort"
	"sync"
)

// Walking batch headers in a segment file (to find the batch holding an
// offset, or the end of the whole batches a fetch may take) used to cost one
// pread of 61 bytes per batch: a 1 MiB fetch of 1 KiB batches made a
// thousand system calls before sendfile moved a byte. headerScanner reads
// the file a chunk (scanChunk) at a time and parses every header the chunk
// holds, and ReadSlice first jumps with the offset index to the last
// indexed batch that fits, so it walks at most index.interval.bytes of
// headers, in the part of a segment this process appended (whose batches
// were checked on their way in; data from disk is walked so that damage is
// found before it is served).

// scanChunk is how much of the file one headerScanner read covers: more
// than index.interval.bytes (4 KiB by default) and a few small batches, so
// that the read from the index entry before a consumer's position at the
// log end covers the batches it fetches too (FileSlice.Cached).
const scanChunk = 16 << 10

var scanBufs = sync.Pool{New: func() any { b := make([]byte, scanChunk); return &b }}

// headerScanner reads batch headers of one segment through a chunk buffer.
// Release it when done.
type headerScanner struct {
	seg *segment
	bp  *[]byte
	// buf holds the file bytes [at, at+len(buf)).
	buf []byte
	at  int64
}

func newHeaderScanner(seg *segment) headerScanner {
	return headerScanner{seg: seg}
}

// reset points s at seg, keeping its buffer.
func (s *headerScanner) reset(seg *segment) {
	if s.seg != seg {
		s.seg, s.buf, s.at = seg, nil, 0
	}
}

// holds returns the bytes [pos, end) of the file when s's chunk holds
// them, else nil.
func (s *headerScanner) holds(pos, end int64) []byte {
	if s.buf == nil || pos < s.at || end > s.at+int64(len(s.buf)) {
		return nil
	}
	return s.buf[pos-s.at : end-s.at]
}

func (s *headerScanner) release() {
	if s.bp != nil {
		scanBufs.Put(s.bp)
		s.bp, s.buf = nil, nil
	}
}

// header reads and parses the batch header at pos, which must end before
// end (as segment.readHeader).
func (s *headerScanner) header(pos, end int64) (batchHeader, error) {
	if end-pos < batchHeaderSize {
		return batchHeader{}, fmt.Errorf("%w: short batch at %d in segment %d", ErrCorrupt, pos, s.seg.baseOffset)
	}
	if pos < s.at || pos+batchHeaderSize > s.at+int64(len(s.buf)) {
		if s.bp == nil {
			s.bp = scanBufs.Get().(*[]byte)
		}
		n := min(int64(scanChunk), end-pos)
		s.buf, s.at = (*s.bp)[:n], pos
		if _, err := s.seg.log.ReadAt(s.buf, pos); err != nil {
			s.buf = nil
			return batchHeader{}, fmt.Errorf("storage: read batch header: %w", err)
		}
	}
	h, err := parseBatchHeader(s.buf[pos-s.at:])
	if err != nil {
		return h, err
	}
	if int64(h.TotalSize()) > end-pos {
		return h, fmt.Errorf("%w: batch at %d past end of segment %d", ErrCorrupt, pos, s.seg.baseOffset)
	}
	return h, nil
}

// lastEntryWithin returns the last index entry whose batch starts at or
// after minPos and at or before maxPos and whose last offset is below
// maxOffset.
func (ix *offsetIndex) lastEntryWithin(minPos, maxPos, maxOffset int64) (offsetEntry, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	rel := maxOffset - ix.baseOffset
	byPos := sort.Search(len(ix.entries), func(i int) bool { return int64(ix.entries[i].Position) > maxPos })
	byOff := sort.Search(len(ix.entries), func(i int) bool { return int64(ix.entries[i].RelativeOffset) >= rel })
	i := min(byPos, byOff) - 1
	if i < 0 || int64(ix.entries[i].Position) < minPos {
		return offsetEntry{}, false
	}
	return ix.entries[i], true
}

// jump returns the end and last offset of the last indexed batch that
// starts at or after end and ends by limit and by stop and whose offsets are
// below maxOffset, or end and last unchanged when there is none. Every
// batch between end and the one returned is whole and below maxOffset: the
// index entries are batch starts in offset order. full reports that the
// batch right after the returned end is known to run past limit (or
// stop), so the caller need not read its header.
//
// A fetch's byte limit seldom ends on a batch boundary, so the last entry
// that starts within the limit often holds a batch that runs past it
// (always, with 1 MiB batches and a 10 MiB partition limit). The entry
// before it then fits: its batch ends at or before the later one starts.
// Walking header by header from the first batch instead cost one read of
// a header chunk per batch: ten per partition and fetch for 1 MiB batches
// (issue 15's strace of a -procs 2 consume: 1,276 pread64 per GB).
func (s *headerScanner) jump(ix *offsetIndex, end, last, limit, maxOffset, stop int64) (newEnd, newLast int64, full bool) {
	if end < s.seg.appendedFrom.Load() {
		// Batches from disk are walked, header by header, so that
		// damage is found before it is served (damage.go).
		return end, last, false
	}
	lastStart := min(limit, stop) - batchHeaderSize // no later batch fits
	maxPos := lastStart
	for try := 0; try < 2; try++ {
		e, ok := ix.lastEntryWithin(end, maxPos, maxOffset)
		if !ok {
			// Full when the batch right after end is the one found
			// too large.
			return end, last, try > 0 && end == maxPos+1
		}
		pos := int64(e.Position)
		h, err := s.header(pos, stop)
		if err != nil || h.LastOffset() != ix.baseOffset+int64(e.RelativeOffset) {
			// An index that does not match the file: walk instead.
			return end, last, false
		}
		if newEnd = pos + int64(h.TotalSize()); newEnd <= limit {
			// Full when the batch after it was the one found too
			// large, or cannot start within limit.
			return newEnd, h.LastOffset(), (try > 0 && newEnd == maxPos+1) || newEnd > lastStart
		}
		// This batch runs past limit: an earlier entry's fits.
		maxPos = pos - 1
	}
	return end, last, false
}
