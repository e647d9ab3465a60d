package compattests

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/compat-tests/childproc"
)

// groupProcess is a child process (a JVM) in its own process group, its
// output in the test log; done closes when it has exited.
type groupProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	what string // names it in failures: "the Streams app"
}

// startGroupProcess starts cmd in its own process group, each line of its
// output in the test log behind prefix; the group is SIGKILLed at test
// cleanup if still running.
func startGroupProcess(t *testing.T, cmd *exec.Cmd, what, prefix string) *groupProcess {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &logWriter{t: t, prefix: prefix}
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = 10 * time.Second
	if err := childproc.Start(cmd); err != nil {
		t.Fatalf("starting %s: %v", what, err)
	}
	p := &groupProcess{cmd: cmd, done: make(chan struct{}), what: what}
	go func() {
		_ = cmd.Wait()
		out.flush()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
	return p
}

// kill SIGKILLs the process group and waits until the process is gone.
func (p *groupProcess) kill(t *testing.T) {
	t.Helper()
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s (pid %d): %v", p.what, pid, err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s (pid %d) still runs 30 s after SIGKILL", p.what, pid)
	}
}
