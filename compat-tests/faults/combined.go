package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Combined faults: schedules a Jepsen user tries that no single step
// above makes.
const (
	// KillTwoQuick SIGKILLs a partition leader and, after a short gap
	// (0-1.5 s, from Pick), a second node, holds, and restarts both in
	// an order Pick chooses: with RF=3 two of three replicas fail, N-1,
	// so nothing acknowledged may be lost; the controller quorum loses
	// its majority for the hold too.
	KillTwoQuick Kind = "kill-two-quick"
	// KillAll SIGKILLs every node within a few milliseconds, holds, and
	// starts them all again at once: a crash of the whole cluster that
	// keeps the page cache (no power cut), so nothing acknowledged may be
	// lost, and the cluster must elect a controller and leaders again
	// from nothing running.
	KillAll Kind = "kill-all"
	// PauseControllerIsolateLeader SIGSTOPs the active controller for
	// longer than the broker session timeout while a partition leader on
	// another node is cut off from every other node: the controller
	// quorum must fail over while the leader's ISR must shrink and its
	// partitions move, both at once.
	PauseControllerIsolateLeader Kind = "pause-controller-isolate-leader"
	// ReassignRollingRestart moves a replica of a workload partition
	// (AlterPartitionReassignments) and restarts every node in turn
	// (SIGTERM) while the new replica copies the log: on more nodes than
	// RF one replica is replaced by a node outside the set; on RF nodes
	// the partition is first shrunk to RF-1 replicas (finished) and then
	// grown back. The reassignment must finish with every target replica
	// in the ISR, and nothing acknowledged may be lost.
	ReassignRollingRestart Kind = "reassign-rolling-restart"
	// PowerLossAll cuts the power of every node at once (each SIGKILLed,
	// then its log directories lose what was not fsynced: PowerCut, or
	// lazyfs's cache), holds, and starts them all again. Every replica
	// may lose the same acknowledged records (Kafka's too: with the
	// default flush policy nothing is fsynced on ack), so this step is
	// not in the soak mixes; TestPowerLossAll checks what must still
	// hold (combined.go).
	PowerLossAll Kind = "power-loss-all"
)

// combinedKind is the kind of the i-th combined step of a soak, in turn.
func combinedKind(i int) Kind {
	return []Kind{KillTwoQuick, PauseControllerIsolateLeader, KillAll, ReassignRollingRestart}[i%4]
}

// isCombined reports whether k is one of the combined kinds.
func (k Kind) isCombined() bool {
	switch k {
	case KillTwoQuick, KillAll, PauseControllerIsolateLeader, ReassignRollingRestart, PowerLossAll:
		return true
	}
	return false
}

// runCombined runs a combined step.
func (nm *Nemesis) runCombined(ctx context.Context, s Step) error {
	var err error
	switch s.Kind {
	case KillTwoQuick:
		err = nm.killTwoQuick(ctx, s)
	case KillAll:
		err = nm.killAll(ctx, s)
	case PauseControllerIsolateLeader:
		err = nm.pauseControllerIsolateLeader(ctx, s)
	case ReassignRollingRestart:
		err = nm.reassignRollingRestart(ctx, s)
	case PowerLossAll:
		err = nm.powerLossAll(ctx, s)
	}
	if errors.Is(err, ErrNoTarget) {
		nm.logf("nemesis: %v: skipped: %v", s, err)
		nm.count(s.Kind, true)
		return nm.recover(ctx)
	}
	if err != nil {
		return err
	}
	nm.count(s.Kind, false)
	return nm.recover(ctx)
}

// leaderOf returns the node leading the workload partition Pick chooses,
// asking for up to targetPatience.
func (nm *Nemesis) leaderOf(ctx context.Context, s Step) (*Node, int32, error) {
	p := int32(s.Pick % uint32(nm.Partitions))
	var leader int32
	err := pollUntil(ctx, targetPatience, func(ctx context.Context) (bool, error) {
		var err error
		leader, _, err = nm.replicasOf(ctx, p)
		return err == nil, err
	})
	if err != nil {
		return nil, p, fmt.Errorf("%w: leader of %s/%d: %v", ErrNoTarget, nm.Topic, p, err)
	}
	n := nm.C.NodeByID(leader)
	if n == nil {
		return nil, p, fmt.Errorf("%w: node id %d", ErrNoTarget, leader)
	}
	return n, p, nil
}

func (nm *Nemesis) killTwoQuick(ctx context.Context, s Step) error {
	first, p, err := nm.leaderOf(ctx, s)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(s.Pick), 13))
	rest := others(len(nm.C.Nodes), first.ID-1)
	second := nm.C.Nodes[rest[rng.IntN(len(rest))]]
	gap := time.Duration(rng.Int64N(int64(1500 * time.Millisecond))).Round(10 * time.Millisecond)
	if err := first.Kill(); err != nil {
		return err
	}
	holdFor(ctx, gap)
	if err := second.Kill(); err != nil {
		return err
	}
	nm.logf("nemesis: SIGKILL node %d (leader of %s/%d), %v later node %d; down for %v",
		first.ID, nm.Topic, p, gap, second.ID, s.Hold)
	holdFor(ctx, s.Hold)
	order := []*Node{first, second}
	if rng.IntN(2) == 0 {
		order[0], order[1] = second, first
	}
	// Neither can be ready before the other is back when the two were a
	// controller majority: launch both, then wait.
	if err := launchAll(ctx, order); err != nil {
		return err
	}
	nm.logf("nemesis: nodes %d and %d restarted (node %d first)", order[0].ID, order[1].ID, order[0].ID)
	return nil
}

func (nm *Nemesis) killAll(ctx context.Context, s Step) error {
	rng := rand.New(rand.NewPCG(uint64(s.Pick), 17))
	order := make([]*Node, len(nm.C.Nodes))
	copy(order, nm.C.Nodes)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for _, n := range order {
		if !n.Running() {
			continue
		}
		if err := n.Kill(); err != nil {
			return err
		}
	}
	nm.logf("nemesis: SIGKILL every node (order %v); down for %v", nodeIDs(order), s.Hold)
	holdFor(ctx, s.Hold)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	if err := launchAll(ctx, order); err != nil {
		return err
	}
	nm.logf("nemesis: every node restarted (order %v)", nodeIDs(order))
	return nil
}

// launchAll launches every node of ns in order, then waits for each to
// be ready. It launches them all before waiting for any, since a node
// cannot be ready while a controller majority is still down.
func launchAll(ctx context.Context, ns []*Node) error {
	for _, n := range ns {
		if err := n.launch(); err != nil {
			return err
		}
	}
	for _, n := range ns {
		if err := n.WaitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

func nodeIDs(ns []*Node) []int {
	out := make([]int, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

func (nm *Nemesis) pauseControllerIsolateLeader(ctx context.Context, s Step) error {
	if nm.C.Net == nil {
		return fmt.Errorf("%w: no network to cut", ErrNoTarget)
	}
	var ctl int32
	err := pollUntil(ctx, targetPatience, func(ctx context.Context) (bool, error) {
		var err error
		ctl, err = nm.controller(ctx)
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("%w: controller: %v", ErrNoTarget, err)
	}
	cn := nm.C.NodeByID(ctl)
	if cn == nil {
		return fmt.Errorf("%w: controller node %d", ErrNoTarget, ctl)
	}
	// The leader of the chosen partition, or of the first partition from
	// there that another node than the controller leads.
	var ls map[int32]int32
	err = pollUntil(ctx, targetPatience, func(ctx context.Context) (bool, error) {
		var err error
		ls, err = nm.leaders(ctx)
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("%w: leaders: %v", ErrNoTarget, err)
	}
	var ln *Node
	var lp int32
	pick := func() {
		for i := range nm.Partitions {
			p := (int32(s.Pick%uint32(nm.Partitions)) + i) % nm.Partitions
			if l, ok := ls[p]; ok && l != ctl {
				ln, lp = nm.C.NodeByID(l), p
				return
			}
		}
	}
	if pick(); ln == nil {
		// The controller leads every partition (it was the one node up
		// after a step): move leaders back to their preferred replicas,
		// as auto.leader.rebalance would in time, and look again.
		if err := nm.electPreferred(ctx); err != nil {
			nm.logf("nemesis: preferred leader election: %v", err)
		} else {
			// The nodes publish the new leaders a moment later.
			_ = pollUntil(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
				if ls2, err := nm.leaders(ctx); err == nil {
					ls = ls2
					pick()
				}
				return ln != nil, nil
			})
			nm.logf("nemesis: preferred leader election done; leaders %v", ls)
		}
	}
	if ln == nil {
		// Every partition is led by the controller: cut off another node.
		rest := others(len(nm.C.Nodes), cn.ID-1)
		ln, lp = nm.C.Nodes[rest[int(s.Pick)%len(rest)]], -1
	}
	if err := cn.Pause(); err != nil {
		return err
	}
	hold := max(s.Hold, pauseMin)
	nm.logf("nemesis: SIGSTOP node %d (active controller) for %v", cn.ID, hold)
	// Cut the leader off a moment later, so the quorum is electing while
	// the leader's followers stop fetching from it.
	holdFor(ctx, time.Duration(s.Pick%1000)*time.Millisecond)
	what := fmt.Sprintf("leader of %s/%d while the controller is paused", nm.Topic, lp)
	if lp < 0 {
		what = "a node while the controller is paused (it leads every partition)"
	}
	if err := nm.partition([][]int{{ln.ID - 1}, others(len(nm.C.Nodes), ln.ID-1)}, what); err != nil {
		return err
	}
	holdFor(ctx, hold)
	if err := nm.C.Net.Heal(); err != nil {
		return err
	}
	nm.noteHeal()
	if err := cn.Resume(); err != nil {
		return err
	}
	nm.logf("nemesis: healed and node %d resumed", cn.ID)
	return nil
}

func (nm *Nemesis) reassignRollingRestart(ctx context.Context, s Step) error {
	p := int32(s.Pick % uint32(nm.Partitions))
	leader, replicas, err := nm.pollReplicasOf(ctx, p)
	if err != nil {
		return fmt.Errorf("%w: replicas of %s/%d: %v", ErrNoTarget, nm.Topic, p, err)
	}
	rng := rand.New(rand.NewPCG(uint64(s.Pick), 19))
	var followers, outside []int32
	for _, r := range replicas {
		if r != leader {
			followers = append(followers, r)
		}
	}
	for _, n := range nm.C.Nodes {
		if id := int32(n.ID); !slices.Contains(replicas, id) {
			outside = append(outside, id)
		}
	}
	if len(followers) == 0 {
		return fmt.Errorf("%w: %s/%d has no follower", ErrNoTarget, nm.Topic, p)
	}
	drop := followers[rng.IntN(len(followers))]
	kept := slices.DeleteFunc(slices.Clone(replicas), func(r int32) bool { return r == drop })
	target := slices.Clone(replicas)
	if len(outside) > 0 {
		target = append(kept, outside[rng.IntN(len(outside))])
	} else {
		nm.logf("nemesis: reassign %s/%d from %v to %v first", nm.Topic, p, replicas, kept)
		if err := Reassign(ctx, nm.C.Addrs(), Assignment{nm.Topic: {p: kept}}); err != nil {
			nm.logf("nemesis: reassignment to %v did not finish: %v", kept, err)
			nm.countSlow()
			return nil
		}
		// Back to every node, the dropped one last: it copies the log
		// from the start.
		target = append(kept, drop)
	}
	nm.logf("nemesis: reassign %s/%d from %v to %v during a rolling restart", nm.Topic, p, replicas, target)
	done := make(chan error, 1)
	go func() { done <- Reassign(ctx, nm.C.Addrs(), Assignment{nm.Topic: {p: target}}) }()
	order := slices.Clone(nm.C.Nodes)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for _, n := range order {
		if err := n.Stop(); err != nil {
			return err
		}
		nm.logf("nemesis: rolling restart: node %d stopped (SIGTERM)", n.ID)
		if err := n.Restart(ctx); err != nil {
			return err
		}
		if err := nm.waitLeaders(ctx); err != nil {
			nm.logf("nemesis: rolling restart: %v", err)
		}
	}
	if err := <-done; err != nil {
		// Counted; then sent again, as an operator would, so that the
		// next steps find the partition on RF replicas.
		nm.logf("nemesis: reassignment to %v did not finish: %v; sending it again", target, err)
		nm.countSlow()
		if err := Reassign(ctx, nm.C.Addrs(), Assignment{nm.Topic: {p: target}}); err != nil {
			nm.logf("nemesis: reassignment to %v sent again did not finish: %v", target, err)
		}
		return nil
	}
	nm.logf("nemesis: reassignment of %s/%d to %v finished", nm.Topic, p, target)
	return nil
}

// waitLeaders waits (bounded by recoverBound) until every workload
// partition has a leader: the next node of a rolling restart is stopped
// only then.
func (nm *Nemesis) waitLeaders(ctx context.Context) error {
	return pollUntil(ctx, recoverBound, func(ctx context.Context) (bool, error) {
		ls, err := nm.leaders(ctx)
		return err == nil && len(ls) == int(nm.Partitions), nil
	})
}

func (nm *Nemesis) countSlow() {
	nm.mu.Lock()
	nm.slow++
	nm.mu.Unlock()
}

// electPreferred elects the preferred leader of every workload partition
// (ElectLeaders, what kafka-leader-election --election-type PREFERRED
// sends); a partition led by its preferred replica already is no error.
func (nm *Nemesis) electPreferred(ctx context.Context) error {
	cl, err := nm.admin()
	if err != nil {
		return err
	}
	defer cl.Close()
	set := kadm.TopicsSet{}
	for p := range nm.Partitions {
		set.Add(nm.Topic, p)
	}
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).ElectLeaders(rctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		return err
	}
	for _, ps := range res {
		for _, r := range ps {
			if r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
				return fmt.Errorf("%s/%d: %w", r.Topic, r.Partition, r.Err)
			}
		}
	}
	return nil
}

func (nm *Nemesis) powerLossAll(ctx context.Context, s Step) error {
	for _, n := range nm.C.Nodes {
		if err := n.Kill(); err != nil {
			return err
		}
	}
	rng := rand.New(rand.NewPCG(uint64(s.Pick), 0x9044))
	for _, n := range nm.C.Nodes {
		summary, _, err := nm.cutPower(ctx, n, rng)
		if err != nil {
			return err
		}
		nm.logf("nemesis: power cut on node %d (every node): %s", n.ID, summary)
	}
	nm.logf("nemesis: power cut on every node; down for %v", s.Hold)
	holdFor(ctx, s.Hold)
	if err := launchAll(ctx, nm.C.Nodes); err != nil {
		return err
	}
	nm.logf("nemesis: every node restarted after the power cut")
	return nil
}

// WithCombined adds the four combined kinds (not PowerLossAll) to a
// weighted soak's weights, each with the weight
// SAMSA_FAULTS_COMBINED_WEIGHT names (run.sh --combined W); without it
// the weights, and so a seed's schedule, are unchanged.
func WithCombined(weights []Weight) []Weight {
	w, err := strconv.Atoi(os.Getenv("SAMSA_FAULTS_COMBINED_WEIGHT"))
	if err != nil || w <= 0 {
		return weights
	}
	out := slices.Clone(weights)
	for _, k := range []Kind{KillTwoQuick, PauseControllerIsolateLeader, KillAll, ReassignRollingRestart} {
		out = append(out, Weight{Kind: k, Weight: w})
	}
	return out
}
