package broker

import (
	"runtime"
	"testing"
	"time"
)

// TestByteBudgetWakesWaiter: an acquire over the budget waits until a
// release frees room, including when releases with no one waiting came
// before it (they no longer replace the wake-up channel); a release with
// no one waiting allocates nothing.
func TestByteBudgetWakesWaiter(t *testing.T) {
	b := newByteBudget(100)
	never := make(chan struct{})
	if !b.acquire(never, 60) {
		t.Fatal("acquire under the budget refused")
	}
	if allocs := testing.AllocsPerRun(100, func() { b.acquire(never, 1); b.release(1) }); allocs != 0 {
		t.Fatalf("an acquire and a release with no one waiting allocate %v times", allocs)
	}
	if !b.acquire(never, 60) {
		t.Fatal("acquire under the budget refused")
	}
	b.release(10) // no one waits: 110 still used, over the budget
	got := make(chan bool, 1)
	go func() { got <- b.acquire(never, 10) }()
	// The waiter is parked once it has marked the channel waited on.
	deadline := time.Now().Add(time.Minute)
	for {
		b.mu.Lock()
		waited := b.mu.waited
		b.mu.Unlock()
		if waited {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the acquire over the budget never waited")
		}
		runtime.Gosched()
	}
	select {
	case <-got:
		t.Fatal("acquire over the budget returned before a release")
	default:
	}
	b.release(50)
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("acquire failed")
		}
	case <-time.After(time.Minute):
		t.Fatal("the release did not wake the waiting acquire")
	}
	if used := b.used(); used != 70 {
		t.Fatalf("%d bytes used, want 70", used)
	}
}
