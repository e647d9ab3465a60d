package faults

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The share-group faults: the leader of the __share_group_state partition
// that holds the state of one share-partition of the workload topic (the
// share coordinator of key group:topicId:partition, partition chosen by
// the step's Pick) killed or cut off.
const (
	KillShareCoordinator    Kind = "kill-share-coordinator"
	IsolateShareCoordinator Kind = "isolate-share-coordinator"
	// PowerLossShareCoordinator cuts that node's power (power.go).
	PowerLossShareCoordinator Kind = "power-loss-share-coordinator"
)

// shareStep applies a share-coordinator step (KillShareCoordinator,
// IsolateShareCoordinator, PowerLossShareCoordinator), heals it and waits for recovery, as
// Nemesis.Run does for the others.
func shareStep(ctx context.Context, nm *Nemesis, s Step, group string, topicID [16]byte) error {
	if s.Kind == IsolateShareCoordinator && nm.C.Net == nil {
		nm.count(s.Kind, true)
		return nil
	}
	p := int32(s.Pick % uint32(nm.Partitions))
	key := fmt.Sprintf("%s:%s:%d", group, base64.RawURLEncoding.EncodeToString(topicID[:]), p)
	what := fmt.Sprintf("share coordinator of %s/%d", nm.Topic, p)
	id, err := nm.coordinator(ctx, key, 2)
	var n *Node
	if err == nil {
		if n = nm.C.NodeByID(id); n == nil {
			err = fmt.Errorf("%w: node id %d", ErrNoTarget, id)
		}
	}
	if err != nil {
		nm.logf("nemesis: %v: skipped: %v", s, err)
		nm.count(s.Kind, true)
		return nm.recover(ctx)
	}
	start := time.Now()
	switch s.Kind {
	case KillShareCoordinator:
		if err := n.Kill(); err != nil {
			return err
		}
		nm.logf("nemesis: SIGKILL node %d (%s); down for %v", n.ID, what, s.Hold)
		holdFor(ctx, s.Hold)
		if err := n.Restart(ctx); err != nil {
			return err
		}
	case PowerLossShareCoordinator:
		if err := nm.powerLoss(ctx, n, what, s); err != nil {
			return err
		}
	case IsolateShareCoordinator:
		if err := nm.partition([][]int{{n.ID - 1}, others(len(nm.C.Nodes), n.ID-1)}, what); err != nil {
			return err
		}
		holdFor(ctx, s.Hold)
		if err := nm.C.Net.Heal(); err != nil {
			return err
		}
		nm.noteHeal()
		nm.logf("nemesis: healed after %v", time.Since(start).Round(100*time.Millisecond))
	}
	nm.count(s.Kind, false)
	return nm.recover(ctx)
}

// SharePlan is what RunSharePlan runs beside a Plan's producers.
type SharePlan struct {
	Share ShareOptions
	// CrashEvery: after every CrashEvery-th step one consumer is cut off
	// without leaving and replaced (0: never).
	CrashEvery int
	// DrainBound bounds how long the group may take to finish every
	// record after the faults healed (0: shareDrainBound).
	DrainBound time.Duration
}

// shareDrainBound: after the faults healed, the group must finish every
// record within this (records held by a crashed consumer come back after
// its session timeout or their lock duration; a share coordinator that
// moved must load its state).
const shareDrainBound = 3 * time.Minute

// RunSharePlan runs the queue workload's idempotent acks=all producers
// (no classic group) and a share group of sp.Share.Consumers franz-go
// share consumers on the queue topic under the plan's steps (the share
// kinds included), consumers cut off and replaced as sp.CrashEvery says.
// After the faults heal and the producers stop, the group must finish
// every record; Check judges the producers' history and CheckShare the
// group's.
func RunSharePlan(t *testing.T, p Plan, sp SharePlan) (*Report, *ShareReport, *Result) {
	t.Helper()
	o := sp.Share
	keep := KeepLogsDir(t)
	if o.LogDir == "" && keep != "" {
		o.LogDir, o.LogDebug = keep, os.Getenv("SAMSA_FAULTS_CLIENT_DEBUG") == "1"
	}
	if o.Seed == 0 {
		o.Seed = p.Seed
	}
	start := time.Now()
	t.Logf("faults: share group, %d nodes, seed %d, %d steps, deadline %v (replay with SAMSA_FAULTS_SEED=%d)",
		p.Nodes, p.Seed, len(p.Steps), p.Deadline, p.Seed)
	cfg := Config{Nodes: p.Nodes, Loopback: p.Loopback, Proxy: p.Proxy, Env: ShareEnv(o.DeliveryLimit, o.LockDuration)}
	c := StartCluster(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rf := int16(min(3, p.Nodes))
	qo := p.Queue
	qo.Group, qo.GroupMembers = "", 0
	if err := CreateTopic(ctx, c.Addrs(), qo, rf); err != nil {
		t.Fatal(err)
	}
	topicID, err := topicIDOf(ctx, c.Addrs(), qo.Topic)
	if err != nil {
		t.Fatal(err)
	}
	if err := SetShareGroupEarliest(ctx, c.Addrs(), o.Group); err != nil {
		t.Fatalf("faults: share.auto.offset.reset: %v", err)
	}
	q, err := StartQueue(c.Addrs(), qo)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := StartShare(c.Addrs(), o)
	if err != nil {
		q.Stop()
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			sh.Stop()
			q.Stop()
		}
	}()
	nm := &Nemesis{C: c, Topic: qo.Topic, Partitions: qo.Partitions, Group: o.Group,
		TxnID: "faults-txn", RF: int(rf), Logf: t.Logf}
	ran := runSteps(ctx, t, nm, p, start, stepLoop{
		step: func(ctx context.Context, s Step) error {
			if s.Kind == KillShareCoordinator || s.Kind == IsolateShareCoordinator || s.Kind == PowerLossShareCoordinator {
				return shareStep(ctx, nm, s, o.Group, topicID)
			}
			return nm.Run(ctx, s)
		},
		afterStep: func(ran int, s Step) {
			if sp.CrashEvery > 0 && ran%sp.CrashEvery == 0 {
				name, err := sh.Crash(int(s.Pick))
				if err != nil {
					t.Fatalf("faults: crashing a share consumer: %v", err)
				}
				t.Logf("faults: share consumer %s cut off without leaving; consumers now %v", name, sh.Consumers())
			}
		},
		progress: func() string {
			return fmt.Sprintf("sent %d acked %d, share deliveries %d (acks applied %d)", q.Sent(), q.Acked(), sh.Deliveries(), sh.Acked())
		},
	})
	q.StopProducers()
	drain := sp.DrainBound
	if drain == 0 {
		drain = shareDrainBound
	}
	drainStart := time.Now()
	if err := sh.Drain(ctx, drain); err != nil {
		// Reported by CheckShare as unfinished records.
		t.Logf("faults: %v", err)
	} else {
		t.Logf("faults: share group drained in %v", time.Since(drainStart).Round(100*time.Millisecond))
	}
	sh.Stop()
	q.Stop()
	stopped = true
	if err := q.FinalRead(ctx, 3*time.Minute); err != nil {
		t.Fatalf("faults: %v", err)
	}
	h := q.History()
	sth := sh.History()
	keepHistory(t, keep, "share", sh.start, sth)
	rep := Check(h)
	srep := CheckShare(sth, h.Final)
	res := newResult("share-group", p, c.NetName, nm, ran, q.Sent(), rep, start, map[string]int{
		"accepted_redelivered": srep.AcceptedRedelivered.Count, "rejected_redelivered": srep.RejectedRedelivered.Count,
		"archived_redelivered": srep.ArchivedRedelivered.Count,
		"over_limit":           srep.OverLimit.Count, "acquired_twice": srep.AcquiredTwice.Count,
		"share_unconsumed": srep.Unconsumed.Count, "share_unfinished": srep.Unfinished.Count,
		"share_released_lost":   srep.ReleasedLost.Count,
		"acquired_after_polled": srep.AcquiredAfterPolled.Count,
	})
	res.Redelivered = srep.Redeliveries
	res.MemberCrashes = srep.Crashes
	t.Logf("faults: %s\nfaults: %s\nfaults: %s", nm.CountsString(), rep, srep)
	saveResult(t, res)
	return rep, srep, res
}

// topicIDOf returns the topic id of topic.
func topicIDOf(ctx context.Context, addrs []string, topic string) ([16]byte, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return [16]byte{}, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var id [16]byte
	err = pollUntil(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil || td[topic].Err != nil {
			return false, nil
		}
		id = td[topic].ID
		return id != [16]byte{}, nil
	})
	return id, err
}
