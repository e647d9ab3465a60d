package controller

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

var errInjected = errors.New("injected fault")

// faultFS fails the nth file operation (counting from 1) and every
// operation after it, like a disk that went away.
type faultFS struct {
	vfs.FS
	n, ops atomic.Int64
}

func (f *faultFS) step() error {
	if n := f.n.Load(); n > 0 && f.ops.Add(1) >= n {
		return errInjected
	}
	return nil
}

func (f *faultFS) Create(name string) (vfs.File, error) {
	if err := f.step(); err != nil {
		return nil, err
	}
	file, err := f.FS.Create(name)
	return &faultFile{file, f}, err
}

func (f *faultFS) OpenReadWrite(name string) (vfs.File, error) {
	if err := f.step(); err != nil {
		return nil, err
	}
	file, err := f.FS.OpenReadWrite(name)
	return &faultFile{file, f}, err
}

func (f *faultFS) SyncDir(dir string) error {
	if err := f.step(); err != nil {
		return err
	}
	return f.FS.SyncDir(dir)
}

type faultFile struct {
	vfs.File
	fs *faultFS
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.step(); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.step(); err != nil {
		// A failing write may still leave part of the data behind.
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Sync() error {
	if err := f.fs.step(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.step(); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *faultFile) Size() (int64, error) {
	if err := f.fs.step(); err != nil {
		return 0, err
	}
	return f.File.Size()
}

// TestFaultsThenCrash fails the nth file operation of a scenario, for every
// n until the scenario runs clean, then simulates a power loss and reopens.
// Each time: the failure surfaces as an error (never a panic or a silent
// success), and every change that was acknowledged is found after the crash.
func TestFaultsThenCrash(t *testing.T) {
	for n := int64(1); ; n++ {
		mem := vfs.NewMem()
		if err := mem.MkdirAll("/meta"); err != nil {
			t.Fatal(err)
		}
		ffs := &faultFS{FS: mem}
		ffs.n.Store(n)
		acked, failed := runFaultScenario(ffs)
		crashed := mem.CrashClone()
		l, err := OpenFileLogFS(crashed, "/meta/metadata.log")
		if err != nil {
			t.Fatalf("n=%d: reopen after crash: %v", n, err)
		}
		c, err := New(Options{NodeID: 1, Log: l, Logger: quietLogger})
		if err != nil {
			t.Fatalf("n=%d: replay after crash: %v", n, err)
		}
		img := c.Image()
		for _, name := range acked {
			if name == "broker" {
				if _, ok := img.Brokers[1]; !ok {
					t.Fatalf("n=%d: acknowledged broker registration lost", n)
				}
			} else if img.Topics[name] == nil {
				t.Fatalf("n=%d: acknowledged topic %s lost", n, name)
			}
		}
		l.Close()
		if !failed {
			if len(acked) != 4 {
				t.Fatalf("clean run acknowledged %v", acked)
			}
			t.Logf("scenario ran clean after %d injected faults", n-1)
			return
		}
	}
}

// runFaultScenario opens a log, registers a broker and creates three
// topics, returning what was acknowledged and whether anything failed.
func runFaultScenario(fsys vfs.FS) (acked []string, failed bool) {
	l, err := OpenFileLogFS(fsys, "/meta/metadata.log")
	if err != nil {
		return nil, true
	}
	defer l.Close()
	c, err := New(Options{NodeID: 1, Log: l, Logger: quietLogger})
	if err != nil {
		return nil, true
	}
	if err := c.RegisterBroker(Broker{ID: 1, Host: "h", Port: 1}); err != nil {
		if !errors.Is(err, ErrLogFailed) {
			panic(fmt.Sprintf("register: unexpected error %v", err))
		}
		return nil, true
	}
	acked = append(acked, "broker")
	for i := range 3 {
		name := fmt.Sprintf("t%d", i)
		r := c.CreateTopics([]CreateTopic{{Name: name, NumPartitions: 2, ReplicationFactor: 1}}, false)[0]
		if r.ErrorCode != 0 {
			return acked, true
		}
		acked = append(acked, name)
	}
	return acked, false
}
