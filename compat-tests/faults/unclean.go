package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// CreateAssignedTopic creates topic with one partition per entry of
// replicas (replicas[p] lists partition p's brokers, the first the
// preferred leader) and the given configs, and waits until every
// partition has a leader and a full ISR.
func CreateAssignedTopic(ctx context.Context, addrs []string, topic string, replicas [][]int32, configs map[string]string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := harness.AssignedTopicRequest(topic, replicas, configs)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("faults: create topic %s: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("faults: create topic %s: %w", topic, err)
		}
	}
	return pollUntil(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		st, err := partitionStates(ctx, cl, topic)
		if err != nil || len(st) != len(replicas) {
			return false, err
		}
		for p, s := range st {
			if s.Leader < 0 || len(s.ISR) < len(replicas[p]) {
				return false, nil
			}
		}
		return true, nil
	})
}

// PartitionState is one partition as Metadata describes it.
type PartitionState struct {
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
}

// partitionStates returns topic's partitions by number.
func partitionStates(ctx context.Context, cl *kgo.Client, topic string) (map[int32]PartitionState, error) {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := make(map[int32]PartitionState)
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, err
		}
		for _, p := range t.Partitions {
			out[p.Partition] = PartitionState{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: p.Replicas, ISR: p.ISR}
		}
	}
	return out, nil
}

// ErrUnclean is returned when the forced-unclean scenario cannot set up
// its fault (the ISR never shrinks to the leader, a node does not come
// back).
var ErrUnclean = errors.New("faults: unclean scenario")

// UncleanResult is what the forced-unclean scenario measured.
type UncleanResult struct {
	Unclean bool
	// AckedBeforeShrink, AckedLeaderOnly: records acknowledged before the
	// ISR shrank to the leader, and while the leader was alone in it.
	AckedBeforeShrink, AckedLeaderOnly int
	// LeaderAfterKill is the first leader after the kill (-1: none until
	// the old leader came back), ElectedAfter how long after the kill
	// the partition had a leader again, and OldLeaderDown how long the
	// old leader stayed down.
	LeaderAfterKill int32
	ElectedAfter    time.Duration
	OldLeaderDown   time.Duration
	Report          *Report
}

func (r *UncleanResult) String() string {
	return fmt.Sprintf("unclean.leader.election.enable=%v: acked before shrink %d, acked with the leader alone in the ISR %d; "+
		"after the leader was killed: first leader %d, partition leaderless for %v (old leader down %v); lost %d, inconsistent offsets %d, acked %d",
		r.Unclean, r.AckedBeforeShrink, r.AckedLeaderOnly, r.LeaderAfterKill, r.ElectedAfter.Round(100*time.Millisecond),
		r.OldLeaderDown.Round(100*time.Millisecond), r.Report.Lost.Count, r.Report.InconsistentOffset.Count, r.Report.Acked)
}

// uncleanWait is how long the scenario waits for an election after the
// leader is killed before it restarts the old leader.
const uncleanWait = 20 * time.Second

// RunUnclean forces the situation where unclean.leader.election.enable
// decides: a one-partition topic on two brokers (min.insync.replicas=1,
// so the leader alone may acknowledge acks=all writes), the link between
// them cut while the third node (the active controller) sees both, until
// the ISR is the leader alone; the leader keeps acknowledging for a few
// seconds, then it is SIGKILLed and the link healed. With unclean=true
// the out-of-sync follower may be elected and what only the old leader
// had is lost; with false the partition stays leaderless until the old
// leader is back. It needs a three-node cluster with a Network.
func RunUnclean(ctx context.Context, c *Cluster, topic string, unclean bool, logf func(string, ...any)) (*UncleanResult, error) {
	if c.Net == nil {
		return nil, fmt.Errorf("%w: needs a network that can cut links", ErrUnclean)
	}
	nm := &Nemesis{C: c}
	ctrl, err := nm.controller(ctx)
	if err != nil {
		return nil, err
	}
	var pair []int32
	for _, n := range c.Nodes {
		if int32(n.ID) != ctrl && len(pair) < 2 {
			pair = append(pair, int32(n.ID))
		}
	}
	configs := map[string]string{
		"min.insync.replicas":            "1",
		"unclean.leader.election.enable": strconv.FormatBool(unclean),
	}
	if err := CreateAssignedTopic(ctx, c.Addrs(), topic, [][]int32{pair}, configs); err != nil {
		return nil, err
	}
	o := QueueOptions{Topic: topic, Partitions: 1, Producers: 1, Interval: 5 * time.Millisecond, Acks: -1}
	q, err := StartQueue(c.Addrs(), o)
	if err != nil {
		return nil, err
	}
	defer q.Stop()
	res := &UncleanResult{Unclean: unclean, LeaderAfterKill: -1}
	if err := pollUntil(ctx, time.Minute, func(context.Context) (bool, error) { return q.Acked() >= 300, nil }); err != nil {
		return nil, fmt.Errorf("%w: workload: %w", ErrUnclean, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequestRetries(2), kgo.RequestTimeoutOverhead(3*time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	st, err := partitionStates(ctx, cl, topic)
	if err != nil {
		return nil, err
	}
	leader := st[0].Leader
	follower := pair[0]
	if follower == leader {
		follower = pair[1]
	}
	logf("unclean: %s on %v, leader %d, follower %d, controller %d (the bridge)", topic, pair, leader, follower, ctrl)
	if err := c.Net.Partition([][]int{{int(leader) - 1}, {int(follower) - 1}}); err != nil {
		return nil, err
	}
	healed := false
	defer func() {
		if !healed {
			_ = c.Net.Heal()
		}
	}()
	shrinkStart := time.Now()
	err = pollUntil(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		st, err := partitionStates(ctx, cl, topic)
		if err != nil {
			return false, err
		}
		s := st[0]
		if s.Leader != leader {
			return false, fmt.Errorf("%w: leadership moved to %d while the link was cut", ErrUnclean, s.Leader)
		}
		return slices.Equal(s.ISR, []int32{leader}), nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: ISR did not shrink to the leader: %w", ErrUnclean, err)
	}
	res.AckedBeforeShrink = q.Acked()
	logf("unclean: ISR is [%d] after %v; leader acknowledges alone for 3s", leader, time.Since(shrinkStart).Round(100*time.Millisecond))
	holdFor(ctx, 3*time.Second)
	old := c.NodeByID(leader)
	if err := old.Kill(); err != nil {
		return nil, err
	}
	killed := time.Now()
	res.AckedLeaderOnly = q.Acked() - res.AckedBeforeShrink
	if err := c.Net.Heal(); err != nil {
		return nil, err
	}
	healed = true
	logf("unclean: leader %d killed, link healed; %d records acknowledged with the leader alone", leader, res.AckedLeaderOnly)
	_ = pollUntil(ctx, uncleanWait, func(ctx context.Context) (bool, error) {
		st, err := partitionStates(ctx, cl, topic)
		if err != nil {
			return false, err
		}
		if l := st[0].Leader; l >= 0 && l != leader {
			res.LeaderAfterKill, res.ElectedAfter = l, time.Since(killed)
			return true, nil
		}
		return false, nil
	})
	if err := old.Restart(ctx); err != nil {
		return nil, err
	}
	res.OldLeaderDown = time.Since(killed)
	err = pollUntil(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		st, err := partitionStates(ctx, cl, topic)
		if err != nil {
			return false, err
		}
		s := st[0]
		if s.Leader >= 0 && res.LeaderAfterKill < 0 {
			res.LeaderAfterKill, res.ElectedAfter = s.Leader, time.Since(killed)
		}
		return s.Leader >= 0 && len(s.ISR) == 2, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: partition not whole again: %w", ErrUnclean, err)
	}
	q.StopProducers()
	q.Stop()
	if err := q.FinalRead(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	res.Report = Check(q.History())
	return res, nil
}
