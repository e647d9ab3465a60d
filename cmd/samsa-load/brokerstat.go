package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// brokerStat watches the broker processes (same machine, -broker-pid)
// during one phase: the CPU time they used (utime+stime of /proc/PID/stat,
// summed), their minor page faults (minflt of the same file) and their
// peak resident memory (the sum of VmRSS of /proc/PID/status, sampled
// every 100 ms). No pid watches nothing.
type brokerStat struct {
	pids     []int
	cpu0     time.Duration
	minflt0  int64
	csw0     [2]int64
	done     chan struct{}
	wg       sync.WaitGroup
	peakKiB  int64
	sampleMu sync.Mutex
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go runs on.
const clockTicks = 100

// parsePIDs parses -broker-pid: process ids, comma-separated.
func parsePIDs(v string) ([]int, error) {
	var pids []int
	for _, f := range strings.Split(v, ",") {
		pid, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("want process ids, comma-separated; got %q", v)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

func watchBroker(pids []int) *brokerStat {
	s := &brokerStat{pids: pids, done: make(chan struct{})}
	if len(pids) == 0 {
		return s
	}
	s.cpu0, s.minflt0, _ = s.usage()
	s.csw0 = s.switches()
	s.sample()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

// usage returns the CPU time and the minor page faults of the watched
// processes, summed.
func (s *brokerStat) usage() (cpu time.Duration, minflt int64, err error) {
	for _, pid := range s.pids {
		c, f, err := procUsage(pid)
		if err != nil {
			return 0, 0, err
		}
		cpu, minflt = cpu+c, minflt+f
	}
	return cpu, minflt, nil
}

func (s *brokerStat) sample() {
	var sum int64
	for _, pid := range s.pids {
		kib, err := procRSSKiB(pid)
		if err != nil {
			return
		}
		sum += kib
	}
	s.sampleMu.Lock()
	s.peakKiB = max(s.peakKiB, sum)
	s.sampleMu.Unlock()
}

// stop ends the phase and sets r's broker figures for bytes moved in it.
func (s *brokerStat) stop(r *result, bytes int64) {
	if len(s.pids) == 0 {
		return
	}
	close(s.done)
	s.wg.Wait()
	s.sample()
	cpu, minflt, err := s.usage()
	if err != nil {
		return
	}
	used := (cpu - s.cpu0).Seconds()
	r.BrokerCPUSeconds = used
	if bytes > 0 {
		r.BrokerCPUSecPerGB = used / (float64(bytes) / 1e9)
		r.BrokerMinFltPerGB = float64(minflt-s.minflt0) / (float64(bytes) / 1e9)
	}
	r.BrokerPeakRSSMB = float64(s.peakKiB) / 1024
	if csw := s.switches(); bytes > 0 && csw[0] > 0 {
		r.BrokerVCSwPerGB = float64(csw[0]-s.csw0[0]) / (float64(bytes) / 1e9)
		r.BrokerNVCSwPerGB = float64(csw[1]-s.csw0[1]) / (float64(bytes) / 1e9)
	}
}

// switches returns the voluntary and involuntary context switches of the
// watched processes' threads, summed (/proc/PID/task/*/status; a thread
// that exits during the phase takes its switches with it, which Go's and
// the JVM's long-lived threads rarely do). A voluntary switch is a thread
// blocking (a wake-up to come); involuntary ones are preemption.
func (s *brokerStat) switches() (csw [2]int64) {
	for _, pid := range s.pids {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, t := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				for i, key := range [2]string{"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"} {
					if rest, ok := strings.CutPrefix(line, key); ok {
						n, _ := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
						csw[i] += n
					}
				}
			}
		}
	}
	return csw
}

// brokerText is the human-readable broker part of a result line.
func (r *result) brokerText() string {
	if r.BrokerPeakRSSMB == 0 {
		return ""
	}
	return fmt.Sprintf("; broker: %.2f CPU s (%.1f CPU s/GB), peak RSS %.0f MB", r.BrokerCPUSeconds, r.BrokerCPUSecPerGB, r.BrokerPeakRSSMB)
}

// procUsage returns the user+system CPU time and the minor page faults
// of pid.
func procUsage(pid int) (cpu time.Duration, minflt int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) may hold spaces: fields count from the
	// closing parenthesis. minflt is field 10, utime and stime are
	// fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("samsa-load: /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("samsa-load: /proc/%d/stat: %d fields", pid, len(f))
	}
	minflt, err0 := strconv.ParseInt(f[7], 10, 64)
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err0 != nil || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("samsa-load: /proc/%d/stat: bad fields", pid)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, minflt, nil
}

// procRSSKiB returns VmRSS of pid in KiB.
func procRSSKiB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("samsa-load: /proc/%d/status: no VmRSS", pid)
}
