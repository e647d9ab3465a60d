package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrReassign is returned when a partition reassignment is refused or does
// not finish in time.
var ErrReassign = errors.New("faults: reassignment")

// reassignBound bounds how long one reassignment may take to finish.
const reassignBound = 3 * time.Minute

// Assignment is the replica list of every partition of some topics.
type Assignment map[string]map[int32][]int32

// Count is the number of partitions in a.
func (a Assignment) Count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// currentAssignment reads the replicas of every partition of every topic,
// internal ones too.
func currentAssignment(ctx context.Context, cl *kgo.Client) (Assignment, error) {
	req := kmsg.NewPtrMetadataRequest() // nil Topics: all
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := Assignment{}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		out[*t.Topic] = map[int32][]int32{}
		for _, p := range t.Partitions {
			out[*t.Topic][p.Partition] = slices.Clone(p.Replicas)
		}
	}
	return out, nil
}

// Reassign moves the partitions of target to their replica lists with
// AlterPartitionReassignments (what kafka-reassign-partitions --execute
// sends) and waits until no reassignment is listed any more, every
// partition has exactly its target replicas, a leader among them and
// all of them in its ISR.
func Reassign(ctx context.Context, addrs []string, target Assignment) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RequestTimeoutOverhead(10*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	req := kadm.AlterPartitionAssignmentsReq{}
	for t, ps := range target {
		for p, rs := range ps {
			req.Assign(t, p, rs)
		}
	}
	// The request is sent again while it fails on the connection (a node
	// of a rolling restart closing it before it answered, which franz-go
	// does not retry when it is the first read): the same target again is
	// harmless, as an operator would rerun the tool. Answers with errors
	// are final.
	var resps kadm.AlterPartitionAssignmentsResponses
	var sendErr error
	err = pollUntil(ctx, reassignBound, func(ctx context.Context) (bool, error) {
		r, err := adm.AlterPartitionAssignments(ctx, req)
		if err != nil && connectionErr(err) {
			return false, err
		}
		resps, sendErr = r, err
		return true, nil
	})
	if err == nil {
		err = sendErr
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrReassign, err)
	}
	for _, ps := range resps {
		for _, r := range ps {
			if r.Err != nil {
				return fmt.Errorf("%w: %s/%d: %w (%s)", ErrReassign, r.Topic, r.Partition, r.Err, r.ErrMessage)
			}
		}
	}
	var left string
	err = pollUntil(ctx, reassignBound, func(ctx context.Context) (bool, error) {
		ongoing, err := adm.ListPartitionReassignments(ctx, nil)
		if err != nil {
			return false, err
		}
		n := 0
		for _, ps := range ongoing {
			n += len(ps)
		}
		if n > 0 {
			left = fmt.Sprintf("%d reassignments listed", n)
			return false, nil
		}
		for t := range target {
			st, err := partitionStates(ctx, cl, t)
			if err != nil {
				return false, err
			}
			for p, want := range target[t] {
				s := st[p]
				if !sameSet(s.Replicas, want) || !sameSet(s.ISR, want) || !slices.Contains(want, s.Leader) {
					left = fmt.Sprintf("%s/%d: replicas %v isr %v leader %d, want replicas %v", t, p, s.Replicas, s.ISR, s.Leader, want)
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w: not finished: %s: %w", ErrReassign, left, err)
	}
	return nil
}

// connectionErr reports whether err is the connection failing rather than
// an answer: closed before or while reading, reset or refused.
func connectionErr(err error) bool {
	var first *kgo.ErrFirstReadEOF
	var sys *os.SyscallError
	return errors.As(err, &first) || errors.As(err, &sys) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

func sameSet(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// MembershipResult is what RunMembership measured.
type MembershipResult struct {
	Removed, Added int32
	// MovedOff and MovedOn are the partitions (all topics) moved off the
	// removed broker and onto the added one; the durations are how long
	// each reassignment took to finish.
	MovedOff, MovedOn     int
	OffTook, OnTook       time.Duration
	AckedBefore, AckedEnd int
}

func (r *MembershipResult) String() string {
	return fmt.Sprintf("broker %d decommissioned: %d partitions moved off in %v; broker %d added: %d partitions moved on in %v; acked %d before, %d at the end",
		r.Removed, r.MovedOff, r.OffTook.Round(100*time.Millisecond), r.Added, r.MovedOn, r.OnTook.Round(100*time.Millisecond), r.AckedBefore, r.AckedEnd)
}

// RunMembership decommissions broker-only node `remove` while q runs:
// every partition of every topic with a replica on it is reassigned to
// replace it with the voter that partition lacks, then the node is
// stopped for good. Then it adds a fresh broker (a spare, new node.id,
// empty disk) and reassigns the workload topic's even partitions to put
// it in place of their first replica (so leaderships move onto it).
func RunMembership(ctx context.Context, c *Cluster, q *Queue, topic string, remove *Node, logf func(string, ...any)) (*MembershipResult, error) {
	res := &MembershipResult{Removed: int32(remove.ID), AckedBefore: q.Acked()}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	cur, err := currentAssignment(ctx, cl)
	if err != nil {
		return nil, err
	}
	var voters []int32
	for _, n := range c.Nodes {
		if n.Controller {
			voters = append(voters, int32(n.ID))
		}
	}
	off := Assignment{}
	for t, ps := range cur {
		for p, rs := range ps {
			i := slices.Index(rs, int32(remove.ID))
			if i < 0 {
				continue
			}
			var spare int32 = -1
			for _, v := range voters {
				if !slices.Contains(rs, v) {
					spare = v
					break
				}
			}
			if spare < 0 {
				return nil, fmt.Errorf("%w: %s/%d %v: no voter left to take node %d's place", ErrReassign, t, p, rs, remove.ID)
			}
			want := slices.Clone(rs)
			want[i] = spare
			if off[t] == nil {
				off[t] = map[int32][]int32{}
			}
			off[t][p] = want
		}
	}
	res.MovedOff = off.Count()
	logf("members: moving %d partitions off node %d", res.MovedOff, remove.ID)
	begin := time.Now()
	if err := Reassign(ctx, c.Addrs(), off); err != nil {
		return nil, err
	}
	res.OffTook = time.Since(begin)
	if err := c.Retire(remove); err != nil {
		return nil, err
	}
	logf("members: node %d decommissioned (%v) and stopped", remove.ID, res.OffTook.Round(100*time.Millisecond))
	added, err := c.AddBroker(ctx)
	if err != nil {
		return nil, err
	}
	res.Added = int32(added.ID)
	err = pollUntil(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			return false, err
		}
		for _, b := range resp.Brokers {
			if b.NodeID == res.Added {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: added node %d never in metadata: %w", ErrReassign, added.ID, err)
	}
	cur, err = currentAssignment(ctx, cl)
	if err != nil {
		return nil, err
	}
	on := Assignment{topic: {}}
	parts := make([]int32, 0, len(cur[topic]))
	for p := range cur[topic] {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		if p%2 == 0 {
			want := slices.Clone(cur[topic][p])
			want[0] = res.Added
			on[topic][p] = want
		}
	}
	res.MovedOn = on.Count()
	logf("members: node %d added; moving %d partitions onto it", added.ID, res.MovedOn)
	begin = time.Now()
	if err := Reassign(ctx, c.Addrs(), on); err != nil {
		return nil, err
	}
	res.OnTook = time.Since(begin)
	res.AckedEnd = q.Acked()
	return res, nil
}
