package storage

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// offsetIndexEntrySize is the size of one .index entry: int32 offset
// relative to the segment base, int32 file position of a batch.
const offsetIndexEntrySize = 8

// offsetEntry maps the last offset of a batch to the batch's position.
type offsetEntry struct {
	RelativeOffset int32
	Position       int32
}

// offsetIndex is the sparse offset index of one segment. The entries live in
// memory (sorted by offset and by position); the file is their append-only
// on-disk copy, rebuilt from the log whenever it is missing or suspect.
type offsetIndex struct {
	file       vfs.File
	baseOffset int64
	maxEntries int

	mu      sync.Mutex // guards entries; writers also hold the Log's writeMu
	entries []offsetEntry
}

// parseOffsetIndex decodes and checks the bytes of a .index file: whole
// entries, strictly increasing offsets and non-decreasing positions.
// Trailing all-zero entries (Kafka preallocates index files) are dropped.
func parseOffsetIndex(b []byte) ([]offsetEntry, error) {
	if len(b)%offsetIndexEntrySize != 0 {
		return nil, fmt.Errorf("%w: offset index size %d is not a multiple of %d", ErrCorrupt, len(b), offsetIndexEntrySize)
	}
	entries := make([]offsetEntry, 0, len(b)/offsetIndexEntrySize)
	for i := 0; i < len(b); i += offsetIndexEntrySize {
		e := offsetEntry{
			RelativeOffset: int32(binary.BigEndian.Uint32(b[i:])),
			Position:       int32(binary.BigEndian.Uint32(b[i+4:])),
		}
		if e.RelativeOffset == 0 && e.Position == 0 && i > 0 {
			break // preallocated tail
		}
		if e.RelativeOffset < 0 || e.Position < 0 {
			return nil, fmt.Errorf("%w: negative offset index entry %d", ErrCorrupt, i/offsetIndexEntrySize)
		}
		if n := len(entries); n > 0 && (e.RelativeOffset <= entries[n-1].RelativeOffset || e.Position < entries[n-1].Position) {
			return nil, fmt.Errorf("%w: offset index entry %d out of order", ErrCorrupt, i/offsetIndexEntrySize)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

func encodeOffsetEntry(e offsetEntry) []byte {
	var b [offsetIndexEntrySize]byte
	binary.BigEndian.PutUint32(b[0:], uint32(e.RelativeOffset))
	binary.BigEndian.PutUint32(b[4:], uint32(e.Position))
	return b[:]
}

// lookup returns the position of the last indexed batch whose last offset is
// <= offset, or 0: the batch holding offset starts at or after it.
func (ix *offsetIndex) lookup(offset int64) int64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	rel := offset - ix.baseOffset
	i := sort.Search(len(ix.entries), func(i int) bool { return int64(ix.entries[i].RelativeOffset) > rel })
	if i == 0 {
		return 0
	}
	return int64(ix.entries[i-1].Position)
}

func (ix *offsetIndex) len() int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return len(ix.entries)
}

func (ix *offsetIndex) last() (offsetEntry, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if len(ix.entries) == 0 {
		return offsetEntry{}, false
	}
	return ix.entries[len(ix.entries)-1], true
}

func (ix *offsetIndex) isFull() bool { return ix.len() >= ix.maxEntries }

// append adds an entry for the batch ending at lastOffset stored at position.
func (ix *offsetIndex) append(lastOffset, position int64) error {
	e := offsetEntry{RelativeOffset: int32(lastOffset - ix.baseOffset), Position: int32(position)}
	n := ix.len()
	if _, err := ix.file.WriteAt(encodeOffsetEntry(e), int64(n)*offsetIndexEntrySize); err != nil {
		return fmt.Errorf("storage: write offset index: %w", err)
	}
	ix.mu.Lock()
	ix.entries = append(ix.entries, e)
	ix.mu.Unlock()
	return nil
}

// truncateToPosition drops the entries of batches at or after position.
func (ix *offsetIndex) truncateToPosition(position int64) error {
	ix.mu.Lock()
	i := sort.Search(len(ix.entries), func(i int) bool { return int64(ix.entries[i].Position) >= position })
	ix.entries = ix.entries[:i:i]
	ix.mu.Unlock()
	if err := ix.file.Truncate(int64(i) * offsetIndexEntrySize); err != nil {
		return fmt.Errorf("storage: truncate offset index: %w", err)
	}
	return nil
}

// reset replaces all entries (used by rebuild) and rewrites the file.
func (ix *offsetIndex) reset(entries []offsetEntry) error {
	buf := make([]byte, 0, len(entries)*offsetIndexEntrySize)
	for _, e := range entries {
		buf = append(buf, encodeOffsetEntry(e)...)
	}
	if err := ix.file.Truncate(0); err != nil {
		return fmt.Errorf("storage: truncate offset index: %w", err)
	}
	if _, err := ix.file.WriteAt(buf, 0); err != nil {
		return fmt.Errorf("storage: write offset index: %w", err)
	}
	ix.mu.Lock()
	ix.entries = entries
	ix.mu.Unlock()
	return nil
}
