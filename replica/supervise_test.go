package replica

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
)

type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestSuperviseRestartsAfterPanic is the regression test for issue 11 item
// 6 in the replica layer: a panic in a fetcher, the reconcile loop or the
// ISR checks stopped the process. The loop is logged, restarted (after
// onRestart) and a normal return ends it; a closed stop ends the wait.
func TestSuperviseRestartsAfterPanic(t *testing.T) {
	log := &lockedLog{}
	m := &Manager{logger: slog.New(slog.NewTextHandler(log, nil)), reconcile: make(chan struct{}, 1)}
	runs, restarts := 0, 0
	m.supervise("test", make(chan struct{}), func() {
		runs++
		if runs == 1 {
			panic("test: replica bug")
		}
	}, func() { restarts++; m.wakeReconcile() })
	if runs != 2 || restarts != 1 || len(m.reconcile) != 1 || !strings.Contains(log.b.String(), "panic in replica loop") {
		t.Fatalf("runs %d restarts %d reconcile %d log %q", runs, restarts, len(m.reconcile), log.b.String())
	}
	stop := make(chan struct{})
	close(stop)
	runs = 0
	m.supervise("test", stop, func() { runs++; panic("again") }, nil)
	if runs != 1 {
		t.Fatalf("restarted after stop: %d runs", runs)
	}
}
