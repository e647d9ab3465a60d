package faults

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestDirFullLeader gives every node two log directories, the second a
// small tmpfs of its own, and fills that tmpfs on a node holding workload
// partitions there (the leader of the picked partition when it does),
// once (three times with SAMSA_FAULTS_EXTRA=1, run.sh --extra), under the
// queue workload. As in Kafka with several log
// directories (KIP-858), the node must keep running and take only that
// directory offline: its partitions there must be led by other replicas,
// without the node in their ISR, and writable within dirMoveBound, the
// node must still answer and lead the partitions it led in its healthy
// directory; after the hold the space is given back and
// the node restarted (a failed directory stays offline until then, in
// Kafka too). No acknowledged record may be lost, duplicated or moved.
func TestDirFullLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	if !DiskAvailable() {
		t.Skip("a tmpfs per node needs root")
	}
	probe := t.TempDir()
	if err := syscall.Mount("tmpfs", probe, "tmpfs", 0, "size=1048576"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	_ = syscall.Unmount(probe, syscall.MNT_DETACH)
	steps := []Step{{Kind: DirFullLeader, Hold: 5 * time.Second, Pick: 0}}
	if os.Getenv("SAMSA_FAULTS_EXTRA") == "1" {
		steps = append(steps, Step{Kind: DirFullLeader, Hold: 5 * time.Second, Pick: 1},
			Step{Kind: DirFullLeader, Hold: 8 * time.Second, Pick: 2})
	}
	p := Plan{
		Nodes: 3, Seed: SeedFromEnvOrTime(), Deadline: 4 * time.Minute, Quiet: 2 * time.Second,
		DirLimit: 64 << 20, Steps: steps,
		Queue: QueueOptions{Topic: "queue", Partitions: 4, Producers: 2, Interval: 5 * time.Millisecond,
			Group: "queue-group", GroupMembers: 2, Acks: -1},
	}
	rep, res := RunPlan(t, p)
	if rep.Acked == 0 {
		t.Fatal("no record was acknowledged")
	}
	if n := res.Faults[DirFullLeader]; n != len(steps) {
		t.Errorf("%d dir-full steps ran, want %d (skipped: %v)", n, len(steps), res.Skipped)
	}
	if n := res.Disk[DirOffline]; n != len(steps) {
		t.Errorf("dir-full outcomes %v, want %d %q (the node keeps running, the directory's partitions move)", res.Disk, len(steps), DirOffline)
	}
	if rep.Anomalies() != 0 {
		t.Errorf("anomalies (seed %d):\n%s", p.Seed, rep)
	}
}
