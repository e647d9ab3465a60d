package broker

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"
)

// restartDelay is how long a background loop that panicked waits before it
// runs again, so that a panic on every pass cannot spin or flood the log.
const restartDelay = time.Second

// superviseLoop runs loop until ctx ends. A panic in loop is logged with
// its stack and the loop is started again after restartDelay: the
// background loops of a node (retention, flushing, checkpoints and the
// cleaner in storage.Manager.Run; coordinator loading in coordinatorReconciler.run)
// keep their state in their owners, not in the loop, so running them again
// is safe, while letting the panic through would stop every partition
// (issue 11 item 6).
func superviseLoop(ctx context.Context, logger *slog.Logger, name string, loop func(context.Context)) {
	for {
		if !runRecovered(logger, name, func() { loop(ctx) }) {
			return
		}
		t := time.NewTimer(restartDelay)
		select {
		case <-t.C:
			logger.Warn("restarting background loop after a panic", "loop", name)
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// runRecovered runs fn and reports whether it panicked (logging it).
func runRecovered(logger *slog.Logger, name string, fn func()) (panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
			logger.Error("panic in background loop", "loop", name, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	fn()
	return false
}
