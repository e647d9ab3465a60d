package main

import (
	"maps"
	"os"
	"slices"
	"testing"
)

// TestPartitionShares: consumers of -procs split the partitions round
// robin, every partition exactly once.
func TestPartitionShares(t *testing.T) {
	var all []int32
	for i := range 4 {
		all = append(all, partitionsOf(i, 4, 10)...)
	}
	slices.Sort(all)
	if want := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(all, want) {
		t.Fatalf("shares cover %v, want %v", all, want)
	}
	if got := partitionsOf(1, 4, 10); !slices.Equal(got, []int32{1, 5, 9}) {
		t.Fatalf("child 1 of 4 gets %v", got)
	}
}

func TestParseTargets(t *testing.T) {
	got, err := parseTargets("0:10,3:0,5:123")
	if err != nil || !maps.Equal(got, map[int32]int64{0: 10, 3: 0, 5: 123}) {
		t.Fatalf("parseTargets: %v %v", got, err)
	}
	for _, bad := range []string{"", "1", "a:1", "1:b"} {
		if _, err := parseTargets(bad); err == nil {
			t.Fatalf("parseTargets(%q) accepted", bad)
		}
	}
}

// TestProcStats reads this test process's own CPU time and RSS the way
// -broker-pid reads the broker's.
func TestProcStats(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	x := 0
	for i := range 200_000_000 {
		x += i
	}
	if cpu, minflt, err := procUsage(os.Getpid()); err != nil || cpu <= 0 || minflt <= 0 {
		t.Fatalf("procUsage: %v %v %v (x %d)", cpu, minflt, err, x)
	}
	if kib, err := procRSSKiB(os.Getpid()); err != nil || kib <= 0 {
		t.Fatalf("procRSSKiB: %v %v", kib, err)
	}
}

// TestParsePIDs: -broker-pid takes one pid or a cluster's, comma-separated.
func TestParsePIDs(t *testing.T) {
	got, err := parsePIDs("12, 34,56")
	if err != nil || !slices.Equal(got, []int{12, 34, 56}) {
		t.Fatalf("parsePIDs: %v %v", got, err)
	}
	for _, bad := range []string{"", "1,", "a", "0", "-3", "1;2"} {
		if _, err := parsePIDs(bad); err == nil {
			t.Fatalf("parsePIDs(%q) accepted", bad)
		}
	}
}

// TestBrokerStatSums watches this process twice: the CPU and RSS of a
// cluster are the sums over its nodes, so the same pid twice doubles them.
func TestBrokerStatSums(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	pid := os.Getpid()
	rss, err := procRSSKiB(pid)
	if err != nil {
		t.Fatal(err)
	}
	// The watch samples RSS at once, so its peak is at least twice the
	// process's RSS of about now (a quarter less, for memory returned
	// to the system in between).
	two := watchBroker([]int{pid, pid})
	var r result
	two.stop(&r, 1e9)
	if got := r.BrokerPeakRSSMB * 1024; got < 1.5*float64(rss) {
		t.Fatalf("peak RSS of the pid twice: %.0f KiB, one reading %d KiB", got, rss)
	}
	if r.BrokerCPUSeconds < 0 || r.BrokerCPUSecPerGB != r.BrokerCPUSeconds {
		t.Fatalf("CPU %v s, %v s/GB for 1 GB", r.BrokerCPUSeconds, r.BrokerCPUSecPerGB)
	}
}
