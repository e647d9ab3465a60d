package storage

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// timeIndexEntrySize is the size of one .timeindex entry: int64 timestamp,
// int32 offset relative to the segment base.
const timeIndexEntrySize = 12

// timeEntry says that the records up to and including RelativeOffset have
// timestamps <= Timestamp (the largest timestamp seen so far in the segment
// and the offset of the batch that carried it).
type timeEntry struct {
	Timestamp      int64
	RelativeOffset int32
}

// timeIndex is the sparse time index of one segment, kept like offsetIndex.
type timeIndex struct {
	file       vfs.File
	baseOffset int64
	maxEntries int

	mu      sync.Mutex // guards entries; writers also hold the Log's writeMu
	entries []timeEntry
}

// parseTimeIndex decodes and checks the bytes of a .timeindex file: whole
// entries, non-decreasing timestamps and offsets. Trailing zero entries
// (preallocated by Kafka) are dropped.
func parseTimeIndex(b []byte) ([]timeEntry, error) {
	if len(b)%timeIndexEntrySize != 0 {
		return nil, fmt.Errorf("%w: time index size %d is not a multiple of %d", ErrCorrupt, len(b), timeIndexEntrySize)
	}
	entries := make([]timeEntry, 0, len(b)/timeIndexEntrySize)
	for i := 0; i < len(b); i += timeIndexEntrySize {
		e := timeEntry{
			Timestamp:      int64(binary.BigEndian.Uint64(b[i:])),
			RelativeOffset: int32(binary.BigEndian.Uint32(b[i+8:])),
		}
		if e.Timestamp == 0 && e.RelativeOffset == 0 && i > 0 {
			break
		}
		if e.RelativeOffset < 0 {
			return nil, fmt.Errorf("%w: negative time index offset in entry %d", ErrCorrupt, i/timeIndexEntrySize)
		}
		if n := len(entries); n > 0 && (e.Timestamp < entries[n-1].Timestamp || e.RelativeOffset < entries[n-1].RelativeOffset) {
			return nil, fmt.Errorf("%w: time index entry %d out of order", ErrCorrupt, i/timeIndexEntrySize)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

func encodeTimeEntry(e timeEntry) []byte {
	var b [timeIndexEntrySize]byte
	binary.BigEndian.PutUint64(b[0:], uint64(e.Timestamp))
	binary.BigEndian.PutUint32(b[8:], uint32(e.RelativeOffset))
	return b[:]
}

// lookup returns an offset from which a scan for the first record with a
// timestamp >= ts may start: every record before it has a smaller timestamp.
func (ix *timeIndex) lookup(ts int64) int64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	i := sort.Search(len(ix.entries), func(i int) bool { return ix.entries[i].Timestamp >= ts })
	if i == 0 {
		return ix.baseOffset
	}
	return ix.baseOffset + int64(ix.entries[i-1].RelativeOffset)
}

func (ix *timeIndex) len() int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return len(ix.entries)
}

func (ix *timeIndex) last() (timeEntry, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if len(ix.entries) == 0 {
		return timeEntry{}, false
	}
	return ix.entries[len(ix.entries)-1], true
}

func (ix *timeIndex) isFull() bool { return ix.len() >= ix.maxEntries }

// maybeAppend adds (ts, offset) if ts is larger than the last entry's.
func (ix *timeIndex) maybeAppend(ts, offset int64) error {
	if ts < 0 {
		return nil
	}
	last, ok := ix.last()
	if ok && (ts <= last.Timestamp || offset-ix.baseOffset < int64(last.RelativeOffset)) {
		return nil
	}
	e := timeEntry{Timestamp: ts, RelativeOffset: int32(offset - ix.baseOffset)}
	n := ix.len()
	if _, err := ix.file.WriteAt(encodeTimeEntry(e), int64(n)*timeIndexEntrySize); err != nil {
		return fmt.Errorf("storage: write time index: %w", err)
	}
	ix.mu.Lock()
	ix.entries = append(ix.entries, e)
	ix.mu.Unlock()
	return nil
}

// truncateToOffset drops the entries whose offset is >= offset.
func (ix *timeIndex) truncateToOffset(offset int64) error {
	ix.mu.Lock()
	rel := offset - ix.baseOffset
	i := sort.Search(len(ix.entries), func(i int) bool { return int64(ix.entries[i].RelativeOffset) >= rel })
	ix.entries = ix.entries[:i:i]
	ix.mu.Unlock()
	if err := ix.file.Truncate(int64(i) * timeIndexEntrySize); err != nil {
		return fmt.Errorf("storage: truncate time index: %w", err)
	}
	return nil
}

func (ix *timeIndex) reset(entries []timeEntry) error {
	buf := make([]byte, 0, len(entries)*timeIndexEntrySize)
	for _, e := range entries {
		buf = append(buf, encodeTimeEntry(e)...)
	}
	if err := ix.file.Truncate(0); err != nil {
		return fmt.Errorf("storage: truncate time index: %w", err)
	}
	if _, err := ix.file.WriteAt(buf, 0); err != nil {
		return fmt.Errorf("storage: write time index: %w", err)
	}
	ix.mu.Lock()
	ix.entries = entries
	ix.mu.Unlock()
	return nil
}
