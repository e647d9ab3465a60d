package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// ErrClosed is returned by operations on a closed in-memory file.
var ErrClosed = errors.New("vfs: file closed")

// ErrReadOnly is returned when writing to a file opened with Open.
var ErrReadOnly = errors.New("vfs: file opened read-only")

// MemFS is an in-memory FS. It tracks, for every file, the data as of its last
// Sync, so that CrashClone can simulate a crash. Directory entries (names) are
// treated as always durable: CrashClone keeps every name that exists.
type MemFS struct {
	mu    sync.Mutex
	files map[string]*memNode
	dirs  map[string]bool
}

type memNode struct {
	mu     sync.Mutex
	data   []byte
	synced []byte
}

// NewMem returns an empty in-memory file system with the root directory.
func NewMem() *MemFS {
	return &MemFS{files: map[string]*memNode{}, dirs: map[string]bool{"/": true, ".": true}}
}

func clean(name string) string {
	return path.Clean(filepath.ToSlash(name))
}

// CrashClone returns a copy of m as it would be found after a power loss:
// every file holds only the bytes of its last Sync (nothing if never synced).
func (m *MemFS) CrashClone() *MemFS { return m.clone(true) }

// Clone returns a full copy of m including unsynced data.
func (m *MemFS) Clone() *MemFS { return m.clone(false) }

// clone copies m's directories and files; with crash, each file's data is
// only what its last Sync kept.
func (m *MemFS) clone(crash bool) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	for d := range m.dirs {
		c.dirs[d] = true
	}
	for name, n := range m.files {
		n.mu.Lock()
		data := n.data
		if crash {
			data = n.synced
		}
		c.files[name] = &memNode{data: append([]byte(nil), data...), synced: append([]byte(nil), n.synced...)}
		n.mu.Unlock()
	}
	return c
}

func (m *MemFS) parentExistsLocked(name string) bool {
	return m.dirs[path.Dir(name)]
}

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.parentExistsLocked(name) {
		return nil, pathErr("create", name, fs.ErrNotExist)
	}
	if m.dirs[name] {
		return nil, pathErr("create", name, fs.ErrExist)
	}
	n, ok := m.files[name]
	if !ok {
		n = &memNode{}
		m.files[name] = n
	} else {
		n.mu.Lock()
		n.data = nil
		n.mu.Unlock()
	}
	return &memFile{node: n, name: name, writable: true}, nil
}

// OpenReadWrite implements FS.
func (m *MemFS) OpenReadWrite(name string) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[name]
	if !ok {
		return nil, pathErr("open", name, fs.ErrNotExist)
	}
	n.mu.Lock()
	pos := int64(len(n.data))
	n.mu.Unlock()
	return &memFile{node: n, name: name, writable: true, pos: pos}, nil
}

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[name]
	if !ok {
		return nil, pathErr("open", name, fs.ErrNotExist)
	}
	return &memFile{node: n, name: name}, nil
}

// Remove implements FS. Open handles of a removed file keep working, as on Unix.
func (m *MemFS) Remove(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[name]; ok {
		delete(m.files, name)
		return nil
	}
	if m.dirs[name] {
		prefix := name + "/"
		for f := range m.files {
			if strings.HasPrefix(f, prefix) {
				return pathErr("remove", name, errors.New("directory not empty"))
			}
		}
		for d := range m.dirs {
			if strings.HasPrefix(d, prefix) {
				return pathErr("remove", name, errors.New("directory not empty"))
			}
		}
		delete(m.dirs, name)
		return nil
	}
	return pathErr("remove", name, fs.ErrNotExist)
}

// RemoveAll implements FS.
func (m *MemFS) RemoveAll(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	prefix := name + "/"
	for f := range m.files {
		if f == name || strings.HasPrefix(f, prefix) {
			delete(m.files, f)
		}
	}
	for d := range m.dirs {
		if d == name || strings.HasPrefix(d, prefix) {
			delete(m.dirs, d)
		}
	}
	return nil
}

// Rename implements FS, for files and directories.
func (m *MemFS) Rename(oldname, newname string) error {
	oldname, newname = clean(oldname), clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.parentExistsLocked(newname) {
		return pathErr("rename", newname, fs.ErrNotExist)
	}
	if n, ok := m.files[oldname]; ok {
		if m.dirs[newname] {
			return pathErr("rename", newname, fs.ErrExist)
		}
		delete(m.files, oldname)
		m.files[newname] = n
		return nil
	}
	if !m.dirs[oldname] {
		return pathErr("rename", oldname, fs.ErrNotExist)
	}
	if _, ok := m.files[newname]; ok || m.dirs[newname] {
		return pathErr("rename", newname, fs.ErrExist)
	}
	oldPrefix := oldname + "/"
	for f, n := range m.files {
		if strings.HasPrefix(f, oldPrefix) {
			delete(m.files, f)
			m.files[newname+"/"+f[len(oldPrefix):]] = n
		}
	}
	for d := range m.dirs {
		if d == oldname || strings.HasPrefix(d, oldPrefix) {
			delete(m.dirs, d)
			m.dirs[newname+d[len(oldname):]] = true
		}
	}
	return nil
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := dir; ; d = path.Dir(d) {
		if _, ok := m.files[d]; ok {
			return pathErr("mkdir", d, errors.New("not a directory"))
		}
		m.dirs[d] = true
		if d == "/" || d == "." {
			break
		}
	}
	return nil
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(dir string) ([]string, error) {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return nil, pathErr("readdir", dir, fs.ErrNotExist)
	}
	prefix := dir + "/"
	if dir == "/" {
		prefix = "/"
	}
	seen := map[string]bool{}
	add := func(p string) {
		if !strings.HasPrefix(p, prefix) || p == dir {
			return
		}
		rest := p[len(prefix):]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			rest = rest[:i]
		}
		if rest != "" {
			seen[rest] = true
		}
	}
	for f := range m.files {
		add(f)
	}
	for d := range m.dirs {
		add(d)
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// Exists implements FS.
func (m *MemFS) Exists(name string) bool {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.files[name]
	return ok || m.dirs[name]
}

// SyncDir implements FS. Names are always durable in MemFS.
func (m *MemFS) SyncDir(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return pathErr("syncdir", dir, fs.ErrNotExist)
	}
	return nil
}

type memFile struct {
	mu       sync.Mutex // guards pos, closed
	node     *memNode
	name     string
	writable bool
	pos      int64
	closed   bool
}

func (f *memFile) check(write bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("%s: %w", f.name, ErrClosed)
	}
	if write && !f.writable {
		return fmt.Errorf("%s: %w", f.name, ErrReadOnly)
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check(false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("readat", f.name, errors.New("negative offset"))
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (n *memNode) writeAtLocked(p []byte, off int64) {
	end := off + int64(len(p))
	if end > int64(len(n.data)) {
		if end > int64(cap(n.data)) {
			grown := make([]byte, end, end*2)
			copy(grown, n.data)
			n.data = grown
		} else {
			n.data = n.data[:end]
		}
	}
	copy(n.data[off:], p)
}

func (f *memFile) Write(p []byte) (int, error) {
	if err := f.check(true); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.node.mu.Lock()
	f.node.writeAtLocked(p, f.pos)
	f.node.mu.Unlock()
	f.pos += int64(len(p))
	return len(p), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check(true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("writeat", f.name, errors.New("negative offset"))
	}
	f.node.mu.Lock()
	f.node.writeAtLocked(p, off)
	f.node.mu.Unlock()
	return len(p), nil
}

func (f *memFile) Sync() error {
	if err := f.check(false); err != nil {
		return err
	}
	f.node.mu.Lock()
	f.node.synced = append(f.node.synced[:0:0], f.node.data...)
	f.node.mu.Unlock()
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.check(true); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", f.name, errors.New("negative size"))
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if size <= int64(len(f.node.data)) {
		f.node.data = f.node.data[:size:size]
	} else {
		f.node.writeAtLocked(make([]byte, size-int64(len(f.node.data))), int64(len(f.node.data)))
	}
	return nil
}

func (f *memFile) Size() (int64, error) {
	if err := f.check(false); err != nil {
		return 0, err
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	return int64(len(f.node.data)), nil
}

func (f *memFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("%s: %w", f.name, ErrClosed)
	}
	f.closed = true
	return nil
}
