package compattests

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	segkafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// Shape of the consumer-group scenarios: a 12-partition topic, records produced in
// batches of groupPerPartition records per partition, consumers with a short session
// timeout and heartbeat interval so that rebalances are driven by the broker, not by
// the clients' default timers.
const (
	groupPartitions   = 12
	groupPerPartition = 10
	groupSession      = 10 * time.Second
	groupHeartbeat    = 500 * time.Millisecond
	groupRebalanceTO  = 10 * time.Second
	groupWait         = 30 * time.Second
	groupInitialDelay = "500"
)

// startGroupBroker starts a broker with a short initial rebalance delay.
func startGroupBroker(t *testing.T) *harness.Broker {
	t.Helper()
	return harness.Start(t, harness.Options{Overrides: map[string]string{"group.initial.rebalance.delay.ms": groupInitialDelay}})
}

// consumedRecord is one record a group member handed to the application.
type consumedRecord struct {
	Member    string // client.id of the member
	Partition int32
	Value     string
}

// groupSink collects what the members of one group consumed and which partitions each
// member owns according to the client's own assignment callbacks. A partition assigned
// to a member while another member still owns it is recorded as a problem.
type groupSink struct {
	group string

	mu       sync.Mutex
	recs     []consumedRecord
	owner    map[int32]string
	assigns  map[string]int // number of assignment callbacks per member
	problems []string
}

func newGroupSink(group string) *groupSink {
	return &groupSink{group: group, owner: map[int32]string{}, assigns: map[string]int{}}
}

func (s *groupSink) record(member string, p int32, value []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, consumedRecord{Member: member, Partition: p, Value: string(value)})
	if o, ok := s.owner[p]; ok && o != member {
		s.problems = append(s.problems, fmt.Sprintf("%s consumed %q from partition %d owned by %s", member, value, p, o))
	}
}

func (s *groupSink) assigned(member string, ps []int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.assigns[member]++
	for _, p := range ps {
		if o, ok := s.owner[p]; ok && o != member {
			s.problems = append(s.problems, fmt.Sprintf("partition %d assigned to %s while %s still owns it", p, member, o))
		}
		s.owner[p] = member
	}
}

func (s *groupSink) released(member string, ps []int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range ps {
		if s.owner[p] == member {
			delete(s.owner, p)
		}
	}
}

func (s *groupSink) assignCount(member string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.assigns[member]
}

func (s *groupSink) snapshot() []consumedRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recs)
}

// waitConsumed polls until every value in want has been consumed at least once.
func (s *groupSink) waitConsumed(t *testing.T, ctx context.Context, what string, want []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, groupWait)
	defer cancel()
	ticker := time.NewTicker(20 * time.Millisecond)
	defer ticker.Stop()
	for {
		seen := map[string]bool{}
		for _, r := range s.snapshot() {
			seen[r.Value] = true
		}
		missing := 0
		for _, v := range want {
			if !seen[v] {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s, %s: %d of %d records never consumed", s.group, what, missing, len(want))
		case <-ticker.C:
		}
	}
}

// checkExactlyOnce verifies that the group consumed exactly the values of want, each once,
// and that the clients' assignment callbacks never showed a partition owned twice.
func (s *groupSink) checkExactlyOnce(t *testing.T, want []string) {
	t.Helper()
	count := map[string]int{}
	for _, r := range s.snapshot() {
		count[r.Value]++
	}
	errs := 0
	for _, v := range want {
		if n := count[v]; n != 1 && errs < 10 {
			t.Errorf("group %s: record %q consumed %d times, want once", s.group, v, n)
			errs++
		}
		delete(count, v)
	}
	for v, n := range count {
		if errs < 10 {
			t.Errorf("group %s: unexpected record %q consumed %d times", s.group, v, n)
			errs++
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range s.problems {
		if i == 10 {
			break
		}
		t.Errorf("group %s: %s", s.group, p)
	}
}

// checkOwners verifies that every record of batch (values with that prefix) was consumed
// by the member the broker assigned its partition to.
func (s *groupSink) checkOwners(t *testing.T, batch string, owners map[int32]string) {
	t.Helper()
	errs := 0
	for _, r := range s.snapshot() {
		if !strings.HasPrefix(r.Value, batch) {
			continue
		}
		if o := owners[r.Partition]; o != r.Member && errs < 10 {
			t.Errorf("group %s: %q of partition %d consumed by %s, but the broker assigned the partition to %s", s.group, r.Value, r.Partition, r.Member, o)
			errs++
		}
	}
}

// produceGroupBatch produces groupPerPartition records to every partition of topic,
// with values "<batch>-p<partition>-n<seq>", and returns the values.
func produceGroupBatch(t *testing.T, ctx context.Context, addr, topic, batch string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	var values []string
	for n := range groupPerPartition {
		for p := range int32(groupPartitions) {
			v := fmt.Sprintf("%s-p%02d-n%03d", batch, p, n)
			values = append(values, v)
			recs = append(recs, &kgo.Record{Partition: p, Key: []byte(v), Value: []byte(v)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing %s: %v", batch, err)
	}
	return values
}

// waitGroupStable polls DescribeGroups until the group is Stable with exactly the given
// members (by client.id) and every partition of topic assigned to exactly one of them.
// It returns partition → client.id.
func waitGroupStable(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string, members []string) map[int32]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, groupWait)
	defer cancel()
	ticker := time.NewTicker(20 * time.Millisecond)
	defer ticker.Stop()
	var last string
	for {
		owners, why := stableOwners(ctx, adm, group, topic, members)
		if why == "" {
			return owners
		}
		last = why
		select {
		case <-ctx.Done():
			t.Fatalf("group %s never became stable with members %v: %s", group, members, last)
		case <-ticker.C:
		}
	}
}

func stableOwners(ctx context.Context, adm *kadm.Client, group, topic string, members []string) (map[int32]string, string) {
	dgs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, err.Error()
	}
	g, ok := dgs[group]
	if !ok || g.Err != nil {
		return nil, fmt.Sprintf("describe: found %v, %v", ok, g.Err)
	}
	if g.State != "Stable" {
		return nil, "state " + g.State
	}
	var ids []string
	owners := map[int32]string{}
	for _, m := range g.Members {
		ids = append(ids, m.ClientID)
		ca, ok := m.Assigned.AsConsumer()
		if !ok {
			return nil, fmt.Sprintf("member %s has no consumer assignment", m.ClientID)
		}
		for _, at := range ca.Topics {
			if at.Topic != topic {
				continue
			}
			for _, p := range at.Partitions {
				if o, dup := owners[p]; dup {
					return nil, fmt.Sprintf("partition %d assigned to %s and %s", p, o, m.ClientID)
				}
				owners[p] = m.ClientID
			}
		}
	}
	slices.Sort(ids)
	want := slices.Sorted(slices.Values(members))
	if !slices.Equal(ids, want) {
		return nil, fmt.Sprintf("members %v", ids)
	}
	if len(owners) != groupPartitions {
		return nil, fmt.Sprintf("%d partitions assigned", len(owners))
	}
	return owners, ""
}

// waitCommitted polls until the group's committed offset of every partition of topic
// equals the partition's end offset, and returns the committed offsets.
func waitCommitted(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, groupWait)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("kadm ListEndOffsets: %v", err)
	}
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	var last string
	for {
		got, why := committedOffsets(ctx, adm, group, topic)
		if why == "" {
			behind := ""
			for p := range int32(groupPartitions) {
				e, _ := ends.Lookup(topic, p)
				if got[p] != e.Offset {
					behind = fmt.Sprintf("partition %d committed %d, end %d", p, got[p], e.Offset)
					break
				}
			}
			if behind == "" {
				return got
			}
			why = behind
		}
		last = why
		select {
		case <-ctx.Done():
			t.Fatalf("group %s: commits never caught up with the end of %s: %s", group, topic, last)
		case <-ticker.C:
		}
	}
}

func committedOffsets(ctx context.Context, adm *kadm.Client, group, topic string) (map[int32]int64, string) {
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err.Error()
	}
	got := map[int32]int64{}
	for p := range int32(groupPartitions) {
		o, ok := offs.Lookup(topic, p)
		if !ok || o.Err != nil {
			return nil, fmt.Sprintf("partition %d: no committed offset (%v)", p, o.Err)
		}
		got[p] = o.At
	}
	return got, ""
}

// groupClient adapts one client library to the group scenario. join starts a member with
// the given client.id in group, consuming topic from the start (or from committed
// offsets) into sink, and returns a function that closes it gracefully (leaving the
// group) and waits until it has stopped.
type groupClient struct {
	name     string
	protocol string // the assignor the broker must pick
	join     func(t *testing.T, ctx context.Context, addr, group, topic, id string, sink *groupSink) (leave func())
}

// runGroupScenario is the queue/pub-sub scenario shared by every client:
//
//  1. groups A and B, three members each, form on a 12-partition topic; batch b1 is
//     produced once both are stable; each group consumes every record exactly once, and
//     every record is consumed by the member the broker assigned its partition to;
//  2. one member of A leaves; A is stable again with two members well within the session
//     timeout; batch b2 goes to the two remaining members of A and to all of B;
//  3. all members close with their offsets committed; the broker is stopped and
//     restarted; committed offsets are unchanged; batch b3 is produced and one new member
//     of A consumes exactly b3, nothing from before its group's commits.
func runGroupScenario(t *testing.T, c groupClient) {
	b := startGroupBroker(t)
	ctx := testContext(t, 150*time.Second)
	_, adm := newAdmin(t, b.Addr)
	topic := "groups-" + c.name
	createTopicKadm(t, ctx, adm, topic, groupPartitions, nil)
	waitTopicReady(t, ctx, adm, topic, groupPartitions)

	groupA, groupB := topic+"-a", topic+"-b"
	sinkA, sinkB := newGroupSink(groupA), newGroupSink(groupB)
	idsA := []string{c.name + "-a0", c.name + "-a1", c.name + "-a2"}
	idsB := []string{c.name + "-b0", c.name + "-b1", c.name + "-b2"}
	leaveA := map[string]func(){}
	var leaveB []func()
	start := time.Now()
	for i := range 3 {
		leaveA[idsA[i]] = c.join(t, ctx, b.Addr, groupA, topic, idsA[i], sinkA)
		leaveB = append(leaveB, c.join(t, ctx, b.Addr, groupB, topic, idsB[i], sinkB))
	}
	ownersA := waitGroupStable(t, ctx, adm, groupA, topic, idsA)
	t.Logf("%s: 3 members of %s stable with all %d partitions assigned %v after start (group.initial.rebalance.delay.ms=%s included)",
		c.name, groupA, groupPartitions, time.Since(start).Round(time.Millisecond), groupInitialDelay)
	ownersB := waitGroupStable(t, ctx, adm, groupB, topic, idsB)
	if dgs, err := adm.DescribeGroups(ctx, groupA); err != nil || dgs[groupA].Protocol != c.protocol {
		t.Errorf("%s: group protocol %q (%v), want %q", groupA, dgs[groupA].Protocol, err, c.protocol)
	}

	b1 := produceGroupBatch(t, ctx, b.Addr, topic, "b1")
	sinkA.waitConsumed(t, ctx, "b1", b1)
	sinkB.waitConsumed(t, ctx, "b1", b1)
	sinkA.checkOwners(t, "b1", ownersA)
	sinkB.checkOwners(t, "b1", ownersB)
	waitCommitted(t, ctx, adm, groupA, topic)
	waitCommitted(t, ctx, adm, groupB, topic)

	// One member of A leaves: its partitions must move to the other two.
	leaving := idsA[0]
	leftAt := time.Now()
	leaveA[leaving]()
	delete(leaveA, leaving)
	ownersA2 := waitGroupStable(t, ctx, adm, groupA, topic, idsA[1:])
	moved := time.Since(leftAt)
	t.Logf("%s: after %s left, %s stable with 2 members in %v (session timeout %v)", c.name, leaving, groupA, moved.Round(time.Millisecond), groupSession)
	if moved >= groupSession {
		t.Errorf("%s: partitions of %s moved after %v, not within the session timeout %v", c.name, leaving, moved, groupSession)
	}
	b2 := produceGroupBatch(t, ctx, b.Addr, topic, "b2")
	sinkA.waitConsumed(t, ctx, "b2", b2)
	sinkB.waitConsumed(t, ctx, "b2", b2)
	sinkA.checkOwners(t, "b2", ownersA2)
	waitCommitted(t, ctx, adm, groupA, topic)
	waitCommitted(t, ctx, adm, groupB, topic)

	for _, id := range idsA[1:] {
		leaveA[id]()
	}
	for _, leave := range leaveB {
		leave()
	}
	before, why := committedOffsets(ctx, adm, groupA, topic)
	if why != "" {
		t.Fatalf("committed offsets of %s before restart: %s", groupA, why)
	}
	b.Stop(t)
	b.Restart(t)
	_, adm = newAdmin(t, b.Addr)
	after := waitCommitted(t, ctx, adm, groupA, topic)
	if !maps.Equal(before, after) {
		t.Errorf("committed offsets of %s changed across the restart: %v, then %v", groupA, before, after)
	}
	if n := before[0]; n != 2*groupPerPartition {
		t.Errorf("committed offset of %s/0 is %d, want %d", groupA, n, 2*groupPerPartition)
	}

	b3 := produceGroupBatch(t, ctx, b.Addr, topic, "b3")
	restarted := c.name + "-a-restarted"
	leave := c.join(t, ctx, b.Addr, groupA, topic, restarted, sinkA)
	sinkA.waitConsumed(t, ctx, "b3 after restart", b3)
	leave()
	for _, r := range sinkA.snapshot() {
		if strings.HasPrefix(r.Value, "b3") && r.Member != restarted {
			t.Errorf("%q consumed by %s, want %s", r.Value, r.Member, restarted)
		}
	}
	sinkA.checkExactlyOnce(t, slices.Concat(b1, b2, b3))
	sinkB.checkExactlyOnce(t, slices.Concat(b1, b2))
}

// kgoGroupOpts are the group options of a franz-go member feeding sink.
func kgoGroupOpts(addr, group, topic, id string, sink *groupSink) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(addr), kgo.ClientID(id), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(groupSession), kgo.HeartbeatInterval(groupHeartbeat), kgo.RebalanceTimeout(groupRebalanceTO),
		kgo.AutoCommitInterval(100 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { sink.assigned(id, m[topic]) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			// A custom revoke callback replaces kgo's default commit-on-revoke.
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && !errors.Is(err, context.Canceled) {
				sink.mu.Lock()
				sink.problems = append(sink.problems, fmt.Sprintf("%s: commit on revoke: %v", id, err))
				sink.mu.Unlock()
			}
			sink.released(id, m[topic])
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { sink.released(id, m[topic]) }),
	}
}

// startKgoMember runs a poll loop for cl into sink and returns a function that closes
// the client and waits for the loop.
func startKgoMember(t *testing.T, ctx context.Context, cl *kgo.Client, id string, sink *groupSink) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() || ctx.Err() != nil {
				return
			}
			fs.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.Canceled) {
					t.Logf("%s: fetch error %s/%d: %v", id, topic, p, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) { sink.record(id, r.Partition, r.Value) })
		}
	}()
	var once sync.Once
	leave := func() {
		once.Do(func() {
			cl.Close()
			<-done
		})
	}
	t.Cleanup(leave)
	return leave
}

func kgoGroupClient(name string, balancer kgo.GroupBalancer) groupClient {
	return groupClient{name: name, protocol: balancer.ProtocolName(), join: func(t *testing.T, ctx context.Context, addr, group, topic, id string, sink *groupSink) func() {
		cl, err := kgo.NewClient(append(kgoGroupOpts(addr, group, topic, id, sink), kgo.Balancers(balancer))...)
		if err != nil {
			t.Fatalf("kgo.NewClient: %v", err)
		}
		return startKgoMember(t, ctx, cl, id, sink)
	}}
}

// TestGroupFranzGo runs the group scenario with franz-go and the eager range balancer.
func TestGroupFranzGo(t *testing.T) {
	t.Parallel()
	runGroupScenario(t, kgoGroupClient("franzgo", kgo.RangeBalancer()))
}

// TestGroupFranzGoCooperative runs the group scenario with franz-go's cooperative-sticky
// balancer (incremental rebalances: a member keeps its partitions while others move).
func TestGroupFranzGoCooperative(t *testing.T) {
	t.Parallel()
	runGroupScenario(t, kgoGroupClient("franzgo-coop", kgo.CooperativeStickyBalancer()))
}

// saramaGroupHandler feeds one sarama member's claims and records into a sink.
type saramaGroupHandler struct {
	id   string
	sink *groupSink
}

func (h saramaGroupHandler) Setup(s sarama.ConsumerGroupSession) error {
	for _, ps := range s.Claims() {
		h.sink.assigned(h.id, ps)
	}
	return nil
}

func (h saramaGroupHandler) Cleanup(s sarama.ConsumerGroupSession) error {
	for _, ps := range s.Claims() {
		h.sink.released(h.id, ps)
	}
	return nil
}

func (h saramaGroupHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.sink.record(h.id, m.Partition, m.Value)
		s.MarkMessage(m, "")
	}
	return nil
}

var saramaGroupClient = groupClient{name: "sarama", protocol: "range", join: func(t *testing.T, ctx context.Context, addr, group, topic, id string, sink *groupSink) func() {
	cfg := saramaConfig()
	cfg.ClientID = id
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = groupSession
	cfg.Consumer.Group.Heartbeat.Interval = groupHeartbeat
	cfg.Consumer.Group.Rebalance.Timeout = groupRebalanceTO
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	g, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatalf("sarama.NewConsumerGroup: %v", err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		for err := range g.Errors() {
			t.Logf("%s: group error: %v", id, err)
		}
	}()
	go func() {
		defer close(done)
		for mctx.Err() == nil {
			if err := g.Consume(mctx, []string{topic}, saramaGroupHandler{id: id, sink: sink}); err != nil {
				t.Logf("%s: Consume: %v", id, err)
				select { // back off before rejoining
				case <-mctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	var once sync.Once
	leave := func() {
		once.Do(func() {
			cancel()
			<-done
			if err := g.Close(); err != nil {
				t.Errorf("%s: Close: %v", id, err)
			}
		})
	}
	t.Cleanup(leave)
	return leave
}}

// TestGroupSarama runs the group scenario with IBM/sarama's ConsumerGroup (range).
func TestGroupSarama(t *testing.T) {
	t.Parallel()
	runGroupScenario(t, saramaGroupClient)
}

func confluentPartitions(tps []kafka.TopicPartition) []int32 {
	var ps []int32
	for _, tp := range tps {
		ps = append(ps, tp.Partition)
	}
	return ps
}

var confluentGroupClient = groupClient{name: "confluent", protocol: "range", join: func(t *testing.T, ctx context.Context, addr, group, topic, id string, sink *groupSink) func() {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":             addr,
		"client.id":                     id,
		"group.id":                      group,
		"auto.offset.reset":             "earliest",
		"enable.auto.commit":            true,
		"auto.commit.interval.ms":       100,
		"session.timeout.ms":            int(groupSession.Milliseconds()),
		"heartbeat.interval.ms":         int(groupHeartbeat.Milliseconds()),
		"max.poll.interval.ms":          int(groupRebalanceTO.Milliseconds()),
		"partition.assignment.strategy": "range",
	})
	if err != nil {
		t.Fatalf("kafka.NewConsumer: %v", err)
	}
	rebalance := func(c *kafka.Consumer, ev kafka.Event) error {
		switch e := ev.(type) {
		case kafka.AssignedPartitions:
			sink.assigned(id, confluentPartitions(e.Partitions))
			return c.Assign(e.Partitions)
		case kafka.RevokedPartitions:
			sink.released(id, confluentPartitions(e.Partitions))
			return c.Unassign()
		}
		return nil
	}
	if err := c.SubscribeTopics([]string{topic}, rebalance); err != nil {
		t.Fatalf("%s: SubscribeTopics: %v", id, err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				if err := c.Close(); err != nil {
					t.Errorf("%s: Close: %v", id, err)
				}
				return
			default:
			}
			switch e := c.Poll(50).(type) {
			case *kafka.Message:
				sink.record(id, e.TopicPartition.Partition, e.Value)
			case kafka.Error:
				t.Logf("%s: %v", id, e)
			}
		}
	}()
	var once sync.Once
	leave := func() {
		once.Do(func() {
			close(stop)
			<-done
		})
	}
	t.Cleanup(leave)
	return leave
}}

// TestGroupConfluent runs the group scenario with confluent-kafka-go (librdkafka)
// subscribed with the classic protocol and the range assignor.
func TestGroupConfluent(t *testing.T) {
	t.Parallel()
	runGroupScenario(t, confluentGroupClient)
}

// kafkaGoGroupClient uses kafka-go's Reader with a GroupID. The Reader reports neither
// its member id nor its assignment, so only the broker's view (DescribeGroups) and the
// records tell which member owns which partition.
var kafkaGoGroupClient = groupClient{name: "kafkago", protocol: "range", join: func(t *testing.T, ctx context.Context, addr, group, topic, id string, sink *groupSink) func() {
	r := segkafka.NewReader(segkafka.ReaderConfig{
		Brokers:           []string{addr},
		GroupID:           group,
		Topic:             topic,
		Dialer:            &segkafka.Dialer{ClientID: id, Timeout: 10 * time.Second},
		StartOffset:       segkafka.FirstOffset,
		CommitInterval:    100 * time.Millisecond,
		HeartbeatInterval: groupHeartbeat,
		SessionTimeout:    groupSession,
		RebalanceTimeout:  groupRebalanceTO,
		MaxWait:           250 * time.Millisecond,
		GroupBalancers:    []segkafka.GroupBalancer{segkafka.RangeGroupBalancer{}},
	})
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := r.ReadMessage(mctx)
			if err != nil {
				if mctx.Err() == nil {
					t.Logf("%s: ReadMessage: %v", id, err)
				}
				return
			}
			sink.record(id, int32(m.Partition), m.Value)
		}
	}()
	var once sync.Once
	leave := func() {
		once.Do(func() {
			cancel()
			<-done
			if err := r.Close(); err != nil {
				t.Errorf("%s: Close: %v", id, err)
			}
		})
	}
	t.Cleanup(leave)
	return leave
}}

// TestGroupKafkaGo runs the group scenario with segmentio/kafka-go's Reader.
func TestGroupKafkaGo(t *testing.T) {
	t.Parallel()
	runGroupScenario(t, kafkaGoGroupClient)
}

// TestGroupFranzGoStaticMembership restarts a static member (group.instance.id) of a
// two-member franz-go group: the replacement takes over the same partitions without a
// rebalance (same generation, no new assignment for the other member), and resumes
// from the committed offsets.
func TestGroupFranzGoStaticMembership(t *testing.T) {
	t.Parallel()
	b := startGroupBroker(t)
	ctx := testContext(t, 90*time.Second)
	_, adm := newAdmin(t, b.Addr)
	const topic, group = "groups-static", "groups-static-g"
	createTopicKadm(t, ctx, adm, topic, groupPartitions, nil)
	waitTopicReady(t, ctx, adm, topic, groupPartitions)
	sink := newGroupSink(group)
	join := func(id, instance string) (*kgo.Client, func()) {
		opts := append(kgoGroupOpts(b.Addr, group, topic, id, sink), kgo.Balancers(kgo.RangeBalancer()), kgo.InstanceID(instance))
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatalf("kgo.NewClient: %v", err)
		}
		return cl, startKgoMember(t, ctx, cl, id, sink)
	}
	stayer, _ := join("static-1", "instance-1")
	_, leave2 := join("static-2", "instance-2")
	owners := waitGroupStable(t, ctx, adm, group, topic, []string{"static-1", "static-2"})

	b1 := produceGroupBatch(t, ctx, b.Addr, topic, "b1")
	sink.waitConsumed(t, ctx, "b1", b1)
	sink.checkOwners(t, "b1", owners)
	waitCommitted(t, ctx, adm, group, topic)
	// The group is Stable on the broker once the leader's SyncGroup is answered, but
	// the stayer may not have run its assignment callback yet: read its generation and
	// assignment count only after it has consumed its share of b1.
	_, gen := stayer.GroupMetadata()
	assigns := sink.assignCount("static-1")

	leave2() // a static member's Close does not send LeaveGroup
	restartedAt := time.Now()
	_, leave3 := join("static-2-restarted", "instance-2")
	defer leave3()
	owners2 := waitGroupStable(t, ctx, adm, group, topic, []string{"static-1", "static-2-restarted"})
	t.Logf("static member replaced in %v", time.Since(restartedAt).Round(time.Millisecond))
	for p, o := range owners {
		if want := strings.Replace(o, "static-2", "static-2-restarted", 1); owners2[p] != want {
			t.Errorf("partition %d went from %s to %s, want %s", p, o, owners2[p], want)
		}
	}
	if _, gen2 := stayer.GroupMetadata(); gen2 != gen {
		t.Errorf("static restart rebalanced the group: generation %d, then %d", gen, gen2)
	}
	if n := sink.assignCount("static-1"); n != assigns {
		t.Errorf("the other member got %d new assignments during a static restart, want none", n-assigns)
	}

	b2 := produceGroupBatch(t, ctx, b.Addr, topic, "b2")
	sink.waitConsumed(t, ctx, "b2", b2)
	sink.checkOwners(t, "b2", owners2)
	sink.checkExactlyOnce(t, slices.Concat(b1, b2))
}

// TestGroupAdminKadm exercises the kafka-consumer-groups-style admin calls with kadm:
// ListGroups (with a state filter), DescribeGroups, DeleteGroups and DeleteOffsets,
// including the refusals Kafka gives for groups that still have members.
func TestGroupAdminKadm(t *testing.T) {
	t.Parallel()
	b := startGroupBroker(t)
	ctx := testContext(t, 90*time.Second)
	_, adm := newAdmin(t, b.Addr)
	const topic, group = "groups-admin", "groups-admin-g"
	createTopicKadm(t, ctx, adm, topic, groupPartitions, nil)
	waitTopicReady(t, ctx, adm, topic, groupPartitions)
	sink := newGroupSink(group)
	c := kgoGroupClient("admin", kgo.RangeBalancer())
	ids := []string{"admin-0", "admin-1"}
	var leaves []func()
	for _, id := range ids {
		leaves = append(leaves, c.join(t, ctx, b.Addr, group, topic, id, sink))
	}
	waitGroupStable(t, ctx, adm, group, topic, ids)
	recs := produceGroupBatch(t, ctx, b.Addr, topic, "b1")
	sink.waitConsumed(t, ctx, "b1", recs)
	waitCommitted(t, ctx, adm, group, topic)

	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("kadm ListGroups: %v", err)
	}
	if lg, ok := listed[group]; !ok || lg.State != "Stable" || lg.ProtocolType != "consumer" {
		t.Errorf("ListGroups: %s = %+v (found %v), want Stable consumer group", group, lg, ok)
	}
	dgs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("kadm DescribeGroups: %v", err)
	}
	if g := dgs[group]; g.Err != nil || g.State != "Stable" || g.ProtocolType != "consumer" || g.Protocol != "range" || len(g.Members) != 2 {
		t.Errorf("DescribeGroups: %+v, want Stable consumer/range with 2 members", g)
	} else {
		for _, m := range g.Members {
			if m.MemberID == "" || m.ClientHost == "" || !slices.Contains(ids, m.ClientID) {
				t.Errorf("DescribeGroups member %+v", m)
			}
			if meta, ok := m.Join.AsConsumer(); !ok || !slices.Equal(meta.Topics, []string{topic}) {
				t.Errorf("DescribeGroups member %s subscription %+v (%v), want [%s]", m.ClientID, meta, ok, topic)
			}
		}
	}

	// Kafka refuses both deletions while the group has members.
	dr, err := adm.DeleteGroups(ctx, group)
	if err != nil {
		t.Fatalf("kadm DeleteGroups: %v", err)
	}
	if r := dr[group]; !errors.Is(r.Err, kerr.NonEmptyGroup) {
		t.Errorf("DeleteGroups of a group with members: %v, want NON_EMPTY_GROUP", r.Err)
	}
	del := kadm.TopicsSet{}
	del.Add(topic, 0, 1, 2)
	or, err := adm.DeleteOffsets(ctx, group, del)
	if err != nil {
		t.Fatalf("kadm DeleteOffsets: %v", err)
	}
	if e, ok := or.Lookup(topic, 0); !ok || !errors.Is(e, kerr.GroupSubscribedToTopic) {
		t.Errorf("DeleteOffsets on a subscribed topic: %v (found %v), want GROUP_SUBSCRIBED_TO_TOPIC", e, ok)
	}

	for _, leave := range leaves {
		leave()
	}
	empty, err := adm.ListGroups(ctx, "Empty")
	if err != nil {
		t.Fatalf("kadm ListGroups(Empty): %v", err)
	}
	if _, ok := empty[group]; !ok {
		t.Errorf("ListGroups(Empty) after all members left: %v, want %s", empty.Groups(), group)
	}
	stable, err := adm.ListGroups(ctx, "Stable")
	if err != nil {
		t.Fatalf("kadm ListGroups(Stable): %v", err)
	}
	if _, ok := stable[group]; ok {
		t.Errorf("ListGroups(Stable) still lists %s after all members left", group)
	}

	or, err = adm.DeleteOffsets(ctx, group, del)
	if err != nil {
		t.Fatalf("kadm DeleteOffsets: %v", err)
	}
	for _, p := range []int32{0, 1, 2} {
		if e, ok := or.Lookup(topic, p); !ok || e != nil {
			t.Errorf("DeleteOffsets %s/%d on an empty group: %v (found %v)", topic, p, e, ok)
		}
	}
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("kadm FetchOffsets: %v", err)
	}
	for p := range int32(groupPartitions) {
		o, ok := offs.Lookup(topic, p)
		deleted := p <= 2
		switch {
		case deleted && ok && o.At >= 0:
			t.Errorf("offset of %s/%d still committed at %d after DeleteOffsets", topic, p, o.At)
		case !deleted && (!ok || o.At != groupPerPartition):
			t.Errorf("offset of %s/%d = %+v (found %v) after deleting others, want %d", topic, p, o, ok, groupPerPartition)
		}
	}

	dr, err = adm.DeleteGroups(ctx, group, "groups-admin-never-existed")
	if err != nil {
		t.Fatalf("kadm DeleteGroups: %v", err)
	}
	if r := dr[group]; r.Err != nil {
		t.Errorf("DeleteGroups of an empty group: %v", r.Err)
	}
	if r := dr["groups-admin-never-existed"]; !errors.Is(r.Err, kerr.GroupIDNotFound) {
		t.Errorf("DeleteGroups of an unknown group: %v, want GROUP_ID_NOT_FOUND", r.Err)
	}
	listed, err = adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("kadm ListGroups: %v", err)
	}
	if _, ok := listed[group]; ok {
		t.Errorf("ListGroups still lists %s after DeleteGroups", group)
	}
	offs, err = adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("kadm FetchOffsets after DeleteGroups: %v", err)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.At >= 0 {
			t.Errorf("offset %s/%d = %d survived DeleteGroups", o.Topic, o.Partition, o.At)
		}
	})
}

// TestGroupFranzGoCrashedMember stands a member crash in for franz-go: a static member
// (group.instance.id) that closes sends no LeaveGroup, exactly as a crashed process, so
// its partitions stay assigned until the broker expires its session; then they must move
// to the other two members, and the records produced meanwhile reach them once.
func TestGroupFranzGoCrashedMember(t *testing.T) {
	t.Parallel()
	b := startGroupBroker(t)
	ctx := testContext(t, 90*time.Second)
	_, adm := newAdmin(t, b.Addr)
	const topic, group = "groups-crash", "groups-crash-g"
	const session = 6 * time.Second // group.min.session.timeout.ms
	createTopicKadm(t, ctx, adm, topic, groupPartitions, nil)
	waitTopicReady(t, ctx, adm, topic, groupPartitions)
	sink := newGroupSink(group)
	join := func(id string, extra ...kgo.Opt) func() {
		opts := append(kgoGroupOpts(b.Addr, group, topic, id, sink), kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(session))
		cl, err := kgo.NewClient(append(opts, extra...)...)
		if err != nil {
			t.Fatalf("kgo.NewClient: %v", err)
		}
		return startKgoMember(t, ctx, cl, id, sink)
	}
	crash := join("crash-0", kgo.InstanceID("crash-instance"))
	join("crash-1")
	join("crash-2")
	ids := []string{"crash-0", "crash-1", "crash-2"}
	owners := waitGroupStable(t, ctx, adm, group, topic, ids)
	b1 := produceGroupBatch(t, ctx, b.Addr, topic, "b1")
	sink.waitConsumed(t, ctx, "b1", b1)
	sink.checkOwners(t, "b1", owners)
	waitCommitted(t, ctx, adm, group, topic)

	crashedAt := time.Now()
	crash()
	var orphaned []int32
	for p, o := range owners {
		if o == "crash-0" {
			orphaned = append(orphaned, p)
		}
	}
	sink.released("crash-0", orphaned) // a dead process owns nothing
	b2 := produceGroupBatch(t, ctx, b.Addr, topic, "b2")
	owners2 := waitGroupStable(t, ctx, adm, group, topic, ids[1:])
	moved := time.Since(crashedAt)
	t.Logf("partitions of the crashed member moved after %v (session timeout %v)", moved.Round(time.Millisecond), session)
	if moved < session-time.Second || moved > session+3*time.Second {
		t.Errorf("partitions of the crashed member moved after %v, want about the session timeout %v", moved, session)
	}
	sink.waitConsumed(t, ctx, "b2", b2)
	// b2 went out before the rebalance: the survivors may have read some of it from their
	// old partitions, but the crashed member's partitions only from their new owner.
	for _, r := range sink.snapshot() {
		if !strings.HasPrefix(r.Value, "b2") {
			continue
		}
		if slices.Contains(orphaned, r.Partition) && r.Member != owners2[r.Partition] {
			t.Errorf("%q of the crashed member's partition %d consumed by %s, want its new owner %s", r.Value, r.Partition, r.Member, owners2[r.Partition])
		}
		if r.Member != owners[r.Partition] && r.Member != owners2[r.Partition] {
			t.Errorf("%q of partition %d consumed by %s, which never owned it", r.Value, r.Partition, r.Member)
		}
	}
	sink.checkExactlyOnce(t, slices.Concat(b1, b2))
}
