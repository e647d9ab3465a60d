package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
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
	if err := mountTmpfs(n.DataDir, size); err != nil {
		return err
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

// mountTmpfs mounts a tmpfs of size bytes on dir.
func mountTmpfs(dir string, size int64) error {
	if !DiskAvailable() {
		return fmt.Errorf("%w: mounting a tmpfs needs root", ErrNoDisk)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		return fmt.Errorf("%w: mount tmpfs on %s: %w", ErrNoDisk, dir, err)
	}
	return nil
}

// FillDisk writes a filler file into the node's tmpfs until the file
// system refuses more (ENOSPC), so every later write of the node fails
// for want of space. It returns the bytes written.
func (n *Node) FillDisk() (int64, error) {
	if !n.mounted {
		return 0, fmt.Errorf("%w: node %d has no tmpfs (Config.DiskLimit)", ErrNoDisk, n.ID)
	}
	return fillDir(n.DataDir)
}

// fillDir writes a filler file into dir until its file system refuses
// more (ENOSPC) and returns the bytes written.
func fillDir(dir string) (int64, error) {
	f, err := os.OpenFile(filepath.Join(dir, fillerName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
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

// diskHaltBound is how long a node whose disk is full gets to halt (every
// log directory failed) when the hold is shorter; diskMoveBound is how
// long its partitions then get to become writable on the other replicas
// (the controller moves leaderships after broker.session.timeout.ms).
const (
	diskHaltBound = 20 * time.Second
	diskMoveBound = 60 * time.Second
)

// diskFull fills node n's disk for hold. samsa, like Kafka with one log
// directory, halts a node once a write fails for want of space: the step
// then checks that the partitions n led became writable on the other
// replicas while it was down (leadership moved), keeps it down for the
// rest of the hold, gives the space back and restarts it, as an operator
// or a container's restart policy would. A node that did not halt (no
// write reached its full disk) goes through afterDiskFull.
func (nm *Nemesis) diskFull(ctx context.Context, n *Node, what string, hold time.Duration) error {
	var led []int32
	if ls, err := nm.leaders(ctx); err == nil {
		for p, l := range ls {
			if l == int32(n.ID) {
				led = append(led, p)
			}
		}
		slices.Sort(led)
	}
	written, err := n.FillDisk()
	if err != nil {
		return err
	}
	begin := time.Now()
	nm.logf("nemesis: disk of node %d (%s, leader of %v) full (%d bytes of filler); for %v", n.ID, what, led, written, hold)
	halted := pollUntil(ctx, max(hold, diskHaltBound), func(context.Context) (bool, error) {
		return !n.Running(), nil
	}) == nil
	outcome := DiskExited
	if halted {
		nm.logf("nemesis: node %d exited %v after its disk filled", n.ID, time.Since(begin).Round(100*time.Millisecond))
		down := time.Now()
		var state string
		err := pollUntil(ctx, diskMoveBound, func(ctx context.Context) (bool, error) {
			ls, err := nm.leaders(ctx)
			if err != nil {
				state = "metadata: " + err.Error()
				return false, nil
			}
			for _, p := range led {
				if l, ok := ls[p]; !ok || l == int32(n.ID) {
					state = fmt.Sprintf("partition %d leader %d (present %v)", p, l, ok)
					return false, nil
				}
			}
			if err := nm.probeProduce(ctx); err != nil {
				state = "probe: " + err.Error()
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			outcome = DiskExitedUnavailable
			nm.logf("nemesis: partitions %v of node %d not writable elsewhere %v after it exited (%s)", led, n.ID, diskMoveBound, state)
		} else {
			nm.logf("nemesis: partitions %v of node %d moved and writable %v after it exited", led, n.ID, time.Since(down).Round(100*time.Millisecond))
		}
		holdFor(ctx, hold-time.Since(begin))
	}
	if err := n.FreeDisk(); err != nil {
		return err
	}
	nm.logf("nemesis: disk of node %d has space again", n.ID)
	if !halted {
		return nm.afterDiskFull(ctx, n)
	}
	nm.logf("nemesis: restarting node %d after its halt", n.ID)
	if err := n.Restart(ctx); err != nil {
		return err
	}
	nm.mu.Lock()
	if nm.disk == nil {
		nm.disk = make(map[DiskOutcome]int)
	}
	nm.disk[outcome]++
	nm.mu.Unlock()
	return nil
}
