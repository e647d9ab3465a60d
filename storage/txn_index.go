package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// txnIndexEntrySize is the size of one .txnindex entry, Kafka's layout:
// version int16 (0), producer id int64, first offset int64, last offset
// int64, last stable offset int64, big-endian.
const txnIndexEntrySize = 34

// txnIndexVersion is the entry version Kafka writes and the only one read.
const txnIndexVersion = 0

// AbortedTxn is an aborted transaction of one producer: its first offset
// in the partition, the offset of its abort marker (LastOffset), and the
// last stable offset right after the marker was appended (the first offset
// of the oldest transaction still open then, or LastOffset+1).
type AbortedTxn struct {
	ProducerID, FirstOffset, LastOffset, LastStableOffset int64
}

// txnIndex is the aborted transaction index of one segment: the aborted
// transactions whose abort marker lies in the segment, in marker order.
// Like offsetIndex, the entries live in memory and the file is their
// append-only copy; unlike the other indexes the file is created only
// when the first entry is written, as Kafka does.
type txnIndex struct {
	fs   vfs.FS
	name string
	// file is nil until the first entry. REQUIRES: Log.writeMu.
	file vfs.File

	mu      sync.Mutex // guards entries; writers also hold the Log's writeMu
	entries []AbortedTxn
}

func encodeTxnEntry(dst []byte, e AbortedTxn) []byte {
	be := binary.BigEndian
	dst = be.AppendUint16(dst, txnIndexVersion)
	dst = be.AppendUint64(dst, uint64(e.ProducerID))
	dst = be.AppendUint64(dst, uint64(e.FirstOffset))
	dst = be.AppendUint64(dst, uint64(e.LastOffset))
	return be.AppendUint64(dst, uint64(e.LastStableOffset))
}

// parseTxnIndex decodes and checks a .txnindex file: whole entries of
// version 0, first offset <= last offset, last offsets increasing.
func parseTxnIndex(b []byte) ([]AbortedTxn, error) {
	if len(b)%txnIndexEntrySize != 0 {
		return nil, fmt.Errorf("%w: transaction index size %d is not a multiple of %d", ErrCorrupt, len(b), txnIndexEntrySize)
	}
	be := binary.BigEndian
	entries := make([]AbortedTxn, 0, len(b)/txnIndexEntrySize)
	for i := 0; i < len(b); i += txnIndexEntrySize {
		if v := int16(be.Uint16(b[i:])); v != txnIndexVersion {
			return nil, fmt.Errorf("%w: transaction index entry %d has version %d", ErrCorrupt, i/txnIndexEntrySize, v)
		}
		e := AbortedTxn{
			ProducerID:       int64(be.Uint64(b[i+2:])),
			FirstOffset:      int64(be.Uint64(b[i+10:])),
			LastOffset:       int64(be.Uint64(b[i+18:])),
			LastStableOffset: int64(be.Uint64(b[i+26:])),
		}
		if e.FirstOffset < 0 || e.FirstOffset > e.LastOffset || e.ProducerID < 0 {
			return nil, fmt.Errorf("%w: transaction index entry %d: %+v", ErrCorrupt, i/txnIndexEntrySize, e)
		}
		if n := len(entries); n > 0 && e.LastOffset <= entries[n-1].LastOffset {
			return nil, fmt.Errorf("%w: transaction index entry %d out of order", ErrCorrupt, i/txnIndexEntrySize)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// openTxnIndex reads the .txnindex file of a segment if there is one.
// suspect reports an unreadable file: its entries are dropped and must be
// rebuilt by replaying the segment.
func openTxnIndex(fsys vfs.FS, dir string, base int64) (ix *txnIndex, suspect bool, err error) {
	ix = &txnIndex{fs: fsys, name: segmentFileName(dir, base, txnIndexSuffix)}
	if !fsys.Exists(ix.name) {
		return ix, false, nil
	}
	if ix.file, err = fsys.OpenReadWrite(ix.name); err != nil {
		return nil, false, fmt.Errorf("storage: open transaction index: %w", err)
	}
	n, err := ix.file.Size()
	if err != nil {
		ix.file.Close()
		return nil, false, fmt.Errorf("storage: stat transaction index: %w", err)
	}
	b := make([]byte, n)
	if _, err := ix.file.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		ix.file.Close()
		return nil, false, fmt.Errorf("storage: read transaction index: %w", err)
	}
	entries, err := parseTxnIndex(b)
	if err != nil {
		return ix, true, nil
	}
	for _, e := range entries {
		if e.LastOffset < base {
			return ix, true, nil
		}
	}
	ix.entries = entries
	return ix, false, nil
}

// snapshot returns the entries (the slice is never modified in place).
func (ix *txnIndex) snapshot() []AbortedTxn {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.entries
}

// write appends entries to the file, creating it if needed (created
// reports that, so the caller syncs the directory). It does not publish
// them: see publish.
// REQUIRES: Log.writeMu held.
func (ix *txnIndex) write(entries []AbortedTxn) (created bool, err error) {
	if ix.file == nil {
		if ix.file, err = ix.fs.Create(ix.name); err != nil {
			ix.file = nil
			return false, fmt.Errorf("storage: create transaction index: %w", err)
		}
		created = true
	}
	buf := make([]byte, 0, len(entries)*txnIndexEntrySize)
	for _, e := range entries {
		buf = encodeTxnEntry(buf, e)
	}
	n := len(ix.snapshot())
	if _, err := ix.file.WriteAt(buf, int64(n)*txnIndexEntrySize); err != nil {
		return created, fmt.Errorf("storage: write transaction index: %w", err)
	}
	return created, nil
}

// publish makes written entries visible to readers.
// REQUIRES: Log.writeMu held.
func (ix *txnIndex) publish(entries []AbortedTxn) {
	if len(entries) == 0 {
		return
	}
	ix.mu.Lock()
	// Copy on write: readers may hold the old slice.
	next := make([]AbortedTxn, 0, len(ix.entries)+len(entries))
	ix.entries = append(append(next, ix.entries...), entries...)
	ix.mu.Unlock()
}

// truncateTo drops the entries whose marker is at or after offset.
// REQUIRES: Log.writeMu held.
func (ix *txnIndex) truncateTo(offset int64) error {
	entries := ix.snapshot()
	i := sort.Search(len(entries), func(i int) bool { return entries[i].LastOffset >= offset })
	if i == len(entries) {
		return nil
	}
	ix.mu.Lock()
	ix.entries = entries[:i:i]
	ix.mu.Unlock()
	if err := ix.file.Truncate(int64(i) * txnIndexEntrySize); err != nil {
		return fmt.Errorf("storage: truncate transaction index: %w", err)
	}
	return nil
}

// reset replaces all entries and rewrites the file (created as for write).
// REQUIRES: Log.writeMu held.
func (ix *txnIndex) reset(entries []AbortedTxn) (created bool, err error) {
	if ix.file == nil {
		if len(entries) == 0 {
			return false, nil
		}
		if ix.file, err = ix.fs.Create(ix.name); err != nil {
			ix.file = nil
			return false, fmt.Errorf("storage: create transaction index: %w", err)
		}
		created = true
	}
	buf := make([]byte, 0, len(entries)*txnIndexEntrySize)
	for _, e := range entries {
		buf = encodeTxnEntry(buf, e)
	}
	if err := ix.file.Truncate(0); err != nil {
		return created, fmt.Errorf("storage: truncate transaction index: %w", err)
	}
	if _, err := ix.file.WriteAt(buf, 0); err != nil {
		return created, fmt.Errorf("storage: write transaction index: %w", err)
	}
	ix.mu.Lock()
	ix.entries = entries
	ix.mu.Unlock()
	return created, nil
}

// collect appends to out the entries whose range [FirstOffset, LastOffset]
// overlaps [from, upTo). complete reports an entry whose last stable offset
// is >= upTo: every transaction aborted after it started at or after that
// offset, so later segments need not be searched (Kafka's
// TxnIndexSearchResult.isComplete).
func (ix *txnIndex) collect(from, upTo int64, out []AbortedTxn) ([]AbortedTxn, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	i := sort.Search(len(ix.entries), func(i int) bool { return ix.entries[i].LastOffset >= from })
	for _, e := range ix.entries[i:] {
		if e.FirstOffset < upTo {
			out = append(out, e)
		}
		if e.LastStableOffset >= upTo {
			return out, true
		}
	}
	return out, false
}

func (ix *txnIndex) sync() error {
	if ix.file == nil {
		return nil
	}
	if err := ix.file.Sync(); err != nil {
		return fmt.Errorf("storage: sync transaction index: %w", err)
	}
	return nil
}
