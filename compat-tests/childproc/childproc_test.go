package childproc

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a helper process (TestHelperProcess)
// that starts "sleep 600" with Start, wrapped in `ip netns exec <ns>` when
// the value is "netns:<ns>", prints the child's pid and blocks until killed.
const helperEnv = "SAMSA_CHILDPROC_HELPER"

// goneBound bounds the wait for a child to die after its parent: generous,
// the machine is shared.
const goneBound = 60 * time.Second

// TestHelperProcess is the helper of TestChildDiesWithParent; it does
// nothing in a normal run.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("runs only as the helper process of TestChildDiesWithParent")
	}
	argv := []string{"sleep", "600"}
	if ns, ok := strings.CutPrefix(mode, "netns:"); ok {
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(os.Stdout, "CHILD %d\n", cmd.Process.Pid)
	select {} // until SIGKILLed
}

// runHelper starts the helper in mode and returns it and its child's pid
// and start time.
func runHelper(t *testing.T, mode string) (*exec.Cmd, int, uint64) {
	t.Helper()
	h := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.timeout=0")
	h.Env = append(os.Environ(), helperEnv+"="+mode)
	out, err := h.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.Process.Kill()
		_ = h.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "CHILD "); ok {
				lines <- rest
				return
			}
		}
		close(lines)
	}()
	var pidStr string
	select {
	case s, ok := <-lines:
		if !ok {
			t.Fatal("helper exited without starting its child")
		}
		pidStr = s
	case <-time.After(goneBound):
		t.Fatal("helper did not start its child in time")
	}
	pid, err := strconv.Atoi(pidStr)
	if err != nil {
		t.Fatal(err)
	}
	st, err := startTime(pid)
	if err != nil {
		t.Fatalf("child %d: %v", pid, err)
	}
	t.Cleanup(func() {
		if same(pid, st) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return h, pid, st
}

// pollGone polls until process pid with start time st is no longer
// running, at most goneBound.
func pollGone(t *testing.T, pid int, st uint64, what string) {
	t.Helper()
	deadline := time.Now().Add(goneBound)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for same(pid, st) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: child %d still running %v after", what, pid, goneBound)
		}
		<-tick.C
	}
}

// TestChildDiesWithParent: a helper process starts a child with Start and
// is SIGKILLed: the child must die too (PR_SET_PDEATHSIG from the locked
// starter thread).
func TestChildDiesWithParent(t *testing.T) {
	h, pid, st := runHelper(t, "plain")
	if !same(pid, st) {
		t.Fatalf("child %d not running before the helper is killed", pid)
	}
	if err := h.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = h.Wait()
	pollGone(t, pid, st, "helper SIGKILLed")
}

// TestChildInNamespaceDiesWithParent: the same through `ip netns exec`,
// as the fault test bed starts its nodes: ip execs the program in place,
// which keeps the death signal.
func TestChildInNamespaceDiesWithParent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip(8)")
	}
	ns := fmt.Sprintf("samsacp-%d", os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), goneBound)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	h, pid, st := runHelper(t, "netns:"+ns)
	if err := h.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = h.Wait()
	pollGone(t, pid, st, "helper of an ip netns exec child SIGKILLed")
}

// TestSweep: Sweep kills the recorded child of a registry whose owner is
// gone, spares one whose recorded start time is not the running
// process's (a reused pid) and the children of a live owner, and removes
// only the dead owner's registry.
func TestSweep(t *testing.T) {
	root := t.TempDir()
	startSleep := func() (*exec.Cmd, chan struct{}) {
		cmd := exec.Command("sleep", "600")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		return cmd, exited
	}
	// A dead owner: a process that ran and was reaped.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadDir := filepath.Join(root, fmt.Sprintf("%d-%d", dead.Process.Pid, 12345))
	self, err := startTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	liveDir := filepath.Join(root, fmt.Sprintf("%d-%d", os.Getpid(), self))
	for _, d := range []string{deadDir, liveDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	leftover, leftoverExited := startSleep()
	reused, reusedExited := startSleep()
	live, liveExited := startSleep()
	record(deadDir, leftover.Process.Pid)
	st, err := startTime(reused.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deadDir, strconv.Itoa(reused.Process.Pid)), []byte(strconv.FormatUint(st+1, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	record(liveDir, live.Process.Pid)
	if n := sweep(root); n != 1 {
		t.Errorf("sweep killed %d processes, want 1", n)
	}
	select {
	case <-leftoverExited:
	case <-time.After(goneBound):
		t.Fatal("the dead owner's child still running after the sweep")
	}
	for name, ch := range map[string]chan struct{}{"a process with a reused pid": reusedExited, "the live owner's child": liveExited} {
		select {
		case <-ch:
			t.Errorf("sweep killed %s", name)
		default:
		}
	}
	if _, err := os.Stat(deadDir); !os.IsNotExist(err) {
		t.Errorf("dead owner's registry not removed: %v", err)
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Errorf("live owner's registry: %v", err)
	}
}
