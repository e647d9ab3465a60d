package storage

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
)

// damagedRange is a byte range of a segment file that failed its checks
// (length, magic, CRC, offsets) although it lies below the recovery point
// or in a closed segment, where a crash cannot have torn it: it is damage,
// not a torn write. Such bytes are kept on disk (an operator may want
// them) and never served: a read of an offset in [firstOffset,
// nextOffset) fails with ErrCorrupt, and reads of the intact batches
// around it go on.
type damagedRange struct {
	start, end  int64 // file positions [start, end)
	firstOffset int64 // the offset the damaged batch should have started at
	nextOffset  int64 // the base offset of the first intact batch after it
}

// damage returns the damaged ranges found when the segment was opened,
// ordered by position. The slice is never modified (truncation replaces it).
func (s *segment) damage() []damagedRange {
	if p := s.damaged.Load(); p != nil {
		return *p
	}
	return nil
}

// damageAt returns the damaged range starting at pos.
func (s *segment) damageAt(pos int64) (damagedRange, bool) {
	for _, r := range s.damage() {
		if r.start == pos {
			return r, true
		}
	}
	return damagedRange{}, false
}

// nextDamage returns the start of the first damaged range at or after pos,
// or math.MaxInt64.
func (s *segment) nextDamage(pos int64) int64 {
	d := s.damage()
	i := sort.Search(len(d), func(i int) bool { return d[i].start >= pos })
	if i < len(d) {
		return d[i].start
	}
	return math.MaxInt64
}

// dropDamageFrom forgets the damaged ranges at or after position pos
// (truncation removed them). REQUIRES: Log.writeMu held.
func (s *segment) dropDamageFrom(pos int64) {
	d := s.damage()
	i := sort.Search(len(d), func(i int) bool { return d[i].end > pos })
	if i == len(d) {
		return
	}
	kept := append([]damagedRange(nil), d[:i]...)
	s.damaged.Store(&kept)
}

// scanIntact is scanBatches over [start, end) of the segment, stepping
// over its damaged ranges.
func (s *segment) scanIntact(start, end int64, verifyCRC bool, fn func(h batchHeader, pos int64, batch []byte) error) error {
	for _, r := range s.damage() {
		if r.end <= start || r.start >= end {
			continue
		}
		if r.start > start {
			if _, err := scanBatches(s.log, start, r.start, verifyCRC, fn); err != nil {
				return err
			}
		}
		start = r.end
	}
	if start < end {
		_, err := scanBatches(s.log, start, end, verifyCRC, fn)
		return err
	}
	return nil
}

// resyncChunk is how much of a damaged segment resync reads at a time.
const resyncChunk = 1 << 20

// resync looks in [from, end) of f for the first position holding an
// intact batch (magic 2, a sane header, a matching CRC) whose offsets lie
// in [minOffset, maxOffset) (maxOffset < 0: no upper bound), so that the
// intact batches after a damaged one can still be served. A false match
// needs a random CRC-32C to match as well as the header checks, so it is
// not a practical concern.
func resync(f io.ReaderAt, from, end, minOffset, maxOffset int64) (int64, batchHeader, bool) {
	buf := make([]byte, resyncChunk+batchHeaderSize)
	var batch []byte
	for base := from; base+batchHeaderSize <= end; base += resyncChunk {
		n := min(int64(len(buf)), end-base)
		if _, err := f.ReadAt(buf[:n], base); err != nil && !errors.Is(err, io.EOF) {
			return 0, batchHeader{}, false
		}
		for i := int64(0); i < min(resyncChunk, n-batchHeaderSize+1); i++ {
			if buf[i+magicOffset] != 2 {
				continue
			}
			h, err := parseBatchHeader(buf[i : i+batchHeaderSize])
			if err != nil || h.BaseOffset < minOffset || (maxOffset >= 0 && h.LastOffset() >= maxOffset) {
				continue
			}
			pos := base + i
			if int64(h.TotalSize()) > end-pos {
				continue
			}
			if cap(batch) < h.TotalSize() {
				batch = make([]byte, h.TotalSize())
			}
			batch = batch[:h.TotalSize()]
			if _, err := f.ReadAt(batch, pos); err != nil && !errors.Is(err, io.EOF) {
				continue
			}
			if batchCRC(batch) == h.CRC {
				return pos, h, true
			}
		}
	}
	return 0, batchHeader{}, false
}

// magicOffset is the position of the magic byte in a batch header.
const magicOffset = 16

// reportDamage logs, once per segment, a read that found damaged data the
// checks at open did not (a segment below the recovery point is not
// scanned at open, as in Kafka). The intact batches before it are still
// served.
func (l *Log) reportDamage(s *segment, pos int64, err error) {
	if !errors.Is(err, ErrCorrupt) || !s.damageReported.CompareAndSwap(false, true) {
		return
	}
	l.logger.Error("storage: damaged data in segment; serving the intact batches around it, reads of the damaged range fail with CORRUPT_MESSAGE",
		"segment", s.baseOffset, "position", pos, "segment_bytes", s.size, "err", err)
}

// damagedErr describes a read of a damaged range.
func (s *segment) damagedErr(r damagedRange) error {
	return fmt.Errorf("%w: offsets %d to %d of segment %d (bytes %d to %d) failed their checks at open",
		ErrCorrupt, r.firstOffset, r.nextOffset-1, s.baseOffset, r.start, r.end)
}
