package replica

import (
	"runtime/debug"
	"time"
)

// restartDelay is how long a background loop that panicked waits before it
// runs again, so that a panic on every pass cannot spin or flood the log.
const restartDelay = time.Second

// supervise runs loop until it returns, restarting it after restartDelay
// when it panics (logged at ERROR with its stack) unless stop is closed;
// onRestart, if set, runs before each restart. Issue 11 item 6: a panic
// in a replica fetcher, the reconcile loop or the ISR checks stopped the
// whole process.
func (m *Manager) supervise(name string, stop <-chan struct{}, loop, onRestart func()) {
	for m.runRecovered(name, loop) {
		t := time.NewTimer(restartDelay)
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C:
		}
		m.logger.Warn("restarting replica loop after a panic", "loop", name)
		if onRestart != nil {
			onRestart()
		}
	}
}

// runRecovered runs fn and reports whether it panicked (logging it).
func (m *Manager) runRecovered(name string, fn func()) (panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
			m.logger.Error("panic in replica loop", "loop", name, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	fn()
	return false
}

// wakeReconcile asks the reconcile loop for a pass.
func (m *Manager) wakeReconcile() {
	select {
	case m.reconcile <- struct{}{}:
	default:
	}
}
