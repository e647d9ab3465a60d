package faults

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCheckShareFindsEachAnomaly feeds CheckShare a clean share-group
// history (a record released and delivered again, an ack whose answer was
// an error, a poison record archived at the limit) and histories with one
// anomaly each.
func TestCheckShareFindsEachAnomaly(t *testing.T) {
	s := time.Second
	clean := func() (*ShareHistory, map[int32][]Entry) {
		return &ShareHistory{
				DeliveryLimit: 3, Drained: true,
				Deliveries: []ShareDelivery{
					{Seq: 1, At: 1 * s, Acquired: s - 100*time.Millisecond, Consumer: "c0", Partition: 0, Offset: 0, Count: 1, Action: ShareAccept, AckOK: true, AckAt: 2 * s},
					{Seq: 2, At: 1 * s, Acquired: s - 100*time.Millisecond, Consumer: "c0", Partition: 0, Offset: 1, Count: 1, Action: ShareRelease, AckOK: true, AckAt: 2 * s},
					// Released with success: delivered again.
					{Seq: 3, At: 3 * s, Acquired: 3 * s, Consumer: "c1", Partition: 0, Offset: 1, Count: 2, Action: ShareAccept, AckOK: true, AckAt: 4 * s},
					// The answer was lost: the outcome is unknown,
					// and the record was not delivered again (the
					// accept was applied).
					{Seq: 4, At: 3 * s, Acquired: 3 * s, Consumer: "c1", Partition: 0, Offset: 2, Count: 1, Action: ShareAccept, AckErr: "NOT_LEADER_OR_FOLLOWER", AckAt: 4 * s},
					// A rejected record.
					{Seq: 5, At: 3 * s, Acquired: 3 * s, Consumer: "c1", Partition: 1, Offset: 0, Count: 1, Action: ShareReject, AckOK: true, AckAt: 4 * s},
					// Poison: released three times, archived at the limit.
					{Seq: 6, At: 3 * s, Acquired: 3 * s, Consumer: "c1", Partition: 1, Offset: 1, Count: 1, Action: ShareRelease, AckOK: true, AckAt: 4 * s},
					{Seq: 7, At: 5 * s, Acquired: 5 * s, Consumer: "c0", Partition: 1, Offset: 1, Count: 2, Action: ShareRelease, AckOK: true, AckAt: 6 * s},
					{Seq: 14, At: 40 * s, Acquired: 40 * s, Consumer: "c1", Partition: 1, Offset: 1, Count: 3, Action: ShareRelease, AckOK: true, AckAt: 41 * s},
					// A crashed consumer's delivery, never acked;
					// c0 gets it after the lock expired.
					{Seq: 8, At: 5 * s, Acquired: 5 * s, Consumer: "c2", Partition: 1, Offset: 2, Count: 1, Action: ShareAccept, AckErr: "not acknowledged: context canceled", AckAt: 5 * s},
					{Seq: 9, At: 30 * s, Acquired: 30 * s, Consumer: "c0", Partition: 1, Offset: 2, Count: 2, Action: ShareAccept, AckOK: true, AckAt: 31 * s},
					// Polled late from the client's buffer: acquired
					// (count 1) before c1's delivery (count 2), whose
					// accept then succeeded.
					{Seq: 10, At: 12 * s, Acquired: 9 * s, Consumer: "c1", Partition: 0, Offset: 3, Count: 2, Action: ShareAccept, AckOK: true, AckAt: 13 * s},
					{Seq: 11, At: 14 * s, Acquired: 2 * s, Consumer: "c2", Partition: 0, Offset: 3, Count: 1, Action: ShareAccept, AckErr: "INVALID_RECORD_STATE", AckAt: 15 * s},
					// c0 holds 1/3 past its lock and acquires it
					// again (count 2, buffered) before marking
					// its accept of the first delivery: the
					// accept applies to the second acquisition.
					{Seq: 12, At: 20 * s, Acquired: 20 * s, Consumer: "c0", Partition: 1, Offset: 3, Count: 1, Action: ShareAccept, AckOK: true, AckSent: 38 * s, AckAt: 38 * s},
					{Seq: 13, At: 38 * s, Acquired: 35 * s, Consumer: "c0", Partition: 1, Offset: 3, Count: 2, Action: ShareAccept, AckOK: true, AckSent: 38 * s, AckAt: 39 * s},
					// c3 holds 0/4 past its lock; c4 acquires and
					// accepts it; c3's late accept is answered with
					// success but ignored (the record is done).
					{Seq: 15, At: 100 * s, Acquired: 99 * s, Consumer: "c3", Partition: 0, Offset: 4, Count: 1, Action: ShareAccept, AckOK: true, AckSent: 118 * s, AckAt: 119 * s},
					{Seq: 16, At: 115 * s, Acquired: 115 * s, Consumer: "c4", Partition: 0, Offset: 4, Count: 2, Action: ShareAccept, AckOK: true, AckSent: 115 * s, AckAt: 116 * s},
				},
			}, map[int32][]Entry{
				0: {{0, "a"}, {1, "b"}, {2, "c"}, {3, "d"}, {4, "j"}},
				1: {{0, "e"}, {1, "f"}, {2, "g"}, {3, "h"}},
			}
	}
	h, final := clean()
	r := CheckShare(h, final)
	if r.Anomalies() != 0 || r.Deliveries != 16 || r.Accepted != 8 || r.Rejected != 1 || r.Released != 4 ||
		r.AckFailed != 3 || r.ArchivedAtLimit != 1 || r.FinalRecords != 9 || r.MaxCount != 3 {
		t.Fatalf("clean history: %s", r)
	}
	// Released with success at count 1 and never polled again (seed
	// 505's 3/8305): a consumer cut off with the answer buffered got it
	// at count 2, another at count 3 (the limit); its lock expired and
	// the broker archived it.
	h, final = clean()
	h.Deliveries = append(h.Deliveries, ShareDelivery{Seq: 30, At: 130 * s, Acquired: 130 * s, Consumer: "c0", Partition: 1, Offset: 4, Count: 1, Action: ShareRelease, AckOK: true, AckAt: 131 * s})
	h.Unseen = []ShareUnseen{
		{Consumer: "c2", Partition: 1, Offset: 4, Count: 2, Acquired: 131 * s, Dropped: true},
		{Consumer: "c5", Partition: 1, Offset: 4, Count: 3, Acquired: 160 * s},
		// Another record's unseen delivery (0/2, whose accept's
		// answer was lost) changes nothing.
		{Consumer: "c5", Partition: 0, Offset: 2, Count: 2, Acquired: 5 * s},
	}
	final[1] = append(final[1], Entry{4, "i"})
	if r := CheckShare(h, final); r.Anomalies() != 0 || r.ArchivedUnseen != 1 || r.Unseen != 3 {
		t.Fatalf("released, then archived by unseen deliveries: want no anomaly, one archived unseen:\n%s", r)
	}
	// A record no consumer polled, archived by unseen deliveries alone.
	h, final = clean()
	h.Unseen = []ShareUnseen{
		{Consumer: "c2", Partition: 1, Offset: 4, Count: 1, Acquired: 131 * s},
		{Consumer: "c3", Partition: 1, Offset: 4, Count: 2, Acquired: 150 * s, Dropped: true},
		{Consumer: "c5", Partition: 1, Offset: 4, Count: 3, Acquired: 170 * s},
	}
	final[1] = append(final[1], Entry{4, "i"})
	if r := CheckShare(h, final); r.Anomalies() != 0 || r.ArchivedUnseen != 1 {
		t.Fatalf("never polled, archived by unseen deliveries: want no anomaly, one archived unseen:\n%s", r)
	}
	// A lost ShareFetch answer explains nothing, but the report names it.
	h, final = clean()
	h.Deliveries = append(h.Deliveries, ShareDelivery{Seq: 30, At: 130 * s, Acquired: 130 * s, Consumer: "c0", Partition: 1, Offset: 4, Count: 1, Action: ShareRelease, AckOK: true, AckAt: 131 * s})
	h.LostFetches = []ShareLostFetch{{Consumer: "c7", Node: 2, At: 120 * s, Err: "early"}, {Consumer: "c2", Node: 3, At: 132 * s, Err: "cut"}}
	final[1] = append(final[1], Entry{4, "i"})
	if r := CheckShare(h, final); r.Anomalies() != 1 || r.ReleasedLost.Count != 1 || r.LostFetches != 2 ||
		!strings.Contains(r.ReleasedLost.Examples[0], "c2's ShareFetch to node 3 lost at 2m12s") || strings.Contains(r.ReleasedLost.Examples[0], "c7") {
		t.Fatalf("released, a ShareFetch answer lost after: want released-lost naming it:\n%s", r)
	}
	// Released one delivery below the limit, and a ShareFetch answer lost
	// after its release and before any higher offset of the partition
	// reached a consumer: archived by the lost answer (seed
	// 1796620647955083879), counted, no anomaly.
	lostCase := func(higherAt time.Duration) (*ShareHistory, map[int32][]Entry) {
		h, final := clean()
		h.Deliveries = append(h.Deliveries, ShareDelivery{Seq: 30, At: 130 * s, Acquired: 130 * s, Consumer: "c0", Partition: 1, Offset: 4, Count: 2, Action: ShareRelease, AckOK: true, AckAt: 131 * s})
		h.Deliveries = append(h.Deliveries, ShareDelivery{Seq: 31, At: higherAt, Acquired: higherAt, Consumer: "c1", Partition: 1, Offset: 5, Count: 1, Action: ShareAccept, AckOK: true, AckAt: higherAt + s})
		h.LostFetches = []ShareLostFetch{{Consumer: "c2", Node: 3, At: 132 * s, Err: "cut"}}
		final[1] = append(final[1], Entry{4, "i"}, Entry{5, "j"})
		return h, final
	}
	if r := CheckShare(lostCase(135 * s)); r.Anomalies() != 0 || r.ArchivedLostFetch != 1 {
		t.Fatalf("released at limit-1, answer lost before a higher offset was received: want no anomaly, one archived by a lost answer:\n%s", r)
	}
	// ... but not when a higher offset reached a consumer before the loss
	// (the record would have come first), nor below limit-1 (one lost
	// delivery does not reach the limit).
	if r := CheckShare(lostCase(131500 * time.Millisecond)); r.ReleasedLost.Count != 1 || r.ArchivedLostFetch != 0 {
		t.Fatalf("released at limit-1, a higher offset received before the lost answer: want released-lost:\n%s", r)
	}
	// franz-go's log line for an answer whose records it dropped (its
	// share session reset mid-flight) is a lost answer too.
	var buf shareBuffer
	buf.name, buf.start = "c9", time.Now()
	buf.Log(kgo.LogLevelInfo, shareDiscardMsg, "broker", int32(3), "sent_epoch", int32(62), "current_epoch", int32(0))
	buf.Log(kgo.LogLevelInfo, "some other line", "broker", int32(3))
	if _, _, lost := buf.unseen(); len(lost) != 1 || lost[0].Node != 3 || lost[0].Consumer != "c9" {
		t.Fatalf("discarded answer: %+v", lost)
	}
	// releasedBelow appends a record released at count (below the limit)
	// and never polled again, with the unseen deliveries us.
	releasedBelow := func(count int32, us ...ShareUnseen) func(h *ShareHistory, final map[int32][]Entry) {
		return func(h *ShareHistory, final map[int32][]Entry) {
			h.Deliveries = append(h.Deliveries, ShareDelivery{Seq: 30, At: 130 * s, Acquired: 130 * s, Consumer: "c0", Partition: 1, Offset: 4, Count: count, Action: ShareRelease, AckOK: true, AckAt: 131 * s})
			h.Unseen = us
			final[1] = append(final[1], Entry{4, "i"})
		}
	}
	add := func(d ShareDelivery) func(h *ShareHistory, _ map[int32][]Entry) {
		return func(h *ShareHistory, _ map[int32][]Entry) { h.Deliveries = append(h.Deliveries, d) }
	}
	cases := []struct {
		name   string
		mutate func(h *ShareHistory, final map[int32][]Entry)
		field  func(r *ShareReport) int
	}{
		{"accepted redelivered with a higher count", add(ShareDelivery{Seq: 20, At: 50 * s, Acquired: 50 * s, Consumer: "c2", Partition: 0, Offset: 0, Count: 2, Action: ShareAccept, AckErr: "INVALID_RECORD_STATE", AckAt: 51 * s}),
			func(r *ShareReport) int { return r.AcceptedRedelivered.Count }},
		{"accepted redelivered with the same count long after", add(ShareDelivery{Seq: 20, At: 90 * s, Acquired: 90 * s, Consumer: "c2", Partition: 0, Offset: 0, Count: 1, Action: ShareAccept, AckOK: true, AckAt: 91 * s}),
			func(r *ShareReport) int { return r.AcceptedRedelivered.Count }},
		{"rejected redelivered", add(ShareDelivery{Seq: 20, At: 50 * s, Acquired: 50 * s, Consumer: "c2", Partition: 1, Offset: 0, Count: 2, Action: ShareAccept, AckErr: "INVALID_RECORD_STATE", AckAt: 51 * s}),
			func(r *ShareReport) int { return r.RejectedRedelivered.Count }},
		{"archived redelivered", func(h *ShareHistory, _ map[int32][]Entry) {
			// The poison record, released at the limit (archived),
			// comes back with a count reset long after.
			h.Deliveries = append(h.Deliveries, ShareDelivery{Seq: 20, At: 150 * s, Acquired: 150 * s, Consumer: "c2", Partition: 1, Offset: 1, Count: 1, Action: ShareRelease, AckErr: "INVALID_RECORD_STATE", AckAt: 151 * s})
		}, func(r *ShareReport) int { return r.ArchivedRedelivered.Count }},
		{"over the limit", func(h *ShareHistory, _ map[int32][]Entry) {
			// 0/2 (its accept's outcome unknown) delivered at
			// count 4 of 3.
			h.Deliveries = append(h.Deliveries, ShareDelivery{Seq: 20, At: 50 * s, Acquired: 50 * s, Consumer: "c2", Partition: 0, Offset: 2, Count: 4, Action: ShareRelease, AckErr: "x", AckAt: 51 * s})
		}, func(r *ShareReport) int { return r.OverLimit.Count }},
		{"acquired twice", func(h *ShareHistory, _ map[int32][]Entry) {
			// c2 acquired 0/1 at 2.5 s with count 2 while c1's
			// first delivery (count 1, polled at 3 s) was acked
			// with success at 4 s.
			h.Deliveries = append(h.Deliveries, ShareDelivery{Seq: 20, At: 6 * s, Acquired: 2*s + s/2, Consumer: "c2", Partition: 1, Offset: 0, Count: 2, Action: ShareAccept, AckErr: "INVALID_RECORD_STATE", AckAt: 7 * s})
		}, func(r *ShareReport) int { return r.AcquiredTwice.Count }},
		{"acquired twice while its holder stalled", func(h *ShareHistory, _ map[int32][]Entry) {
			// c1 polled 1/0 at 3 s and marked its reject at 20 s
			// (it stalled past the lock): c2 acquired it at 19 s,
			// yet the reject succeeded.
			h.Deliveries[4].AckSent, h.Deliveries[4].AckAt = 20*s, 21*s
			h.Deliveries = append(h.Deliveries, ShareDelivery{Seq: 20, At: 19 * s, Acquired: 19 * s, Consumer: "c2", Partition: 1, Offset: 0, Count: 2, Action: ShareAccept, AckErr: "INVALID_RECORD_STATE", AckSent: 19 * s, AckAt: 20 * s})
		}, func(r *ShareReport) int { return r.AcquiredTwice.Count }},
		{"acquired twice by another consumer while its holder stalled", func(h *ShareHistory, _ map[int32][]Entry) {
			h.Deliveries[13].Consumer = "c1"
			h.Deliveries[13].AckOK, h.Deliveries[13].AckErr = false, "INVALID_RECORD_STATE"
		}, func(r *ShareReport) int { return r.AcquiredTwice.Count }},
		{"unconsumed", func(_ *ShareHistory, final map[int32][]Entry) {
			final[1] = append(final[1], Entry{4, "i"})
		}, func(r *ShareReport) int { return r.Unconsumed.Count }},
		{"released and never delivered again", func(h *ShareHistory, _ map[int32][]Entry) {
			// 0/1's release is its last delivery.
			h.Deliveries = append(h.Deliveries[:2], h.Deliveries[3:]...)
		}, func(r *ShareReport) int { return r.ReleasedLost.Count }},
		{"released one below the limit, no unseen delivery", releasedBelow(2),
			func(r *ShareReport) int { return r.ReleasedLost.Count }},
		{"released, unseen deliveries below the limit", releasedBelow(1,
			ShareUnseen{Consumer: "c2", Partition: 1, Offset: 4, Count: 2, Acquired: 131 * s, Dropped: true}),
			func(r *ShareReport) int { return r.ReleasedLost.Count }},
		{"released, unseen delivery at the limit before the release", releasedBelow(2,
			// Another record's unseen delivery, and one of this
			// record that cannot follow the release (its count is
			// not higher).
			ShareUnseen{Consumer: "c2", Partition: 0, Offset: 2, Count: 3, Acquired: 5 * s},
			ShareUnseen{Consumer: "c2", Partition: 1, Offset: 4, Count: 2, Acquired: 120 * s}),
			func(r *ShareReport) int { return r.ReleasedLost.Count }},
		{"never polled, unseen deliveries below the limit", func(h *ShareHistory, final map[int32][]Entry) {
			h.Unseen = []ShareUnseen{{Consumer: "c2", Partition: 1, Offset: 4, Count: 2, Acquired: 131 * s}}
			final[1] = append(final[1], Entry{4, "i"})
		}, func(r *ShareReport) int { return r.Unconsumed.Count }},
		{"accepted, then acquired unseen long after", func(h *ShareHistory, _ map[int32][]Entry) {
			h.Unseen = []ShareUnseen{{Consumer: "c2", Partition: 0, Offset: 0, Count: 2, Acquired: 90 * s}}
		}, func(r *ShareReport) int { return r.AcceptedRedelivered.Count }},
		{"unseen delivery over the limit", func(h *ShareHistory, _ map[int32][]Entry) {
			h.Unseen = []ShareUnseen{{Consumer: "c2", Partition: 0, Offset: 2, Count: 4, Acquired: 5 * s}}
		}, func(r *ShareReport) int { return r.OverLimit.Count }},
		{"released one below the limit, not drained", func(h *ShareHistory, final map[int32][]Entry) {
			h.Drained = false
			h.Deliveries = append(h.Deliveries, ShareDelivery{Seq: 30, At: 130 * s, Acquired: 130 * s, Consumer: "c0", Partition: 1, Offset: 4, Count: 2, Action: ShareRelease, AckOK: true, AckAt: 131 * s})
			final[1] = append(final[1], Entry{4, "i"})
		}, func(r *ShareReport) int { return r.Unfinished.Count }},
		{"unknown outcome, not drained", func(h *ShareHistory, _ map[int32][]Entry) {
			h.Drained = false
		}, func(r *ShareReport) int { return r.Unfinished.Count }},
		{"acquired after polled", add(ShareDelivery{Seq: 20, At: 50 * s, Acquired: 65 * s, Consumer: "c2", Partition: 0, Offset: 2, Count: 2, Action: ShareAccept, AckOK: true, AckAt: 51 * s}),
			func(r *ShareReport) int { return r.AcquiredAfterPolled.Count }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, final := clean()
			c.mutate(h, final)
			r := CheckShare(h, final)
			if c.field(r) == 0 || r.Anomalies() != c.field(r) {
				t.Fatalf("want only %s:\n%s", c.name, r)
			}
		})
	}
}

// shareLimit and shareLock are the delivery count limit and record lock
// duration the share-group tests' brokers run with: a low limit so that
// poison records reach it, Kafka's least lock duration
// (group.share.min.record.lock.duration.ms) so that records of a crashed
// consumer come back soon.
const (
	shareLimit = 3
	shareLock  = 15 * time.Second
)

// TestShareGroupUnderFaults runs the share-group workload on three nodes:
// two idempotent acks=all producers, three franz-go share consumers that
// accept, release and reject (CheckShare's doc comment has the
// properties; the first consumer holds one poll's records past their
// lock before acknowledging them); it kills the leader of the __share_group_state partition
// holding a share-partition's state and a partition leader, and cuts a
// consumer off after the second step. With SAMSA_FAULTS_SHARE_STEPS=N
// (run.sh --share N) it is a soak of N seeded steps of every kind (share
// coordinator, group coordinator, controller and leaders killed, cut off
// or paused, splits), a consumer cut off after every third step.
func TestShareGroupUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	p := Plan{
		Nodes: 3,
		Seed:  SeedFromEnvOrTime(),
		Steps: []Step{
			{Kind: KillShareCoordinator, Hold: 3 * time.Second},
			{Kind: KillLeader, Hold: 3 * time.Second, Pick: 1},
		},
		Deadline: 2 * time.Minute,
		Quiet:    2 * time.Second,
		Queue:    QueueOptions{Topic: "queueshare", Partitions: 4, Producers: 2, Interval: 5 * time.Millisecond, Acks: -1},
	}
	crashEvery, soak := 2, false
	if err := EnvPlan(&p); err != nil {
		t.Fatal(err)
	}
	if v := os.Getenv("SAMSA_FAULTS_SHARE_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("SAMSA_FAULTS_SHARE_STEPS: %v", err)
		}
		p.Steps = Schedule(p.Seed, WithCombined(WithSharePowerLoss(shareWeights)), n, 2*time.Second, 8*time.Second)
		crashEvery, soak = 3, true
		if os.Getenv("SAMSA_FAULTS_DEADLINE") == "" {
			p.Deadline = 6 * time.Hour
		}
	}
	p.Steps[0].Pick = uint32(p.Seed)
	o := ShareOptions{Topic: p.Queue.Topic, Partitions: p.Queue.Partitions, Group: "groupshare", Consumers: 3,
		DeliveryLimit: shareLimit, LockDuration: shareLock, StallEvery: 10 * time.Second}
	rep, srep, res := RunSharePlan(t, p, SharePlan{Share: o, CrashEvery: crashEvery})
	// Stalls are not required: the stalling consumer may get no records
	// before the run ends (seen once, on a quiet machine).
	if rep.Acked == 0 || srep.Accepted == 0 || srep.Released == 0 || srep.Rejected == 0 {
		t.Fatalf("nothing acknowledged (%d) or too little share traffic: %s", rep.Acked, srep)
	}
	// Every polled delivery was buffered first: the fetch record hooks
	// that find the unseen deliveries must have seen them all.
	if srep.Received < srep.Deliveries+srep.Unseen {
		t.Errorf("the fetch record hooks saw %d records, fewer than the %d polled and %d unseen: %s", srep.Received, srep.Deliveries, srep.Unseen, srep)
	}
	if res.Acks == 1 || res.Unclean {
		return
	}
	if rep.Anomalies() != 0 {
		t.Errorf("anomalies (seed %d):\n%s", p.Seed, rep)
	}
	// A record released below the limit, not polled again and not brought
	// to the limit by a delivery nobody polled (ReleasedLost) fails the
	// soak only: a ShareFetch answer lost in flight to a consumer's cut
	// is not recorded and can explain it (seeds 503 and 505 were
	// archived by deliveries nobody polled, H8), and the short run would
	// fail about one run in fifty on it.
	if n := srep.Anomalies() - srep.ReleasedLost.Count; n != 0 || (soak && srep.ReleasedLost.Count != 0) {
		t.Errorf("share group anomalies (seed %d):\n%s", p.Seed, srep)
	} else if srep.ReleasedLost.Count != 0 {
		t.Logf("faults: NOT judged in the short run (seed %d): released-lost %d, e.g. %v", p.Seed, srep.ReleasedLost.Count, srep.ReleasedLost.Examples)
	}
}

// shareWeights are the share soak's fault kinds.
var shareWeights = []Weight{
	{KillShareCoordinator, 4}, {IsolateShareCoordinator, 2},
	{KillLeader, 3}, {IsolateLeader, 2}, {PauseLeader, 1},
	{KillCoordinator, 2}, {IsolateCoordinator, 1},
	{KillController, 2}, {SplitLeaderInMinority, 1}, {BridgeSplit, 1},
}
