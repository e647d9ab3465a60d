package coordinator

import (
	"log/slog"
	"runtime/debug"
)

// Guard runs fn, a unit of work on a shard goroutine, and recovers a panic
// in it: the panic is logged at ERROR with its stack and Guard reports it.
// Issue 11 item 6: requests run on the shard's goroutine, outside the
// connection's recover, so a bug in one group or transaction request took
// the whole process down. The shard keeps serving; the request that
// panicked is answered UNKNOWN_SERVER_ERROR, as Kafka's CoordinatorRuntime
// answers an unexpected exception (which, unlike us, also reverts the
// in-memory state; what fn changed before it panicked stays).
func Guard(logger *slog.Logger, what string, fn func()) (panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
			logger.Error("panic on a coordinator shard; the shard keeps serving", "work", what, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	fn()
	return false
}
