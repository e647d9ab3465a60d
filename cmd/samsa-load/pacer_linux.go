//go:build linux

package main

import (
	"runtime"
	"syscall"
	"time"
)

// prctl options for the calling thread's timer slack.
const (
	prSetTimerSlack = 29
	prGetTimerSlack = 30
)

// precisePacing returns sleep, which blocks the calling goroutine for d
// with a thread's nanosleep, and done, to call when the pacing ends. The
// goroutine stays on its own OS thread meanwhile, with a timer slack of
// 1 ns.
//
// time.Sleep does not pace a fixed-rate sender: when the process has
// nothing else to do, the Go runtime waits for its next timer in
// epoll_wait, whose timeout is whole milliseconds, so any sleep shorter
// than 1 ms lasted about 1 ms (runtime/netpoll_epoll.go) and the
// kernel's default timer slack (50 us) comes on top. At 10,000 records/s
// (100 us apart) the sender then sent bursts of up to ten records at
// once; at 1,000/s every other record went out right behind the one before
// (-e2e-split's "sender" line counts these). A nanosleep on a thread wakes
// within microseconds.
func precisePacing() (sleep func(time.Duration), done func()) {
	runtime.LockOSThread()
	slack, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	if errno == 0 {
		syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0)
	}
	sleep = func(d time.Duration) {
		ts := syscall.NsecToTimespec(int64(d))
		for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
		}
	}
	done = func() {
		if errno == 0 {
			syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, slack, 0)
		}
		runtime.UnlockOSThread()
	}
	return sleep, done
}
