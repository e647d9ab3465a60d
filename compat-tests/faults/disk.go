package faults

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNoDisk is returned when a node's log directory cannot get a tmpfs of
// its own (not root, or mount(2) refused).
var ErrNoDisk = errors.New("faults: no disk of its own")

// fillerName is the file FillDisk grows until the node's tmpfs is full.
const fillerName = "faults-disk-filler"

// DiskAvailable reports whether a node's log directory can be a tmpfs of
// its own (mount(2) needs root).
func DiskAvailable() bool { return os.Geteuid() == 0 }

// mountDisk mounts a tmpfs of size bytes on the node's log directory. In
// namespace mode the node runs under `ip netns exec`, whose private mount
// namespace is made after this mount, so it sees the same tmpfs: the test
// process fills it from outside.
func (n *Node) mountDisk(size int64) error {
	if !DiskAvailable() {
		return fmt.Errorf("%w: mounting a tmpfs needs root", ErrNoDisk)
	}
	if err := syscall.Mount("tmpfs", n.DataDir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		return fmt.Errorf("%w: mount tmpfs on %s: %w", ErrNoDisk, n.DataDir, err)
	}
	n.mounted = true
	return nil
}

func (n *Node) unmountDisk() {
	if n.mounted {
		_ = syscall.Unmount(n.DataDir, syscall.MNT_DETACH)
		n.mounted = false
	}
}

// FillDisk writes a filler file into the node's tmpfs until the file
// system refuses more (ENOSPC), so every later write of the node fails
// for want of space. It returns the bytes written.
func (n *Node) FillDisk() (int64, error) {
	if !n.mounted {
		return 0, fmt.Errorf("%w: node %d has no tmpfs (Config.DiskLimit)", ErrNoDisk, n.ID)
	}
	f, err := os.OpenFile(filepath.Join(n.DataDir, fillerName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("faults: filler: %w", err)
	}
	defer f.Close()
	var total int64
	// Big chunks first, then pages, so that not a page is left free.
	for _, size := range []int{1 << 20, 4096} {
		buf := make([]byte, size)
		for {
			k, err := f.Write(buf)
			total += int64(k)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				return total, fmt.Errorf("faults: filler: %w", err)
			}
		}
	}
	return total, nil
}

// FreeDisk removes the filler: the space returns.
func (n *Node) FreeDisk() error {
	err := os.Remove(filepath.Join(n.DataDir, fillerName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("faults: filler: %w", err)
	}
	return nil
}

// DiskUsage returns the bytes used and available on the node's log
// directory's file system.
func (n *Node) DiskUsage() (used, avail int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(n.DataDir, &st); err != nil {
		return 0, 0, fmt.Errorf("faults: statfs: %w", err)
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize, int64(st.Bavail) * st.Bsize, nil
}
