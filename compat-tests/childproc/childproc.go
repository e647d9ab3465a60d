package childproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ErrStart wraps a failed start of a child process.
var ErrStart = errors.New("childproc: start")

// registryRoot is the directory of the per-process child registries, under
// os.TempDir.
const registryRoot = "samsa-childproc"

type startRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var starter struct {
	once     sync.Once
	requests chan startRequest
	// dir is this process's registry ("" when it could not be made).
	dir string
}

// startLoop forks every child from one thread: it locks itself to its
// thread and never returns, so the thread, the parent of every child for
// PR_SET_PDEATHSIG, lives as long as the process.
func startLoop(requests <-chan startRequest) {
	runtime.LockOSThread()
	for r := range requests {
		r.done <- r.cmd.Start()
	}
}

func initStarter() {
	Sweep()
	starter.requests = make(chan startRequest)
	go startLoop(starter.requests)
	pid := os.Getpid()
	if st, err := startTime(pid); err == nil {
		dir := filepath.Join(os.TempDir(), registryRoot, fmt.Sprintf("%d-%d", pid, st))
		if os.MkdirAll(dir, 0o755) == nil {
			starter.dir = dir
		}
	}
}

// Start starts cmd so that the child gets SIGKILL when this process dies,
// and records it for Sweep. It keeps the other fields of cmd.SysProcAttr.
// Wait for the child as usual (from any goroutine).
func Start(cmd *exec.Cmd) error {
	starter.once.Do(initStarter)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	starter.requests <- startRequest{cmd: cmd, done: done}
	if err := <-done; err != nil {
		return fmt.Errorf("%w: %w", ErrStart, err)
	}
	record(starter.dir, cmd.Process.Pid)
	return nil
}

// record writes child pid's start time into dir (best effort: a child
// that is not recorded still dies with its parent).
func record(dir string, pid int) {
	if dir == "" {
		return
	}
	st, err := startTime(pid)
	if err != nil {
		return // already gone
	}
	_ = os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)), []byte(strconv.FormatUint(st, 10)), 0o644)
}

// startTime is the start time of process pid in clock ticks since boot
// (field 22 of /proc/pid/stat): with the pid, it names one process.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after it start after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("childproc: /proc/%d/stat: %q", pid, b)
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state); field 22 is fields[19].
	if len(fields) < 20 {
		return 0, fmt.Errorf("childproc: /proc/%d/stat: %q", pid, b)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// same reports whether process pid is running (a zombie does not count)
// with start time st.
func same(pid int, st uint64) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	fields := strings.Fields(string(b[i+1:]))
	if i < 0 || len(fields) < 20 || fields[0] == "Z" || fields[0] == "X" {
		return false
	}
	got, err := strconv.ParseUint(fields[19], 10, 64)
	return err == nil && got == st
}

// Sweep SIGKILLs the recorded children of test processes that are gone
// (those whose pid is not running with the start time in the registry's
// name) and removes those registries. It returns the number of processes
// it killed.
func Sweep() int {
	return sweep(filepath.Join(os.TempDir(), registryRoot))
}

func sweep(root string) int {
	owners, err := os.ReadDir(root)
	if err != nil {
		return 0
	}
	killed := 0
	for _, o := range owners {
		pidStr, stStr, ok := strings.Cut(o.Name(), "-")
		pid, err1 := strconv.Atoi(pidStr)
		st, err2 := strconv.ParseUint(stStr, 10, 64)
		if !ok || err1 != nil || err2 != nil || same(pid, st) {
			continue
		}
		dir := filepath.Join(root, o.Name())
		children, _ := os.ReadDir(dir)
		for _, c := range children {
			cpid, err := strconv.Atoi(c.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, c.Name()))
			if err != nil {
				continue
			}
			cst, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			if err == nil && same(cpid, cst) && syscall.Kill(cpid, syscall.SIGKILL) == nil {
				killed++
			}
		}
		_ = os.RemoveAll(dir)
	}
	return killed
}
