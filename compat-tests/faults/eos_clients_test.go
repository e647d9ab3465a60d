package faults

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestEOSOtherClientsUnderFaults runs the consume-transform-produce
// workload with one member of each client in one group (franz-go's
// GroupTransactSession, confluent-kafka-go and, when java runs here, the
// Java client's KafkaConsumer and transactional KafkaProducer; the other
// clients' members are child processes, eos_child.go) on three nodes
// while the transaction coordinator of the confluent member's
// transactional.id is killed, a partition leader is killed and the group
// coordinator is cut off; after each step a member process of another
// client is SIGKILLed as soon as it begins a transaction and started
// again. Every acknowledged input must be in the committed output exactly
// once, the group's committed offsets must reach the input's end, and
// every member must commit before the faults and after them (each
// bounded by 2 minutes). SAMSA_FAULTS_CTP_STEPS=n (run.sh --ctp) runs
// TestEOSOtherClientsSoak instead; SAMSA_FAULTS_CTXN_JAVA=0 leaves the
// Java member out.
func TestEOSOtherClientsUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	steps := []Step{
		{Kind: KillTxnCoordinator, Hold: 2 * time.Second},
		{Kind: KillLeader, Hold: 2 * time.Second, Pick: 1},
		{Kind: IsolateCoordinator, Hold: 4 * time.Second},
	}
	runEOSOtherClients(t, 3, 0, steps)
}

// TestEOSOtherClientsSoak is TestEOSOtherClientsUnderFaults with a seeded
// schedule of SAMSA_FAULTS_CTP_STEPS steps (transaction and group
// coordinators killed, cut off or paused, partition leaders killed, cut
// off or paused) on SAMSA_FAULTS_NODES nodes, a member process of another
// client killed in a transaction after every step; run.sh --ctp runs it
// and appends its figures to the results file.
func TestEOSOtherClientsSoak(t *testing.T) {
	v := os.Getenv("SAMSA_FAULTS_CTP_STEPS")
	if v == "" {
		t.Skip("SAMSA_FAULTS_CTP_STEPS=n (run.sh --ctp) runs it")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("SAMSA_FAULTS_CTP_STEPS=%q", v)
	}
	nodes := 3
	if v := os.Getenv("SAMSA_FAULTS_NODES"); v != "" {
		if nodes, err = strconv.Atoi(v); err != nil {
			t.Fatalf("SAMSA_FAULTS_NODES=%q", v)
		}
	}
	seed := SeedFromEnvOrTime()
	t.Logf("faults: consume-transform-produce of three clients, %d nodes, %d steps, seed %d (replay with SAMSA_FAULTS_SEED=%d)", nodes, n, seed, seed)
	steps := Schedule(seed, WithCombined(WithPowerLoss([]Weight{
		{KillTxnCoordinator, 2}, {IsolateTxnCoordinator, 2}, {KillCoordinator, 2}, {IsolateCoordinator, 1},
		{PauseCoordinator, 1}, {KillLeader, 2}, {IsolateLeader, 1}, {PauseLeader, 1},
	})), n, 2*time.Second, 8*time.Second)
	runEOSOtherClients(t, nodes, seed, steps)
}

// ctpResult is one run's figures, as run.sh appends them to its results
// file.
type ctpResult struct {
	Workload   string       `json:"workload"`
	Nodes      int          `json:"nodes"`
	Seed       uint64       `json:"seed"`
	Network    string       `json:"network"`
	Faults     map[Kind]int `json:"faults"`
	Skipped    map[Kind]int `json:"skipped,omitempty"`
	Members    []string     `json:"members"`
	Kills      int          `json:"member_kills"`
	KillsInTxn int          `json:"member_kills_in_txn"`
	Inputs     int          `json:"inputs_acked"`
	Outputs    int          `json:"outputs_read"`
	Committed  int          `json:"committed"`
	Aborted    int          `json:"aborted"`
	Unknown    int          `json:"unknown"`
	Anomalies  int          `json:"anomalies"`
	Duration   string       `json:"duration"`
	FinishedAt string       `json:"finished_at"`
}

// runEOSOtherClients runs the workload with a member of each client
// under steps, killing a member process of another client after every
// step, and checks the output.
func runEOSOtherClients(t *testing.T, nodes int, seed uint64, steps []Step) {
	t.Helper()
	start := time.Now()
	logf := func(format string, args ...any) {
		t.Logf("+%.1fs (%s) "+format, append([]any{time.Since(start).Seconds(), time.Now().UTC().Format(wallClock)}, args...)...)
	}
	c := StartCluster(t, Config{Nodes: nodes})
	ctx := context.Background()
	eo := EOSOptions{Input: "ctp-in", Output: "ctp-out", Partitions: 3, Group: "ctp", Workers: 1, ConfluentMembers: 1,
		Interval: 10 * time.Millisecond, Logf: t.Logf, ClientLogDir: os.Getenv("SAMSA_FAULTS_KEEP_LOGS"),
		ClientLogDebug: os.Getenv("SAMSA_FAULTS_CLIENT_DEBUG") == "1"}
	if os.Getenv("SAMSA_FAULTS_CTXN_JAVA") == "0" {
		t.Logf("faults: without the Java client's member (SAMSA_FAULTS_CTXN_JAVA=0)")
	} else if cp, err := JavaTxnClasspath(); err == nil {
		eo.JavaMembers, eo.JavaClasspath = 1, cp
	} else if os.Getenv("SAMSA_REQUIRE_CLIENTS") == "1" {
		t.Fatalf("SAMSA_REQUIRE_CLIENTS=1 but the Java member cannot run: %v", err)
	} else {
		t.Logf("faults: without the Java client's member: %v", err)
	}
	for _, topic := range []string{eo.Input, eo.Output} {
		if err := CreateTopic(ctx, c.Addrs(), QueueOptions{Topic: topic, Partitions: eo.Partitions}, int16(min(3, nodes))); err != nil {
			t.Fatal(err)
		}
	}
	w, err := StartEOS(c.Addrs(), eo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background(), 0) }) // no t.Logf after the test
	logf("faults: cluster of %d nodes up, workload started", nodes)
	// progress waits until every member of another client has committed
	// more than in before (over its processes).
	progress := func(before []int, what string) {
		t.Helper()
		err := pollUntil(ctx, 2*time.Minute, func(context.Context) (bool, error) {
			now := w.EOSChildCommitted()
			for i := range now {
				if before != nil && now[i] <= before[i] || now[i] == 0 {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%s: transactions committed by the members of other clients %v, before %v: %v\n%s\nclient errors: %q",
				what, w.EOSChildCommitted(), before, err, w.Progress(), w.History().Errors)
		}
	}
	progress(nil, "a member committed nothing before the faults")
	logf("faults: every member committing: %s", w.Progress())
	nm := &Nemesis{C: c, Topic: eo.Input, Partitions: eo.Partitions, Group: eo.Group,
		TxnID: fmt.Sprintf("%s-confluent-0", eo.Group), RF: min(3, nodes), Logf: logf}
	for i, s := range steps {
		if err := nm.Run(ctx, s); err != nil {
			t.Fatalf("step %d (%v): %v", i, s, err)
		}
		if _, err := w.KillEOSChild(i % w.EOSChildren()); err != nil {
			t.Fatal(err)
		}
		logf("faults: step %d/%d (%v) done: %d inputs, %d outputs; %s", i+1, len(steps), s, w.Inputs(), w.Outputs(), w.Progress())
	}
	progress(w.EOSChildCommitted(), "a member committed nothing after the faults")
	w.Stop(ctx, 2*time.Minute)
	if err := w.StopErr(); err != nil {
		t.Error(err)
	}
	logf("faults: workload stopped: %s", w.Progress())
	caughtUp, offsets := eosOffsetsAtEnd(ctx, c.Addrs(), eo.Group, eo.Input)
	if err := w.FinalRead(ctx, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	r := CheckEOS(w.History())
	kills, inTxn := w.EOSChildKills()
	done, skipped, _ := nm.Counts()
	t.Logf("faults: %s; member kills %d (%d inside a transaction)\nfaults: %s", nm.CountsString(), kills, inTxn, r)
	if r.Inputs == 0 || r.Committed == 0 {
		t.Fatalf("consume-transform-produce did nothing:\n%s", r)
	}
	if r.Anomalies() != 0 {
		t.Errorf("consume-transform-produce anomalies:\n%s", r)
	}
	// Committed offsets consistent with the output: the drain ended with
	// every input transformed, so the group's offsets must be at the
	// input's end (behind it, a later member would transform inputs again).
	if !caughtUp {
		t.Errorf("the group's committed offsets are not at the input's end after the drain: %s", offsets)
	}
	if path := os.Getenv("SAMSA_FAULTS_RESULTS"); path != "" {
		members := []string{"franz-go"}
		for i := range w.EOSChildren() {
			members = append(members, w.EOSChildName(i))
		}
		res := ctpResult{Workload: "ctp-clients", Nodes: nodes, Seed: seed, Network: c.NetName, Faults: done, Skipped: skipped,
			Members: members, Kills: kills, KillsInTxn: inTxn, Inputs: r.Inputs, Outputs: r.Outputs,
			Committed: r.Committed, Aborted: r.Aborted, Unknown: r.Unknown, Anomalies: r.Anomalies(),
			Duration: time.Since(start).Round(time.Second).String(), FinishedAt: time.Now().UTC().Format(time.RFC3339)}
		if err := appendJSONLine(path, res); err != nil {
			t.Errorf("faults: results file: %v", err)
		}
	}
}

// eosOffsetsAtEnd reports whether group's committed offsets of topic are
// at its end on every partition (polled for up to 30 s: a commit of the
// last transaction becomes visible when its markers are written), and
// the offsets it last saw.
func eosOffsetsAtEnd(ctx context.Context, addrs []string, group, topic string) (bool, string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return false, err.Error()
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var state string
	err = pollUntil(ctx, 30*time.Second, func(pctx context.Context) (bool, error) {
		ends, err1 := adm.ListEndOffsets(pctx, topic)
		committed, err2 := adm.FetchOffsets(pctx, group)
		if err1 != nil || err2 != nil {
			state = fmt.Sprintf("end offsets: %v, committed: %v", err1, err2)
			return false, nil
		}
		ok := len(ends[topic]) > 0
		state = ""
		ends.Each(func(o kadm.ListedOffset) {
			c, found := committed.Lookup(o.Topic, o.Partition)
			state += fmt.Sprintf(" p%d: committed %d, end %d", o.Partition, c.At, o.Offset)
			if o.Err != nil || !found || c.Err != nil || c.At != o.Offset {
				ok = false
			}
		})
		return ok, nil
	})
	return err == nil, state
}

// TestEOSChildReports: a member child's report lines become the
// workload's counts: sessions, begun transactions (a kill inside one
// counts it unknown), outcomes and the outputs of committed ones; other
// lines are ignored.
func TestEOSChildReports(t *testing.T) {
	w := &EOSWorkload{start: time.Now()}
	w.errs = NewErrorLog(w.start, nil)
	c := &eosChild{name: "confluent member 0", begun: make(chan struct{}, 1)}
	w.children = []*eosChild{c}
	for _, l := range []string{"CTP S", "CTP B 5", "CTP C 5", "CTP B 3", "CTP A 3 send: abortable", "CTP S",
		"CTP B 2", "CTP U 2 commit: timed out", "CTP E InitTransactions: refused", "=== RUN x", "CTP Z 1", "CTP B 4"} {
		w.childReport(c, l)
	}
	if w.hist.Committed != 1 || w.hist.Aborted != 1 || w.hist.Unknown != 1 || w.Outputs() != 5 {
		t.Fatalf("committed %d aborted %d unknown %d outputs %d, want 1 1 1 5", w.hist.Committed, w.hist.Aborted, w.hist.Unknown, w.Outputs())
	}
	if c.sessions != 2 || !c.inTxn || len(c.begun) != 1 {
		t.Fatalf("sessions %d in a transaction %v begun signals %d, want 2 true 1", c.sessions, c.inTxn, len(c.begun))
	}
	if w.errs.Count() != 3 {
		t.Fatalf("%d errors recorded, want 3: %q", w.errs.Count(), w.errs.Summary())
	}
	if h := w.History(); h.Sessions != 2 {
		t.Fatalf("history sessions %d, want 2", h.Sessions)
	}
}
