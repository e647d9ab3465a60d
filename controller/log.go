package controller

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"sync"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// MetadataLog is the ordered, durable log of metadata records. The
// controller talks only to this interface, so the single-file log can be
// swapped for a Raft-replicated one.
type MetadataLog interface {
	// Append durably stores recs as one batch and returns the offset of the
	// last one. Offsets are dense and start at 0.
	Append(recs []Record) (lastOffset int64, err error)
	// Replay calls fn for each stored record in offset order.
	Replay(fn func(offset int64, rec Record) error) error
	Close() error
}

// File format constants; see doc.go.
const (
	fileMagic      = "SAMSAMDL"
	fileVersion    = uint16(2)              // written by this build
	fileVersionV1  = uint16(1)              // one frame per record, no batches; migrated on open
	fileHeaderSize = len(fileMagic) + 2 + 8 // magic, version, base offset
	frameHeader    = 4 + 4 + 1 + 1          // v1 frame: length, crc, version, type
	maxFrameSize   = 64 << 20
	batchHeader    = 4 + 4 + 4 // length, crc, record count
	recordHeader   = 4 + 1 + 1 // length, version, type
	// maxBatchSize bounds one Append (all its records). A torn write can
	// only damage the last append, so a damaged region longer than this is
	// corruption, not a torn tail.
	maxBatchSize = 64 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// FileLog is a MetadataLog in one local file, fsynced on every Append. It is
// safe for concurrent use.
type FileLog struct {
	mu struct {
		sync.Mutex
		f      vfs.File
		size   int64 // bytes of valid data, header included
		next   int64 // offset of the next record
		failed error
	}
	fs         vfs.FS
	path       string
	baseOffset int64
	truncated  int64
	migrated   int64 // records rewritten from a version 1 file at open
}

// OpenFileLog opens or creates the metadata log at path. A new file gets a
// header. On open the batches are checked and a torn tail (the last
// append, cut short or with a bad CRC) is cut off and the file is fsynced;
// Truncated reports how many bytes were dropped. Damage anywhere else is
// ErrCorrupt: it cannot come from a crash, and cutting there would drop
// committed metadata silently. A version 1 file is rewritten in version 2
// first (see doc.go, Migration).
func OpenFileLog(path string) (*FileLog, error) { return OpenFileLogFS(vfs.OS, path) }

// OpenFileLogFS is OpenFileLog on the given file system (tests use an
// in-memory one to simulate crashes and IO errors).
func OpenFileLogFS(fsys vfs.FS, path string) (*FileLog, error) {
	// A migration that crashed before its rename leaves its temporary file;
	// the original is intact, so start the migration over.
	if tmp := path + migrateSuffix; fsys.Exists(tmp) {
		if err := fsys.Remove(tmp); err != nil {
			return nil, fmt.Errorf("controller: remove unfinished metadata log migration: %w", err)
		}
	}
	migrated, err := migrateV1(fsys, path)
	if err != nil {
		return nil, err
	}
	var f vfs.File
	created := !fsys.Exists(path)
	if created {
		f, err = fsys.Create(path)
	} else {
		f, err = fsys.OpenReadWrite(path)
	}
	if err != nil {
		return nil, fmt.Errorf("controller: open metadata log: %w", err)
	}
	l := &FileLog{fs: fsys, path: path, migrated: migrated}
	l.mu.f = f
	if err := l.recover(); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// readHeader returns the version and base offset of a file's header.
func readHeader(f vfs.File, path string) (version uint16, base int64, err error) {
	hdr := make([]byte, fileHeaderSize)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return 0, 0, fmt.Errorf("controller: read metadata log header: %w", err)
	}
	if string(hdr[:len(fileMagic)]) != fileMagic {
		return 0, 0, fmt.Errorf("%w: %s: bad magic", ErrCorrupt, path)
	}
	version = binary.BigEndian.Uint16(hdr[len(fileMagic):])
	return version, int64(binary.BigEndian.Uint64(hdr[len(fileMagic)+2:])), nil
}

// recover writes the header of a new file or validates an existing one.
func (l *FileLog) recover() error {
	f := l.mu.f
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("controller: stat metadata log: %w", err)
	}
	if size < int64(fileHeaderSize) {
		// New file, or a crash while the header was written: nothing was ever
		// appended, so start over.
		return l.writeHeader()
	}
	version, base, err := readHeader(f, l.path)
	if err != nil {
		return err
	}
	if version != fileVersion {
		return fmt.Errorf("%w: %s: file version %d", ErrUnsupportedVersion, l.path, version)
	}
	l.baseOffset = base
	valid, count, err := scanBatches(f, int64(fileHeaderSize), size, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", l.path, err)
	}
	end := int64(fileHeaderSize) + valid
	if end < size {
		l.truncated = size - end
		if err := f.Truncate(end); err != nil {
			return fmt.Errorf("controller: truncate torn metadata log tail: %w", err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("controller: sync metadata log: %w", err)
		}
	}
	l.mu.size = end
	l.mu.next = l.baseOffset + count
	return nil
}

func (l *FileLog) writeHeader() error {
	f := l.mu.f
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("controller: init metadata log: %w", err)
	}
	if _, err := f.WriteAt(appendHeader(nil, fileVersion, 0), 0); err != nil {
		return fmt.Errorf("controller: write metadata log header: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("controller: sync metadata log: %w", err)
	}
	if err := l.fs.SyncDir(filepath.Dir(l.path)); err != nil {
		return fmt.Errorf("controller: sync metadata log dir: %w", err)
	}
	l.mu.size = int64(fileHeaderSize)
	return nil
}

func appendHeader(buf []byte, version uint16, base int64) []byte {
	buf = append(buf, fileMagic...)
	buf = binary.BigEndian.AppendUint16(buf, version)
	return binary.BigEndian.AppendUint64(buf, uint64(base))
}

// migrateSuffix names the temporary file of a version 1 → 2 migration.
const migrateSuffix = ".migrate"

// migrateV1 rewrites a version 1 log at path as version 2 and returns how
// many records it holds (0 when path is not a version 1 log). Version 1
// kept no batch boundaries and recovered record by record, so each of its
// records becomes a batch of one: replay is exactly what version 1 gave.
// The new file is written beside the old one, fsynced and renamed over
// it, and the directory is fsynced, so a crash leaves one or the other.
func migrateV1(fsys vfs.FS, path string) (int64, error) {
	if !fsys.Exists(path) {
		return 0, nil
	}
	old, err := fsys.Open(path)
	if err != nil {
		return 0, fmt.Errorf("controller: open metadata log: %w", err)
	}
	defer old.Close()
	size, err := old.Size()
	if err != nil {
		return 0, fmt.Errorf("controller: stat metadata log: %w", err)
	}
	if size < int64(fileHeaderSize) {
		return 0, nil
	}
	version, base, err := readHeader(old, path)
	if err != nil || version != fileVersionV1 {
		return 0, err // recover reports other versions
	}
	tmp := path + migrateSuffix
	nf, err := fsys.Create(tmp)
	if err != nil {
		return 0, fmt.Errorf("controller: migrate metadata log: %w", err)
	}
	defer nf.Close()
	buf := appendHeader(nil, fileVersion, base)
	pos := int64(0)
	flush := func() error {
		if _, err := nf.WriteAt(buf, pos); err != nil {
			return err
		}
		pos += int64(len(buf))
		buf = buf[:0]
		return nil
	}
	_, count, err := scanFrames(io.NewSectionReader(old, int64(fileHeaderSize), size-int64(fileHeaderSize)), func(_ int64, rec Record) error {
		var err error
		if buf, err = appendBatch(buf, []Record{rec}); err != nil {
			return err
		}
		if len(buf) >= 1<<20 {
			return flush()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("controller: migrate metadata log %s from version 1: %w", path, err)
	}
	if err := flush(); err != nil {
		return 0, fmt.Errorf("controller: migrate metadata log: %w", err)
	}
	if err := nf.Sync(); err != nil {
		return 0, fmt.Errorf("controller: migrate metadata log: %w", err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return 0, fmt.Errorf("controller: migrate metadata log: %w", err)
	}
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		return 0, fmt.Errorf("controller: migrate metadata log: %w", err)
	}
	return count, nil
}

// scanFrames reads version 1 frames from r until the first one that is
// short or fails its CRC, calling fn (if non-nil) with each decoded record.
// It returns the byte length of the valid prefix and the number of frames
// in it. A frame whose CRC matches but whose content cannot be decoded is
// not a torn write, so it is returned as an error rather than truncated.
// Only the migration of version 1 files uses it.
func scanFrames(r io.Reader, fn func(i int64, rec Record) error) (valid int64, count int64, err error) {
	br := bufio.NewReader(r)
	var head [frameHeader]byte
	for {
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return valid, count, nil // clean end or torn header
		}
		length := binary.BigEndian.Uint32(head[0:])
		sum := binary.BigEndian.Uint32(head[4:])
		if length < 2 || length > maxFrameSize {
			return valid, count, nil // garbage length: treat as torn
		}
		// Read through a LimitReader rather than allocating length bytes up
		// front: a torn length field can claim up to maxFrameSize.
		payload, err := io.ReadAll(io.LimitReader(br, int64(length)-2))
		if err != nil || len(payload) != int(length)-2 {
			return valid, count, nil // torn payload
		}
		crc := crc32.Update(crc32.Checksum(head[8:10], crcTable), crcTable, payload)
		if crc != sum {
			return valid, count, nil
		}
		rec, err := decodeRecord(int8(head[8]), RecordType(head[9]), payload)
		if err != nil {
			return valid, count, fmt.Errorf("frame %d: %w", count, err)
		}
		if fn != nil {
			if err := fn(count, rec); err != nil {
				return valid, count, err
			}
		}
		valid += int64(frameHeader) + int64(length) - 2
		count++
	}
}

// appendFrame appends the version 1 frame of rec to buf (tests and the
// migration's tests write version 1 files with it).
func appendFrame(buf []byte, rec Record) ([]byte, error) {
	payload, err := encodeRecord(rec)
	if err != nil {
		return buf, err
	}
	if len(payload)+2 > maxFrameSize {
		return buf, fmt.Errorf("controller: record of %d bytes exceeds frame limit", len(payload))
	}
	vt := []byte{byte(payloadVersion(rec)), byte(rec.recordType())}
	crc := crc32.Update(crc32.Checksum(vt, crcTable), crcTable, payload)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(payload)+2))
	buf = binary.BigEndian.AppendUint32(buf, crc)
	buf = append(buf, vt...)
	return append(buf, payload...), nil
}

// appendBatch appends one batch holding recs (at least one) to buf.
func appendBatch(buf []byte, recs []Record) ([]byte, error) {
	if len(recs) == 0 {
		return buf, nil
	}
	start := len(buf)
	buf = append(buf, make([]byte, batchHeader)...)
	for _, rec := range recs {
		payload, err := encodeRecord(rec)
		if err != nil {
			return buf[:start], err
		}
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(payload)+2))
		buf = append(buf, byte(payloadVersion(rec)), byte(rec.recordType()))
		buf = append(buf, payload...)
		if len(buf)-start > maxBatchSize {
			return buf[:start], fmt.Errorf("%w: more than %d bytes", ErrBatchTooLarge, maxBatchSize)
		}
	}
	body := buf[start+8:]
	binary.BigEndian.PutUint32(buf[start+8:], uint32(len(recs)))
	binary.BigEndian.PutUint32(buf[start:], uint32(len(body)))
	binary.BigEndian.PutUint32(buf[start+4:], crc32.Checksum(body, crcTable))
	return buf, nil
}

// scanBatches reads the batches in r between start and end, calling fn (if
// non-nil) with each record, and returns the length of the valid prefix
// and the number of records in it. Reading stops at the first damaged
// batch. That is a torn tail, and the prefix is what recovery keeps, when
// the damage is what a crash during the last append leaves: no complete
// batch follows it anywhere and it spans at most one append. Otherwise it
// is an ErrCorrupt error. A batch whose CRC matches but whose records do
// not decode is an error as well.
func scanBatches(r io.ReaderAt, start, end int64, fn func(i int64, rec Record) error) (valid int64, count int64, err error) {
	br := bufio.NewReaderSize(io.NewSectionReader(r, start, end-start), 64<<10)
	var head [batchHeader]byte
	pos := start
	for pos < end {
		damaged := func(what string) (int64, int64, error) {
			if err := checkTornTail(r, pos, end); err != nil {
				return valid, count, fmt.Errorf("%w: batch at byte %d (after record %d): %s; %w", ErrCorrupt, pos, count, what, err)
			}
			return valid, count, nil
		}
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return damaged("short batch header")
		}
		length := int64(binary.BigEndian.Uint32(head[0:]))
		sum := binary.BigEndian.Uint32(head[4:])
		n := binary.BigEndian.Uint32(head[8:])
		if length < 4+recordHeader || length > maxBatchSize || n == 0 || int64(n) > length/recordHeader {
			return damaged(fmt.Sprintf("implausible length %d or record count %d", length, n))
		}
		if pos+8+length > end {
			return damaged("cut short")
		}
		// The length is bounded by the file's size, so this allocation is
		// too.
		body := make([]byte, length)
		copy(body, head[8:])
		if _, err := io.ReadFull(br, body[4:]); err != nil {
			return damaged("cut short")
		}
		if crc32.Checksum(body, crcTable) != sum {
			return damaged("CRC mismatch")
		}
		recs, err := decodeBatch(body[4:], int(n))
		if err != nil {
			return valid, count, fmt.Errorf("batch at byte %d (after record %d): %w", pos, count, err)
		}
		for _, rec := range recs {
			if fn != nil {
				if err := fn(count, rec); err != nil {
					return valid, count, err
				}
			}
			count++
		}
		pos += 8 + length
		valid = pos - start
	}
	return valid, count, nil
}

// decodeBatch decodes the n records of a batch body whose CRC matched; any
// inconsistency is corruption.
func decodeBatch(b []byte, n int) ([]Record, error) {
	recs := make([]Record, 0, n)
	for i := range n {
		if len(b) < recordHeader {
			return nil, fmt.Errorf("%w: record %d of %d is cut short", ErrCorrupt, i, n)
		}
		length := int(binary.BigEndian.Uint32(b))
		if length < 2 || length-2 > len(b)-recordHeader {
			return nil, fmt.Errorf("%w: record %d of %d has length %d", ErrCorrupt, i, n, length)
		}
		rec, err := decodeRecord(int8(b[4]), RecordType(b[5]), b[recordHeader:4+length])
		if err != nil {
			return nil, fmt.Errorf("record %d of %d: %w", i, n, err)
		}
		recs = append(recs, rec)
		b = b[4+length:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last record", ErrCorrupt, len(b))
	}
	return recs, nil
}

// checkTornTail decides whether damage found at pos can be the torn tail
// of a crash: the last append, at most maxBatchSize+batchHeader bytes,
// with no complete batch after its start. It returns nil for a torn tail.
func checkTornTail(r io.ReaderAt, pos, end int64) error {
	if end-pos > maxBatchSize+batchHeader {
		return fmt.Errorf("%d damaged bytes are more than one append can write", end-pos)
	}
	tail := make([]byte, end-pos)
	if _, err := r.ReadAt(tail, pos); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read: %w", err)
	}
	for i := 1; i+batchHeader <= len(tail); i++ {
		length := int(binary.BigEndian.Uint32(tail[i:]))
		if length < 4+recordHeader || i+8+length > len(tail) {
			continue
		}
		if crc32.Checksum(tail[i+8:i+8+length], crcTable) == binary.BigEndian.Uint32(tail[i+4:]) {
			return fmt.Errorf("a complete batch follows at byte %d", pos+int64(i))
		}
	}
	return nil
}

// Truncated returns how many bytes of torn tail OpenFileLog cut off.
func (l *FileLog) Truncated() int64 { return l.truncated }

// Migrated returns how many records OpenFileLog rewrote from a version 1
// file (0 when the file was already version 2).
func (l *FileLog) Migrated() int64 { return l.migrated }

// Append writes recs as one batch with one write and fsyncs. A crash
// during the write loses the whole batch at the next open, never part of
// it. After a failed write or fsync the log refuses further appends
// (ErrLogFailed): the file's tail is unknown until the next open, which
// truncates it. A batch over maxBatchSize is refused (ErrBatchTooLarge)
// before anything is written.
func (l *FileLog) Append(recs []Record) (int64, error) {
	buf, err := appendBatch(nil, recs)
	if err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.f == nil {
		return 0, ErrClosed
	}
	if l.mu.failed != nil {
		return 0, l.mu.failed
	}
	if len(recs) == 0 {
		return l.mu.next - 1, nil
	}
	if _, err := l.mu.f.WriteAt(buf, l.mu.size); err != nil {
		l.mu.failed = fmt.Errorf("%w: write: %w", ErrLogFailed, err)
		return 0, l.mu.failed
	}
	if err := l.mu.f.Sync(); err != nil {
		l.mu.failed = fmt.Errorf("%w: fsync: %w", ErrLogFailed, err)
		return 0, l.mu.failed
	}
	l.mu.size += int64(len(buf))
	l.mu.next += int64(len(recs))
	return l.mu.next - 1, nil
}

// Replay calls fn with every record in the file, in order.
func (l *FileLog) Replay(fn func(offset int64, rec Record) error) error {
	l.mu.Lock()
	f, size := l.mu.f, l.mu.size
	l.mu.Unlock()
	if f == nil {
		return ErrClosed
	}
	_, _, err := scanBatches(f, int64(fileHeaderSize), size, func(i int64, rec Record) error { return fn(l.baseOffset+i, rec) })
	return err
}

// Close closes the file.
func (l *FileLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.f == nil {
		return ErrClosed
	}
	err := l.mu.f.Close()
	l.mu.f = nil
	return err
}

// MemLog is a MetadataLog in memory, for tests of code built on the
// controller. Records are stored encoded, so a MemLog checks that they
// survive encoding like a FileLog.
type MemLog struct {
	mu struct {
		sync.Mutex
		frames []byte
		count  int64
		fail   error
	}
}

// NewMemLog returns an empty in-memory log.
func NewMemLog() *MemLog { return &MemLog{} }

// FailAppends makes every later Append return err (nil to stop failing).
func (m *MemLog) FailAppends(err error) {
	m.mu.Lock()
	m.mu.fail = err
	m.mu.Unlock()
}

// Append implements MetadataLog.
func (m *MemLog) Append(recs []Record) (int64, error) {
	buf, err := appendBatch(nil, recs)
	if err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.fail != nil {
		return 0, m.mu.fail
	}
	m.mu.frames = append(m.mu.frames, buf...)
	m.mu.count += int64(len(recs))
	return m.mu.count - 1, nil
}

// Replay implements MetadataLog.
func (m *MemLog) Replay(fn func(offset int64, rec Record) error) error {
	m.mu.Lock()
	frames := m.mu.frames
	m.mu.Unlock()
	_, _, err := scanBatches(bytes.NewReader(frames), 0, int64(len(frames)), fn)
	return err
}

// Close implements MetadataLog.
func (m *MemLog) Close() error { return nil }
