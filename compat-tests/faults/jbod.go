package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// A full disk with several log directories per node (KIP-858): with
// Config.DirLimit every node has two log directories, its usual one and a
// second one on a small tmpfs of its own (log.dirs=data,data2; the first
// holds the metadata log). The DirFullLeader step fills the tmpfs of a
// node that keeps workload partitions there. As in Kafka, the node must
// take that directory offline and keep running: the partitions of the
// directory get another leader and lose the node from their ISR, stay
// writable, and the node keeps serving its other directory. A failed
// directory stays offline until a restart (in Kafka as in samsa), so
// after the hold the step gives the space back and restarts the node
// (SIGTERM), as an operator would; its replicas there then catch up.

// DirFullLeader fills the second log directory (Config.DirLimit) of a
// node holding workload partitions in it, preferably the leader of the
// picked partition, for the hold, then frees it and restarts the node.
const DirFullLeader Kind = "dir-full-leader"

// Outcomes of a DirFullLeader step (counted with the disk outcomes).
const (
	// DirOffline: the node kept running, the directory went offline and
	// its workload partitions were led elsewhere, without the node in
	// their ISR, and writable, within dirMoveBound.
	DirOffline DiskOutcome = "dir-offline"
	// DirOfflineUnavailable: the node kept running but the directory's
	// partitions were not all moved and writable within dirMoveBound.
	DirOfflineUnavailable DiskOutcome = "dir-offline-unavailable"
	// DirNodeExited: the node halted, where Kafka keeps a node with a
	// healthy directory left running.
	DirNodeExited DiskOutcome = "dir-node-exited"
	// DirHealthyMoved: the directory went offline and its partitions
	// moved, but a partition the node led in its healthy directory
	// changed leader too (Kafka keeps those roles).
	DirHealthyMoved DiskOutcome = "dir-offline-healthy-moved"
)

// dirMoveBound bounds how long the partitions of the filled directory
// take to be led elsewhere and writable (the node reports the directory
// at once; the rest is one controller write and the metadata reaching
// everyone, then a produce).
const dirMoveBound = 60 * time.Second

// mountSecondDir mounts a tmpfs of size bytes on the node's second log
// directory.
func (n *Node) mountSecondDir(size int64) error {
	if err := mountTmpfs(n.SecondDir, size); err != nil {
		return err
	}
	n.secondMounted = true
	return nil
}

func (n *Node) unmountSecondDir() {
	if n.secondMounted {
		_ = syscall.Unmount(n.SecondDir, syscall.MNT_DETACH)
		n.secondMounted = false
	}
}

// dirPartitions returns the partitions of topic that node n keeps in its
// second log directory, asked from n itself (DescribeLogDirs), and
// whether n answers KAFKA_STORAGE_ERROR for that directory.
func (nm *Nemesis) dirPartitions(ctx context.Context, n *Node) (parts []int32, failed bool, err error) {
	cl, err := nm.admin()
	if err != nil {
		return nil, false, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	dirs, err := kadm.NewClient(cl).DescribeBrokerLogDirs(rctx, int32(n.ID), nil)
	if err != nil {
		return nil, false, err
	}
	for dir, d := range dirs {
		if !sameDir(dir, n.SecondDir) {
			continue
		}
		if d.Err != nil {
			return nil, true, nil
		}
		for p := range d.Topics[nm.Topic] {
			parts = append(parts, p)
		}
	}
	slices.Sort(parts)
	return parts, false, nil
}

func sameDir(a, b string) bool {
	return filepath.Clean(a) == filepath.Clean(b)
}

// dirFullStep runs one DirFullLeader step.
func (nm *Nemesis) dirFullStep(ctx context.Context, s Step) error {
	skip := func(format string, args ...any) error {
		nm.logf("nemesis: %v: skipped: "+format, append([]any{s}, args...)...)
		nm.count(s.Kind, true)
		return nm.recover(ctx)
	}
	ls, err := nm.leaders(ctx)
	if err != nil {
		return skip("metadata: %v", err)
	}
	// Candidates: the picked partition's leader first, then the others.
	var cands []*Node
	if l, ok := ls[int32(s.Pick%uint32(nm.Partitions))]; ok {
		if n := nm.C.NodeByID(l); n != nil {
			cands = append(cands, n)
		}
	}
	for _, n := range nm.C.Nodes {
		if !slices.Contains(cands, n) {
			cands = append(cands, n)
		}
	}
	var n *Node
	var inDir []int32
	for _, c := range cands {
		if !c.secondMounted || !c.Running() {
			continue
		}
		parts, failed, err := nm.dirPartitions(ctx, c)
		if err != nil || failed || len(parts) == 0 {
			continue
		}
		n, inDir = c, parts
		break
	}
	if n == nil {
		return skip("no node keeps a partition of %s in a second log directory of its own", nm.Topic)
	}
	var led, kept []int32 // led in the directory, led elsewhere
	for p, l := range ls {
		switch {
		case l != int32(n.ID):
		case slices.Contains(inDir, p):
			led = append(led, p)
		default:
			kept = append(kept, p)
		}
	}
	slices.Sort(led)
	slices.Sort(kept)
	written, err := fillDir(n.SecondDir)
	if err != nil {
		return err
	}
	begin := time.Now()
	nm.logf("nemesis: second log dir of node %d (partitions %v of %s there, leader of %v; leader of %v elsewhere) full (%d bytes of filler); for %v",
		n.ID, inDir, nm.Topic, led, kept, written, s.Hold)
	outcome := DirOffline
	var state string
	err = pollUntil(ctx, max(s.Hold, dirMoveBound), func(ctx context.Context) (bool, error) {
		if !n.Running() {
			return true, nil
		}
		_, failed, err := nm.dirPartitions(ctx, n)
		if err != nil || !failed {
			state = fmt.Sprintf("node %d: directory not reported failed (%v)", n.ID, err)
			return false, nil
		}
		ok, st, err := nm.dirMoved(ctx, n, inDir)
		state = st
		if err != nil || !ok {
			return false, nil
		}
		if err := nm.probeProduce(ctx); err != nil {
			state = "probe: " + err.Error()
			return false, nil
		}
		return true, nil
	})
	switch {
	case !n.Running():
		outcome = DirNodeExited
		nm.logf("nemesis: node %d exited %v after its second log dir filled (Kafka keeps it running on its healthy dir)",
			n.ID, time.Since(begin).Round(100*time.Millisecond))
	case err != nil:
		outcome = DirOfflineUnavailable
		nm.logf("nemesis: partitions %v of node %d's full dir not moved and writable within %v (%s)", inDir, n.ID, dirMoveBound, state)
	default:
		nm.logf("nemesis: node %d took its full dir offline, still running; partitions %v led elsewhere and writable %v after the fill",
			n.ID, inDir, time.Since(begin).Round(100*time.Millisecond))
		if err := harness.Probe(ctx, n.Addr); err != nil {
			outcome = DirOfflineUnavailable
			nm.logf("nemesis: node %d no longer answers ApiVersions: %v", n.ID, err)
			break
		}
		now, err := nm.leaders(ctx)
		if err != nil {
			nm.logf("nemesis: metadata: %v", err)
			break
		}
		for _, p := range kept {
			if now[p] != int32(n.ID) {
				outcome = DirHealthyMoved
				nm.logf("nemesis: partition %d of node %d's healthy dir changed leader to %d", p, n.ID, now[p])
			}
		}
	}
	holdFor(ctx, s.Hold-time.Since(begin))
	if err := os.Remove(filepath.Join(n.SecondDir, fillerName)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("faults: filler: %w", err)
	}
	// A failed directory stays offline until a restart, in Kafka too.
	if n.Running() {
		if err := n.Stop(); err != nil {
			return err
		}
	}
	nm.logf("nemesis: node %d's second log dir has space again; restarting node %d", n.ID, n.ID)
	if err := n.Restart(ctx); err != nil {
		return err
	}
	nm.mu.Lock()
	if nm.disk == nil {
		nm.disk = make(map[DiskOutcome]int)
	}
	nm.disk[outcome]++
	nm.mu.Unlock()
	nm.count(s.Kind, false)
	return nm.recover(ctx)
}

// dirMoved reports whether every partition of parts has a leader other
// than node n and n out of its ISR, with the state seen.
func (nm *Nemesis) dirMoved(ctx context.Context, n *Node, parts []int32) (bool, string, error) {
	cl, err := nm.admin()
	if err != nil {
		return false, "", err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(nm.Topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return false, "metadata: " + err.Error(), err
	}
	ok := true
	state := ""
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if !slices.Contains(parts, p.Partition) {
				continue
			}
			state += fmt.Sprintf(" p%d:leader=%d,isr=%v,offline=%v", p.Partition, p.Leader, p.ISR, p.OfflineReplicas)
			if p.Leader < 0 || p.Leader == int32(n.ID) || slices.Contains(p.ISR, int32(n.ID)) {
				ok = false
			}
		}
	}
	return ok, state, nil
}
