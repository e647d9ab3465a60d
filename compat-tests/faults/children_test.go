package faults

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTermChildrenKillsTheLateOnes: of two children, the one that exits on
// SIGTERM ends with no error and the one that ignores it is killed once the
// bound has passed and named in the error, which wraps the sentinel.
func TestTermChildrenKillsTheLateOnes(t *testing.T) {
	errChild := errors.New("faults test: child")
	dir := t.TempDir()
	start := func(name, script string) childToStop {
		ready := filepath.Join(dir, name)
		cmd := exec.Command("sh", "-c", script, "sh", ready)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(done)
		}()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-done
		})
		// The ready file says the shell has set its trap (if any).
		if err := pollUntil(t.Context(), time.Minute, func(ctx context.Context) (bool, error) {
			_, err := os.Stat(ready)
			return err == nil, nil
		}); err != nil {
			t.Fatalf("%s did not start: %v", name, err)
		}
		return childToStop{cmd: cmd, done: done, name: name}
	}
	// SIGTERM's ignored disposition survives the exec of sleep.
	stuck := start("stuck child", `trap "" TERM; : >"$1"; exec sleep 600`)
	polite := start("polite child", `: >"$1"; exec sleep 600`)
	err := termChildren([]childToStop{polite, stuck}, 2*time.Second, errChild)
	if !errors.Is(err, errChild) || !strings.Contains(err.Error(), "stuck child did not exit") || strings.Contains(err.Error(), "polite") {
		t.Fatalf("termChildren: %v, want an error naming only the stuck child", err)
	}
	for _, c := range []childToStop{polite, stuck} {
		select {
		case <-c.done:
		default:
			t.Errorf("%s still runs after termChildren", c.name)
		}
	}
}
