package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestConfluentTxnUnderFaults runs two confluent-kafka-go (librdkafka)
// transactional producers and one of the Java client (kafka-clients
// 4.4.0, when java runs here; 4 records over 3 partitions per
// transaction, every 4th aborted on purpose) and read_committed consumers
// of confluent-kafka-go and franz-go on three nodes while the transaction coordinator of the first
// producer's transactional.id is cut off, then killed, then the leaders
// of two partitions are killed and cut off; after each step a producer
// process is SIGKILLed in the middle of its work and restarted (its
// InitTransactions must fence the dead one): neither client's
// read_committed consumer may see an aborted record, no transaction may be
// partly visible, no committed one lost or visible twice, and every
// producer must commit before the faults and again after them (each
// bounded by 2 minutes). SAMSA_FAULTS_CTXN_STEPS=n
// (run.sh --ctxn) runs TestConfluentTxnSoak instead, a longer schedule;
// SAMSA_FAULTS_CTXN_JAVA=0 leaves the Java producer out.
func TestConfluentTxnUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	steps := []Step{
		// Pick chooses the producer killed after the step (the Java one,
		// slowest to start, first) and the partition of a leader step.
		{Kind: IsolateTxnCoordinator, Hold: 4 * time.Second, Pick: 2},
		{Kind: KillTxnCoordinator, Hold: 2 * time.Second, Pick: 0},
		{Kind: KillLeader, Hold: 2 * time.Second, Pick: 1},
		{Kind: IsolateLeader, Hold: 4 * time.Second, Pick: 3},
	}
	runConfluentTxn(t, 3, 0, steps, 1)
}

// TestConfluentTxnReports: the children's report lines become the
// transaction history CheckTxn judges: a begun transaction without an
// outcome (its process killed) is unknown, each outcome line sets it,
// consumer values are polls, other lines are ignored.
func TestConfluentTxnReports(t *testing.T) {
	w := &ConfluentTxn{o: ConfluentTxnOptions{Size: 2}, txns: make(map[int]*Txn)}
	prod := &ctxnProc{role: "producer", id: 1}
	cons := &ctxnProc{role: "consumer", values: func(v string) { w.polls = append(w.polls, v) }}
	for _, l := range []string{"CTX S 10", "CTX C 10", "CTX S 11", "CTX A 11 asked", "CTX S 12", "CTX U 12 commit: timed out",
		"CTX S 13", "CTX S 14", "CTX A 14 commit: abortable", "CTX E InitTransactions: refused", "=== RUN x", "CTX Z 1", "CTX C x"} {
		w.report(prod, l)
	}
	w.report(cons, "CTX V t10-0")
	w.report(cons, "CTX V t10-1")
	h := w.History([]string{"t10-0", "t10-1"})
	want := []Txn{
		{Seq: 10, Size: 2, Outcome: TxnCommitted},
		{Seq: 11, Size: 2, Outcome: TxnAborted},
		{Seq: 12, Size: 2, Outcome: TxnUnknown, Err: "commit: timed out"},
		{Seq: 13, Size: 2, Outcome: TxnUnknown, Err: "no outcome reported (producer process killed)"},
		{Seq: 14, Size: 2, Outcome: TxnAborted, Err: "commit: abortable"},
	}
	if !slices.Equal(h.Txns, want) {
		t.Fatalf("transactions:\n got %+v\nwant %+v", h.Txns, want)
	}
	if !slices.Equal(h.Polls, []string{"t10-0", "t10-1"}) {
		t.Fatalf("polls %q", h.Polls)
	}
	if errs := w.Errors(); len(errs) != 1 || errs[0] != "producer 1: InitTransactions: refused" {
		t.Fatalf("errors %q", errs)
	}
	if r := CheckTxn(h); r.Anomalies() != 0 || r.Committed != 1 || r.Aborted != 2 || r.Unknown != 2 {
		t.Fatalf("check:\n%s", r)
	}
	if r := CheckTxn(w.History([]string{"t11-0"})); r.AbortedRead.Count != 1 || r.LostCommitted.Count != 1 || r.Partial.Count != 1 {
		t.Fatalf("an aborted record visible, the committed transaction missing:\n%s", r)
	}
}

// TestConfluentTxnSoak is TestConfluentTxnUnderFaults with a seeded
// schedule of SAMSA_FAULTS_CTXN_STEPS steps (transaction coordinator cut
// off or killed, partition leaders killed, cut off or paused) on
// SAMSA_FAULTS_NODES nodes, a producer process killed after every second
// step; run.sh --ctxn runs it and appends its figures to the results file.
func TestConfluentTxnSoak(t *testing.T) {
	v := os.Getenv("SAMSA_FAULTS_CTXN_STEPS")
	if v == "" {
		t.Skip("SAMSA_FAULTS_CTXN_STEPS=n (run.sh --ctxn) runs it")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("SAMSA_FAULTS_CTXN_STEPS=%q", v)
	}
	nodes := 3
	if v := os.Getenv("SAMSA_FAULTS_NODES"); v != "" {
		if nodes, err = strconv.Atoi(v); err != nil {
			t.Fatalf("SAMSA_FAULTS_NODES=%q", v)
		}
	}
	seed := SeedFromEnvOrTime()
	t.Logf("faults: confluent transactions, %d nodes, %d steps, seed %d (replay with SAMSA_FAULTS_SEED=%d)", nodes, n, seed, seed)
	steps := Schedule(seed, WithCombined(WithPowerLoss([]Weight{
		{IsolateTxnCoordinator, 3}, {KillTxnCoordinator, 3}, {KillLeader, 2}, {IsolateLeader, 1}, {PauseLeader, 1},
	})), n, 2*time.Second, 8*time.Second)
	runConfluentTxn(t, nodes, seed, steps, 2)
}

// ctxnResult is one confluent transaction run's figures, as run.sh
// appends them to its results file.
type ctxnResult struct {
	Workload      string       `json:"workload"`
	Nodes         int          `json:"nodes"`
	Seed          uint64       `json:"seed"`
	Network       string       `json:"network"`
	Faults        map[Kind]int `json:"faults"`
	Skipped       map[Kind]int `json:"skipped,omitempty"`
	ProducerKills int          `json:"producer_kills"`
	Committed     int          `json:"committed"`
	Aborted       int          `json:"aborted"`
	Unknown       int          `json:"unknown"`
	// AbortedOnError counts the aborts not asked for (after an
	// abortable error), among Aborted.
	AbortedOnError int    `json:"aborted_on_error"`
	FinalConfluent int    `json:"final_confluent"`
	FinalFranz     int    `json:"final_franz"`
	Anomalies      int    `json:"anomalies"`
	Duration       string `json:"duration"`
	FinishedAt     string `json:"finished_at"`
}

// runConfluentTxn runs the confluent transaction workload on nodes nodes
// under steps, killing producer 1 or 2 after every killEvery-th step (0:
// never), and checks both clients' final reads.
func runConfluentTxn(t *testing.T, nodes int, seed uint64, steps []Step, killEvery int) {
	t.Helper()
	start := time.Now()
	logf := func(format string, args ...any) {
		t.Logf("+%.1fs "+format, append([]any{time.Since(start).Seconds()}, args...)...)
	}
	c := StartCluster(t, Config{Nodes: nodes})
	logf("faults: cluster of %d nodes up", nodes)
	ctx := context.Background()
	o := ConfluentTxnOptions{Topic: "ctxn", Partitions: 3, Producers: 2, Size: 4, AbortEvery: 4,
		Interval: 20 * time.Millisecond, Logf: logf}
	if os.Getenv("SAMSA_FAULTS_CTXN_JAVA") == "0" {
		t.Logf("faults: without the Java client's producer (SAMSA_FAULTS_CTXN_JAVA=0)")
	} else if cp, err := JavaTxnClasspath(); err == nil {
		o.JavaProducers, o.JavaClasspath = 1, cp
	} else if os.Getenv("SAMSA_REQUIRE_CLIENTS") == "1" {
		t.Fatalf("SAMSA_REQUIRE_CLIENTS=1 but the Java producer cannot run: %v", err)
	} else {
		t.Logf("faults: without the Java client's producer: %v", err)
	}
	if err := CreateTopic(ctx, c.Addrs(), QueueOptions{Topic: o.Topic, Partitions: o.Partitions}, int16(min(3, nodes))); err != nil {
		t.Fatal(err)
	}
	w, err := StartConfluentTxn(c.Addrs(), o)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = w.Stop()
		}
	}()
	// progress waits until every producer has committed more than in
	// before (all of its runs together).
	progress := func(before map[int]int, bound time.Duration, what string) {
		t.Helper()
		err := pollUntil(ctx, bound, func(context.Context) (bool, error) {
			now := w.CommittedBy()
			for id := 1; id <= w.Producers(); id++ {
				if now[id] <= before[id] {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%s: transactions committed by producer id %v, before %v: %v; client errors: %q", what, w.CommittedBy(), before, err, w.Errors())
		}
	}
	progress(nil, 2*time.Minute, "a producer committed nothing before the faults")
	logf("faults: every producer committing")
	nm := &Nemesis{C: c, Topic: o.Topic, Partitions: o.Partitions, TxnID: o.TxnID(1), RF: min(3, nodes), Logf: logf}
	for i, s := range steps {
		if err := nm.Run(ctx, s); err != nil {
			t.Fatalf("step %d (%v): %v", i, s, err)
		}
		if killEvery > 0 && (i+1)%killEvery == 0 {
			if err := w.KillProducer(1 + int(s.Pick%uint32(w.Producers()))); err != nil {
				t.Fatal(err)
			}
		}
		committed, begun := w.Counts()
		logf("faults: confluent txn step %d/%d (%v) done: %d of %d transactions committed", i+1, len(steps), s, committed, begun)
	}
	progress(w.CommittedBy(), 2*time.Minute, "a producer committed nothing after the faults")
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	logf("faults: clients stopped")
	final, err := w.FinalRead(ctx, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	logf("faults: final reads: %d values (confluent), %d (franz-go)", len(final.Confluent), len(final.Franz))
	rc := CheckTxn(w.History(final.Confluent))
	rf := CheckTxn(w.History(final.Franz))
	done, skipped, _ := nm.Counts()
	t.Logf("faults: %s; producer kills %d\nfaults: confluent read_committed read: %s\nfaults: franz-go read_committed read: %s",
		nm.CountsString(), w.Kills(), rc, rf)
	if errs := w.Errors(); len(errs) > 0 {
		t.Logf("faults: first client errors: %q", errs)
	}
	if rc.Committed == 0 {
		t.Fatal("no transaction committed")
	}
	t.Logf("faults: transactions committed by producer id: %v (ids above %d: Java client)", w.CommittedBy(), o.Producers)
	abortedOnError := 0
	for _, x := range w.History(nil).Txns {
		if x.Outcome == TxnAborted && x.Err != "" {
			abortedOnError++
		}
	}
	t.Logf("faults: %d transactions aborted after an error (not asked)", abortedOnError)
	if rc.Anomalies() != 0 {
		t.Errorf("anomalies in the confluent read_committed view:\n%s", rc)
	}
	if rf.Anomalies() != 0 {
		t.Errorf("anomalies in the franz-go read_committed view:\n%s", rf)
	}
	if path := os.Getenv("SAMSA_FAULTS_RESULTS"); path != "" {
		res := ctxnResult{Workload: "confluent-txn", Nodes: nodes, Seed: seed, Network: c.NetName,
			Faults: done, Skipped: skipped, ProducerKills: w.Kills(),
			Committed: rc.Committed, Aborted: rc.Aborted, Unknown: rc.Unknown, AbortedOnError: abortedOnError,
			FinalConfluent: len(final.Confluent), FinalFranz: len(final.Franz),
			Anomalies: rc.Anomalies() + rf.Anomalies(),
			Duration:  time.Since(start).Round(time.Second).String(), FinishedAt: time.Now().UTC().Format(time.RFC3339)}
		if err := appendJSONLine(path, res); err != nil {
			t.Errorf("faults: results file: %v", err)
		}
	}
}

func appendJSONLine(path string, v any) error {
	b, err := json.Marshal(v)
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
