package faults

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// staleResetHistory is finding 16's run in small: member1 committed 3 of
// partition 0 (acknowledged); member2 was given the partition, its
// OffsetFetch answered 3, node 3 (cut off from 2 s to 8 s) answered its
// first fetch OFFSET_OUT_OF_RANGE at 9 s, and it started again at 0 and
// received offsets 0-2 a second time.
func staleResetHistory() (*GroupHistory, map[int32][]Entry) {
	h := &GroupHistory{
		Deliveries: []GroupDelivery{
			{Seq: 1, At: time.Second, Member: "member1", Epoch: 1, Partition: 0, Offset: 0, Value: "p0-0"},
			{Seq: 2, At: time.Second, Member: "member1", Epoch: 1, Partition: 0, Offset: 1, Value: "p0-1"},
			{Seq: 3, At: time.Second, Member: "member1", Epoch: 1, Partition: 0, Offset: 2, Value: "p0-2"},
			{Seq: 6, At: 9 * time.Second, Member: "member2", Epoch: 1, Partition: 0, Offset: 0, Value: "p0-0"},
			{Seq: 7, At: 9 * time.Second, Member: "member2", Epoch: 1, Partition: 0, Offset: 1, Value: "p0-1"},
			{Seq: 8, At: 9 * time.Second, Member: "member2", Epoch: 1, Partition: 0, Offset: 2, Value: "p0-2"},
		},
		Commits: []GroupCommit{{Seq: 4, At: 5 * time.Second, Member: "member1", Partition: 0, Offset: 3}},
		Starts: []GroupStart{{Seq: 5, At: 9 * time.Second, Member: "member2", Partition: 0, Offset: 0, Fetched: 3,
			ResetBroker: 3, ResetAt: 9 * time.Second}},
		Cuts:    []NodeCut{{Node: 3, From: 2 * time.Second, To: 8 * time.Second}},
		Drained: true,
	}
	return h, map[int32][]Entry{0: {{0, "p0-0"}, {1, "p0-1"}, {2, "p0-2"}}}
}

// TestCheckGroupClientResetAtStaleLeader checks the one narrow excuse
// for a delivery below an acknowledged commit (finding 16): counted as
// client-reset-at-stale-leader only when the member's OffsetFetch
// answered the commit, its restart below it followed OFFSET_OUT_OF_RANGE
// on its first fetch at that commit, and the node that answered it was
// cut off then or at most staleHealSlack before (the reset in the base
// case is 1 s after the heal); each condition missing leaves it
// rewound-below-commit.
func TestCheckGroupClientResetAtStaleLeader(t *testing.T) {
	h, final := staleResetHistory()
	r := CheckGroup(h, final)
	if r.Anomalies() != 0 || r.ClientResetAtStaleLeader.Count != 3 || r.Redelivered.Count != 3 {
		t.Fatalf("the reset at the cut-off node: want 3 counted, no anomaly:\n%s", r)
	}
	for _, c := range []struct {
		name   string
		mutate func(h *GroupHistory)
	}{
		{"the OffsetFetch answered below the commit", func(h *GroupHistory) { h.Starts[0].Fetched = 2 }},
		{"the OffsetFetch answered no commit", func(h *GroupHistory) { h.Starts[0].Fetched = -1 }},
		{"no reset after OFFSET_OUT_OF_RANGE", func(h *GroupHistory) { h.Starts[0].ResetBroker = -1 }},
		{"no start recorded", func(h *GroupHistory) { h.Starts = nil }},
		{"the start was after the deliveries", func(h *GroupHistory) { h.Starts[0].Seq = 9 }},
		{"the answering node was never cut off", func(h *GroupHistory) { h.Cuts = nil }},
		{"another node was cut off", func(h *GroupHistory) { h.Cuts[0].Node = 2 }},
		{"the reset came before the cut", func(h *GroupHistory) { h.Starts[0].ResetAt = time.Second }},
		{"the reset came longer than the slack after the heal", func(h *GroupHistory) {
			h.Starts[0].ResetAt = h.Cuts[0].To + staleHealSlack + time.Millisecond
		}},
		{"the reset came 4.5 s after the heal (the run that showed finding 16)", func(h *GroupHistory) {
			h.Starts[0].ResetAt = h.Cuts[0].To + 4500*time.Millisecond
		}},
		{"another member's start was the reset", func(h *GroupHistory) { h.Starts[0].Member = "member3" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, final := staleResetHistory()
			c.mutate(h)
			r := CheckGroup(h, final)
			if r.RewoundBelowCommit.Count != 3 || r.ClientResetAtStaleLeader.Count != 0 || r.Anomalies() != 3 {
				t.Fatalf("want 3 rewound-below-commit, none excused:\n%s", r)
			}
		})
	}
	// A cut still open when the history was taken covers a reset after it
	// began.
	h, final = staleResetHistory()
	h.Cuts[0].To = 0
	h.Starts[0].ResetAt = time.Minute
	if r := CheckGroup(h, final); r.Anomalies() != 0 || r.ClientResetAtStaleLeader.Count != 3 {
		t.Fatalf("a cut not healed: want 3 counted, no anomaly:\n%s", r)
	}
}

// TestStartTracerRecordsTheResetAtTheFetchedCommit drives a member's
// start tracer as franz-go does in finding 16's run: an OffsetFetch
// answer, franz-go's log line of the reset after OFFSET_OUT_OF_RANGE on
// the first fetch (through resetLogger, as the member's logger), then
// the first delivery; and checks the GroupStart it records, with and
// without a reset, and that a reset at another offset than the fetched
// commit is not taken for one.
func TestStartTracerRecordsTheResetAtTheFetchedCommit(t *testing.T) {
	var got []GroupStart
	var resetAt []time.Time
	inner := &lineLogger{}
	s := newStartTracer("q", inner)
	s.member = "member2"
	s.onStart = func(st GroupStart, at time.Time) { got, resetAt = append(got, st), append(resetAt, at) }
	log := &resetLogger{next: inner, onReset: s.onReset}
	fetch := func(p int32, o int64) {
		resp := kmsg.NewPtrOffsetFetchResponse()
		g := kmsg.NewOffsetFetchResponseGroup()
		topic := kmsg.NewOffsetFetchResponseGroupTopic()
		topic.Topic = "q"
		part := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		part.Partition, part.Offset, part.LeaderEpoch = p, o, 1
		topic.Partitions = append(topic.Partitions, part)
		g.Topics = append(g.Topics, topic)
		resp.Groups = append(resp.Groups, g)
		if err := s.onFetched(context.Background(), nil, resp); err != nil {
			t.Fatal(err)
		}
	}
	oor := func(broker string, p int32, prior int64) {
		log.Log(kgo.LogLevelInfo, oorFirstFetchMsg, "broker", broker, "topic", "q", "partition", p, "prior_offset", prior)
	}
	fetch(2, 1530)
	oor("3", 2, 1530)
	s.delivered(2, 0, 9)
	if len(got) != 1 || got[0] != (GroupStart{Member: "member2", Partition: 2, Offset: 0, Fetched: 1530, ResetBroker: 3}) || resetAt[0].IsZero() {
		t.Fatalf("after the reset: got %+v (reset at %v)", got, resetAt)
	}
	if lines := inner.take(); len(lines) == 0 || lines[0] != "faults: OffsetFetch answered partition 2 committed 1530 leader_epoch 1 err <nil> group_err <nil>" {
		t.Fatalf("the member's log: %q", lines)
	}
	// No reset: the start is at the fetched commit.
	fetch(1, 40)
	s.delivered(1, 40, 41)
	// A reset at another offset than the fetched commit, or by a seed
	// broker (no node id), is not this start's.
	fetch(0, 70)
	oor("2", 0, 12)
	s.delivered(0, 0, 3)
	fetch(3, 80)
	oor("seed_0", 3, 80)
	s.delivered(3, 0, 3)
	want := []GroupStart{
		{Member: "member2", Partition: 1, Offset: 40, Fetched: 40, ResetBroker: -1},
		{Member: "member2", Partition: 0, Offset: 0, Fetched: 70, ResetBroker: -1},
		{Member: "member2", Partition: 3, Offset: 0, Fetched: 80, ResetBroker: -1},
	}
	if len(got) != 4 {
		t.Fatalf("starts: %+v", got)
	}
	for i, w := range want {
		if got[i+1] != w {
			t.Fatalf("start %d: got %+v, want %+v", i+1, got[i+1], w)
		}
	}
}
