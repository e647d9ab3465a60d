package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-848 consumer groups in the test bed: the members send
// ConsumerGroupHeartbeat (franz-go's ServerSideBalancer), the group
// coordinator assigns the partitions, and a member's offset commits carry
// its member epoch. The group workload runs beside the queue workload's
// producers and direct consumer; its own checks (CheckGroup) are on top of
// Check's.

// ErrGroupDrain is returned when the KIP-848 group does not commit up to
// the end of every partition within its bound after the faults healed.
var ErrGroupDrain = errors.New("faults: KIP-848 group did not drain")

// KIP848Env is the broker environment of a cluster running KIP-848 group
// members: a 6 s session timeout (so that a crashed member is fenced
// within a fault run) and a 500 ms heartbeat interval.
func KIP848Env() []string {
	return []string{
		"KAFKA_GROUP_CONSUMER_SESSION_TIMEOUT_MS=6000",
		"KAFKA_GROUP_CONSUMER_MIN_SESSION_TIMEOUT_MS=6000",
		"KAFKA_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS=500",
		"KAFKA_GROUP_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS=500",
	}
}

// GroupOptions configures the KIP-848 group workload.
type GroupOptions struct {
	Topic      string
	Partitions int32
	Group      string
	// Members is the number of members kept in the group; a crashed one
	// is replaced by a new member.
	Members int
	// LogDir, if set, gets each member's franz-go log (info level, debug
	// with LogDebug), one file per member, its lines stamped with the
	// wall-clock time so that they line up with the nodes' logs.
	LogDir   string
	LogDebug bool
}

// GroupDelivery is one record polled by a member of the group. Seq orders
// deliveries and commits of the whole workload (one counter); Epoch
// changes whenever the member's assignment changes.
type GroupDelivery struct {
	Seq int64
	// At is when the member recorded it, since the workload started.
	At        time.Duration
	Member    string
	Epoch     int
	Partition int32
	Offset    int64
	Value     string
}

// GroupCommit is an offset commit the coordinator acknowledged (error
// code 0 in the OffsetCommit response) for one partition: the group's
// next record to consume there is Offset.
type GroupCommit struct {
	Seq int64
	// At is when the acknowledgement arrived, since the workload started.
	At        time.Duration
	Member    string
	Partition int32
	Offset    int64
}

// GroupEnd is the end of a member's assignment by a failure: franz-go
// told it that it lost its partitions (OnPartitionsLost: the coordinator
// fenced it, or its group management failed), or the workload cut it off.
type GroupEnd struct {
	Seq    int64
	At     time.Duration // since the workload started
	Member string
	Why    string // "lost" or "cut off"
}

// GroupHistory is what the KIP-848 group workload saw.
type GroupHistory struct {
	Deliveries []GroupDelivery
	Commits    []GroupCommit
	Ends       []GroupEnd
	// Committed are the group's committed offsets as an observer read
	// them (OffsetFetch) during the run and once after the members left.
	Committed []CommittedObs
	// CommitErrors counts commits that failed (their outcome is unknown),
	// by error.
	CommitErrors map[string]int
	// Crashes counts members cut off the network without leaving, and
	// Lost the times a live member gave its assignment up (franz-go's
	// OnPartitionsLost: the coordinator fenced it, or its group
	// management failed, e.g. the coordinator was unreachable).
	Crashes, Lost int
	// Drained says the group committed up to the end of every partition
	// before its members left.
	Drained bool
	// UnknownAtEnd names the live members the coordinator did not know
	// under their current member id when Settle gave up.
	UnknownAtEnd []string
	// FencedGrace bounds how long a member fenced without its knowing may
	// go on receiving records (FencedGraceFor); 0 means
	// FencedGraceFor(KIP848SessionTimeout, OffsetsCommitTimeout).
	FencedGrace time.Duration
	// Starts are where members started partitions after an OffsetFetch,
	// and Cuts the nodes the nemesis cut off from a majority
	// (kip848stale.go).
	Starts []GroupStart
	Cuts   []NodeCut
}

// KIP848SessionTimeout is group.consumer.session.timeout.ms of KIP848Env,
// and OffsetsCommitTimeout the brokers' offsets.commit.timeout.ms
// (Kafka's default): how long a coordinator waits for the ISR to have a
// write, and so how long a coordinator cut off from the other replicas
// holds a heartbeat's answer before failing it.
const (
	KIP848SessionTimeout = 6 * time.Second
	OffsetsCommitTimeout = 5 * time.Second
)

// FencedGraceFor is how long CheckGroup lets a member that the coordinator
// fenced without its knowing go on receiving records: from the
// acknowledgement of another member's commit past a record it receives
// until that delivery, and from that delivery until its assignment ends
// by a failure. A fenced member can only be talking to a coordinator cut
// off from the others (or to none): its next commit there fails after one
// write timeout, its heartbeats after at most one more (they wait for
// that write, as in Kafka), it looks the coordinator up again (perhaps
// asking the cut-off node first, which costs the same again) and the new
// coordinator's answer ends its assignment; the new coordinator gave its
// partitions away no earlier than a session timeout after loading them.
// Two session timeouts and two write timeouts cover that with room for a
// loaded machine, and are far below how long a member went on when its
// cut-off coordinator answered heartbeats from memory (until the cut
// healed).
func FencedGraceFor(session, commitTimeout time.Duration) time.Duration {
	return 2*session + 2*commitTimeout
}

// GroupReport is what CheckGroup found.
type GroupReport struct {
	Deliveries, CommitsAcked, Crashes, Lost int
	Drained                                 bool
	// Redelivered counts deliveries of a record the group had already
	// received: allowed when no acknowledged commit covered it (a member
	// crashed or was fenced before committing it), counted and reported,
	// not an anomaly.
	Redelivered Anomaly
	// FencedDeliveries counts records a member received below an
	// acknowledged commit of another member while it still held an
	// assignment the coordinator had taken from it without its knowing
	// (it was fenced, e.g. talking to a cut-off coordinator that still
	// answered its heartbeats): allowed, because that member's assignment
	// then ended by a failure (GroupEnd), reported, not an anomaly.
	FencedDeliveries Anomaly
	// LongestFenced is the longest time from a delivery counted in
	// FencedDeliveries to the end of its member's assignment.
	LongestFenced time.Duration
	// LongestFencedConsuming is the longest time from the
	// acknowledgement of another member's commit past a record to a
	// fenced member's delivery of it: how long a fenced member went on
	// receiving records, at least.
	LongestFencedConsuming time.Duration
	// FencedGrace is the bound both durations are held to.
	FencedGrace time.Duration
	// FencedTooLong: a member received a record below another member's
	// acknowledged commit, and either received it more than FencedGrace
	// after that commit was acknowledged, or its assignment ended by a
	// failure more than FencedGrace after the delivery: a fenced member
	// that did not stop promptly.
	FencedTooLong Anomaly
	// RewoundBelowCommit: a member received a record below an offset the
	// coordinator had already acknowledged as committed for its partition,
	// and its assignment did not end by a failure afterwards.
	RewoundBelowCommit Anomaly
	// ClientResetAtStaleLeader counts deliveries below an acknowledged
	// commit that the member's own events explain as franz-go's reset at
	// a cut-off node's stale leadership (staleLeaderReset, finding 16):
	// reported, not an anomaly.
	ClientResetAtStaleLeader Anomaly
	// CommitRegressed: the coordinator acknowledged a commit below one it
	// had acknowledged before for the same partition.
	CommitRegressed Anomaly
	// Unconsumed: a record of the final log the group never received,
	// although it had time to drain after the faults.
	Unconsumed Anomaly
	// UnknownAtEnd: a live member the coordinator did not know under its
	// member id a fenced grace after the faults ended: fenced without
	// ever learning it.
	UnknownAtEnd Anomaly
	CommitErrors map[string]int
}

// Anomalies is the number of anomalies of every kind.
func (r *GroupReport) Anomalies() int {
	return r.RewoundBelowCommit.Count + r.CommitRegressed.Count + r.Unconsumed.Count + r.FencedTooLong.Count + r.UnknownAtEnd.Count
}

// redeliveryExamples is how many redeliveries a report describes.
const redeliveryExamples = 3

func (r *GroupReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "KIP-848 group: deliveries=%d redelivered=%d commits-acked=%d crashes=%d assignments-lost=%d drained=%v\n",
		r.Deliveries, r.Redelivered.Count, r.CommitsAcked, r.Crashes, r.Lost, r.Drained)
	for _, e := range r.Redelivered.Examples {
		fmt.Fprintf(&b, "  redelivered: %s\n", e)
	}
	fmt.Fprintf(&b, "  received while fenced: %d (longest after the other member's commit: %v; until the assignment ended: %v; bound %v)\n",
		r.FencedDeliveries.Count, r.LongestFencedConsuming.Round(10*time.Millisecond),
		r.LongestFenced.Round(10*time.Millisecond), r.FencedGrace)
	for _, e := range r.FencedDeliveries.Examples {
		fmt.Fprintf(&b, "    %s\n", e)
	}
	fmt.Fprintf(&b, "  client-reset-at-stale-leader: %d (not an anomaly: the member's reset after OFFSET_OUT_OF_RANGE at a cut-off node)\n",
		r.ClientResetAtStaleLeader.Count)
	for _, e := range r.ClientResetAtStaleLeader.Examples {
		fmt.Fprintf(&b, "    %s\n", e)
	}
	errs := make([]string, 0, len(r.CommitErrors))
	for e := range r.CommitErrors {
		errs = append(errs, e)
	}
	sort.Strings(errs)
	for _, e := range errs {
		fmt.Fprintf(&b, "  failed commit: %dx %s\n", r.CommitErrors[e], e)
	}
	for _, a := range []struct {
		name string
		a    Anomaly
	}{{"rewound-below-commit", r.RewoundBelowCommit}, {"commit-regressed", r.CommitRegressed},
		{"fenced-too-long", r.FencedTooLong}, {"unconsumed", r.Unconsumed}, {"unknown-at-end", r.UnknownAtEnd}} {
		fmt.Fprintf(&b, "  %-20s %d", a.name, a.a.Count)
		for _, e := range a.a.Examples {
			fmt.Fprintf(&b, "\n    %s", e)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// CheckGroup checks the KIP-848 group's history against the final log:
// acknowledged commits of a partition never go backwards; no member
// receives a record below an offset already acknowledged as committed
// unless its assignment then ends by a failure (it was fenced without
// knowing: counted), and then only within the fenced grace of that
// commit and of that end (else fenced-too-long), so a record is received
// twice only when a member failed (those redeliveries are counted); and
// every record of the final log reached the group. It is a pure function.
func CheckGroup(h *GroupHistory, final map[int32][]Entry) *GroupReport {
	grace := h.FencedGrace
	if grace <= 0 {
		grace = FencedGraceFor(KIP848SessionTimeout, OffsetsCommitTimeout)
	}
	r := &GroupReport{Deliveries: len(h.Deliveries), CommitsAcked: len(h.Commits), Crashes: h.Crashes,
		Lost: h.Lost, Drained: h.Drained, CommitErrors: h.CommitErrors, FencedGrace: grace}
	for _, m := range h.UnknownAtEnd {
		r.UnknownAtEnd.add("%s was not a member of the group a fenced grace after the faults", m)
	}
	// Walk deliveries and commits in Seq order, tracking the highest
	// acknowledged commit of each partition.
	commits := append([]GroupCommit(nil), h.Commits...)
	sort.Slice(commits, func(i, j int) bool { return commits[i].Seq < commits[j].Seq })
	deliveries := append([]GroupDelivery(nil), h.Deliveries...)
	sort.Slice(deliveries, func(i, j int) bool { return deliveries[i].Seq < deliveries[j].Seq })
	ends := make(map[string][]GroupEnd)
	for _, e := range h.Ends {
		ends[e.Member] = append(ends[e.Member], e)
	}
	// endAfter returns the first failure that ended member's assignment
	// after seq.
	endAfter := func(member string, seq int64) (GroupEnd, bool) {
		for _, e := range ends[member] {
			if e.Seq > seq {
				return e, true
			}
		}
		return GroupEnd{}, false
	}
	// starts holds each member's starts of each partition in Seq order.
	starts := make(map[memberPartition][]GroupStart)
	for _, st := range h.Starts {
		k := memberPartition{st.Member, st.Partition}
		starts[k] = append(starts[k], st)
	}
	for _, ss := range starts {
		sort.Slice(ss, func(i, j int) bool { return ss[i].Seq < ss[j].Seq })
	}
	committed := make(map[int32]GroupCommit)
	// accepted holds each partition's acknowledged commits in order, their
	// offsets ascending (a regressed one is left out).
	accepted := make(map[int32][]GroupCommit)
	applyCommit := func(c GroupCommit) {
		prev, ok := committed[c.Partition]
		if ok && c.Offset < prev.Offset {
			r.CommitRegressed.add("partition %d: %s's commit of %d acknowledged after %s's of %d",
				c.Partition, c.Member, c.Offset, prev.Member, prev.Offset)
			return
		}
		committed[c.Partition] = c
		accepted[c.Partition] = append(accepted[c.Partition], c)
	}
	// firstPast returns the first acknowledged commit of partition past
	// offset by another member than member: since then, at the latest,
	// member was fenced from the partition.
	firstPast := func(partition int32, offset int64, member string) (GroupCommit, bool) {
		cs := accepted[partition]
		i := sort.Search(len(cs), func(i int) bool { return cs[i].Offset > offset })
		for ; i < len(cs); i++ {
			if cs[i].Member != member {
				return cs[i], true
			}
		}
		return GroupCommit{}, false
	}
	got := make(map[partOffset]GroupDelivery)
	ci := 0
	for _, d := range deliveries {
		for ; ci < len(commits) && commits[ci].Seq < d.Seq; ci++ {
			applyCommit(commits[ci])
		}
		if c, ok := committed[d.Partition]; ok && d.Offset < c.Offset {
			if e, ok := endAfter(d.Member, d.Seq); ok {
				// Fenced since the first commit past the record
				// by another member; the member's own commits
				// past it would make this a rewind (no excuse
				// then: it had the record already).
				first, ok := firstPast(d.Partition, d.Offset, d.Member)
				if !ok {
					first = c
				}
				consuming, ending := d.At-first.At, e.At-d.At
				r.FencedDeliveries.add("%s epoch %d received %q at %d/%d %v after %s's commit of %d was acknowledged; its assignment ended %v later (%s)",
					d.Member, d.Epoch, d.Value, d.Partition, d.Offset, consuming.Round(10*time.Millisecond),
					first.Member, first.Offset, ending.Round(10*time.Millisecond), e.Why)
				r.LongestFenced = max(r.LongestFenced, ending)
				r.LongestFencedConsuming = max(r.LongestFencedConsuming, consuming)
				if consuming > grace || ending > grace {
					r.FencedTooLong.add("%s epoch %d received %q at %d/%d %v after %s's commit of %d was acknowledged, its assignment ended %v later (%s); bound %v",
						d.Member, d.Epoch, d.Value, d.Partition, d.Offset, consuming.Round(10*time.Millisecond),
						first.Member, first.Offset, ending.Round(10*time.Millisecond), e.Why, grace)
				}
			} else if s, ok := staleLeaderReset(starts[memberPartition{d.Member, d.Partition}], h.Cuts, d, c); ok {
				r.ClientResetAtStaleLeader.add("%s", describeStaleReset(d, c, s, h.Cuts))
			} else {
				r.RewoundBelowCommit.add("%s epoch %d received %q at %d/%d after %s's commit of %d was acknowledged",
					d.Member, d.Epoch, d.Value, d.Partition, d.Offset, c.Member, c.Offset)
			}
		}
		po := partOffset{d.Partition, d.Offset}
		if first, ok := got[po]; ok {
			if r.Redelivered.Count < redeliveryExamples {
				r.Redelivered.add("%s epoch %d received %d/%d, first received by %s epoch %d",
					d.Member, d.Epoch, d.Partition, d.Offset, first.Member, first.Epoch)
			} else {
				r.Redelivered.Count++
			}
			continue
		}
		got[po] = d
	}
	for ; ci < len(commits); ci++ {
		applyCommit(commits[ci])
	}
	parts := make([]int32, 0, len(final))
	for p := range final {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		for _, e := range final[p] {
			if _, ok := got[partOffset{p, e.Offset}]; !ok {
				r.Unconsumed.add("partition %d offset %d (%q) never received by the group", p, e.Offset, e.Value)
			}
		}
	}
	return r
}

// cutDialer lets the workload cut a member off the network, as a crashed
// process is: its connections close and new dials fail, so it can neither
// heartbeat, commit nor leave.
type cutDialer struct {
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

// errCut is what a cut member's dials return.
var errCut = errors.New("faults: member cut off")

func (d *cutDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errCut
	}
	c, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *cutDialer) crash() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}

// groupMember is one KIP-848 member: a franz-go client and its loop.
type groupMember struct {
	name   string
	cl     *kgo.Client
	dialer *cutDialer
	// gone is set once the member is cut off or stopping.
	gone   *atomic.Bool
	cancel context.CancelFunc
	done   chan struct{}
	// log is the member's franz-go log file (GroupOptions.LogDir), or nil.
	log *os.File
	// trace records (and logs, with log) where the member starts each
	// partition.
	trace *startTracer
}

// Group runs the KIP-848 group workload: Members franz-go clients with
// ServerSideBalancer in one group, each committing what it polled after
// every poll (BlockRebalanceOnPoll, so a revocation waits for that
// commit), and an observer of the group's committed offsets.
type Group struct {
	o     GroupOptions
	addrs []string

	// start is when the workload started (At of deliveries and ends).
	start time.Time

	mu      sync.Mutex
	hist    GroupHistory
	seq     int64 // REQUIRES: mu held
	members []*groupMember
	crashed []*groupMember
	next    int

	observerCancel context.CancelFunc
	observerDone   chan struct{}
}

// StartGroup starts o.Members members and the commit observer.
func StartGroup(addrs []string, o GroupOptions) (*Group, error) {
	g := &Group{o: o, addrs: addrs, start: time.Now(), hist: GroupHistory{CommitErrors: map[string]int{}}}
	for range o.Members {
		if err := g.addMember(); err != nil {
			g.Stop()
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.observerCancel, g.observerDone = cancel, make(chan struct{})
	go g.observe(ctx)
	return g, nil
}

func (g *Group) addMember() error {
	g.mu.Lock()
	name := fmt.Sprintf("kip848-member%d", g.next)
	g.next++
	g.mu.Unlock()
	d := &cutDialer{}
	epoch := new(atomic.Int64)
	bump := func(context.Context, *kgo.Client, map[string][]int32) { epoch.Add(1) }
	// A cut member's group management keeps failing until the end, and
	// a stopping member's losses are no failure: only live members'
	// losses are recorded.
	gone := new(atomic.Bool)
	lost := func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
		bump(ctx, cl, ps)
		if !gone.Load() {
			g.mu.Lock()
			g.hist.Lost++
			g.seq++
			g.hist.Ends = append(g.hist.Ends, GroupEnd{Seq: g.seq, At: time.Since(g.start), Member: name, Why: "lost"})
			g.mu.Unlock()
		}
	}
	opts := []kgo.Opt{kgo.SeedBrokers(g.addrs...), kgo.ClientID(name), kgo.Dialer(d.dial),
		kgo.ConsumerGroup(g.o.Group), kgo.ConsumeTopics(g.o.Topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.OnPartitionsAssigned(bump), kgo.OnPartitionsRevoked(bump), kgo.OnPartitionsLost(lost)}
	var logf *os.File
	var logger kgo.Logger
	if g.o.LogDir != "" {
		f, err := os.Create(filepath.Join(g.o.LogDir, g.o.Group+"-"+name+".log"))
		if err != nil {
			return err
		}
		logf = f
		level := kgo.LogLevelInfo
		if g.o.LogDebug {
			level = kgo.LogLevelDebug
		}
		logger = kgo.BasicLogger(f, level, func() string {
			return time.Now().UTC().Format("15:04:05.000000 ")
		})
	}
	// Every member records where it starts each partition (GroupStart,
	// kip848stale.go), logging it too when it has a log.
	trace := newStartTracer(g.o.Topic, logger)
	trace.member = name
	trace.onStart = func(st GroupStart, resetAt time.Time) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.seq++
		st.Seq, st.At = g.seq, time.Since(g.start)
		if !resetAt.IsZero() {
			st.ResetAt = resetAt.Sub(g.start)
		}
		g.hist.Starts = append(g.hist.Starts, st)
	}
	opts = append(opts, kgo.WithLogger(&resetLogger{next: logger, onReset: trace.onReset}), kgo.OnOffsetsFetched(trace.onFetched))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		if logf != nil {
			_ = logf.Close()
		}
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &groupMember{name: name, cl: cl, dialer: d, gone: gone, cancel: cancel, done: make(chan struct{}), log: logf, trace: trace}
	g.mu.Lock()
	g.members = append(g.members, m)
	g.mu.Unlock()
	go g.consume(ctx, m, epoch)
	return nil
}

func (g *Group) consume(ctx context.Context, m *groupMember, epoch *atomic.Int64) {
	defer close(m.done)
	for ctx.Err() == nil {
		fs := m.cl.PollFetches(ctx)
		e := int(epoch.Load())
		at := time.Since(g.start)
		var ds []GroupDelivery
		fs.EachRecord(func(r *kgo.Record) {
			ds = append(ds, GroupDelivery{At: at, Member: m.name, Epoch: e, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
		})
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if n := len(p.Records); n > 0 {
				m.trace.delivered(p.Partition, p.Records[0].Offset, p.Records[n-1].Offset)
			}
		})
		g.mu.Lock()
		for i := range ds {
			g.seq++
			ds[i].Seq = g.seq
		}
		g.hist.Deliveries = append(g.hist.Deliveries, ds...)
		g.mu.Unlock()
		if unc := m.cl.UncommittedOffsets(); len(unc) > 0 {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			m.cl.CommitOffsetsSync(cctx, unc, func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				g.recordCommit(m.name, req, resp, err)
			})
			cancel()
		}
		m.cl.AllowRebalance()
	}
}

// recordCommit records the partitions of an OffsetCommit the coordinator
// acknowledged, and counts the failed ones.
func (g *Group) recordCommit(member string, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
	at := time.Since(g.start)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.hist.CommitErrors[commitErrorKey(err)]++
		return
	}
	sent := make(map[int32]int64)
	for _, t := range req.Topics {
		if t.Topic != g.o.Topic {
			continue
		}
		for _, p := range t.Partitions {
			sent[p.Partition] = p.Offset
		}
	}
	for _, t := range resp.Topics {
		if t.Topic != g.o.Topic {
			continue
		}
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				g.hist.CommitErrors[commitErrorKey(err)]++
				continue
			}
			off, ok := sent[p.Partition]
			if !ok {
				continue
			}
			g.seq++
			g.hist.Commits = append(g.hist.Commits, GroupCommit{Seq: g.seq, At: at, Member: member, Partition: p.Partition, Offset: off})
		}
	}
}

// commitErrorKey shortens an error for counting (no addresses, which vary).
func commitErrorKey(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "context: " + err.Error()
	}
	s := err.Error()
	if i := strings.Index(s, ": dial"); i > 0 {
		s = s[:i]
	}
	return s
}

// Crash cuts member i (of the live members, modulo their number) off the
// network without a leave, as a crashed process is, and starts a new
// member in its place. The coordinator fences the cut member after the
// session timeout and gives its partitions to the others.
func (g *Group) Crash(i int) (string, error) {
	g.mu.Lock()
	if len(g.members) == 0 {
		g.mu.Unlock()
		return "", fmt.Errorf("%w: no member to crash", ErrNoTarget)
	}
	i %= len(g.members)
	m := g.members[i]
	g.members = append(g.members[:i], g.members[i+1:]...)
	g.crashed = append(g.crashed, m)
	g.hist.Crashes++
	g.seq++
	g.hist.Ends = append(g.hist.Ends, GroupEnd{Seq: g.seq, At: time.Since(g.start), Member: m.name, Why: "cut off"})
	g.mu.Unlock()
	m.gone.Store(true)
	m.dialer.crash()
	m.cancel()
	<-m.done
	return m.name, g.addMember()
}

// Members names the live members.
func (g *Group) Members() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, m := range g.members {
		out = append(out, m.name)
	}
	return out
}

// Deliveries is the number of records the group received so far.
func (g *Group) Deliveries() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.hist.Deliveries)
}

func (g *Group) observe(ctx context.Context) {
	defer close(g.observerDone)
	observeTwiceASecond(ctx, g.addrs, func(ctx context.Context, adm *kadm.Client) { g.observeOnce(ctx, adm) })
}

// observeOnce reads the group's committed offsets once and returns them by
// partition (nil when the read failed).
func (g *Group) observeOnce(ctx context.Context, adm *kadm.Client) map[int32]int64 {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(rctx, g.o.Group)
	if err != nil {
		return nil
	}
	var obs []CommittedObs
	out := make(map[int32]int64)
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.Topic == g.o.Topic && o.At >= 0 {
			obs = append(obs, CommittedObs{Partition: o.Partition, Offset: o.At})
			out[o.Partition] = o.At
		}
	})
	sort.Slice(obs, func(i, j int) bool { return obs[i].Partition < obs[j].Partition })
	g.mu.Lock()
	g.hist.Committed = append(g.hist.Committed, obs...)
	g.mu.Unlock()
	return out
}

// Drain waits, bounded by d, until the group's committed offset of every
// partition reached its end offset (the producers have stopped), and
// records whether it did.
func (g *Group) Drain(ctx context.Context, d time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var behind string
	err = pollUntil(ctx, d, func(ctx context.Context) (bool, error) {
		ends, err := adm.ListEndOffsets(ctx, g.o.Topic)
		if err != nil || ends.Error() != nil {
			return false, errors.Join(err, ends.Error())
		}
		committed := g.observeOnce(ctx, adm)
		var lag []string
		ends.Each(func(o kadm.ListedOffset) {
			if c := committed[o.Partition]; c < o.Offset {
				lag = append(lag, fmt.Sprintf("%d:%d<%d", o.Partition, c, o.Offset))
			}
		})
		sort.Strings(lag)
		behind = strings.Join(lag, " ")
		return len(lag) == 0, nil
	})
	g.mu.Lock()
	g.hist.Drained = err == nil
	g.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: behind: %s: %w", ErrGroupDrain, behind, err)
	}
	return nil
}

// Settle waits, bounded by d, until the coordinator knows every live
// member under the member id the member holds (ConsumerGroupDescribe). A
// member fenced without knowing it (its heartbeats held or backed off past
// the session timeout while a coordinator was cut off) learns it with its
// next heartbeat, gives its partitions up (OnPartitionsLost) and rejoins
// under a new id: waiting for that before Stop records the end of its
// assignment, so that CheckGroup judges what it received meanwhile by the
// fenced grace instead of seeing a member that kept a partition another
// member had. A member still unknown at d is recorded (UnknownAtEnd).
func (g *Group) Settle(ctx context.Context, d time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	var unknown []string
	err = pollUntil(ctx, d, func(ctx context.Context) (bool, error) {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{g.o.Group}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false, err
		}
		if len(resp.Groups) != 1 {
			return false, fmt.Errorf("faults: ConsumerGroupDescribe answered %d groups", len(resp.Groups))
		}
		rg := resp.Groups[0]
		if err := kerr.ErrorForCode(rg.ErrorCode); err != nil {
			return false, err
		}
		known := make(map[string]bool, len(rg.Members))
		for _, m := range rg.Members {
			known[m.MemberID] = true
		}
		g.mu.Lock()
		ms := append([]*groupMember(nil), g.members...)
		g.mu.Unlock()
		unknown = unknown[:0]
		for _, m := range ms {
			if id, _ := m.cl.GroupMetadata(); !known[id] {
				unknown = append(unknown, fmt.Sprintf("%s (member id %q)", m.name, id))
			}
		}
		return len(unknown) == 0, nil
	})
	if err != nil {
		g.mu.Lock()
		g.hist.UnknownAtEnd = append([]string(nil), unknown...)
		g.mu.Unlock()
		return fmt.Errorf("%w: members the coordinator does not know: %v: %w", ErrGroupDrain, unknown, err)
	}
	return nil
}

// Stop ends every member (live ones leave the group) and the observer,
// then reads the committed offsets once more.
func (g *Group) Stop() {
	g.mu.Lock()
	ms := append(append([]*groupMember(nil), g.members...), g.crashed...)
	g.members, g.crashed = nil, nil
	g.mu.Unlock()
	for _, m := range ms {
		m.gone.Store(true)
		m.cancel()
		<-m.done
	}
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(m.cl.Close)
	}
	wg.Wait()
	for _, m := range ms {
		if m.log != nil {
			_ = m.log.Close()
		}
	}
	if g.observerCancel != nil {
		g.observerCancel()
		<-g.observerDone
		g.observerCancel = nil
		if cl, err := kgo.NewClient(kgo.SeedBrokers(g.addrs...)); err == nil {
			g.observeOnce(context.Background(), kadm.NewClient(cl))
			cl.Close()
		}
	}
}

// History returns the recorded history (call after Stop).
func (g *Group) History() *GroupHistory {
	g.mu.Lock()
	defer g.mu.Unlock()
	return &g.hist
}

// MergeInto adds the group's deliveries and committed offsets to a queue
// history, so that Check judges them as it judges a classic group's:
// inconsistent offsets, offsets going backwards within one assignment,
// committed offsets going backwards or past records never delivered.
func (h *GroupHistory) MergeInto(q *History) {
	if q.GroupConsumers == nil {
		q.GroupConsumers = make(map[string]bool)
	}
	for _, d := range h.Deliveries {
		q.Polls = append(q.Polls, Poll{Consumer: d.Member, Epoch: d.Epoch, Partition: d.Partition, Offset: d.Offset, Value: d.Value})
		q.GroupConsumers[d.Member] = true
	}
	q.Committed = append(q.Committed, h.Committed...)
}

// groupDrainBound bounds how long the group gets, after the faults
// healed and the producers stopped, to commit up to the end of every
// partition.
const groupDrainBound = 2 * time.Minute

// GroupPlan is what RunGroupPlan runs beside a Plan's queue workload.
type GroupPlan struct {
	Group GroupOptions
	// CrashEvery: after every CrashEvery-th step one member is cut off
	// without leaving and replaced (0: never).
	CrashEvery int
	// ConfluentProducers is the number of confluent-kafka-go idempotent
	// producers (child processes, StartConfluentProducers) beside the
	// franz-go ones; their ids start at 100.
	ConfluentProducers int
}

// RunGroupPlan is RunPlan with a KIP-848 group in place of the classic
// one: the queue workload's producers and direct consumer, any confluent
// producers, and gp.Group.Members KIP-848 members of one group on the
// queue topic, members cut off and replaced as gp.CrashEvery says. After
// the faults the group must drain (commit up to the end of every
// partition); Check judges the merged history and CheckGroup the group's
// own.
func RunGroupPlan(t *testing.T, p Plan, gp GroupPlan) (*Report, *GroupReport, *Result) {
	t.Helper()
	o, crashEvery := gp.Group, gp.CrashEvery
	keep := KeepLogsDir(t)
	if o.LogDir == "" && keep != "" {
		o.LogDir, o.LogDebug = keep, os.Getenv("SAMSA_FAULTS_CLIENT_DEBUG") == "1"
	}
	start := time.Now()
	t.Logf("faults: KIP-848 group, %d nodes, seed %d, %d steps, deadline %v (replay with SAMSA_FAULTS_SEED=%d)",
		p.Nodes, p.Seed, len(p.Steps), p.Deadline, p.Seed)
	cfg := Config{Nodes: p.Nodes, Loopback: p.Loopback, Proxy: p.Proxy, Env: KIP848Env()}
	if p.DiskLimit > 0 && DiskAvailable() {
		cfg.DiskLimit = p.DiskLimit
	}
	c := StartCluster(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rf := int16(min(3, p.Nodes))
	qo := p.Queue
	qo.Group, qo.GroupMembers = "", 0
	if err := CreateTopic(ctx, c.Addrs(), qo, rf); err != nil {
		t.Fatal(err)
	}
	q, err := StartQueue(c.Addrs(), qo)
	if err != nil {
		t.Fatal(err)
	}
	g, err := StartGroup(c.Addrs(), o)
	if err != nil {
		q.Stop()
		t.Fatal(err)
	}
	var cf *ConfluentProducers
	if gp.ConfluentProducers > 0 {
		cf, err = StartConfluentProducersLogged(c.Addrs(), qo.Topic, qo.Partitions, gp.ConfluentProducers, 100, qo.Interval, keep)
		if err != nil {
			g.Stop()
			q.Stop()
			t.Fatal(err)
		}
	}
	stopped := false
	defer func() {
		if !stopped {
			if cf != nil {
				_ = cf.Stop()
			}
			g.Stop()
			q.Stop()
		}
	}()
	acked := func() int {
		if cf == nil {
			return q.Acked()
		}
		return q.Acked() + cf.Acked()
	}
	nm := &Nemesis{C: c, Topic: qo.Topic, Partitions: qo.Partitions, Group: o.Group,
		TxnID: "faults-txn", RF: int(rf), Logf: t.Logf}
	ran := runSteps(ctx, t, nm, p, start, stepLoop{
		afterStep: func(ran int, s Step) {
			if crashEvery > 0 && ran%crashEvery == 0 {
				name, err := g.Crash(int(s.Pick))
				if err != nil {
					t.Fatalf("faults: crashing a member: %v", err)
				}
				t.Logf("faults: member %s cut off without leaving; members now %v", name, g.Members())
			}
		},
		progress: func() string {
			return fmt.Sprintf("sent %d acked %d, group received %d", q.Sent(), acked(), g.Deliveries())
		},
	})
	if cf != nil {
		if err := cf.Stop(); err != nil {
			t.Errorf("faults: %v", err)
		}
	}
	q.StopProducers()
	if err := g.Drain(ctx, groupDrainBound); err != nil {
		// Reported by CheckGroup as unconsumed records.
		t.Logf("faults: %v", err)
	}
	if err := g.Settle(ctx, FencedGraceFor(KIP848SessionTimeout, OffsetsCommitTimeout)); err != nil {
		// Reported by CheckGroup as members unknown at the end.
		t.Logf("faults: %v", err)
	}
	g.Stop()
	q.Stop()
	stopped = true
	if err := q.FinalRead(ctx, 3*time.Minute); err != nil {
		t.Fatalf("faults: %v", err)
	}
	h := q.History()
	if cf != nil {
		cf.MergeInto(h)
	}
	gh := g.History()
	gh.Cuts = nm.Cuts(g.start)
	keepHistory(t, keep, "group", g.start, gh)
	gh.MergeInto(h)
	rep := Check(h)
	grep := CheckGroup(gh, h.Final)
	res := newResult("kip848-group", p, c.NetName, nm, ran, q.Sent(), rep, start, map[string]int{
		"committed_backwards": rep.CommittedBackwards.Count, "committed_skipped": rep.CommittedSkipped.Count,
		"rewound_below_commit": grep.RewoundBelowCommit.Count, "commit_regressed": grep.CommitRegressed.Count,
		"fenced_too_long": grep.FencedTooLong.Count, "unconsumed": grep.Unconsumed.Count,
	})
	res.Redelivered = grep.Redelivered.Count
	res.MemberCrashes = grep.Crashes
	res.FencedDeliveries = grep.FencedDeliveries.Count
	if cf != nil {
		res.ConfluentAcked = cf.Acked()
		t.Logf("faults: %d of %d acknowledged records from %d confluent-kafka-go producers", res.ConfluentAcked, rep.Acked, gp.ConfluentProducers)
	}
	res.Disk = nm.DiskOutcomes()
	t.Logf("faults: %s\nfaults: %s\nfaults: %s", nm.CountsString(), rep, grep)
	saveResult(t, res)
	return rep, grep, res
}
