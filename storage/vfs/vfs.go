// Package vfs is the small file-system interface through which package
// storage does all of its file IO. It has an OS implementation (OS) and an
// in-memory one (NewMem) whose CrashClone simulates a power loss by keeping
// only the data that was synced.
//
//	fs := vfs.NewMem()
//	f, _ := fs.Create("/data/00000000000000000000.log")
//	f.Write(batch)
//	f.Sync()
//	crashed := fs.CrashClone() // holds batch; unsynced writes are lost
package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// File is an open file. Write appends at the file's current position: the
// end of the file for OpenReadWrite, the start for Create.
type File interface {
	io.ReaderAt
	io.Writer
	io.WriterAt
	Sync() error
	Truncate(size int64) error
	Size() (int64, error)
	Close() error
}

// FS is the set of file-system operations storage needs. Names are slash or
// OS paths; implementations clean them.
type FS interface {
	// Create creates or truncates name and opens it read-write.
	Create(name string) (File, error)
	// OpenReadWrite opens an existing file read-write, positioned at its end.
	OpenReadWrite(name string) (File, error)
	// Open opens an existing file read-only.
	Open(name string) (File, error)
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	MkdirAll(dir string) error
	// ReadDir returns the sorted names of the entries of dir.
	ReadDir(dir string) ([]string, error)
	Exists(name string) bool
	// SyncDir makes creations, renames and removals in dir durable.
	SyncDir(dir string) error
}

// OSFiler is implemented by files of the OS file system, so that the fetch
// path can send file ranges to a socket with sendfile.
type OSFiler interface {
	OSFile() *os.File
}

// ErrNotExist is returned (wrapped, matching fs.ErrNotExist too) for missing files.
var ErrNotExist = fs.ErrNotExist

// OS is the FS backed by the operating system.
var OS FS = osFS{}

type osFS struct{}

type osFile struct{ f *os.File }

func (f osFile) ReadAt(p []byte, off int64) (int, error)  { return f.f.ReadAt(p, off) }
func (f osFile) Write(p []byte) (int, error)              { return f.f.Write(p) }
func (f osFile) WriteAt(p []byte, off int64) (int, error) { return f.f.WriteAt(p, off) }
func (f osFile) Sync() error                              { return f.f.Sync() }
func (f osFile) Truncate(size int64) error                { return f.f.Truncate(size) }
func (f osFile) Close() error                             { return f.f.Close() }
func (f osFile) OSFile() *os.File                         { return f.f }

func (f osFile) Size() (int64, error) {
	st, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) OpenReadWrite(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error             { return os.Remove(name) }
func (osFS) RemoveAll(name string) error          { return os.RemoveAll(name) }
func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }
func (osFS) MkdirAll(dir string) error            { return os.MkdirAll(dir, 0o755) }

func (osFS) ReadDir(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) Exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
