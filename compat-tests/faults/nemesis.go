package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kind is one kind of fault.
type Kind string

// The faults. "Leader" is the leader of a partition of the workload topic,
// "coordinator" the leader of the group's __consumer_offsets partition,
// "txn-coordinator" that of a transactional id's __transaction_state one.
const (
	KillLeader            Kind = "kill-leader"
	KillCoordinator       Kind = "kill-coordinator"
	KillController        Kind = "kill-controller"
	KillTxnCoordinator    Kind = "kill-txn-coordinator"
	PauseLeader           Kind = "pause-leader"
	PauseCoordinator      Kind = "pause-coordinator"
	IsolateLeader         Kind = "isolate-leader"
	IsolateCoordinator    Kind = "isolate-coordinator"
	IsolateTxnCoordinator Kind = "isolate-txn-coordinator"
	SplitLeaderInMinority Kind = "split-leader-minority"
	SplitLeaderInMajority Kind = "split-leader-majority"
	BridgeSplit           Kind = "bridge"
	RollingRestart        Kind = "rolling-restart"
	KillMinority          Kind = "kill-minority"
	// DiskFullLeader fills the log directory of a partition leader (a
	// tmpfs of its own, Config.DiskLimit) for the hold, then frees it.
	DiskFullLeader Kind = "disk-full-leader"
	// PowerLossLeader and its variants SIGKILL the node, make its log
	// directories look as after a power cut (PowerCut: unsynced data
	// lost), hold, and restart it.
	PowerLossLeader         Kind = "power-loss-leader"
	PowerLossCoordinator    Kind = "power-loss-coordinator"
	PowerLossController     Kind = "power-loss-controller"
	PowerLossTxnCoordinator Kind = "power-loss-txn-coordinator"
)

// NetworkKind reports whether k needs the namespace network.
func (k Kind) NetworkKind() bool {
	switch k {
	case IsolateLeader, IsolateCoordinator, IsolateTxnCoordinator, SplitLeaderInMinority, SplitLeaderInMajority, BridgeSplit,
		PauseControllerIsolateLeader:
		return true
	}
	return false
}

// Step is one fault of a schedule: Hold is how long it lasts (the node is
// down, paused or cut off) before it is healed.
type Step struct {
	Kind Kind
	Hold time.Duration
	// Pick chooses among candidate targets (a partition, a node), so that
	// a seed replays the same choices.
	Pick uint32
}

func (s Step) String() string { return fmt.Sprintf("%s hold=%v pick=%d", s.Kind, s.Hold, s.Pick) }

// Weight is a fault kind and its relative frequency in a schedule.
type Weight struct {
	Kind   Kind
	Weight int
}

// Schedule draws steps from weights with a seeded generator: the same seed
// and weights give the same steps. holdMin..holdMax bounds each hold.
func Schedule(seed uint64, weights []Weight, n int, holdMin, holdMax time.Duration) []Step {
	rng := rand.New(rand.NewPCG(seed, seed^0x5a5a5a5a))
	total := 0
	for _, w := range weights {
		total += w.Weight
	}
	steps := make([]Step, 0, n)
	for range n {
		x := rng.IntN(total)
		var k Kind
		for _, w := range weights {
			if x < w.Weight {
				k = w.Kind
				break
			}
			x -= w.Weight
		}
		hold := holdMin
		if holdMax > holdMin {
			hold += time.Duration(rng.Int64N(int64(holdMax - holdMin)))
		}
		steps = append(steps, Step{Kind: k, Hold: hold.Round(100 * time.Millisecond), Pick: rng.Uint32()})
	}
	return steps
}

// Nemesis applies steps to a Cluster and waits for it to recover after each.
type Nemesis struct {
	C          *Cluster
	Topic      string
	Partitions int32
	Group      string
	TxnID      string
	// RF is the replication factor recovery waits for in every ISR.
	RF int
	// Logf receives one line per action.
	Logf func(format string, args ...any)

	mu      sync.Mutex
	done    map[Kind]int
	skipped map[Kind]int
	slow    int // recoveries that did not finish within their bound
	// disk counts how nodes came out of a full disk (DiskOutcome).
	disk map[DiskOutcome]int
	// probes numbers probeProduce calls.
	probes atomic.Int64
	// cuts are the nodes cut off from a majority (kip848stale.go).
	cuts []cutSpan
	// power sums what the power cuts lost (power.go).
	power PowerCutReport
	// powerCuts counts the nodes whose power was cut.
	powerCuts int
}

// ErrNoTarget is returned when a fault's target cannot be found.
var ErrNoTarget = errors.New("faults: no target")

// Counts returns how many steps of each kind ran and were skipped.
func (nm *Nemesis) Counts() (done, skipped map[Kind]int, slowRecoveries int) {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	return maps(nm.done), maps(nm.skipped), nm.slow
}

func maps(m map[Kind]int) map[Kind]int {
	out := make(map[Kind]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// CountsString formats Counts sorted by kind.
func (nm *Nemesis) CountsString() string {
	done, skipped, slow := nm.Counts()
	var parts []string
	for k, v := range done {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(parts)
	s := strings.Join(parts, " ")
	if len(skipped) > 0 {
		var sk []string
		for k, v := range skipped {
			sk = append(sk, fmt.Sprintf("%s=%d", k, v))
		}
		sort.Strings(sk)
		s += " skipped: " + strings.Join(sk, " ")
	}
	return s + fmt.Sprintf(" slow-recoveries=%d", slow)
}

func (nm *Nemesis) logf(format string, args ...any) {
	if nm.Logf != nil {
		nm.Logf(format, args...)
	}
}

func (nm *Nemesis) admin() (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(nm.C.Addrs()...), kgo.RequestRetries(2),
		kgo.DialTimeout(2*time.Second), kgo.RequestTimeoutOverhead(3*time.Second))
}

// leaders returns the leader node id of each workload partition.
func (nm *Nemesis) leaders(ctx context.Context) (map[int32]int32, error) {
	cl, err := nm.admin()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(nm.Topic)
	req.Topics = append(req.Topics, t)
	rctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return nil, err
	}
	out := make(map[int32]int32)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Leader >= 0 {
				out[p.Partition] = p.Leader
			}
		}
	}
	return out, nil
}

// coordinator returns the node id of the group (keyType 0) or
// transaction (1) coordinator of key.
func (nm *Nemesis) coordinator(ctx context.Context, key string, keyType int8) (int32, error) {
	cl, err := nm.admin()
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = key
	req.CoordinatorKeys = []string{key}
	req.CoordinatorType = keyType
	rctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Coordinators) > 0 {
		c := resp.Coordinators[0]
		if c.ErrorCode != 0 {
			return 0, fmt.Errorf("%w: FindCoordinator error %d", ErrNoTarget, c.ErrorCode)
		}
		return c.NodeID, nil
	}
	if resp.ErrorCode != 0 {
		return 0, fmt.Errorf("%w: FindCoordinator error %d", ErrNoTarget, resp.ErrorCode)
	}
	return resp.NodeID, nil
}

func (nm *Nemesis) controller(ctx context.Context) (int32, error) {
	cl, err := nm.admin()
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return 0, err
	}
	if resp.ControllerID < 0 {
		return 0, fmt.Errorf("%w: no controller in metadata", ErrNoTarget)
	}
	return resp.ControllerID, nil
}

// target finds the node a step acts on.
func (nm *Nemesis) target(ctx context.Context, s Step) (*Node, string, error) {
	var id int32
	var what string
	var err error
	switch s.Kind {
	case KillLeader, PauseLeader, IsolateLeader, SplitLeaderInMinority, SplitLeaderInMajority, BridgeSplit, KillMinority, DiskFullLeader, SlowLeader, LossyLink, PowerLossLeader:
		var ls map[int32]int32
		ls, err = nm.leaders(ctx)
		if err == nil {
			p := int32(s.Pick % uint32(nm.Partitions))
			l, ok := ls[p]
			if !ok {
				err = fmt.Errorf("%w: partition %d has no leader", ErrNoTarget, p)
			}
			id, what = l, fmt.Sprintf("leader of %s/%d", nm.Topic, p)
		}
	case KillCoordinator, PauseCoordinator, IsolateCoordinator, PowerLossCoordinator:
		id, err = nm.coordinator(ctx, nm.Group, 0)
		what = "coordinator of group " + nm.Group
	case IsolateTxnCoordinator, KillTxnCoordinator, PowerLossTxnCoordinator:
		id, err = nm.coordinator(ctx, nm.TxnID, 1)
		what = "coordinator of transactional id " + nm.TxnID
	case KillController, PowerLossController:
		id, err = nm.controller(ctx)
		what = "active controller"
	default:
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	n := nm.C.NodeByID(id)
	if n == nil {
		return nil, "", fmt.Errorf("%w: node id %d", ErrNoTarget, id)
	}
	return n, what, nil
}

func (nm *Nemesis) count(k Kind, skipped bool) {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	if nm.done == nil {
		nm.done, nm.skipped = make(map[Kind]int), make(map[Kind]int)
	}
	if skipped {
		nm.skipped[k]++
	} else {
		nm.done[k]++
	}
}

// holdFor waits d or until ctx ends.
func holdFor(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Run applies one step, heals it, and waits for the cluster to recover.
// A step whose target cannot be found, or that needs the namespace network
// in loopback mode, is counted as skipped. An error means the cluster could
// not be brought back (a node did not restart).
func (nm *Nemesis) Run(ctx context.Context, s Step) error {
	if s.Kind.NetworkKind() && nm.C.Net == nil {
		nm.count(s.Kind, true)
		return nil
	}
	dg, _ := nm.C.Net.(Degrader)
	if s.Kind.DegradeKind() && dg == nil {
		nm.count(s.Kind, true)
		return nil
	}
	if s.Kind == RollingRestart {
		return nm.rollingRestart(ctx)
	}
	if s.Kind == DirFullLeader {
		return nm.dirFullStep(ctx, s)
	}
	if s.Kind == PowerLossFollowerKillLeader {
		return nm.powerLossFollowerKillLeader(ctx, s)
	}
	if s.Kind.isCombined() {
		return nm.runCombined(ctx, s)
	}
	n, what, err := nm.targetOf(ctx, s)
	if err != nil {
		nm.logf("nemesis: %v: skipped: %v", s, err)
		nm.count(s.Kind, true)
		return nm.recover(ctx)
	}
	start := time.Now()
	switch s.Kind {
	case KillLeader, KillCoordinator, KillController, KillTxnCoordinator:
		if err := n.Kill(); err != nil {
			return err
		}
		nm.logf("nemesis: SIGKILL node %d (%s); down for %v", n.ID, what, s.Hold)
		holdFor(ctx, s.Hold)
		if err := n.Restart(ctx); err != nil {
			return err
		}
	case PowerLossLeader, PowerLossCoordinator, PowerLossController, PowerLossTxnCoordinator:
		if err := nm.powerLoss(ctx, n, what, s); err != nil {
			return err
		}
	case KillMinority:
		// Kill every replica but the leader: acks=all must stop (below
		// min.insync.replicas), nothing acknowledged may be lost.
		var killed []*Node
		for _, o := range nm.C.Nodes {
			if o != n && len(killed) < nm.RF-1 {
				if err := o.Kill(); err != nil {
					return err
				}
				killed = append(killed, o)
			}
		}
		nm.logf("nemesis: SIGKILL %d nodes other than node %d (%s); down for %v", len(killed), n.ID, what, s.Hold)
		holdFor(ctx, s.Hold)
		for _, o := range killed {
			if err := o.Restart(ctx); err != nil {
				return err
			}
		}
	case DiskFullLeader:
		if !n.mounted {
			nm.logf("nemesis: %v: skipped: node %d has no disk of its own", s, n.ID)
			nm.count(s.Kind, true)
			return nm.recover(ctx)
		}
		if err := nm.diskFull(ctx, n, what, s.Hold); err != nil {
			return err
		}
	case PauseLeader, PauseCoordinator:
		if err := n.Pause(); err != nil {
			return err
		}
		hold := max(s.Hold, pauseMin)
		nm.logf("nemesis: SIGSTOP node %d (%s) for %v", n.ID, what, hold)
		holdFor(ctx, hold)
		if err := n.Resume(); err != nil {
			return err
		}
	case IsolateLeader, IsolateCoordinator, IsolateTxnCoordinator:
		groups := [][]int{{n.ID - 1}, others(len(nm.C.Nodes), n.ID-1)}
		if err := nm.partition(groups, what); err != nil {
			return err
		}
		holdFor(ctx, s.Hold)
	case SplitLeaderInMinority, SplitLeaderInMajority:
		rest := others(len(nm.C.Nodes), n.ID-1)
		rng := rand.New(rand.NewPCG(uint64(s.Pick), 7))
		rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
		minority := (len(nm.C.Nodes) - 1) / 2
		var a, b []int
		if s.Kind == SplitLeaderInMinority {
			a = append([]int{n.ID - 1}, rest[:minority-1]...)
			b = rest[minority-1:]
		} else {
			a = rest[:minority]
			b = append([]int{n.ID - 1}, rest[minority:]...)
		}
		if err := nm.partition([][]int{a, b}, what); err != nil {
			return err
		}
		holdFor(ctx, s.Hold)
	case BridgeSplit:
		// Two halves that cannot see each other and one node, not the
		// leader, that sees both.
		rest := others(len(nm.C.Nodes), n.ID-1)
		rng := rand.New(rand.NewPCG(uint64(s.Pick), 11))
		rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
		rest = rest[1:] // rest[0] is the bridge
		half := (len(nm.C.Nodes) - 1) / 2
		a := append([]int{n.ID - 1}, rest[:half-1]...)
		b := rest[half-1:]
		if err := nm.partition([][]int{a, b}, what+" (bridge)"); err != nil {
			return err
		}
		holdFor(ctx, s.Hold)
	case SlowLeader, LossyLink:
		nm.degrade(ctx, dg, s, n.ID-1, what)
		dg.Restore()
		nm.logf("nemesis: links restored after %v", time.Since(start).Round(100*time.Millisecond))
	}
	if s.Kind.NetworkKind() {
		if err := nm.C.Net.Heal(); err != nil {
			return err
		}
		nm.noteHeal()
		nm.logf("nemesis: healed after %v", time.Since(start).Round(100*time.Millisecond))
	}
	nm.count(s.Kind, false)
	return nm.recover(ctx)
}

func (nm *Nemesis) partition(groups [][]int, what string) error {
	var desc []string
	for _, g := range groups {
		ids := make([]string, len(g))
		for i, m := range g {
			ids[i] = fmt.Sprint(m + 1)
		}
		desc = append(desc, "{"+strings.Join(ids, ",")+"}")
	}
	nm.logf("nemesis: partition %s (%s)", strings.Join(desc, " | "), what)
	nm.noteCut(groups)
	return nm.C.Net.Partition(groups)
}

func others(n, except int) []int {
	var out []int
	for i := range n {
		if i != except {
			out = append(out, i)
		}
	}
	return out
}

func (nm *Nemesis) rollingRestart(ctx context.Context) error {
	for _, n := range nm.C.Nodes {
		if err := n.Stop(); err != nil {
			return err
		}
		nm.logf("nemesis: rolling restart: node %d stopped (SIGTERM)", n.ID)
		if err := n.Restart(ctx); err != nil {
			return err
		}
		if err := nm.recover(ctx); err != nil {
			return err
		}
	}
	nm.count(RollingRestart, false)
	return nil
}

// pauseMin is the least a pause lasts: longer than the nodes' broker
// session timeout (3 s in BaseEnv), so the paused node is fenced.
const pauseMin = 4500 * time.Millisecond

// recoverBound bounds how long recovery waits for full ISRs.
const recoverBound = 90 * time.Second

// recover makes sure every node runs and is resumed and the network is
// whole, then waits (bounded) until every workload partition has a leader
// and a full ISR. Not reaching full ISRs is counted, not an error: the
// workload and checker judge the outcome.
func (nm *Nemesis) recover(ctx context.Context) error {
	if nm.C.Net != nil {
		if err := nm.C.Net.Heal(); err != nil {
			return err
		}
		nm.noteHeal()
		if dg, ok := nm.C.Net.(Degrader); ok {
			dg.Restore()
		}
	}
	for _, n := range nm.C.Nodes {
		if n.Paused() {
			if err := n.Resume(); err != nil {
				return err
			}
		}
		if !n.Running() {
			nm.logf("nemesis: node %d is down; restarting", n.ID)
			if err := n.Restart(ctx); err != nil {
				return err
			}
		}
	}
	var state string
	begin := time.Now()
	err := pollUntil(ctx, recoverBound, func(ctx context.Context) (bool, error) {
		ok, st, err := nm.isrFull(ctx)
		if st != "" {
			// Keep the last state seen: the last call may be the one the
			// bound cut off.
			state = st
		}
		return ok, err
	})
	if err == nil {
		nm.logf("nemesis: recovered in %v:%s", time.Since(begin).Round(100*time.Millisecond), state)
		nm.logStaleViews(ctx)
	} else {
		nm.logf("nemesis: last state:%s", state)
		for _, n := range nm.C.Nodes {
			nm.logf("nemesis: node %d log tail:\n%s", n.ID, n.Tail(25))
		}
		nm.mu.Lock()
		nm.slow++
		nm.mu.Unlock()
		nm.logf("nemesis: recovery incomplete: %v", err)
	}
	return nil
}

// isrFull reports whether every workload partition has a leader and an
// ISR of RF replicas, with the state it saw.
func (nm *Nemesis) isrFull(ctx context.Context) (bool, string, error) {
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
		return false, "", err
	}
	ok := len(resp.Topics) == 1
	var b strings.Builder
	for _, t := range resp.Topics {
		if len(t.Partitions) != int(nm.Partitions) {
			ok = false
		}
		for _, p := range t.Partitions {
			fmt.Fprintf(&b, " p%d:leader=%d,epoch=%d,isr=%v,err=%d", p.Partition, p.Leader, p.LeaderEpoch, p.ISR, p.ErrorCode)
			if p.Leader < 0 || len(p.ISR) < nm.RF || p.ErrorCode != 0 {
				ok = false
			}
		}
	}
	return ok, fmt.Sprintf("controller=%d%s", resp.ControllerID, b.String()), nil
}

// DiskOutcome is how a node came out of a full disk once the space
// returned.
type DiskOutcome string

// Disk outcomes: the node served again by itself (every ISR full within
// diskSelfBound), it had exited (recovery restarted it), or it was still
// running but had not recovered, and was restarted (Kafka halts a broker
// whose last log dir failed, so an operator restart is the Kafka answer).
const (
	DiskSelfRecovered DiskOutcome = "self-recovered"
	DiskExited        DiskOutcome = "exited"
	DiskRestarted     DiskOutcome = "restarted"
	// DiskExitedUnavailable: the node halted on its full disk (as Kafka
	// does) but the partitions it led did not become writable on the
	// other replicas within diskMoveBound while it was down.
	DiskExitedUnavailable DiskOutcome = "exited-unavailable"
)

// diskSelfBound is how long a node gets to recover by itself after its
// disk has space again.
const diskSelfBound = 30 * time.Second

// afterDiskFull waits for node n to recover by itself from a full disk and
// restarts it when it does not.
func (nm *Nemesis) afterDiskFull(ctx context.Context, n *Node) error {
	outcome := DiskSelfRecovered
	begin := time.Now()
	var state string
	err := pollUntil(ctx, diskSelfBound, func(ctx context.Context) (bool, error) {
		if !n.Running() {
			return true, nil
		}
		ok, st, err := nm.isrFull(ctx)
		state = st
		if err != nil {
			state = "metadata: " + err.Error()
		}
		if !ok || err != nil {
			return false, err
		}
		// The ISRs do not show a node whose logs went offline (it keeps
		// its leaderships): a produce to every partition does.
		if err := nm.probeProduce(ctx); err != nil {
			state += " probe: " + err.Error()
			return false, nil
		}
		return true, nil
	})
	switch {
	case !n.Running():
		outcome = DiskExited
		nm.logf("nemesis: node %d exited on its full disk; restarting it", n.ID)
	case err != nil:
		outcome = DiskRestarted
		nm.logf("nemesis: node %d not recovered %v after its disk had space again (%s); restarting it", n.ID, diskSelfBound, state)
		if err := n.Kill(); err != nil {
			return err
		}
		if err := n.Restart(ctx); err != nil {
			return err
		}
	default:
		nm.logf("nemesis: node %d recovered by itself %v after its disk had space again", n.ID, time.Since(begin).Round(100*time.Millisecond))
	}
	nm.mu.Lock()
	if nm.disk == nil {
		nm.disk = make(map[DiskOutcome]int)
	}
	nm.disk[outcome]++
	nm.mu.Unlock()
	return nil
}

// probeProduce produces one acks=all record to every workload partition
// and returns the first error. Each record's value is new
// ("probe-<n>-<partition>") and the producer idempotent, so that no probe
// can be taken for a duplicate by the checker.
func (nm *Nemesis) probeProduce(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(nm.C.Addrs()...), kgo.DefaultProduceTopic(nm.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequestRetries(1), kgo.RecordDeliveryTimeout(4*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	n := nm.probes.Add(1)
	var recs []*kgo.Record
	for p := range nm.Partitions {
		recs = append(recs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "probe-%d-%d", n, p)})
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// DiskOutcomes returns how nodes came out of full disks.
func (nm *Nemesis) DiskOutcomes() map[DiskOutcome]int {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	out := make(map[DiskOutcome]int, len(nm.disk))
	for k, v := range nm.disk {
		out[k] = v
	}
	return out
}

// KindsIn lists the distinct kinds of steps, in first-use order.
func KindsIn(steps []Step) []Kind {
	var out []Kind
	for _, s := range steps {
		if !slices.Contains(out, s.Kind) {
			out = append(out, s.Kind)
		}
	}
	return out
}
