package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/samsa-broker/samsa/compat-tests/childproc"
)

// LazyFS: the power cut done for real instead of emulated (soaks only).
// With Config.LazyFS naming a lazyfs binary (github.com/dsrhaslab/lazyfs,
// a FUSE file system that keeps every write in its own cache until an
// fsync and drops what was not synced on "lazyfs::clear-cache"), every
// node's log directory is a lazyfs mount over a directory of its own, and
// a power-loss step clears the node's cache after the SIGKILL instead of
// running PowerCut. It needs root, /dev/fuse and fuse3; lazyfs is not
// built in CI (its build fetches its libraries from GitHub), so this is a
// soak option (run.sh --lazyfs PATH, SAMSA_FAULTS_LAZYFS). Unlike PowerCut,
// lazyfs keeps the names of files it created (it creates them at once in
// the directory below) and loses whole unsynced writes, not pages.

// ErrLazyFS wraps failures to mount or drive lazyfs.
var ErrLazyFS = errors.New("faults: lazyfs")

// lazyMount is a node's log directory mounted through lazyfs.
type lazyMount struct {
	cmd        *exec.Cmd
	exited     chan struct{}
	fifo, done string // lazyfs's command and completion FIFOs
}

// lazyMountTimeout bounds waiting for a lazyfs mount and a cache clear.
const lazyMountTimeout = 30 * time.Second

// mountLazyFS mounts the node's log directory through the lazyfs binary
// bin, over <node dir>/data.lazyfs-root.
func (n *Node) mountLazyFS(bin string) error {
	root := filepath.Join(n.Dir, "data.lazyfs-root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("%w: %w", ErrLazyFS, err)
	}
	m := &lazyMount{fifo: filepath.Join(n.Dir, "lazyfs.fifo"), done: filepath.Join(n.Dir, "lazyfs-done.fifo")}
	cfg := filepath.Join(n.Dir, "lazyfs.toml")
	toml := fmt.Sprintf("[faults]\nfifo_path=%q\nfifo_path_completed=%q\n[cache]\napply_eviction=false\n"+
		"[cache.simple]\ncustom_size=\"1gb\"\nblocks_per_page=1\n[filesystem]\nlog_all_operations=false\nlogfile=\"\"\n",
		m.fifo, m.done)
	if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
		return fmt.Errorf("%w: %w", ErrLazyFS, err)
	}
	log, err := os.OpenFile(filepath.Join(n.Dir, "lazyfs.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrLazyFS, err)
	}
	defer log.Close()
	cmd := exec.Command(bin, n.DataDir, "--config-path", cfg, "-o", "allow_other",
		"-o", "modules=subdir", "-o", "subdir="+root, "-f")
	cmd.Stdout, cmd.Stderr = log, log
	if err := childproc.Start(cmd); err != nil {
		return fmt.Errorf("%w: start: %w", ErrLazyFS, err)
	}
	m.cmd, m.exited = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(m.exited)
	}()
	n.lazy = m
	ctx, cancel := context.WithTimeout(context.Background(), lazyMountTimeout)
	defer cancel()
	return pollUntil(ctx, lazyMountTimeout, func(context.Context) (bool, error) {
		select {
		case <-m.exited:
			return false, fmt.Errorf("%w: lazyfs on %s exited (see %s)", ErrLazyFS, n.DataDir, log.Name())
		default:
		}
		return isMountPoint(n.DataDir), nil
	})
}

// isMountPoint reports whether dir is a mount point in this process's
// mount namespace.
func isMountPoint(dir string) bool {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == dir {
			return true
		}
	}
	return false
}

// clearLazyCache drops every write lazyfs holds for the node that was not
// fsynced (the node must be down) and waits until lazyfs reports it done.
func (n *Node) clearLazyCache(ctx context.Context) error {
	m := n.lazy
	ctx, cancel := context.WithTimeout(ctx, lazyMountTimeout)
	defer cancel()
	finished := make(chan error, 1)
	go func() {
		// Opening the completion FIFO blocks until lazyfs opens it to
		// write, after the clear.
		f, err := os.Open(m.done)
		if err != nil {
			finished <- err
			return
		}
		defer f.Close()
		line, err := bufio.NewReader(f).ReadString('\n')
		if err == nil && !strings.Contains(line, "clear-cache") {
			err = fmt.Errorf("unexpected completion %q", line)
		}
		finished <- err
	}()
	if err := writeFIFO(ctx, m.fifo, "lazyfs::clear-cache\n"); err != nil {
		return err
	}
	select {
	case err := <-finished:
		if err != nil {
			return fmt.Errorf("%w: clear-cache: %w", ErrLazyFS, err)
		}
		return nil
	case <-ctx.Done():
		// Unblock the reader (opening the FIFO to write releases it).
		if f, err := os.OpenFile(m.done, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		return fmt.Errorf("%w: clear-cache not confirmed within %v", ErrLazyFS, lazyMountTimeout)
	}
}

// writeFIFO writes s to the FIFO at path, waiting (bounded by ctx) for its
// reader.
func writeFIFO(ctx context.Context, path, s string) error {
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			_, err = f.WriteString(s)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%w: write %s: %w", ErrLazyFS, path, err)
			}
			return nil
		}
		if !errors.Is(err, syscall.ENXIO) && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: open %s: %w", ErrLazyFS, path, err)
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: no reader on %s", ErrLazyFS, path)
		case <-t.C:
		}
	}
}

// unmountLazyFS unmounts the node's lazyfs and stops its process.
func (n *Node) unmountLazyFS() {
	m := n.lazy
	if m == nil {
		return
	}
	n.lazy = nil
	_ = syscall.Unmount(n.DataDir, syscall.MNT_DETACH)
	if m.cmd.Process != nil {
		_ = m.cmd.Process.Kill()
	}
	<-m.exited
}
