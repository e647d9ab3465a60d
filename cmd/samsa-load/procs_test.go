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
	if cpu, err := procCPU(os.Getpid()); err != nil || cpu <= 0 {
		t.Fatalf("procCPU: %v %v (x %d)", cpu, err, x)
	}
	if kib, err := procRSSKiB(os.Getpid()); err != nil || kib <= 0 {
		t.Fatalf("procRSSKiB: %v %v", kib, err)
	}
}
