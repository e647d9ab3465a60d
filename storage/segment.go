package storage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsa-broker/samsa/storage/vfs"
)

const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	txnIndexSuffix  = ".txnindex"
	deletedSuffix   = ".deleted"
	cleanedSuffix   = ".cleaned"
	swapSuffix      = ".swap"
	tmpSuffix       = ".tmp"
)

// segmentFileName returns the Kafka name of a segment file: the base offset
// as 20 digits followed by suffix.
func segmentFileName(dir string, baseOffset int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", baseOffset, suffix))
}

// parseSegmentBase returns the base offset of a "%020d.log" name.
func parseSegmentBase(name string) (int64, bool) {
	if !strings.HasSuffix(name, logSuffix) {
		return 0, false
	}
	digits := strings.TrimSuffix(name, logSuffix)
	if len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || base < 0 {
		return 0, false
	}
	return base, true
}

// segment is one .log file and its indexes. Its fields below the mutex
// comment are written with the Log's writeMu held and, for the ones readers
// snapshot (size, nextOffset, maxTimestamp), also the Log's mu.
type segment struct {
	fs          vfs.FS
	dir         string
	baseOffset  int64
	log         vfs.File
	offsetIndex *offsetIndex
	timeIndex   *timeIndex
	txnIndex    *txnIndex
	created     time.Time
	// txnIndexSuspect marks a .txnindex that failed its checks on open;
	// the transaction state loader rebuilds it. REQUIRES: Log.writeMu.
	txnIndexSuspect bool
	// damaged lists the ranges that failed their checks at open although
	// a crash cannot have torn them (damage.go); damageReported is set
	// once a read found damage and logged it.
	damaged        atomic.Pointer[[]damagedRange]
	damageReported atomic.Bool
	// appendedFrom is the position from which every batch in the file
	// was appended by this process (so checked on the way in): 0 for a
	// segment created here, the size at the first append for one opened
	// from disk (math.MaxInt64 before). Reads may trust the offset index
	// to skip over batches from there on (read_scan.go).
	appendedFrom atomic.Int64

	// REQUIRES: Log.writeMu to write; Log.mu to write size, nextOffset,
	// maxTimestamp, offsetOfMaxTimestamp and to read them without writeMu.
	size                     int64
	nextOffset               int64
	maxTimestamp             int64 // largest batch max timestamp, -1 if none
	offsetOfMaxTimestamp     int64 // last offset of the batch carrying it
	firstBatchTimestamp      int64 // max timestamp of the first batch, -1 if none
	bytesSinceLastIndexEntry int64
	dirty                    bool // written since the last Sync

	refMu       sync.Mutex
	refs        int  // readers holding the files open
	deleted     bool // files removed; close when refs drops to 0
	closed      bool
	filesClosed bool
}

func newSegmentShell(fsys vfs.FS, dir string, base int64, cfg LogConfig, now time.Time) *segment {
	s := &segment{
		fs: fsys, dir: dir, baseOffset: base, created: now,
		nextOffset: base, maxTimestamp: -1, offsetOfMaxTimestamp: -1, firstBatchTimestamp: -1,
		offsetIndex: &offsetIndex{baseOffset: base, maxEntries: maxOffsetEntries(cfg)},
		timeIndex:   &timeIndex{baseOffset: base, maxEntries: maxTimeEntries(cfg)},
		txnIndex:    &txnIndex{fs: fsys, name: segmentFileName(dir, base, txnIndexSuffix)},
	}
	s.appendedFrom.Store(math.MaxInt64)
	return s
}

func maxOffsetEntries(cfg LogConfig) int {
	n := int(cfg.SegmentIndexBytes) / offsetIndexEntrySize
	return max(n, 1)
}

func maxTimeEntries(cfg LogConfig) int {
	n := int(cfg.SegmentIndexBytes) / timeIndexEntrySize
	return max(n, 1)
}

// createSegment creates the empty files of a new segment.
func createSegment(fsys vfs.FS, dir string, base int64, cfg LogConfig, now time.Time) (*segment, error) {
	s := newSegmentShell(fsys, dir, base, cfg, now)
	var err error
	if s.log, err = fsys.Create(segmentFileName(dir, base, logSuffix)); err != nil {
		return nil, fmt.Errorf("storage: create segment: %w", err)
	}
	if s.offsetIndex.file, err = fsys.Create(segmentFileName(dir, base, indexSuffix)); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("storage: create segment index: %w", err)
	}
	if s.timeIndex.file, err = fsys.Create(segmentFileName(dir, base, timeIndexSuffix)); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("storage: create segment time index: %w", err)
	}
	s.dirty = true
	s.appendedFrom.Store(0)
	return s, nil
}

// openSegment opens the files of an existing segment without reading the log.
// needsRebuild reports whether an index file was missing or unreadable.
func openSegment(fsys vfs.FS, dir string, base int64, cfg LogConfig, now time.Time) (s *segment, needsRebuild bool, err error) {
	s = newSegmentShell(fsys, dir, base, cfg, now)
	if s.log, err = fsys.OpenReadWrite(segmentFileName(dir, base, logSuffix)); err != nil {
		return nil, false, fmt.Errorf("storage: open segment: %w", err)
	}
	if s.size, err = s.log.Size(); err != nil {
		s.closeFiles()
		return nil, false, fmt.Errorf("storage: stat segment: %w", err)
	}
	openIndex := func(suffix string) (vfs.File, []byte, error) {
		name := segmentFileName(dir, base, suffix)
		if !fsys.Exists(name) {
			f, err := fsys.Create(name)
			return f, nil, err
		}
		f, err := fsys.OpenReadWrite(name)
		if err != nil {
			return nil, nil, err
		}
		n, err := f.Size()
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		b := make([]byte, n)
		if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
			f.Close()
			return nil, nil, err
		}
		return f, b, nil
	}
	var ib, tb []byte
	if s.offsetIndex.file, ib, err = openIndex(indexSuffix); err != nil {
		s.closeFiles()
		return nil, false, fmt.Errorf("storage: open segment index: %w", err)
	}
	if s.timeIndex.file, tb, err = openIndex(timeIndexSuffix); err != nil {
		s.closeFiles()
		return nil, false, fmt.Errorf("storage: open segment time index: %w", err)
	}
	if s.txnIndex, s.txnIndexSuspect, err = openTxnIndex(fsys, dir, base); err != nil {
		s.closeFiles()
		return nil, false, err
	}
	if ib == nil || tb == nil {
		needsRebuild = true
	}
	if s.offsetIndex.entries, err = parseOffsetIndex(ib); err != nil {
		needsRebuild = true
	}
	if s.timeIndex.entries, err = parseTimeIndex(tb); err != nil {
		needsRebuild = true
	}
	return s, needsRebuild, nil
}

// loadTail sets nextOffset, maxTimestamp and bytesSinceLastIndexEntry of a
// segment that is not recovered, by checking the last index entries against
// the log and reading the batch headers after the last indexed batch. It
// returns an error wrapping ErrCorrupt if the indexes do not match the log.
func (s *segment) loadTail() error {
	startPos := int64(0)
	if e, ok := s.offsetIndex.last(); ok {
		if int64(e.Position) >= s.size {
			return fmt.Errorf("%w: index entry past end of segment %d", ErrCorrupt, s.baseOffset)
		}
		h, err := s.readHeader(int64(e.Position), s.size)
		if err != nil {
			return err
		}
		if h.LastOffset() != s.baseOffset+int64(e.RelativeOffset) {
			return fmt.Errorf("%w: index entry does not match batch in segment %d", ErrCorrupt, s.baseOffset)
		}
		startPos = int64(e.Position)
	}
	if e, ok := s.timeIndex.last(); ok {
		s.maxTimestamp = e.Timestamp
		s.offsetOfMaxTimestamp = s.baseOffset + int64(e.RelativeOffset)
	}
	first := true
	s.bytesSinceLastIndexEntry = 0
	_, err := scanBatches(s.log, startPos, s.size, false, func(h batchHeader, pos int64, _ []byte) error {
		if first && pos == 0 {
			s.firstBatchTimestamp = h.MaxTimestamp
		}
		first = false
		s.nextOffset = h.LastOffset() + 1
		if h.MaxTimestamp > s.maxTimestamp {
			s.maxTimestamp, s.offsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
		}
		s.bytesSinceLastIndexEntry += int64(h.TotalSize())
		return nil
	})
	if err != nil {
		return err
	}
	if s.size > 0 && s.firstBatchTimestamp < 0 && startPos > 0 {
		if h, err := s.readHeader(0, s.size); err == nil {
			s.firstBatchTimestamp = h.MaxTimestamp
		}
	}
	return nil
}

// recoverLimits tells recover which bad batches are a torn write (cut off)
// and which are damage (kept, stepped over).
type recoverLimits struct {
	// recoveryPoint is the checkpointed recovery point: offsets below it
	// were flushed, so a crash cannot have torn them. -1 if unknown.
	recoveryPoint int64
	// nextBase is the base offset of the next segment, -1 for the last
	// one. A segment is synced before the next one is created (rollLocked),
	// so only the last segment can have a torn tail.
	nextBase int64
	// partition names the log in error logs.
	partition string
}

// recover scans the whole log of the segment checking each batch's length,
// CRC and offsets and rebuilds both indexes. A bad batch where a crash may
// have torn the write (in the last segment, at or after the recovery
// point) ends the segment: the file is truncated there. A bad batch
// elsewhere is damage: it is kept on disk, recorded as a damaged range,
// and the scan goes on at the next intact batch (resync). Every discarded
// or unreadable range is logged as an error with its offsets and bytes. It
// returns the number of bytes truncated.
func (s *segment) recover(cfg LogConfig, logger *slog.Logger, lim recoverLimits) (truncated int64, err error) {
	var (
		offEntries  []offsetEntry
		timeEntries []timeEntry
		expectNext  = s.baseOffset
		sinceIndex  int64
		maxTs       = int64(-1)
		offOfMaxTs  = int64(-1)
		firstTs     = int64(-1)
		damaged     []damagedRange
		forceIndex  bool
		pos         int64
	)
	name := segmentFileName(s.dir, s.baseOffset, logSuffix)
	last := lim.nextBase < 0
	for {
		validEnd, scanErr := scanBatches(s.log, pos, s.size, true, func(h batchHeader, pos int64, _ []byte) error {
			if h.BaseOffset < expectNext {
				return fmt.Errorf("%w: batch offset %d below %d", ErrCorrupt, h.BaseOffset, expectNext)
			}
			if h.LastOffset()-s.baseOffset > maxRelativeOffset || pos > maxRelativeOffset || (lim.nextBase >= 0 && h.LastOffset() >= lim.nextBase) {
				// The base offset is not covered by the CRC.
				return fmt.Errorf("%w: batch offset %d out of segment range", ErrCorrupt, h.BaseOffset)
			}
			if pos == 0 {
				firstTs = h.MaxTimestamp
			}
			if h.MaxTimestamp > maxTs {
				maxTs, offOfMaxTs = h.MaxTimestamp, h.LastOffset()
			}
			// The first batch after a damaged range is always indexed, so
			// lookups past the damage start after it.
			if sinceIndex > int64(cfg.IndexIntervalBytes) || (forceIndex && pos > 0) {
				offEntries = append(offEntries, offsetEntry{RelativeOffset: int32(h.LastOffset() - s.baseOffset), Position: int32(pos)})
				if maxTs >= 0 && (len(timeEntries) == 0 || maxTs > timeEntries[len(timeEntries)-1].Timestamp) {
					timeEntries = append(timeEntries, timeEntry{Timestamp: maxTs, RelativeOffset: int32(offOfMaxTs - s.baseOffset)})
				}
				sinceIndex = 0
			}
			forceIndex = false
			sinceIndex += int64(h.TotalSize())
			expectNext = h.LastOffset() + 1
			return nil
		})
		if scanErr != nil && !errors.Is(scanErr, ErrCorrupt) {
			return 0, scanErr
		}
		if validEnd >= s.size {
			break
		}
		torn := last && (lim.recoveryPoint < 0 || expectNext >= lim.recoveryPoint)
		if !torn {
			if q, h, ok := resync(s.log, validEnd+1, s.size, expectNext, lim.nextBase); ok {
				r := damagedRange{start: validEnd, end: q, firstOffset: expectNext, nextOffset: h.BaseOffset}
				damaged = append(damaged, r)
				logger.Error("storage: damaged data in flushed segment; keeping it on disk and serving the intact batches around it",
					"partition", lim.partition, "segment", name, "position", r.start, "bytes", r.end-r.start,
					"offsets_from", r.firstOffset, "offsets_to", r.nextOffset-1, "reason", scanErr)
				pos, forceIndex = q, true
				continue
			}
		}
		if last {
			// The end of the log: cut it there, as Kafka does. (Below the
			// recovery point this is damage rather than a torn write, but
			// the checkpointed recovery point may be stale after a
			// truncation or a re-created topic, so it cannot tell where
			// the log really ended.)
			truncated = s.size - validEnd
			// A torn tail after the recovery point is what a crash leaves:
			// a warning, as Kafka's LogSegment.recover logs it. Damage
			// below the recovery point is an error.
			msg, level := "storage: discarding torn data at the end of the log (unflushed before a crash)", slog.LevelWarn
			if !torn {
				msg, level = "storage: discarding damaged data at the end of the log (below the recovery point)", slog.LevelError
			}
			logger.Log(context.Background(), level, msg, "partition", lim.partition, "segment", name, "position", validEnd, "bytes", truncated,
				"from_offset", expectNext, "recovery_point", lim.recoveryPoint, "reason", scanErr)
			if err := s.log.Truncate(validEnd); err != nil {
				return 0, fmt.Errorf("storage: truncate segment: %w", err)
			}
			s.size = validEnd
			break
		}
		r := damagedRange{start: validEnd, end: s.size, firstOffset: expectNext, nextOffset: lim.nextBase}
		damaged = append(damaged, r)
		logger.Error("storage: damaged data at the end of a closed segment; keeping it on disk, its offsets are unreadable",
			"partition", lim.partition, "segment", name, "position", r.start, "bytes", r.end-r.start,
			"offsets_from", r.firstOffset, "offsets_to", r.nextOffset-1, "reason", scanErr)
		expectNext = lim.nextBase
		break
	}
	if err := s.offsetIndex.reset(offEntries); err != nil {
		return 0, err
	}
	if err := s.timeIndex.reset(timeEntries); err != nil {
		return 0, err
	}
	if len(damaged) > 0 {
		s.damaged.Store(&damaged)
		s.damageReported.Store(true) // logged above
	}
	s.nextOffset = expectNext
	s.maxTimestamp, s.offsetOfMaxTimestamp = maxTs, offOfMaxTs
	s.firstBatchTimestamp = firstTs
	s.bytesSinceLastIndexEntry = sinceIndex
	s.dirty = true
	return truncated, nil
}

// maxRelativeOffset bounds offsets and positions that fit the int32 index fields.
const maxRelativeOffset = 1<<31 - 1

// scanBatches calls fn for each batch in [start, end) of f, in order. It
// stops at the first batch that is torn or, if verifyCRC, fails its CRC, and
// returns the position where valid data ends with an error wrapping
// ErrCorrupt; an error from fn also stops the scan at that batch. batch is
// only filled (and only valid during the call) when verifyCRC is set.
func scanBatches(f io.ReaderAt, start, end int64, verifyCRC bool, fn func(h batchHeader, pos int64, batch []byte) error) (int64, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(f, start, end-start), 256<<10)
	pos := start
	var header [batchHeaderSize]byte
	var buf []byte
	for pos < end {
		if end-pos < batchHeaderSize {
			return pos, fmt.Errorf("%w: %d trailing bytes at %d", ErrCorrupt, end-pos, pos)
		}
		if _, err := io.ReadFull(r, header[:]); err != nil {
			return pos, fmt.Errorf("storage: read batch header: %w", err)
		}
		h, err := parseBatchHeader(header[:])
		if err != nil {
			return pos, err
		}
		total := int64(h.TotalSize())
		if total > end-pos {
			return pos, fmt.Errorf("%w: batch at %d of %d bytes exceeds segment end", ErrCorrupt, pos, total)
		}
		if verifyCRC {
			if cap(buf) < int(total) {
				buf = make([]byte, total)
			}
			buf = buf[:total]
			copy(buf, header[:])
			if _, err := io.ReadFull(r, buf[batchHeaderSize:]); err != nil {
				return pos, fmt.Errorf("storage: read batch: %w", err)
			}
			if got := batchCRC(buf); got != h.CRC {
				return pos, fmt.Errorf("%w: batch at %d has CRC %08x, want %08x", ErrCorrupt, pos, got, h.CRC)
			}
		} else if _, err := r.Discard(int(total - batchHeaderSize)); err != nil {
			return pos, fmt.Errorf("storage: skip batch: %w", err)
		}
		if err := fn(h, pos, buf); err != nil {
			return pos, err
		}
		pos += total
	}
	return pos, nil
}

// readHeader reads and parses the batch header at pos, which must end before end.
// A walk over many batches uses a headerScanner instead (read_scan.go).
func (s *segment) readHeader(pos, end int64) (batchHeader, error) {
	var b [batchHeaderSize]byte
	if end-pos < batchHeaderSize {
		return batchHeader{}, fmt.Errorf("%w: short batch at %d in segment %d", ErrCorrupt, pos, s.baseOffset)
	}
	if _, err := s.log.ReadAt(b[:], pos); err != nil {
		return batchHeader{}, fmt.Errorf("storage: read batch header: %w", err)
	}
	h, err := parseBatchHeader(b[:])
	if err != nil {
		return h, err
	}
	if int64(h.TotalSize()) > end-pos {
		return h, fmt.Errorf("%w: batch at %d past end of segment %d", ErrCorrupt, pos, s.baseOffset)
	}
	return h, nil
}

// findBatch returns the position and header of the first batch at or after
// the indexed position for offset whose last offset is >= offset, reading
// no further than end. found is false if the segment has no such batch.
func (s *segment) findBatch(offset, end int64) (pos int64, h batchHeader, found bool, err error) {
	hs := newHeaderScanner(s)
	defer hs.release()
	return s.findBatchWith(&hs, offset, end)
}

// findBatchWith is findBatch reading through hs, which it points at s:
// ReadSlice goes on walking with what hs read.
func (s *segment) findBatchWith(hs *headerScanner, offset, end int64) (pos int64, h batchHeader, found bool, err error) {
	hs.reset(s)
	pos = s.offsetIndex.lookup(offset)
	for pos < end {
		if r, ok := s.damageAt(pos); ok {
			if offset < r.nextOffset {
				return pos, h, false, s.damagedErr(r)
			}
			pos = r.end
			continue
		}
		h, err = hs.header(pos, end)
		if err != nil {
			return pos, h, false, err
		}
		if h.LastOffset() >= offset {
			return pos, h, true, nil
		}
		pos += int64(h.TotalSize())
	}
	return pos, h, false, nil
}

// shouldRoll reports whether an append of size bytes, whose batches carry
// maxTimestamp and end at lastOffset, must go to a new segment.
// REQUIRES: Log.writeMu held.
func (s *segment) shouldRoll(cfg LogConfig, size int, maxTimestamp, lastOffset int64, now time.Time) bool {
	if s.size == 0 {
		return false
	}
	if s.size+int64(size) > cfg.SegmentBytes || s.size+int64(size) > maxRelativeOffset {
		return true
	}
	if lastOffset-s.baseOffset > maxRelativeOffset {
		return true
	}
	if s.offsetIndex.isFull() || s.timeIndex.isFull() {
		return true
	}
	var waited int64
	if s.firstBatchTimestamp >= 0 && maxTimestamp >= 0 {
		waited = maxTimestamp - s.firstBatchTimestamp
	} else {
		waited = now.Sub(s.created).Milliseconds()
	}
	return waited > cfg.SegmentMs
}

// appendBatches writes records (whose batches are hs, in order) at the end of
// the log and adds index entries. It does not update size/nextOffset: the
// caller does that under Log.mu with commitAppend.
// REQUIRES: Log.writeMu held.
func (s *segment) appendBatches(records []byte, hs []batchHeader, cfg LogConfig) error {
	if _, err := s.log.WriteAt(records, s.size); err != nil {
		return fmt.Errorf("storage: write segment: %w", err)
	}
	s.dirty = true
	pos := s.size
	maxTs, offOfMaxTs := s.maxTimestamp, s.offsetOfMaxTimestamp
	for _, h := range hs {
		if h.MaxTimestamp > maxTs {
			maxTs, offOfMaxTs = h.MaxTimestamp, h.LastOffset()
		}
		if s.bytesSinceLastIndexEntry > int64(cfg.IndexIntervalBytes) {
			if err := s.offsetIndex.append(h.LastOffset(), pos); err != nil {
				return err
			}
			if err := s.timeIndex.maybeAppend(maxTs, offOfMaxTs); err != nil {
				return err
			}
			s.bytesSinceLastIndexEntry = 0
		}
		s.bytesSinceLastIndexEntry += int64(h.TotalSize())
		pos += int64(h.TotalSize())
	}
	return nil
}

// commitAppend publishes an appended batch run to readers.
// REQUIRES: Log.writeMu and Log.mu held.
func (s *segment) commitAppend(size int, hs []batchHeader) {
	if s.size == 0 && len(hs) > 0 {
		s.firstBatchTimestamp = hs[0].MaxTimestamp
	}
	for _, h := range hs {
		if h.MaxTimestamp > s.maxTimestamp {
			s.maxTimestamp, s.offsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
		}
	}
	if s.appendedFrom.Load() > s.size {
		// The first append since open, or since a truncation below
		// the appended part.
		s.appendedFrom.Store(s.size)
	}
	s.size += int64(size)
	s.nextOffset = hs[len(hs)-1].LastOffset() + 1
}

// truncatePlan is where truncateTo(offset) cuts a segment.
type truncatePlan struct {
	position, nextOffset, maxTimestamp, offsetOfMaxTimestamp, sinceIndex, firstTs int64
}

// planTruncate computes the state of the segment after removing every batch
// whose last offset is >= offset. It only reads.
// REQUIRES: Log.writeMu held.
func (s *segment) planTruncate(offset int64) (truncatePlan, error) {
	pos, _, found, err := s.findBatch(offset, s.size)
	if err != nil {
		return truncatePlan{}, err
	}
	if !found {
		pos = s.size
	}
	p := truncatePlan{position: pos, nextOffset: s.baseOffset, maxTimestamp: -1, offsetOfMaxTimestamp: -1, firstTs: -1}
	// Start from the last index entries that survive.
	start := int64(0)
	ix := s.offsetIndex
	ix.mu.Lock()
	for i := len(ix.entries) - 1; i >= 0; i-- {
		if int64(ix.entries[i].Position) < pos {
			start = int64(ix.entries[i].Position)
			break
		}
	}
	ix.mu.Unlock()
	ti := s.timeIndex
	ti.mu.Lock()
	for i := len(ti.entries) - 1; i >= 0; i-- {
		if e := ti.entries[i]; s.baseOffset+int64(e.RelativeOffset) < offset && int64(e.RelativeOffset) >= 0 {
			p.maxTimestamp, p.offsetOfMaxTimestamp = e.Timestamp, s.baseOffset+int64(e.RelativeOffset)
			break
		}
	}
	ti.mu.Unlock()
	err = s.scanIntact(start, pos, false, func(h batchHeader, bpos int64, _ []byte) error {
		p.nextOffset = h.LastOffset() + 1
		if h.MaxTimestamp > p.maxTimestamp {
			p.maxTimestamp, p.offsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
		}
		p.sinceIndex += int64(h.TotalSize())
		return nil
	})
	if err != nil {
		return truncatePlan{}, err
	}
	if pos > 0 {
		fh, err := s.readHeader(0, pos)
		if err != nil {
			return truncatePlan{}, err
		}
		p.firstTs = fh.MaxTimestamp
	}
	return p, nil
}

// truncateFiles applies a plan to the files.
// REQUIRES: Log.writeMu held.
func (s *segment) truncateFiles(p truncatePlan) error {
	if err := s.log.Truncate(p.position); err != nil {
		return fmt.Errorf("storage: truncate segment: %w", err)
	}
	s.dirty = true
	s.dropDamageFrom(p.position)
	if err := s.offsetIndex.truncateToPosition(p.position); err != nil {
		return err
	}
	if err := s.txnIndex.truncateTo(p.nextOffset); err != nil {
		return err
	}
	return s.timeIndex.truncateToOffset(p.nextOffset)
}

// sync makes the segment's files durable.
// REQUIRES: Log.writeMu held.
func (s *segment) sync() error {
	if !s.dirty {
		return nil
	}
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("storage: sync segment: %w", err)
	}
	if err := s.offsetIndex.file.Sync(); err != nil {
		return fmt.Errorf("storage: sync offset index: %w", err)
	}
	if err := s.timeIndex.file.Sync(); err != nil {
		return fmt.Errorf("storage: sync time index: %w", err)
	}
	if err := s.txnIndex.sync(); err != nil {
		return err
	}
	s.dirty = false
	return nil
}

// acquire pins the segment's files for a reader; it fails once the segment
// was deleted or closed. REQUIRES: Log.mu held (so the segment is listed).
func (s *segment) acquire() bool {
	s.refMu.Lock()
	defer s.refMu.Unlock()
	if s.deleted || s.closed {
		return false
	}
	s.refs++
	return true
}

func (s *segment) release() {
	s.refMu.Lock()
	s.refs--
	closeNow := s.refs == 0 && (s.deleted || s.closed)
	s.refMu.Unlock()
	if closeNow {
		s.closeFiles()
	}
}

// close closes the files now or, if readers hold them, when the last one is done.
func (s *segment) close() {
	s.refMu.Lock()
	s.closed = true
	closeNow := s.refs == 0
	s.refMu.Unlock()
	if closeNow {
		s.closeFiles()
	}
}

func (s *segment) closeFiles() {
	s.refMu.Lock()
	done := s.filesClosed
	s.filesClosed = true
	s.refMu.Unlock()
	if done {
		return
	}
	files := []vfs.File{s.log, s.offsetIndex.file, s.timeIndex.file}
	if s.txnIndex != nil {
		files = append(files, s.txnIndex.file)
	}
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// markDeleted marks the segment deleted, so that no new reader pins it,
// and reports whether no reader holds it (its files can close now;
// otherwise the last release closes them).
func (s *segment) markDeleted() (closeNow bool) {
	s.refMu.Lock()
	defer s.refMu.Unlock()
	s.deleted = true
	return s.refs == 0
}

// remove deletes the segment's files. Readers that pinned the segment keep
// reading the unlinked files (Unix semantics; MemFS does the same), which is
// why file.delete.delay.ms is not needed here.
func (s *segment) remove() error {
	closeNow := s.markDeleted()
	var firstErr error
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		name := segmentFileName(s.dir, s.baseOffset, suffix)
		if !s.fs.Exists(name) {
			continue
		}
		if err := s.fs.Remove(name); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("storage: remove segment file: %w", err)
		}
	}
	if closeNow {
		s.closeFiles()
	}
	return firstErr
}
