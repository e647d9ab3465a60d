package faults

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// childToStop is a child process of a workload: its command, a channel
// closed once it has exited, and what errors call it ("producer 3").
type childToStop struct {
	cmd  *exec.Cmd
	done <-chan struct{}
	name string
}

// termChildren SIGTERMs every child (each ends what it has under way and
// exits) and waits for them, all within bound of the signal. A child still
// running then is killed, waited for and named in the error returned, which
// wraps sentinel.
func termChildren(children []childToStop, bound time.Duration, sentinel error) error {
	for _, c := range children {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
	}
	var errs []error
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for _, c := range children {
		select {
		case <-c.done:
		case <-deadline.C:
			_ = c.cmd.Process.Kill()
			<-c.done
			errs = append(errs, fmt.Errorf("%w: %s did not exit within %v of SIGTERM", sentinel, c.name, bound))
		}
	}
	return errors.Join(errs...)
}
