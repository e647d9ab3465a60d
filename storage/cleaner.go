package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// Log compaction (cleanup.policy=compact), Kafka's LogCleaner semantics;
// the rules and the file protocol are documented in doc.go, "Compaction".

// ErrCleanAborted is returned by Clean when the log changed under the
// clean (retention, truncation, close): nothing was replaced.
var ErrCleanAborted = errors.New("storage: clean aborted, log changed")

// errCleanerWrite marks a failed write or sync of cleaned files: an IO
// failure of the log dir, which takes the log offline like any other.
var errCleanerWrite = errors.New("storage: writing cleaned segment")

// DefaultCleanerMapBytes bounds the key map of one clean
// (log.cleaner.dedupe.buffer.size).
const DefaultCleanerMapBytes = 128 << 20

// CleanOptions configures one Clean.
type CleanOptions struct {
	// MaxMapBytes bounds the key map: the dirty section is cut at the
	// segment where it fills up. <= 0 means DefaultCleanerMapBytes.
	MaxMapBytes int64
	// Force cleans whatever the dirty ratio (there must be dirty data).
	Force bool
}

// CleanStats describes a finished clean.
type CleanStats struct {
	// FirstOffset and EndOffset bound the rewritten range; EndOffset is
	// the new cleaner checkpoint (first dirty offset).
	FirstOffset, EndOffset  int64
	SegmentsIn, SegmentsOut int
	BytesIn, BytesOut       int64
	RecordsIn, RecordsOut   int64
}

// cleanPlan is what a clean rewrites.
type cleanPlan struct {
	segs       []segmentView // segments [0, n) of the cleanable range, pinned
	firstDirty int           // index in segs of the first dirty segment
	end        int64         // first uncleanable offset, a segment base
	ratio      float64
	forced     bool
	dirtyBytes int64
}

func (p *cleanPlan) release() { releaseViews(p.segs) }

// CleanableRatio returns the dirty ratio of the log's cleanable range and
// whether max.compaction.lag.ms forces a clean; ok is false when the log
// is not compacted or has nothing dirty to clean.
func (l *Log) CleanableRatio(now time.Time) (ratio float64, forced, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.planCleanLocked(now, false)
	if !ok {
		return 0, false, false
	}
	p.release()
	return p.ratio, p.forced, true
}

// planCleanLocked computes the cleanable range and pins its segments.
// The range is whole segments from the first one up to the first
// uncleanable offset: the smallest of the active segment's base, the last
// stable offset (which is at most the high watermark) and the base of the
// first segment holding records younger than min.compaction.lag.ms,
// rounded down to a segment boundary.
// REQUIRES: l.mu held.
func (l *Log) planCleanLocked(now time.Time, pin bool) (cleanPlan, bool) {
	cfg := l.mu.cfg
	segs := l.mu.segments
	if !cfg.Compact || l.mu.closed || l.mu.failed != nil || len(segs) < 2 {
		return cleanPlan{}, false
	}
	limit := min(segs[len(segs)-1].baseOffset, l.lastStableOffsetLocked())
	nowMs := now.UnixMilli()
	if cfg.MinCompactionLagMs > 0 {
		for _, s := range segs[:len(segs)-1] {
			if s.maxTimestamp > nowMs-cfg.MinCompactionLagMs {
				limit = min(limit, s.baseOffset)
				break
			}
		}
	}
	n := 0
	for n < len(segs)-1 && segs[n+1].baseOffset <= limit {
		n++
	}
	if n == 0 {
		return cleanPlan{}, false
	}
	checkpoint := max(l.mu.cleanerCheckpoint, segs[0].baseOffset)
	if checkpoint > l.mu.logEndOffset {
		checkpoint = segs[0].baseOffset // the log was truncated below it
	}
	d := 0
	for d < n && segs[d+1].baseOffset <= checkpoint {
		d++
	}
	if d == n {
		return cleanPlan{}, false
	}
	var total, dirty int64
	for i, s := range segs[:n] {
		total += s.size
		if i >= d {
			dirty += s.size
		}
	}
	if dirty == 0 {
		return cleanPlan{}, false
	}
	p := cleanPlan{firstDirty: d, end: segs[n].baseOffset, dirtyBytes: dirty, ratio: float64(dirty) / float64(total)}
	if ts := segs[d].firstBatchTimestamp; cfg.MaxCompactionLagMs < math.MaxInt64 && ts >= 0 && nowMs-ts > cfg.MaxCompactionLagMs {
		p.forced = true
	}
	if pin {
		for _, s := range segs[:n] {
			if !s.acquire() {
				releaseViews(p.segs)
				return cleanPlan{}, false
			}
			p.segs = append(p.segs, segmentView{seg: s, size: s.size})
		}
	} else {
		p.segs = nil
	}
	return p, true
}

// NeedsClean reports whether the log is due for a clean at now: its
// dirty ratio reaches min.cleanable.dirty.ratio or max.compaction.lag.ms
// forces one.
func (l *Log) NeedsClean(now time.Time) (ratio float64, due bool) {
	r, forced, ok := l.CleanableRatio(now)
	if !ok {
		return 0, false
	}
	return r, forced || r >= l.Config().MinCleanableDirtyRatio
}

// CleanerCheckpoint returns the first dirty offset: the end of the range
// the last clean rewrote.
func (l *Log) CleanerCheckpoint() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.cleanerCheckpoint
}

// cleanedSegment is the output of one group, written as .cleaned files.
type cleanedSegment struct {
	seg   *segment   // the new segment, files open on the .cleaned names
	group []*segment // the segments it replaces, in order
	files []string   // suffixes written
}

// Clean compacts the log once if it is due (or opts.Force and there is
// dirty data): it builds the key map of the dirty section, rewrites the
// segments of the cleanable range without the records it supersedes, and
// swaps the rewritten segments in. It returns false without error when
// there is nothing to do. Appends and reads go on meanwhile: the segments
// are read pinned and without locks, and only the swap takes
// Log.writeMu; if the log changed under the clean (retention, truncation,
// close) the clean is dropped with ErrCleanAborted.
func (l *Log) Clean(ctx context.Context, now time.Time, opts CleanOptions) (CleanStats, bool, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	if opts.MaxMapBytes <= 0 {
		opts.MaxMapBytes = DefaultCleanerMapBytes
	}
	l.mu.Lock()
	plan, ok := l.planCleanLocked(now, true)
	cfg := l.mu.cfg
	l.mu.Unlock()
	if !ok {
		return CleanStats{}, false, nil
	}
	defer plan.release()
	if !opts.Force && !plan.forced && plan.ratio < cfg.MinCleanableDirtyRatio {
		return CleanStats{}, false, nil
	}
	stats := CleanStats{FirstOffset: plan.segs[0].seg.baseOffset}

	// The aborted transactions whose data may lie in the range.
	aborted := newAbortedSet(l.AbortedTransactions(plan.segs[0].seg.baseOffset, plan.end))

	// Key map of the dirty section, cut at the segment where it fills up.
	offsets := newOffsetMap()
	n := len(plan.segs)
	var scratch []rawRecord
	for i := plan.firstDirty; i < len(plan.segs); i++ {
		if err := ctx.Err(); err != nil {
			return stats, false, err
		}
		v := plan.segs[i]
		_, err := scanBatches(v.seg.log, 0, v.size, true, func(h batchHeader, _ int64, b []byte) error {
			var err error
			scratch, err = addToMap(offsets, b, h, aborted, scratch)
			return err
		})
		if err != nil {
			return stats, false, l.cleanReadFailed(plan.segs, err)
		}
		if offsets.bytes > opts.MaxMapBytes && i+1 < len(plan.segs) {
			n = i + 1
			break
		}
	}
	segs := plan.segs[:n]
	end := plan.end
	if n < len(plan.segs) {
		end = plan.segs[n].seg.baseOffset
	}
	stats.EndOffset = end

	keep, err := keepEmptyBatches(segs, l.lastBatchOfProducers())
	if err != nil {
		return stats, false, l.cleanReadFailed(segs, err)
	}
	nowMs := now.UnixMilli()
	var outs []*cleanedSegment
	cleanup := func() {
		for _, o := range outs {
			o.seg.closeFiles()
			for _, suffix := range o.files {
				_ = l.fs.Remove(segmentFileName(l.Dir(), o.seg.baseOffset, suffix) + cleanedSuffix)
			}
		}
	}
	for _, group := range groupSegments(segs, cfg) {
		if err := ctx.Err(); err != nil {
			cleanup()
			return stats, false, err
		}
		out := &cleanedSegment{}
		outs = append(outs, out)
		for _, v := range group {
			out.group = append(out.group, v.seg)
		}
		inputs := make([]groupInput, len(group))
		for i, v := range group {
			idx := sort.Search(len(segs), func(j int) bool { return segs[j].seg.baseOffset >= v.seg.baseOffset })
			inputs[i] = groupInput{view: v, removeTombstones: idx < plan.firstDirty &&
				v.seg.maxTimestamp < nowMs-cfg.DeleteRetentionMs}
		}
		if err := l.writeCleaned(out, inputs, offsets, aborted, keep, cfg, now, &stats); err != nil {
			cleanup()
			if errors.Is(err, errCleanerWrite) {
				if l.changedUnder(segs) {
					return stats, false, fmt.Errorf("%w: %w", ErrCleanAborted, err)
				}
				return stats, false, l.fail(err)
			}
			return stats, false, l.cleanReadFailed(segs, err)
		}
		stats.SegmentsIn += len(group)
	}
	stats.SegmentsOut = len(outs)
	if err := l.swapCleaned(outs, segs, end); err != nil {
		if errors.Is(err, ErrCleanAborted) {
			cleanup()
		}
		return stats, false, err
	}
	return stats, true, nil
}

// changedUnder reports whether the pinned segments are no longer the
// log's, unchanged, or the log was closed: a clean of them is moot.
func (l *Log) changedUnder(segs []segmentView) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || l.mu.failed != nil {
		return true
	}
	cur := l.mu.segments
	start := -1
	for i, s := range cur {
		if s == segs[0].seg {
			start = i
			break
		}
	}
	if start < 0 || start+len(segs) >= len(cur) {
		return true
	}
	for i, v := range segs {
		if cur[start+i] != v.seg || v.seg.size != v.size {
			return true
		}
	}
	return false
}

// cleanReadFailed handles a failure to read or decode the segments being
// cleaned: a log that changed under the clean (truncation) aborts it;
// otherwise the data cannot be cleaned and the log is marked uncleanable.
func (l *Log) cleanReadFailed(segs []segmentView, err error) error {
	if l.changedUnder(segs) {
		return fmt.Errorf("%w: %w", ErrCleanAborted, err)
	}
	return l.uncleanable(err)
}

// uncleanable logs a clean that cannot proceed on this data and marks the
// log so the cleaner skips it until the log is reopened (Kafka marks such
// partitions uncleanable).
func (l *Log) uncleanable(err error) error {
	l.mu.Lock()
	l.mu.uncleanable = true
	l.mu.Unlock()
	l.logger.Error("storage: log cannot be cleaned; skipping it until restart", "err", err)
	return err
}

// Uncleanable reports whether a clean failed on this log's data.
func (l *Log) Uncleanable() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.uncleanable
}

// emptyKeep is the set of batches (by base offset) kept even when the
// clean removes all their records.
type emptyKeep map[int64]bool

// keepEmptyBatches scans the headers of segs and returns the batches that
// stay, empty if need be, as Kafka's cleaner keeps them: the last data
// batch of every producer (lastOfProducer, by producer id: its base
// offset), so that its epoch and last sequence survive in the log, and
// every transactional batch that may open a transaction (the first one of
// its producer in the range and the first after each of its control
// batches), so that a replay of the range opens and closes transactions
// as the original did. Any other batch left without records goes: some
// clients (kafka-go, segmentio/kafka-go#874) cannot read past a batch with
// no records, so empty batches are kept only where they carry state.
func keepEmptyBatches(segs []segmentView, lastOfProducer map[int64]int64) (emptyKeep, error) {
	keep := emptyKeep{}
	inTxn := map[int64]bool{}
	for _, v := range segs {
		_, err := scanBatches(v.seg.log, 0, v.size, false, func(h batchHeader, _ int64, _ []byte) error {
			if h.ProducerID < 0 {
				return nil
			}
			if h.IsControl() {
				inTxn[h.ProducerID] = false
				return nil
			}
			if h.IsTransactional() && !inTxn[h.ProducerID] {
				keep[h.BaseOffset] = true
				inTxn[h.ProducerID] = true
			}
			if last, ok := lastOfProducer[h.ProducerID]; ok && last == h.BaseOffset {
				keep[h.BaseOffset] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return keep, nil
}

// lastBatchOfProducers returns, by producer id, the base offset of each
// producer's last data batch in the log.
func (l *Log) lastBatchOfProducers() map[int64]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int64]int64, len(l.producers))
	for id, e := range l.producers {
		if e.numBatches > 0 {
			out[id] = e.batches[e.numBatches-1].FirstOffset
		}
	}
	return out
}

// groupSegments splits segs into runs of consecutive segments rewritten
// into one segment each: a run's original size fits segment.bytes and
// its offsets fit the 32-bit relative offsets of the indexes (Kafka's
// groupSegmentsBySize).
func groupSegments(segs []segmentView, cfg LogConfig) [][]segmentView {
	var groups [][]segmentView
	for i := 0; i < len(segs); {
		j := i + 1
		size := segs[i].size
		for j < len(segs) {
			end := segs[j].seg.nextOffset
			if j+1 < len(segs) {
				end = max(end, segs[j+1].seg.baseOffset)
			}
			if size+segs[j].size > cfg.SegmentBytes || size+segs[j].size > maxRelativeOffset ||
				end-segs[i].seg.baseOffset > maxRelativeOffset {
				break
			}
			size += segs[j].size
			j++
		}
		groups = append(groups, segs[i:j])
		i = j
	}
	return groups
}

// groupInput is one source segment of a group.
type groupInput struct {
	view             segmentView
	removeTombstones bool
}

// writeCleaned writes the cleaned copy of a group as .cleaned files
// (log, offset index, time index and, if any entry, transaction index),
// fsynced, and fills out.seg with the new segment, whose files stay open.
func (l *Log) writeCleaned(out *cleanedSegment, inputs []groupInput, offsets *offsetMap, aborted abortedSet, keep emptyKeep, cfg LogConfig, now time.Time, stats *CleanStats) error {
	base := inputs[0].view.seg.baseOffset
	s := newSegmentShell(l.fs, l.Dir(), base, cfg, now)
	s.created = inputs[0].view.seg.created
	out.seg = s
	writeErr := func(err error) error {
		if err == nil {
			return nil
		}
		return fmt.Errorf("%w: %w", errCleanerWrite, err)
	}
	create := func(suffix string) (vfs.File, error) {
		out.files = append(out.files, suffix)
		f, err := l.fs.Create(segmentFileName(l.Dir(), base, suffix) + cleanedSuffix)
		if err != nil {
			return nil, writeErr(err)
		}
		return f, nil
	}
	var err error
	if s.log, err = create(logSuffix); err != nil {
		return err
	}
	var (
		offEntries  []offsetEntry
		timeEntries []timeEntry
		txnEntries  []AbortedTxn
		sinceIndex  int64
		buf         []byte
		pos         int64
		scratch     []rawRecord
	)
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		if _, err := s.log.WriteAt(buf, pos-int64(len(buf))); err != nil {
			return writeErr(err)
		}
		buf = buf[:0]
		return nil
	}
	// emit appends outBatch, the cleaned form of the batch h.
	emit := func(h batchHeader, outBatch []byte) error {
		if pos == 0 {
			s.firstBatchTimestamp = h.MaxTimestamp
		}
		if h.MaxTimestamp > s.maxTimestamp {
			s.maxTimestamp, s.offsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
		}
		if sinceIndex > int64(cfg.IndexIntervalBytes) {
			offEntries = append(offEntries, offsetEntry{RelativeOffset: int32(h.LastOffset() - base), Position: int32(pos)})
			if s.maxTimestamp >= 0 && (len(timeEntries) == 0 || s.maxTimestamp > timeEntries[len(timeEntries)-1].Timestamp) {
				timeEntries = append(timeEntries, timeEntry{Timestamp: s.maxTimestamp, RelativeOffset: int32(s.offsetOfMaxTimestamp - base)})
			}
			sinceIndex = 0
		}
		sinceIndex += int64(len(outBatch))
		buf = append(buf, outBatch...)
		pos += int64(len(outBatch))
		s.nextOffset = h.LastOffset() + 1
		if len(buf) >= 1<<20 {
			return flush()
		}
		return nil
	}
	for _, in := range inputs {
		src := in.view.seg
		txnEntries = append(txnEntries, src.txnIndex.snapshot()...)
		_, err := scanBatches(src.log, 0, in.view.size, true, func(h batchHeader, _ int64, b []byte) error {
			stats.BytesIn += int64(h.TotalSize())
			stats.RecordsIn += int64(h.NumRecords)
			var kept int
			var outBatch []byte
			var err error
			outBatch, kept, scratch, err = filterBatch(b, h, filterInput{
				offsets: offsets, aborted: aborted, removeTombstones: in.removeTombstones, keepEmpty: keep[h.BaseOffset],
			}, scratch)
			if err != nil || outBatch == nil {
				return err
			}
			stats.RecordsOut += int64(kept)
			return emit(h, outBatch)
		})
		if err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	// As at a roll, the time index covers the whole segment.
	if s.maxTimestamp >= 0 && (len(timeEntries) == 0 || s.maxTimestamp > timeEntries[len(timeEntries)-1].Timestamp) {
		timeEntries = append(timeEntries, timeEntry{Timestamp: s.maxTimestamp, RelativeOffset: int32(s.offsetOfMaxTimestamp - base)})
	}
	s.size = pos
	s.bytesSinceLastIndexEntry = sinceIndex
	stats.BytesOut += pos
	if s.offsetIndex.file, err = create(indexSuffix); err != nil {
		return err
	}
	if err := s.offsetIndex.reset(offEntries); err != nil {
		return writeErr(err)
	}
	if s.timeIndex.file, err = create(timeIndexSuffix); err != nil {
		return err
	}
	if err := s.timeIndex.reset(timeEntries); err != nil {
		return writeErr(err)
	}
	if len(txnEntries) > 0 {
		if s.txnIndex.file, err = create(txnIndexSuffix); err != nil {
			return err
		}
		// reset with a file present only rewrites it.
		if _, err := s.txnIndex.reset(txnEntries); err != nil {
			return writeErr(err)
		}
	}
	s.dirty = true
	return writeErr(s.sync())
}

// swapCleaned replaces each group by its cleaned segment, under writeMu,
// with the crash-safe rename protocol of doc.go, after checking that the
// pinned segments are still the log's, unchanged. segs is the whole
// cleaned range and end its end (the new cleaner checkpoint).
func (l *Log) swapCleaned(outs []*cleanedSegment, segs []segmentView, end int64) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	if err := l.checkWritableLocked(); err != nil {
		l.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrCleanAborted, err)
	}
	l.mu.Unlock()
	if l.changedUnder(segs) {
		return ErrCleanAborted
	}
	for i, o := range outs {
		if err := l.swapSegmentLocked(o); err != nil {
			// Groups already swapped stay swapped; this one is left to
			// recovery, and the log goes offline.
			for _, rest := range outs[i+1:] {
				rest.seg.closeFiles()
			}
			return l.fail(err)
		}
	}
	l.mu.Lock()
	l.mu.cleanerCheckpoint = max(l.mu.cleanerCheckpoint, end)
	l.mu.Unlock()
	return nil
}

// swapSegmentLocked runs the rename protocol for one group:
//
//  1. (done) the cleaned files are written and fsynced as "<name>.cleaned";
//  2. rename them to "<name>.swap", the .log last, and sync the directory
//     in between: a .log.swap implies every .swap file of the group;
//  3. rename every file of the replaced segments to "<name>.deleted",
//     sync the directory;
//  4. rename "<base>.log.swap" to its final name, sync, then the indexes;
//  5. publish the new segment list, then remove the .deleted files (pinned
//     readers keep their open handles).
//
// REQUIRES: l.writeMu held.
func (l *Log) swapSegmentLocked(o *cleanedSegment) error {
	base := o.seg.baseOffset
	name := func(suffix string) string { return segmentFileName(l.Dir(), base, suffix) }
	rename := func(from, to string) error {
		if err := l.fs.Rename(from, to); err != nil {
			return fmt.Errorf("storage: rename %s: %w", filepath.Base(from), err)
		}
		return nil
	}
	syncDir := func() error {
		if err := l.fs.SyncDir(l.Dir()); err != nil {
			return fmt.Errorf("storage: sync log dir: %w", err)
		}
		return nil
	}
	indexes := make([]string, 0, len(o.files))
	for _, suffix := range o.files {
		if suffix != logSuffix {
			indexes = append(indexes, suffix)
		}
	}
	// Step 2.
	for _, suffix := range indexes {
		if err := rename(name(suffix)+cleanedSuffix, name(suffix)+swapSuffix); err != nil {
			return err
		}
	}
	if err := syncDir(); err != nil {
		return err
	}
	if err := rename(name(logSuffix)+cleanedSuffix, name(logSuffix)+swapSuffix); err != nil {
		return err
	}
	if err := syncDir(); err != nil {
		return err
	}
	// Step 3.
	var deleted []string
	for _, old := range o.group {
		for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			n := segmentFileName(l.Dir(), old.baseOffset, suffix)
			if !l.fs.Exists(n) {
				continue
			}
			if err := rename(n, n+deletedSuffix); err != nil {
				return err
			}
			deleted = append(deleted, n+deletedSuffix)
		}
	}
	if err := syncDir(); err != nil {
		return err
	}
	// Step 4.
	if err := rename(name(logSuffix)+swapSuffix, name(logSuffix)); err != nil {
		return err
	}
	if err := syncDir(); err != nil {
		return err
	}
	for _, suffix := range indexes {
		if err := rename(name(suffix)+swapSuffix, name(suffix)); err != nil {
			return err
		}
	}
	if err := syncDir(); err != nil {
		return err
	}
	// Step 5.
	l.mu.Lock()
	cur := l.mu.segments
	i := 0
	for cur[i] != o.group[0] {
		i++
	}
	next := make([]*segment, 0, len(cur)-len(o.group)+1)
	next = append(next, cur[:i]...)
	next = append(next, o.seg)
	next = append(next, cur[i+len(o.group):]...)
	l.mu.segments = next
	l.mu.Unlock()
	for _, old := range o.group {
		old.retire()
	}
	for _, n := range deleted {
		if err := l.fs.Remove(n); err != nil {
			return fmt.Errorf("storage: remove %s: %w", filepath.Base(n), err)
		}
	}
	return nil
}

// retire marks a segment replaced by a clean: its files (already renamed)
// close when the last reader releases them.
func (s *segment) retire() {
	if s.markDeleted() {
		s.closeFiles()
	}
}

// completeSwaps finishes or rolls back, on open, a clean interrupted by a
// crash (doc.go, "Compaction"), then removes the .cleaned and .deleted
// files. For each "<base>.log.swap": every .swap file of the group was
// written and synced, so the swap is completed: the segments whose base
// offset lies in [base, end of the swapped log) are deleted and the .swap
// files renamed to their final names. .swap files without a .log.swap are
// from an interrupted step 2 (a "<base>.log.cleaned" is left: the old
// segment is intact, so they are deleted) or step 4 (no .log.cleaned: the
// new .log is in place, so they are renamed).
func (l *Log) completeSwaps() error {
	names, err := l.fs.ReadDir(l.Dir())
	if err != nil {
		return fmt.Errorf("storage: list log dir: %w", err)
	}
	present := map[string]bool{}
	for _, n := range names {
		present[n] = true
	}
	stem := func(n string) (int64, bool) { // base of "<base>.<ext>[.suffix]"
		i := strings.IndexByte(n, '.')
		if i != 20 {
			return 0, false
		}
		return parseSegmentBase(n[:i] + logSuffix)
	}
	var swappedLogs []int64
	otherSwaps := map[int64][]string{}
	for _, n := range names {
		if !strings.HasSuffix(n, swapSuffix) {
			continue
		}
		base, ok := stem(n)
		if !ok {
			continue
		}
		if n == filepath.Base(segmentFileName(l.Dir(), base, logSuffix))+swapSuffix {
			swappedLogs = append(swappedLogs, base)
		} else {
			otherSwaps[base] = append(otherSwaps[base], n)
		}
	}
	changed := false
	for _, base := range swappedLogs {
		swapName := segmentFileName(l.Dir(), base, logSuffix) + swapSuffix
		f, err := l.fs.Open(swapName)
		if err != nil {
			return fmt.Errorf("storage: open %s: %w", filepath.Base(swapName), err)
		}
		size, err := f.Size()
		if err != nil {
			f.Close()
			return fmt.Errorf("storage: stat %s: %w", filepath.Base(swapName), err)
		}
		end := base
		_, err = scanBatches(f, 0, size, true, func(h batchHeader, _ int64, _ []byte) error {
			end = h.LastOffset() + 1
			return nil
		})
		f.Close()
		if err != nil {
			return fmt.Errorf("storage: interrupted clean: %s: %w", filepath.Base(swapName), err)
		}
		l.logger.Warn("storage: completing a clean interrupted by a crash", "segment", base, "end", end)
		for _, n := range names {
			old, ok := parseSegmentBase(n)
			if !ok || old < base || old >= end {
				continue
			}
			for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
				if p := segmentFileName(l.Dir(), old, suffix); present[filepath.Base(p)] {
					if err := l.fs.Remove(p); err != nil {
						return fmt.Errorf("storage: remove replaced segment file: %w", err)
					}
					present[filepath.Base(p)] = false
				}
			}
		}
		if err := l.fs.SyncDir(l.Dir()); err != nil {
			return fmt.Errorf("storage: sync log dir: %w", err)
		}
		if err := l.fs.Rename(swapName, segmentFileName(l.Dir(), base, logSuffix)); err != nil {
			return fmt.Errorf("storage: complete swap: %w", err)
		}
		if err := l.fs.SyncDir(l.Dir()); err != nil {
			return fmt.Errorf("storage: sync log dir: %w", err)
		}
		for _, n := range otherSwaps[base] {
			if err := l.fs.Rename(filepath.Join(l.Dir(), n), filepath.Join(l.Dir(), strings.TrimSuffix(n, swapSuffix))); err != nil {
				return fmt.Errorf("storage: complete swap: %w", err)
			}
		}
		delete(otherSwaps, base)
		changed = true
	}
	for base, swaps := range otherSwaps {
		step2 := present[filepath.Base(segmentFileName(l.Dir(), base, logSuffix))+cleanedSuffix]
		for _, n := range swaps {
			p := filepath.Join(l.Dir(), n)
			if step2 {
				if err := l.fs.Remove(p); err != nil {
					return fmt.Errorf("storage: remove %s: %w", n, err)
				}
			} else if err := l.fs.Rename(p, strings.TrimSuffix(p, swapSuffix)); err != nil {
				return fmt.Errorf("storage: complete swap: %w", err)
			}
		}
		changed = true
	}
	for _, n := range names {
		if strings.HasSuffix(n, cleanedSuffix) || strings.HasSuffix(n, deletedSuffix) {
			if err := l.fs.Remove(filepath.Join(l.Dir(), n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("storage: remove leftover %s: %w", n, err)
			}
			changed = true
		}
	}
	if changed {
		if err := l.fs.SyncDir(l.Dir()); err != nil {
			return fmt.Errorf("storage: sync log dir: %w", err)
		}
	}
	return nil
}
