package storage

import (
	"fmt"
	"sort"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// segmentView is a reader's snapshot of a segment.
type segmentView struct {
	seg  *segment
	size int64
}

// snapshotFrom pins the segments from the one containing offset onwards.
// The caller must release them.
// REQUIRES: l.mu held.
func (l *Log) snapshotFromLocked(offset int64) []segmentView {
	segs := l.mu.segments
	i := sort.Search(len(segs), func(i int) bool { return segs[i].baseOffset > offset })
	if i > 0 {
		i--
	}
	views := make([]segmentView, 0, len(segs)-i)
	for _, s := range segs[i:] {
		if s.acquire() {
			views = append(views, segmentView{seg: s, size: s.size})
		}
	}
	return views
}

func releaseViews(views []segmentView) {
	for _, v := range views {
		v.seg.release()
	}
}

// Read returns whole batches starting with the one that contains offset,
// from a single segment, stopping before any batch whose base offset is >=
// maxOffset and before exceeding maxBytes; with minOneBatch the first batch
// is returned whatever its size. Reading at the log end offset (or at or
// past maxOffset) returns no bytes; below the log start offset or past the
// end, ErrOffsetOutOfRange.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error) {
	v, start, first, ok, err := l.locate(offset, maxOffset)
	if err != nil || !ok {
		return nil, err
	}
	defer v.seg.release()
	firstSize := int64(first.TotalSize())
	if first.BaseOffset >= maxOffset || (firstSize > int64(maxBytes) && !minOneBatch) {
		return nil, nil
	}
	// One read of everything that may qualify, then trim to whole batches.
	// A damaged range ends the read: the intact batches before it are
	// served, a read starting in it fails (locate).
	limit := min(max(int64(maxBytes), firstSize), v.upperBound(maxOffset)-start, v.seg.nextDamage(start)-start)
	if firstSize > v.size-start {
		err := fmt.Errorf("%w: batch at %d of %d bytes exceeds segment %d", ErrCorrupt, start, firstSize, v.seg.baseOffset)
		l.reportDamage(v.seg, start, err)
		return nil, err
	}
	limit = max(limit, firstSize)
	buf := make([]byte, limit)
	if _, err := v.seg.log.ReadAt(buf, start); err != nil {
		return nil, fmt.Errorf("storage: read segment: %w", err)
	}
	end := firstSize
	for end+batchHeaderSize <= int64(len(buf)) {
		h, err := parseBatchHeader(buf[end:])
		if err != nil {
			l.reportDamage(v.seg, start+end, err)
			break
		}
		if h.BaseOffset >= maxOffset || end+int64(h.TotalSize()) > int64(len(buf)) {
			break
		}
		end += int64(h.TotalSize())
	}
	return buf[:end:end], nil
}

// FileSlice is a byte range of a segment file holding whole batches, for
// sending to a socket without copying (sendfile when File implements
// vfs.OSFiler). The segment stays pinned, even if retention deletes it,
// until Release.
type FileSlice struct {
	File   vfs.File
	Offset int64
	Length int64
	// LastOffset is the last offset of the last batch in the range
	// (meaningless when Length is 0), for the aborted transactions of a
	// fetch.
	LastOffset int64
	seg        *segment
	// cached, when set, holds the range's bytes: the chunk its batch
	// headers were read with (a headerScanner buffer, returned to
	// scanBufs on Release) covered all of it.
	cached []byte
	chunk  *[]byte
}

// Release unpins the segment. It is safe on a zero FileSlice.
func (s *FileSlice) Release() {
	if s.seg != nil {
		s.seg.release()
		s.seg = nil
	}
	s.dropCache()
}

// Cached returns the range's bytes when ReadSlice read them already with
// the batch headers (a small range: up to a few KiB), else nil; valid
// until Release. A consumer at the log end fetches such ranges, one per
// record at low rates: copying them from here saves a read per fetch.
func (s *FileSlice) Cached() []byte {
	if int64(len(s.cached)) != s.Length {
		return nil
	}
	return s.cached
}

func (s *FileSlice) dropCache() {
	if s.chunk != nil {
		scanBufs.Put(s.chunk)
	}
	s.cached, s.chunk = nil, nil
}

// ReadSlice is Read returning the file range instead of a copy of the
// bytes. The caller must Release the slice (also when Length is 0).
func (l *Log) ReadSlice(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (FileSlice, error) {
	// One scanner finds the first batch and walks the rest: a small
	// fetch used to read its first chunk twice.
	hs := newHeaderScanner(nil)
	defer hs.release()
	v, start, h, ok, err := l.locateWith(&hs, offset, maxOffset)
	if err != nil || !ok {
		return FileSlice{}, err
	}
	end, last := start, int64(-1)
	stop := min(v.size, v.seg.nextDamage(start))
	for first := true; end < stop; first = false {
		if !first {
			if h, err = hs.header(end, stop); err != nil {
				// Serve the intact batches before the damage.
				l.reportDamage(v.seg, end, err)
				break
			}
		}
		if h.BaseOffset >= maxOffset {
			break
		}
		size := int64(h.TotalSize())
		if end-start+size > int64(maxBytes) && !(first && minOneBatch) {
			break
		}
		end += size
		last = h.LastOffset()
		if first {
			// Jump over the whole batches that surely fit, to the end
			// of the last indexed batch within maxBytes.
			var full bool
			end, last, full = hs.jump(v.seg.offsetIndex, end, last, start+int64(maxBytes), maxOffset, stop)
			if full {
				break // the next batch was read and runs past maxBytes
			}
		}
	}
	fs := FileSlice{File: v.seg.log, Offset: start, Length: end - start, LastOffset: last, seg: v.seg}
	if b := hs.holds(start, end); b != nil && len(b) > 0 {
		// The chunk goes with the slice (hs.release leaves it).
		fs.cached, fs.chunk = b, hs.bp
		hs.bp, hs.buf = nil, nil
	}
	return fs, nil
}

// locate finds the batch containing offset and pins its segment. ok is
// false (with nothing pinned) when there is nothing to read.
func (l *Log) locate(offset, maxOffset int64) (v segmentView, pos int64, h batchHeader, ok bool, err error) {
	hs := newHeaderScanner(nil)
	defer hs.release()
	return l.locateWith(&hs, offset, maxOffset)
}

// locateWith is locate reading headers through hs, which it leaves
// pointed at the segment it found the batch in.
func (l *Log) locateWith(hs *headerScanner, offset, maxOffset int64) (v segmentView, pos int64, h batchHeader, ok bool, err error) {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return v, 0, h, false, ErrClosed
	}
	if offset < l.mu.logStartOffset || offset > l.mu.logEndOffset {
		start, end := l.mu.logStartOffset, l.mu.logEndOffset
		l.mu.Unlock()
		return v, 0, h, false, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, offset, start, end)
	}
	if offset == l.mu.logEndOffset || offset >= maxOffset {
		l.mu.Unlock()
		return v, 0, h, false, nil
	}
	views := l.snapshotFromLocked(offset)
	l.mu.Unlock()
	for i, view := range views {
		pos, h, found, err := view.seg.findBatchWith(hs, offset, view.size)
		if err != nil || found {
			releaseViews(views[:i])
			releaseViews(views[i+1:])
			if err != nil {
				l.reportDamage(view.seg, pos, err)
				view.seg.release()
				return v, 0, h, false, err
			}
			return view, pos, h, true, nil
		}
	}
	releaseViews(views)
	return v, 0, h, false, nil
}

// upperBound returns a position at or after the end of the last batch whose
// base offset is below maxOffset, using the offset index: a batch starting
// at or after the second index entry with an offset >= maxOffset has a base
// offset > that entry's offset.
func (v segmentView) upperBound(maxOffset int64) int64 {
	ix := v.seg.offsetIndex
	ix.mu.Lock()
	defer ix.mu.Unlock()
	rel := maxOffset - ix.baseOffset
	i := sort.Search(len(ix.entries), func(i int) bool { return int64(ix.entries[i].RelativeOffset) >= rel })
	if i+1 < len(ix.entries) {
		return min(int64(ix.entries[i+1].Position), v.size)
	}
	return v.size
}

// OffsetForTimestamp returns the earliest record (at or above the log start
// offset) whose timestamp is >= ts, for ListOffsets. The special timestamps
// (-1 latest, -2 earliest, -3 max) are the caller's business.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, found bool) {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return -1, -1, false
	}
	start := l.mu.logStartOffset
	views := l.snapshotFromLocked(start)
	maxTs := make([]int64, len(views))
	for i, v := range views {
		maxTs[i] = v.seg.maxTimestamp
	}
	l.mu.Unlock()
	defer releaseViews(views)
	for i, v := range views {
		if maxTs[i] < ts {
			continue
		}
		from := max(v.seg.timeIndex.lookup(ts), start)
		pos, h, ok, err := v.seg.findBatch(from, v.size)
		for ok && err == nil {
			if h.MaxTimestamp >= ts && h.LastOffset() >= start {
				if off, rts, hit := firstRecordAtOrAfter(v.seg, pos, h, ts, start); hit {
					return off, rts, true
				}
			}
			pos += int64(h.TotalSize())
			if pos >= v.size {
				break
			}
			h, err = v.seg.readHeader(pos, v.size)
		}
		if err != nil {
			l.logger.Warn("storage: timestamp lookup failed", "segment", v.seg.baseOffset, "err", err)
			return -1, -1, false
		}
	}
	return -1, -1, false
}

// firstRecordAtOrAfter finds the first record of the batch at pos with a
// timestamp >= ts and an offset >= minOffset.
func firstRecordAtOrAfter(s *segment, pos int64, h batchHeader, ts, minOffset int64) (int64, int64, bool) {
	batch := make([]byte, h.TotalSize())
	if _, err := s.log.ReadAt(batch, pos); err != nil {
		return -1, -1, false
	}
	off, rts, found, ok := firstRecordPoint(batch, h, func(off, rts int64) bool { return off >= minOffset && rts >= ts })
	if !ok {
		// LogAppendTime (or records that do not decode): the batch's
		// max timestamp is the best per-record answer.
		return max(h.BaseOffset, minOffset), h.MaxTimestamp, true
	}
	if found {
		return off, rts, true
	}
	return -1, -1, false
}

// MaxTimestamp returns the timestamp and offset of the first record with the
// largest timestamp in the log (ListOffsets MAX_TIMESTAMP), or (-1, -1).
func (l *Log) MaxTimestamp() (ts int64, offset int64) {
	l.mu.Lock()
	maxTs := int64(-1)
	for _, s := range l.mu.segments {
		if s.nextOffset > l.mu.logStartOffset {
			maxTs = max(maxTs, s.maxTimestamp)
		}
	}
	l.mu.Unlock()
	if maxTs < 0 {
		return -1, -1
	}
	off, rts, found := l.OffsetForTimestamp(maxTs)
	if !found {
		return -1, -1
	}
	return rts, off
}
