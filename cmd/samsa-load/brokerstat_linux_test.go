package main

import (
	"os"
	"syscall"
	"testing"
)

// TestBrokerSwitches: the context switches -broker-pid reports are this
// process's threads' (/proc/PID/task/*/status); a thread that sleeps
// switches voluntarily.
func TestBrokerSwitches(t *testing.T) {
	s := &brokerStat{pids: []int{os.Getpid()}}
	before := s.switches()
	for range 20 {
		syscall.Nanosleep(&syscall.Timespec{Nsec: 100_000}, nil)
	}
	if after := s.switches(); after[0] < before[0]+20 {
		t.Fatalf("voluntary context switches: %d before, %d after 20 sleeps", before[0], after[0])
	}
}
