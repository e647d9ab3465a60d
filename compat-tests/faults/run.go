package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// Result is one run's outcome, as run.sh appends it to its results file.
type Result struct {
	Nodes      int                 `json:"nodes"`
	Seed       uint64              `json:"seed"`
	Network    string              `json:"network"`
	Acks       int                 `json:"acks"`
	Unclean    bool                `json:"unclean"`
	Faults     map[Kind]int        `json:"faults"`
	Skipped    map[Kind]int        `json:"skipped,omitempty"`
	Slow       int                 `json:"slow_recoveries"`
	Disk       map[DiskOutcome]int `json:"disk_full_outcomes,omitempty"`
	Power      *PowerLossTotals    `json:"power_loss,omitempty"`
	StepsLeft  int                 `json:"steps_not_run"`
	Sent       int64               `json:"sent"`
	Acked      int                 `json:"acked"`
	Failed     int                 `json:"failed"`
	Final      int                 `json:"final_records"`
	Anomalies  map[string]int      `json:"anomalies"`
	DataLoss   int                 `json:"client_data_loss_reports"`
	Duration   string              `json:"duration"`
	FinishedAt string              `json:"finished_at"`

	// Workload is empty for the queue workload's classic group,
	// "kip848-group" for RunGroupPlan, whose Redelivered counts records
	// the group received again after a member failed before committing
	// them and MemberCrashes the members cut off without leaving;
	// ConfluentAcked counts the records of its confluent-kafka-go
	// producers among Acked.
	Workload       string `json:"workload,omitempty"`
	Redelivered    int    `json:"redelivered,omitempty"`
	MemberCrashes  int    `json:"member_crashes,omitempty"`
	ConfluentAcked int    `json:"confluent_acked,omitempty"`
	// FencedDeliveries: records a KIP-848 member received below another
	// member's acknowledged commit while fenced without knowing it.
	FencedDeliveries int `json:"fenced_deliveries,omitempty"`
}

// RunPlan starts a cluster, runs the queue workload under the plan's steps,
// heals, reads everything back and checks it. It fails t on a harness error
// (a node that does not come back), never on anomalies: the caller decides.
func RunPlan(t *testing.T, p Plan) (*Report, *Result) {
	t.Helper()
	start := time.Now()
	t.Logf("faults: %d nodes, seed %d, %d steps, deadline %v (replay with SAMSA_FAULTS_SEED=%d)",
		p.Nodes, p.Seed, len(p.Steps), p.Deadline, p.Seed)
	cfg := Config{Nodes: p.Nodes, Loopback: p.Loopback, Proxy: p.Proxy, LazyFS: p.LazyFS}
	if p.DiskLimit > 0 && DiskAvailable() {
		cfg.DiskLimit = p.DiskLimit
	}
	if p.DirLimit > 0 && DiskAvailable() {
		cfg.DirLimit = p.DirLimit
	}
	c := StartCluster(t, cfg)
	network := c.NetName
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rf := int16(min(3, p.Nodes))
	if err := CreateTopic(ctx, c.Addrs(), p.Queue, rf); err != nil {
		t.Fatal(err)
	}
	q, err := StartQueue(c.Addrs(), p.Queue)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			q.Stop()
		}
	}()
	nm := &Nemesis{C: c, Topic: p.Queue.Topic, Partitions: p.Queue.Partitions, Group: p.Queue.Group,
		TxnID: "faults-txn", RF: int(rf), Logf: t.Logf}
	ran := runSteps(ctx, t, nm, p, start, stepLoop{
		progress: func() string { return fmt.Sprintf("sent %d acked %d", q.Sent(), q.Acked()) },
	})
	q.StopProducers()
	// Consumers keep going a little so the group can catch up.
	holdFor(ctx, 3*time.Second)
	q.Stop()
	stopped = true
	if err := q.FinalRead(ctx, 3*time.Minute); err != nil {
		t.Fatalf("faults: %v", err)
	}
	rep := Check(q.History())
	res := newResult("", p, network, nm, ran, q.Sent(), rep, start, map[string]int{
		"committed_backwards": rep.CommittedBackwards.Count, "committed_skipped": rep.CommittedSkipped.Count,
	})
	res.Unclean = p.Queue.TopicConfigs["unclean.leader.election.enable"] != nil
	res.Disk = nm.DiskOutcomes()
	t.Logf("faults: %s\nfaults: %s", nm.CountsString(), rep)
	if len(res.Disk) > 0 {
		t.Logf("faults: disk-full outcomes: %v", res.Disk)
	}
	saveResult(t, res)
	return rep, res
}

// stepLoop is what runSteps needs of a workload besides its plan.
type stepLoop struct {
	// step applies one step and waits for recovery (nil: Nemesis.Run).
	step func(context.Context, Step) error
	// afterStep runs after the ran-th step, s, is done (nil: nothing);
	// the group workloads cut a member off here.
	afterStep func(ran int, s Step)
	// progress says how far the workload got, for each step's log line.
	progress func() string
}

// runSteps lets the workload settle on a healthy cluster for p.Quiet, then
// applies p's steps through nm, each followed by a quiet hold, until they
// end or p.Deadline passes, and at last heals whatever the deadline
// interrupted, with ctx (not the deadline's context). It returns how many
// steps ran; a step that fails inside the deadline, or the final
// recovery, fails t.
func runSteps(ctx context.Context, t *testing.T, nm *Nemesis, p Plan, start time.Time, l stepLoop) int {
	t.Helper()
	step := l.step
	if step == nil {
		step = nm.Run
	}
	holdFor(ctx, p.Quiet)
	faultCtx, faultCancel := context.WithTimeout(ctx, p.Deadline)
	defer faultCancel()
	ran := 0
	for _, s := range p.Steps {
		if faultCtx.Err() != nil {
			break
		}
		if err := step(faultCtx, s); err != nil {
			if faultCtx.Err() != nil {
				break
			}
			t.Fatalf("faults: step %d (%v): %v", ran, s, err)
		}
		ran++
		if l.afterStep != nil {
			l.afterStep(ran, s)
		}
		t.Logf("faults: step %d/%d done at %v: %s", ran, len(p.Steps), time.Since(start).Round(time.Second), l.progress())
		holdFor(faultCtx, p.Quiet)
	}
	if err := nm.recover(ctx); err != nil {
		t.Fatalf("faults: final recovery: %v", err)
	}
	return ran
}

// newResult is the Result of a run of plan p on network with the fields every
// workload shares: the nemesis's fault counts, ran of p's steps, sent
// records, the queue checker's report rep (its anomalies among them) and the
// time since start, and the workload's own anomalies extra. Callers add
// their workload's other fields.
func newResult(workload string, p Plan, network string, nm *Nemesis, ran int, sent int64, rep *Report, start time.Time, extra map[string]int) *Result {
	done, skipped, slow := nm.Counts()
	res := &Result{
		Workload: workload,
		Nodes:    p.Nodes, Seed: p.Seed, Network: network, Acks: p.Queue.Acks,
		Faults: done, Skipped: skipped, Slow: slow, StepsLeft: len(p.Steps) - ran,
		Sent: sent, Acked: rep.Acked, Failed: rep.Failed, Final: rep.FinalRecords,
		Power:      nm.PowerLosses(),
		DataLoss:   rep.DataLossReported,
		Duration:   time.Since(start).Round(time.Second).String(),
		FinishedAt: time.Now().UTC().Format(time.RFC3339),
		Anomalies: map[string]int{
			"lost": rep.Lost.Count, "duplicated": rep.Duplicated.Count, "reordered": rep.Reordered.Count,
			"inconsistent_offset": rep.InconsistentOffset.Count, "nonmonotonic_poll": rep.NonMonotonicPoll.Count,
		},
	}
	for k, v := range extra {
		res.Anomalies[k] = v
	}
	return res
}

// saveResult appends res to the results file SAMSA_FAULTS_RESULTS names,
// if it names one.
func saveResult(t *testing.T, res *Result) {
	t.Helper()
	if path := os.Getenv("SAMSA_FAULTS_RESULTS"); path != "" {
		if err := appendResult(path, res); err != nil {
			t.Errorf("faults: results file: %v", err)
		}
	}
}

func appendResult(path string, r *Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "%s\n", b)
	return err
}

// SeedFromEnvOrTime returns SAMSA_FAULTS_SEED or a time-based seed.
func SeedFromEnvOrTime() uint64 {
	if v := os.Getenv("SAMSA_FAULTS_SEED"); v != "" {
		if s, err := strconv.ParseUint(v, 10, 64); err == nil {
			return s
		}
	}
	return uint64(time.Now().UnixNano())
}
