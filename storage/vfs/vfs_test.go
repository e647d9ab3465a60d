package vfs

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
)

func testFS(t *testing.T, fn func(t *testing.T, fsys FS, root string)) {
	t.Run("mem", func(t *testing.T) { fn(t, NewMem(), "/root") })
	t.Run("os", func(t *testing.T) { fn(t, OS, t.TempDir()) })
}

func TestFSBasics(t *testing.T) {
	testFS(t, func(t *testing.T, fsys FS, root string) {
		dir := filepath.Join(root, "a", "b")
		if err := fsys.MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, "f")
		f, err := fsys.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("J"), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		f, err = fsys.OpenReadWrite(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(" world"))
		buf := make([]byte, 11)
		if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "Jello world" {
			t.Fatalf("read %q %v", buf, err)
		}
		if err := f.Truncate(5); err != nil {
			t.Fatal(err)
		}
		if n, _ := f.Size(); n != 5 {
			t.Fatalf("size %d", n)
		}
		f.Close()
		names, err := fsys.ReadDir(filepath.Join(root, "a"))
		if err != nil || len(names) != 1 || names[0] != "b" {
			t.Fatalf("ReadDir = %v %v", names, err)
		}
		if err := fsys.Rename(dir, filepath.Join(root, "c")); err != nil {
			t.Fatal(err)
		}
		if !fsys.Exists(filepath.Join(root, "c", "f")) || fsys.Exists(name) {
			t.Fatal("rename of dir")
		}
		if _, err := fsys.Open(name); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("open missing: %v", err)
		}
		if err := fsys.SyncDir(root); err != nil {
			t.Fatal(err)
		}
		if err := fsys.RemoveAll(filepath.Join(root, "c")); err != nil {
			t.Fatal(err)
		}
		if fsys.Exists(filepath.Join(root, "c")) {
			t.Fatal("RemoveAll")
		}
		if _, ok := fsys.(*MemFS); !ok {
			f, _ := fsys.Create(filepath.Join(root, "x"))
			if _, ok := f.(OSFiler); !ok {
				t.Fatal("OS file lacks OSFile")
			}
			f.Close()
		}
	})
}

func TestCrashClone(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	f, _ := m.Create("/d/f")
	f.Write([]byte("synced"))
	f.Sync()
	f.Write([]byte("-lost"))
	g, _ := m.Create("/d/g")
	g.Write([]byte("never synced"))
	c := m.CrashClone()
	cf, err := c.Open("/d/f")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := cf.Size()
	buf := make([]byte, n)
	cf.ReadAt(buf, 0)
	if !bytes.Equal(buf, []byte("synced")) {
		t.Fatalf("crash clone has %q", buf)
	}
	cg, _ := c.Open("/d/g")
	if n, _ := cg.Size(); n != 0 {
		t.Fatalf("unsynced file has %d bytes", n)
	}
	// The original is untouched.
	of, _ := m.Open("/d/f")
	if n, _ := of.Size(); n != int64(len("synced-lost")) {
		t.Fatalf("original size %d", n)
	}
}
