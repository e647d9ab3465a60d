package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/txn"
)

// coordinatorAnswerBound is how long the coordinator of a group or a
// transactional id may stay unanswering after its node stops. A healthy
// failover takes a few seconds (election timeout 500 ms, session timeout
// 2 s); the bound is generous for a loaded CI machine, and far below the
// "until some later image" of the reconciler bug fixed in stop 27.
const coordinatorAnswerBound = 45 * time.Second

// failoverCluster is a three-node cluster, the active controller's index,
// the topic the test writes (partitions, replication factor 3) and the
// seeds of all three nodes.
type failoverCluster struct {
	*testCluster
	active int
	topic  string
	ctx    context.Context
}

func startFailoverCluster(t *testing.T, topic string, partitions int32) *failoverCluster {
	t.Helper()
	c := startTestCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	f := &failoverCluster{testCluster: c, active: c.activeController(30 * time.Second), topic: topic, ctx: ctx}
	adm := newClusterAdmin(t, c.addr(0), c.addr(1), c.addr(2))
	var res error
	if !poll(60*time.Second, func() bool {
		r, err := adm.CreateTopic(ctx, partitions, 3, nil, topic)
		res = err
		if err == nil {
			res = r.Err
		}
		return res == nil || strings.Contains(res.Error(), "TOPIC_ALREADY_EXISTS")
	}) {
		t.Fatalf("CreateTopic: %v", res)
	}
	return f
}

// keyLedByController waits until the internal topic is created with
// replication factor 3, every partition led and fully in sync, then
// returns the first key "<prefix>-<n>" whose partition (partitionFor) the
// active controller's node leads: the ordering that exposed the reconciler
// bug (the node that stops is both the coordinator and the controller).
func (f *failoverCluster) keyLedByController(t *testing.T, topic, prefix string, partitionFor func(string) int32) (string, int32) {
	t.Helper()
	f.active = f.activeController(30 * time.Second)
	img := func() map[int32]int32 { // partition -> leader, once all are healthy
		tp := f.nodes[f.active].ctrl.Image().Topics[topic]
		if tp == nil {
			return nil
		}
		leaders := map[int32]int32{}
		for _, p := range tp.Partitions {
			if len(p.Replicas) != 3 || len(p.ISR) != 3 || p.Leader < 1 {
				return nil
			}
			leaders[p.Partition] = p.Leader
		}
		return leaders
	}
	var leaders map[int32]int32
	if !poll(60*time.Second, func() bool { leaders = img(); return leaders != nil }) {
		t.Fatalf("%s never had every partition led with 3 in-sync replicas: %+v", topic, f.nodes[f.active].ctrl.Image().Topics[topic])
	}
	for i := range 10000 {
		key := fmt.Sprintf("%s-%d", prefix, i)
		if p := partitionFor(key); leaders[p] == int32(f.active+1) {
			return key, p
		}
	}
	t.Fatalf("no key of %s's partitions led by node %d: %v", topic, f.active+1, leaders)
	return "", 0
}

// stopCoordinatorController stops the node that leads partition p of
// topic (the coordinator of the test's group or transactional id) once it
// is also the active controller, and returns when the stop began and the
// index of the stopped node. The leadership keyLedByController chose may
// have moved on a loaded machine (an election, a fenced broker): the
// active controller role is then handed to p's leader (Raft leadership
// transfer) first. coordinator answers FindCoordinator's node for the key;
// it must name the stopped node. The stop is a clean shutdown: the node's
// controlled shutdown moves its leaderships before it closes.
func (f *failoverCluster) stopCoordinatorController(t *testing.T, topic string, p int32, coordinator func() (int32, error)) (time.Time, int) {
	t.Helper()
	target := -1
	var why string
	if !poll(60*time.Second, func() bool {
		active := -1
		for i, n := range f.nodes {
			if n != nil && n.quorum.Leading() {
				active = i
			}
		}
		if active < 0 {
			why = "no active controller"
			return false
		}
		l := f.nodes[active].ctrl.Image().Topics[topic].Partitions[p].Leader
		if l < 1 || int(l) > len(f.nodes) || f.nodes[l-1] == nil {
			why = fmt.Sprintf("%s-%d led by %d", topic, p, l)
			return false
		}
		target = int(l - 1)
		if target != active {
			why = fmt.Sprintf("node %d is the active controller, node %d leads %s-%d", active+1, target+1, topic, p)
			r := f.nodes[active].quorum.Raft()
			if cf := r.GetConfiguration(); cf.Error() == nil {
				for _, srv := range cf.Configuration().Servers {
					if srv.ID == raft.ServerID(fmt.Sprint(l)) {
						_ = r.LeadershipTransferToServer(srv.ID, srv.Address).Error() // checked by the next round
					}
				}
			}
			return false
		}
		c, err := coordinator()
		if err != nil || c != l {
			why = fmt.Sprintf("FindCoordinator answered node %d (%v), %s-%d is led by %d", c, err, topic, p, l)
			return false
		}
		return true
	}) {
		t.Fatalf("the coordinator's node never was the active controller: %s", why)
	}
	if target != f.active {
		t.Logf("the active controller role moved to node %d, the leader of %s-%d", target+1, topic, p)
	}
	t.Logf("stopping node %d: the active controller and the leader of %s-%d", target+1, topic, p)
	start := time.Now()
	f.stop(target)
	t.Logf("node %d stopped in %v", target+1, time.Since(start).Round(time.Millisecond))
	return start, target
}

// survivors returns the addresses of the running nodes.
func (f *failoverCluster) survivors() []string {
	var addrs []string
	for i, n := range f.nodes {
		if n != nil {
			addrs = append(addrs, f.addr(i))
		}
	}
	return addrs
}

// produceValues produces n records "<prefix>-<i>" (round robin over the
// partitions) and waits for them.
func (f *failoverCluster) produceValues(t *testing.T, prefix string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.survivors()...), kgo.DefaultProduceTopic(f.topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
	}
	if err := cl.ProduceSync(f.ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("producing %s: %v", prefix, err)
	}
}

// pollValues polls cl until it has n records and returns their values;
// more than n is an error.
func pollValues(t *testing.T, ctx context.Context, cl *kgo.Client, n int, deadline time.Duration) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records in %v: %v", len(got), n, deadline, got)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != n {
		t.Fatalf("consumed %d records, want %d: %v", len(got), n, got)
	}
	return got
}

// wantValues checks that got holds each of "<prefix>-0".."<prefix>-<n-1>"
// once.
func wantValues(t *testing.T, got []string, prefix string, n int) {
	t.Helper()
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for i := range n {
		if v := fmt.Sprintf("%s-%d", prefix, i); seen[v] != 1 {
			t.Fatalf("record %s consumed %d times; got %v", v, seen[v], got)
		}
	}
}

// awaitCommitted polls the group's committed offsets through the surviving
// nodes until they answer, failing unless that happens within
// coordinatorAnswerBound of since and the offsets equal want.
func (f *failoverCluster) awaitCommitted(t *testing.T, group string, want map[int32]int64, since time.Time) {
	t.Helper()
	adm := newClusterAdmin(t, f.survivors()...)
	var last error
	var got kadm.OffsetResponses
	if !poll(time.Until(since.Add(coordinatorAnswerBound)), func() bool {
		ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
		defer cancel()
		got, last = adm.FetchOffsets(ctx, group)
		if last == nil {
			last = got.Error()
		}
		return last == nil
	}) {
		t.Fatalf("the group coordinator did not answer within %v of the stop: %v", coordinatorAnswerBound, last)
	}
	t.Logf("the group coordinator answered %v after the stop", time.Since(since).Round(time.Millisecond))
	for p, off := range want {
		o, ok := got.Lookup(f.topic, p)
		if !ok || o.Err != nil || o.At != off {
			t.Fatalf("committed offset of %s-%d after the failover = %+v (found %v), want %d", f.topic, p, o, ok, off)
		}
	}
	if n := len(got[f.topic]); n != len(want) {
		t.Fatalf("%d committed offsets after the failover, want %d: %+v", n, len(want), got)
	}
}

// groupFailover is TestConsumerGroupCoordinatorFailover, with a KIP-848
// consumer group if kip848.
func groupFailover(t *testing.T, kip848 bool) {
	var opts []kgo.Opt
	if kip848 {
		opts = []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer())}
	}
	const perRound = 30
	f := startFailoverCluster(t, "gf", 3)
	group, p := f.keyLedByController(t, coordinator.OffsetsTopic, "group",
		func(g string) int32 { return coordinator.PartitionFor(g, 6) })
	f.produceValues(t, "before", perRound)

	consumer := func() *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(f.survivors()...), kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(f.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
			kgo.FetchMaxWait(500 * time.Millisecond)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	cl := consumer()
	defer func() { cl.Close() }()
	wantValues(t, pollValues(t, f.ctx, cl, perRound, 60*time.Second), "before", perRound)
	if err := cl.CommitUncommittedOffsets(f.ctx); err != nil {
		t.Fatalf("commit before the stop: %v", err)
	}
	committed := map[int32]int64{}
	for tp, o := range cl.CommittedOffsets()[f.topic] {
		committed[tp] = o.Offset
	}
	if len(committed) != 3 {
		t.Fatalf("committed %+v, want the 3 partitions", committed)
	}
	adm := newClusterAdmin(t, f.survivors()...)
	if kip848 {
		// The group is a KIP-848 consumer group (ConsumerGroupDescribe
		// answers GROUP_ID_NOT_FOUND for a classic one).
		d, err := adm.DescribeConsumerGroups(f.ctx, group)
		if err != nil || d.Error() != nil || len(d[group].Members) != 1 {
			t.Fatalf("ConsumerGroupDescribe %s: %+v %v", group, d, err)
		}
	}
	stopped, _ := f.stopCoordinatorController(t, coordinator.OffsetsTopic, p, func() (int32, error) {
		ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
		defer cancel()
		r := adm.FindGroupCoordinators(ctx, group)
		return r[group].NodeID, r.Error()
	})
	f.awaitCommitted(t, group, committed, stopped)

	// The member carries on with the new coordinator: it reads what is
	// produced now and commits it.
	f.produceValues(t, "after", perRound)
	wantValues(t, pollValues(t, f.ctx, cl, perRound, 60*time.Second), "after", perRound)
	if err := cl.CommitUncommittedOffsets(f.ctx); err != nil {
		t.Fatalf("commit after the stop: %v", err)
	}
	for tp, o := range cl.CommittedOffsets()[f.topic] {
		committed[tp] = o.Offset
	}
	f.awaitCommitted(t, group, committed, time.Now())

	// A new member starts at the committed offsets: the third round only.
	cl.Close()
	f.produceValues(t, "third", perRound)
	cl = consumer()
	wantValues(t, pollValues(t, f.ctx, cl, perRound, 60*time.Second), "third", perRound)
}

// TestConsumerGroupCoordinatorFailover: a classic consumer group (franz-go)
// whose coordinator's node is also the active controller. That node stops;
// the group's committed offsets are answered by the new coordinator within
// coordinatorAnswerBound and none is lost, the member carries on and
// commits there, and a new member starts where the group committed.
func TestConsumerGroupCoordinatorFailover(t *testing.T) {
	groupFailover(t, false)
}

// TestConsumerGroupCoordinatorFailoverKIP848 is
// TestConsumerGroupCoordinatorFailover with a KIP-848 consumer group
// (the server assigns, range assignor).
func TestConsumerGroupCoordinatorFailoverKIP848(t *testing.T) {
	groupFailover(t, true)
}

// TestTransactionCoordinatorFailover: a transactional producer (franz-go)
// whose transaction coordinator's node is also the active controller
// commits a transaction; that node stops. The new coordinator describes
// the transactional id within coordinatorAnswerBound with the producer's
// id and epoch and the transaction complete, the same producer commits a
// second transaction and aborts a third through it, and a read_committed
// consumer reads the two committed transactions' records once each and
// none of the aborted one's.
func TestTransactionCoordinatorFailover(t *testing.T) {
	const perTxn = 20
	f := startFailoverCluster(t, "tf", 3)
	txnID, p := f.keyLedByController(t, txn.TransactionStateTopic, "txn",
		func(id string) int32 { return coordinator.PartitionFor(id, 3) })

	prod, err := kgo.NewClient(kgo.SeedBrokers(f.survivors()...), kgo.TransactionalID(txnID),
		kgo.DefaultProduceTopic(f.topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.TransactionTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	transaction := func(prefix string, commit kgo.TransactionEndTry) {
		t.Helper()
		if err := prod.BeginTransaction(); err != nil {
			t.Fatalf("%s: BeginTransaction: %v", prefix, err)
		}
		var rs []*kgo.Record
		for i := range perTxn {
			rs = append(rs, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
		}
		if err := prod.ProduceSync(f.ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", prefix, err)
		}
		if err := prod.EndTransaction(f.ctx, commit); err != nil {
			t.Fatalf("%s: EndTransaction(%v): %v", prefix, commit, err)
		}
	}
	transaction("before", kgo.TryCommit)
	pid, epoch, err := prod.ProducerID(f.ctx)
	if err != nil {
		t.Fatalf("ProducerID: %v", err)
	}
	adm := newClusterAdmin(t, f.survivors()...)
	stopped, _ := f.stopCoordinatorController(t, txn.TransactionStateTopic, p, func() (int32, error) {
		ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
		defer cancel()
		r := adm.FindTxnCoordinators(ctx, txnID)
		return r[txnID].NodeID, r.Error()
	})
	adm = newClusterAdmin(t, f.survivors()...)
	var last error
	var d kadm.DescribedTransaction
	if !poll(time.Until(stopped.Add(coordinatorAnswerBound)), func() bool {
		ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
		defer cancel()
		ds, err := adm.DescribeTransactions(ctx, txnID)
		if last = err; err == nil {
			if d, last = ds.On(txnID, nil); last == nil {
				last = d.Err
			}
		}
		return last == nil
	}) {
		t.Fatalf("the transaction coordinator did not answer within %v of the stop: %v", coordinatorAnswerBound, last)
	}
	t.Logf("the transaction coordinator answered %v after the stop", time.Since(stopped).Round(time.Millisecond))
	if d.ProducerID != pid || d.ProducerEpoch != epoch || d.State != "CompleteCommit" {
		t.Fatalf("after the failover %s is %+v, want producer %d epoch %d in CompleteCommit", txnID, d, pid, epoch)
	}

	transaction("after", kgo.TryCommit)
	transaction("aborted", kgo.TryAbort)
	if p2, e2, err := prod.ProducerID(f.ctx); err != nil || p2 != pid {
		t.Fatalf("producer id after the failover %d/%d %v, want %d (not re-initialized)", p2, e2, err, pid)
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(f.survivors()...), kgo.ConsumeTopics(f.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := pollValues(t, f.ctx, cons, 2*perTxn, 60*time.Second)
	// Whatever follows the second commit is aborted: one more poll shows
	// none of it (the last stable offset is past the abort marker once the
	// abort returned).
	ctx, cancel := context.WithTimeout(f.ctx, 2*time.Second)
	defer cancel()
	cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	if len(got) != 2*perTxn {
		t.Fatalf("read_committed read %d records, want %d: %v", len(got), 2*perTxn, got)
	}
	var before, after []string
	for _, v := range got {
		switch {
		case strings.HasPrefix(v, "before-"):
			before = append(before, v)
		case strings.HasPrefix(v, "after-"):
			after = append(after, v)
		default:
			t.Fatalf("read_committed read %q", v)
		}
	}
	wantValues(t, before, "before", perTxn)
	wantValues(t, after, "after", perTxn)
}
