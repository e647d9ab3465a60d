package faults

import (
	"os"
	"testing"
	"time"
)

// TestCheckGroupFindsEachAnomaly feeds CheckGroup a clean KIP-848 group
// history (with one allowed redelivery: member0 crashed before committing
// offset 1) and histories with one anomaly each.
func TestCheckGroupFindsEachAnomaly(t *testing.T) {
	clean := func() (*GroupHistory, map[int32][]Entry) {
		return &GroupHistory{
				Deliveries: []GroupDelivery{
					{Seq: 1, Member: "member0", Epoch: 1, Partition: 0, Offset: 0, Value: "p0-0"},
					{Seq: 3, Member: "member0", Epoch: 1, Partition: 0, Offset: 1, Value: "p0-1"},
					// member0 crashed before committing offset 1: member1
					// receives it again from the committed offset.
					{Seq: 4, Member: "member1", Epoch: 1, Partition: 0, Offset: 1, Value: "p0-1"},
					{Seq: 5, Member: "member1", Epoch: 1, Partition: 1, Offset: 0, Value: "p1-0"},
				},
				Commits: []GroupCommit{
					{Seq: 2, Member: "member0", Partition: 0, Offset: 1},
					{Seq: 6, Member: "member1", Partition: 0, Offset: 2},
					{Seq: 7, Member: "member1", Partition: 1, Offset: 1},
				},
				Crashes: 1, Drained: true,
			}, map[int32][]Entry{
				0: {{0, "p0-0"}, {1, "p0-1"}},
				1: {{0, "p1-0"}},
			}
	}
	h, final := clean()
	r := CheckGroup(h, final)
	if r.Anomalies() != 0 || r.Redelivered.Count != 1 || r.Deliveries != 4 || r.CommitsAcked != 3 {
		t.Fatalf("clean history: %s", r)
	}
	cases := []struct {
		name   string
		mutate func(h *GroupHistory, final map[int32][]Entry)
		field  func(r *GroupReport) int
	}{
		{"rewound below commit", func(h *GroupHistory, _ map[int32][]Entry) {
			// Received again after member1's commit of 2 was acknowledged.
			h.Deliveries = append(h.Deliveries, GroupDelivery{Seq: 8, Member: "member2", Epoch: 1, Partition: 0, Offset: 1, Value: "p0-1"})
		}, func(r *GroupReport) int { return r.RewoundBelowCommit.Count }},
		{"rewound below commit, assignment revoked normally", func(h *GroupHistory, _ map[int32][]Entry) {
			// member0 receives offset 1 again after member1's commit of 2,
			// and nothing ends its assignment by a failure after that
			// (its crash end is before).
			h.Ends = []GroupEnd{{Seq: 1, Member: "member0", Why: "cut off"}}
			h.Deliveries = append(h.Deliveries, GroupDelivery{Seq: 8, Member: "member0", Epoch: 1, Partition: 0, Offset: 1, Value: "p0-1"})
		}, func(r *GroupReport) int { return r.RewoundBelowCommit.Count }},
		{"commit regressed", func(h *GroupHistory, _ map[int32][]Entry) {
			h.Commits = append(h.Commits, GroupCommit{Seq: 9, Member: "member0", Partition: 0, Offset: 1})
		}, func(r *GroupReport) int { return r.CommitRegressed.Count }},
		{"unconsumed", func(_ *GroupHistory, final map[int32][]Entry) {
			final[1] = append(final[1], Entry{1, "p1-1"})
		}, func(r *GroupReport) int { return r.Unconsumed.Count }},
		{"unknown at end", func(h *GroupHistory, _ map[int32][]Entry) {
			h.UnknownAtEnd = []string{`member1 (member id "m1")`}
		}, func(r *GroupReport) int { return r.UnknownAtEnd.Count }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, final := clean()
			c.mutate(h, final)
			r := CheckGroup(h, final)
			if c.field(r) == 0 || r.Anomalies() != c.field(r) {
				t.Fatalf("want only %s:\n%s", c.name, r)
			}
		})
	}
	// A member fenced without knowing it (its assignment ends by a loss
	// later) may receive below another member's acknowledged commit:
	// counted, not an anomaly.
	h, final = clean()
	h.Deliveries = append(h.Deliveries, GroupDelivery{Seq: 8, At: time.Second, Member: "member0", Epoch: 1, Partition: 0, Offset: 1, Value: "p0-1"})
	h.Ends = append(h.Ends, GroupEnd{Seq: 9, At: 3 * time.Second, Member: "member0", Why: "lost"})
	if r := CheckGroup(h, final); r.Anomalies() != 0 || r.FencedDeliveries.Count != 1 || r.LongestFenced != 2*time.Second ||
		r.LongestFencedConsuming != time.Second {
		t.Fatalf("fenced member's delivery: want one counted, no anomaly:\n%s", r)
	}
	// ... but only when it stops promptly: a fenced member whose
	// assignment ends long after the delivery (a partition given to two
	// healthy members, one of them cut off much later), or that receives
	// the record long after the other member's commit past it was
	// acknowledged (its cut-off coordinator kept answering its
	// heartbeats), is fenced-too-long.
	for _, c := range []struct {
		name                   string
		commitAt, deliverAt    time.Duration
		endAt                  time.Duration
		grace                  time.Duration
		wantConsuming, wantEnd time.Duration
		tooLong                bool
	}{
		{"within the grace", 10 * time.Second, 20 * time.Second, 30 * time.Second, 0, 10 * time.Second, 10 * time.Second, false},
		{"ends too late", 0, time.Second, 40 * time.Second, 0, time.Second, 39 * time.Second, true},
		{"received too late", 0, 30 * time.Second, 31 * time.Second, 0, 30 * time.Second, time.Second, true},
		{"a tighter grace", 0, 3 * time.Second, 4 * time.Second, 2 * time.Second, 3 * time.Second, time.Second, true},
	} {
		t.Run("fenced "+c.name, func(t *testing.T) {
			h, final := clean()
			h.FencedGrace = c.grace
			for i := range h.Commits {
				h.Commits[i].At = c.commitAt
			}
			h.Deliveries = append(h.Deliveries, GroupDelivery{Seq: 8, At: c.deliverAt, Member: "member0", Epoch: 1, Partition: 0, Offset: 1, Value: "p0-1"})
			h.Ends = append(h.Ends, GroupEnd{Seq: 9, At: c.endAt, Member: "member0", Why: "lost"})
			r := CheckGroup(h, final)
			if r.FencedDeliveries.Count != 1 || r.LongestFencedConsuming != c.wantConsuming || r.LongestFenced != c.wantEnd {
				t.Fatalf("want one fenced delivery, %v after the commit, %v before the end:\n%s", c.wantConsuming, c.wantEnd, r)
			}
			if got := r.FencedTooLong.Count == 1 && r.Anomalies() == 1; got != c.tooLong {
				t.Fatalf("fenced-too-long: got %v, want %v:\n%s", got, c.tooLong, r)
			}
		})
	}
	// The fenced time counts from the first commit past the record by
	// another member, not from the latest one.
	h, final = clean()
	h.Commits = append(h.Commits, GroupCommit{Seq: 10, At: 50 * time.Second, Member: "member1", Partition: 0, Offset: 5})
	h.Commits[1].At = 10 * time.Second // member1's commit of 2
	h.Deliveries = append(h.Deliveries, GroupDelivery{Seq: 11, At: 51 * time.Second, Member: "member0", Epoch: 1, Partition: 0, Offset: 1, Value: "p0-1"})
	h.Ends = append(h.Ends, GroupEnd{Seq: 12, At: 52 * time.Second, Member: "member0", Why: "lost"})
	if r := CheckGroup(h, final); r.FencedTooLong.Count != 1 || r.LongestFencedConsuming != 41*time.Second {
		t.Fatalf("fenced since the first commit past the record: want 41 s, fenced-too-long:\n%s", r)
	}
	// Merged into a queue history, the group's deliveries are judged by
	// Check too: a member going backwards within one assignment is a
	// non-monotonic poll.
	h, final = clean()
	h.Deliveries = append(h.Deliveries, GroupDelivery{Seq: 8, Member: "member1", Epoch: 1, Partition: 1, Offset: 0, Value: "p1-0"})
	q := &History{Final: final}
	h.MergeInto(q)
	if rep := Check(q); rep.NonMonotonicPoll.Count != 1 || !q.GroupConsumers["member1"] {
		t.Fatalf("merged history: want one non-monotonic poll:\n%s", rep)
	}
}

// TestKIP848GroupUnderFaults runs the queue workload's idempotent
// producers (two franz-go, one confluent-kafka-go in a child process) and
// direct consumer with a KIP-848 consumer group of three
// franz-go members (ServerSideBalancer) on three nodes, kills the group
// coordinator's node and cuts it off, and after each of those steps cuts
// one member off without leaving and starts another: no acknowledged
// record lost, committed offsets never backwards, no member receiving a
// record below an acknowledged commit (a record received twice only
// because its first receiver failed before committing it; counted), and
// every record received by the group once it drains. With
// SAMSA_FAULTS_TARGETS set (run.sh --kip848) it is a soak that cuts a
// member off after every fourth step.
func TestKIP848GroupUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	p := Plan{
		Nodes: 3,
		Seed:  SeedFromEnvOrTime(),
		Steps: []Step{
			{Kind: KillCoordinator, Hold: 3 * time.Second},
			{Kind: IsolateCoordinator, Hold: 7 * time.Second},
		},
		Deadline: 2 * time.Minute,
		Quiet:    2 * time.Second,
		Queue:    QueueOptions{Topic: "queue848", Partitions: 4, Producers: 2, Interval: 5 * time.Millisecond, Acks: -1},
	}
	crashEvery := 1
	if err := EnvPlan(&p); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("SAMSA_FAULTS_TARGETS") != "" {
		crashEvery = 4
		if os.Getenv("SAMSA_FAULTS_DEADLINE") == "" {
			p.Deadline = 6 * time.Hour
		}
	}
	o := GroupOptions{Topic: p.Queue.Topic, Partitions: p.Queue.Partitions, Group: "group848", Members: 3}
	rep, grep, res := RunGroupPlan(t, p, GroupPlan{Group: o, CrashEvery: crashEvery, ConfluentProducers: 1})
	if rep.Acked == 0 || grep.Deliveries == 0 || res.ConfluentAcked == 0 {
		t.Fatalf("nothing acknowledged (%d, %d of them from the confluent producer) or received by the group (%d)",
			rep.Acked, res.ConfluentAcked, grep.Deliveries)
	}
	if res.Acks == 1 || res.Unclean {
		return
	}
	if rep.Anomalies() != 0 {
		t.Errorf("anomalies (seed %d):\n%s", p.Seed, rep)
	}
	if grep.Anomalies() != 0 {
		t.Errorf("KIP-848 group anomalies (seed %d):\n%s", p.Seed, grep)
	}
}
