package controller

import (
	"bufio"
	"bytes"
	"encoding/binary"
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
	fileVersion    = uint16(1)
	fileHeaderSize = len(fileMagic) + 2 + 8 // magic, version, base offset
	frameHeader    = 4 + 4 + 1 + 1          // length, crc, version, type
	maxFrameSize   = 64 << 20
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
}

// OpenFileLog opens or creates the metadata log at path. A new file gets a
// header. On open the frames are checked and a torn or corrupt tail (short
// frame, bad CRC) is cut off and the file is fsynced; Truncated reports how
// many bytes were dropped.
func OpenFileLog(path string) (*FileLog, error) { return OpenFileLogFS(vfs.OS, path) }

// OpenFileLogFS is OpenFileLog on the given file system (tests use an
// in-memory one to simulate crashes and IO errors).
func OpenFileLogFS(fsys vfs.FS, path string) (*FileLog, error) {
	var (
		f   vfs.File
		err error
	)
	created := !fsys.Exists(path)
	if created {
		f, err = fsys.Create(path)
	} else {
		f, err = fsys.OpenReadWrite(path)
	}
	if err != nil {
		return nil, fmt.Errorf("controller: open metadata log: %w", err)
	}
	l := &FileLog{fs: fsys, path: path}
	l.mu.f = f
	if err := l.recover(); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
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
	hdr := make([]byte, fileHeaderSize)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return fmt.Errorf("controller: read metadata log header: %w", err)
	}
	if string(hdr[:len(fileMagic)]) != fileMagic {
		return fmt.Errorf("%w: %s: bad magic", ErrCorrupt, l.path)
	}
	if v := binary.BigEndian.Uint16(hdr[len(fileMagic):]); v != fileVersion {
		return fmt.Errorf("%w: %s: file version %d", ErrUnsupportedVersion, l.path, v)
	}
	l.baseOffset = int64(binary.BigEndian.Uint64(hdr[len(fileMagic)+2:]))
	valid, count, err := scanFrames(io.NewSectionReader(f, int64(fileHeaderSize), size-int64(fileHeaderSize)), nil)
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
	hdr := make([]byte, 0, fileHeaderSize)
	hdr = append(hdr, fileMagic...)
	hdr = binary.BigEndian.AppendUint16(hdr, fileVersion)
	hdr = binary.BigEndian.AppendUint64(hdr, 0)
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("controller: init metadata log: %w", err)
	}
	if _, err := f.WriteAt(hdr, 0); err != nil {
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

// scanFrames reads frames from r until the first one that is short or fails
// its CRC, calling fn (if non-nil) with each decoded record. It returns the
// byte length of the valid prefix and the number of frames in it. A frame
// whose CRC matches but whose content cannot be decoded is not a torn write,
// so it is returned as an error rather than truncated.
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

// appendFrame appends the frame of rec to buf.
func appendFrame(buf []byte, rec Record) ([]byte, error) {
	payload, err := encodeRecord(rec)
	if err != nil {
		return buf, err
	}
	if len(payload)+2 > maxFrameSize {
		return buf, fmt.Errorf("controller: record of %d bytes exceeds frame limit", len(payload))
	}
	vt := []byte{byte(recordVersion), byte(rec.recordType())}
	crc := crc32.Update(crc32.Checksum(vt, crcTable), crcTable, payload)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(payload)+2))
	buf = binary.BigEndian.AppendUint32(buf, crc)
	buf = append(buf, vt...)
	return append(buf, payload...), nil
}

// Truncated returns how many bytes of torn or corrupt tail OpenFileLog cut off.
func (l *FileLog) Truncated() int64 { return l.truncated }

// Append writes recs as one write and fsyncs. After a failed write or fsync
// the log refuses further appends (ErrLogFailed): the file's tail is unknown
// until the next open, which truncates it.
func (l *FileLog) Append(recs []Record) (int64, error) {
	var buf []byte
	for _, rec := range recs {
		var err error
		if buf, err = appendFrame(buf, rec); err != nil {
			return 0, err
		}
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
	r := io.NewSectionReader(f, int64(fileHeaderSize), size-int64(fileHeaderSize))
	_, _, err := scanFrames(r, func(i int64, rec Record) error { return fn(l.baseOffset+i, rec) })
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
	var buf []byte
	for _, rec := range recs {
		var err error
		if buf, err = appendFrame(buf, rec); err != nil {
			return 0, err
		}
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
	_, _, err := scanFrames(bytes.NewReader(frames), fn)
	return err
}

// Close implements MetadataLog.
func (m *MemLog) Close() error { return nil }
