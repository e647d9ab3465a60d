package txn

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator"
)

// replLog is a memLog as a replicated partition's leader sees it
// (replica.CoordinatorLog): AppendUncommitted puts a batch in the log at
// once and the high watermark follows the log end unless the replicas are
// cut off (stuck); Append waits, at most timeout, for the high watermark
// to pass the batch, as CoordinatorLog.Append does. appendErr, if set,
// fails appends with it (the partition refused them). epoch is the
// leader epoch: WaitCommittedInEpoch for another one fails
// NOT_LEADER_OR_FOLLOWER (leadership moved).
type replLog struct {
	*memLog
	timeout time.Duration
	hw      struct {
		sync.Mutex
		offset    int64
		stuck     bool
		appendErr error
		epoch     int32
		changed   chan struct{}
	}
}

func newReplLog(l *memLog) *replLog {
	r := &replLog{memLog: l, timeout: 5 * time.Second}
	r.hw.changed = make(chan struct{})
	return r
}

func (l *replLog) Append(batch []byte) error {
	if _, err := l.AppendUncommitted(batch); err != nil {
		return err
	}
	return l.WaitCommitted(context.Background(), l.LogEndOffset())
}

func (l *replLog) AppendUncommitted(batch []byte) (int64, error) {
	l.hw.Lock()
	err := l.hw.appendErr
	l.hw.Unlock()
	if err != nil {
		return 0, fmt.Errorf("repllog: %w", err)
	}
	if err := l.memLog.Append(batch); err != nil {
		return 0, err
	}
	end := l.LogEndOffset()
	l.wake()
	return end, nil
}

func (l *replLog) AppendUncommittedInEpoch(batch []byte) (int64, int32, error) {
	l.hw.Lock()
	epoch := l.hw.epoch
	l.hw.Unlock()
	end, err := l.AppendUncommitted(batch)
	return end, epoch, err
}

func (l *replLog) WaitCommittedInEpoch(ctx context.Context, epoch int32, offset int64) error {
	return l.waitCommitted(ctx, &epoch, offset)
}

func (l *replLog) HighWatermark() int64 {
	l.hw.Lock()
	defer l.hw.Unlock()
	if !l.hw.stuck {
		l.hw.offset = l.LogEndOffset()
	}
	return l.hw.offset
}

func (l *replLog) WaitCommitted(ctx context.Context, offset int64) error {
	return l.waitCommitted(ctx, nil, offset)
}

// waitCommitted waits for the high watermark to pass offset, in leader
// epoch *epoch unless nil.
func (l *replLog) waitCommitted(ctx context.Context, epoch *int32, offset int64) error {
	timer := time.NewTimer(l.timeout)
	defer timer.Stop()
	for {
		l.hw.Lock()
		changed, current := l.hw.changed, l.hw.epoch
		l.hw.Unlock()
		if epoch != nil && *epoch != current {
			return fmt.Errorf("repllog: %w", kerr.NotLeaderForPartition)
		}
		if l.HighWatermark() >= offset {
			return nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return fmt.Errorf("repllog: %w", kerr.RequestTimedOut)
		case <-ctx.Done():
			return fmt.Errorf("repllog: %w", kerr.RequestTimedOut)
		}
	}
}

func (l *replLog) wake() {
	l.hw.Lock()
	defer l.hw.Unlock()
	close(l.hw.changed)
	l.hw.changed = make(chan struct{})
}

// setStuck cuts the replicas off (the high watermark stays where it is)
// or heals the cut.
func (l *replLog) setStuck(stuck bool) {
	l.HighWatermark()
	l.hw.Lock()
	l.hw.stuck = stuck
	l.hw.Unlock()
	l.wake()
}

// moveStuckHW moves a stuck high watermark: part of the tail replicated.
func (l *replLog) moveStuckHW(offset int64) {
	l.hw.Lock()
	l.hw.offset = offset
	l.hw.Unlock()
	l.wake()
}

// newEpoch moves the leadership to another epoch: writes of the old
// one are no longer committed by this leader.
func (l *replLog) newEpoch() {
	l.hw.Lock()
	l.hw.epoch++
	l.hw.Unlock()
	l.wake()
}

func (l *replLog) setAppendErr(err error) {
	l.hw.Lock()
	l.hw.appendErr = err
	l.hw.Unlock()
}

var (
	_ coordinator.PipelinedLog      = (*replLog)(nil)
	_ coordinator.EpochPipelinedLog = (*replLog)(nil)
)

// plainPipelined is a replLog without leader epochs: a PipelinedLog
// alone, whose high watermark the shard trusts.
type plainPipelined struct{ r *replLog }

func (p plainPipelined) Append(batch []byte) error { return p.r.Append(batch) }
func (p plainPipelined) Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error) {
	return p.r.Read(offset, maxBytes, maxOffset, minOneBatch)
}
func (p plainPipelined) LogStartOffset() int64                     { return p.r.LogStartOffset() }
func (p plainPipelined) LogEndOffset() int64                       { return p.r.LogEndOffset() }
func (p plainPipelined) AppendUncommitted(b []byte) (int64, error) { return p.r.AppendUncommitted(b) }
func (p plainPipelined) HighWatermark() int64                      { return p.r.HighWatermark() }
func (p plainPipelined) WaitCommitted(ctx context.Context, offset int64) error {
	return p.r.WaitCommitted(ctx, offset)
}

// newReplEnv is an env of one partition with the bubble's clock (it runs
// inside synctest.Test), and its replLog.
func newReplEnv(t *testing.T) (*env, *replLog) {
	t.Helper()
	e := newEnv(t, func(o *Options) {
		o.NumPartitions = 1
		o.Now = time.Now
	})
	return e, e.repl[0]
}

// answeredAfter runs f and returns how long it took on the bubble's clock.
func answeredAfter(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// committedMeta is id's state in the shard's memory, read on the shard.
func (e *env) committedMeta(id string) *txnMeta {
	e.t.Helper()
	m, _ := e.meta(id)
	return m
}

// memoryMatchesLog fails unless the shard's memory is what a load of its
// log finds.
func (e *env) memoryMatchesLog(what string, log *memLog) {
	e.t.Helper()
	s := e.c.shardList()[0]
	var mem map[string]*txnMeta
	var data []byte
	var err error
	e.whenSettled(s, func() {
		mem = map[string]*txnMeta{}
		for id, m := range s.txns {
			mem[id] = m
		}
		data, err = log.Read(0, 1<<30, log.LogEndOffset(), true)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	ls := &loadState{txns: map[string]*txnMeta{}}
	if _, err := ls.applyBatches(data, 0); err != nil {
		e.t.Fatal(err)
	}
	if got, want := describeIDs(mem), describeIDs(ls.txns); got != want {
		e.t.Fatalf("%s: memory\n%s\nlog\n%s", what, got, want)
	}
}

// TestQueuedTxnWritesFailWithinTheirOwnTimeout: a transaction coordinator
// cut off from its replicas. InitProducerId, AddPartitionsToTxn,
// AddOffsetsToTxn and EndTxn of four transactional ids arrive a second
// apart; each is answered COORDINATOR_NOT_AVAILABLE one write timeout
// (5 s) after its own arrival, as Kafka's TransactionStateManager fails
// each append at its own deadline. Before the shard pipelined its writes
// it waited for the replicas of each before the next, so the fourth was
// answered 20 s after the first arrived, 17 s after its own arrival
// (issue 14). When the cut heals the four writes, which are in the log,
// are committed and applied: memory is what a load of the log finds.
func TestQueuedTxnWritesFailWithinTheirOwnTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, log := newReplEnv(t)
		pa, ea := e.init("a", 60000)
		pb, eb := e.init("b", 60000)
		pc, ec := e.init("c", 60000)
		e.addOK("c", pc, ec, tp("t", 0))
		pd, ed := e.init("d", 60000)
		e.addOK("d", pd, ed, tp("t", 1))
		gp := tp(coordinator.OffsetsTopic, 7)

		log.setStuck(true)
		requests := []struct {
			name string
			send func() int16
		}{
			{"InitProducerId a", func() int16 { return e.initReq(5, "a", 60000, pa, ea).ErrorCode }},
			{"AddPartitionsToTxn b", func() int16 { return e.add(3, "b", pb, eb, tp("t", 2))[tp("t", 2)] }},
			{"AddOffsetsToTxn c", func() int16 { return e.addOffsets(3, "c", pc, ec, gp) }},
			{"EndTxn d", func() int16 { return e.end(3, "d", pd, ed, true).ErrorCode }},
		}
		type answer struct {
			code    int16
			arrived time.Duration
			took    time.Duration
		}
		answers := make([]answer, len(requests))
		start := time.Now()
		var wg sync.WaitGroup
		for i, r := range requests {
			wg.Go(func() {
				a := &answers[i]
				a.arrived = time.Since(start)
				a.took = answeredAfter(func() { a.code = r.send() })
			})
			synctest.Wait()
			time.Sleep(time.Second) // the bubble's clock: the next arrives a second later
		}
		wg.Wait()
		for i, a := range answers {
			if a.code != kerr.CoordinatorNotAvailable.Code || a.took != 5*time.Second {
				t.Errorf("%s arrived at %v: answered %v after %v, want COORDINATOR_NOT_AVAILABLE after the 5 s write timeout",
					requests[i].name, a.arrived, kerr.ErrorForCode(a.code), a.took)
			}
		}
		// None of the four shows before it is committed.
		if m := e.committedMeta("a"); m.epoch != ea {
			t.Errorf("a at epoch %d while its bump is not committed, want %d", m.epoch, ea)
		}
		if m := e.committedMeta("d"); m.state != Ongoing {
			t.Errorf("d %v while its PrepareCommit is not committed, want Ongoing", m.state)
		}

		// The cut heals: the writes in the log are committed and applied.
		log.setStuck(false)
		synctest.Wait()
		if m := e.committedMeta("a"); m.epoch != ea+1 || m.state != Empty {
			t.Errorf("a after the heal: %v at epoch %d, want Empty at %d", m.state, m.epoch, ea+1)
		}
		if m := e.committedMeta("b"); m.state != Ongoing || len(m.partitions) != 1 {
			t.Errorf("b after the heal: %v %v, want Ongoing with t/2", m.state, m.sortedPartitions())
		}
		if m := e.committedMeta("c"); m.state != Ongoing || len(m.partitions) != 2 {
			t.Errorf("c after the heal: %v %v, want Ongoing with t/0 and %v", m.state, m.sortedPartitions(), gp)
		}
		if m := e.committedMeta("d"); m.state != CompleteCommit {
			t.Errorf("d after the heal: %v, want CompleteCommit (its markers were sent)", m.state)
		}
		e.memoryMatchesLog("after the heal", log.memLog)
		// The clients retry: the commit of d is done, b and c go on.
		wantCode(t, "EndTxn d retried", e.end(3, "d", pd, ed, true).ErrorCode, nil)
		e.addOK("b", pb, eb, tp("t", 2))
		wantCode(t, "AddOffsetsToTxn c retried", e.addOffsets(3, "c", pc, ec, gp), nil)
	})
}

// TestTxnWritesOfOneIDStayOrdered: requests of one transactional id wait
// for the write of the one before them, while another id's requests do
// not; a request whose caller gave up while it waited is dropped, not
// run later behind the client's back.
func TestTxnWritesOfOneIDStayOrdered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, log := newReplEnv(t)
		pid, epoch := e.init("x", 60000)
		other, otherEpoch := e.init("y", 60000)

		// Replication is slow: the first add waits for its write, the
		// second waits behind it, the other id's add does not.
		log.setStuck(true)
		var wg sync.WaitGroup
		type sent struct {
			name string
			code int16
		}
		var answers []*sent
		send := func(name, id string, pid int64, epoch int16, p TopicPartition) {
			a := &sent{name: name}
			answers = append(answers, a)
			wg.Go(func() { a.code = e.add(3, id, pid, epoch, p)[p] })
			synctest.Wait()
		}
		check := func(want ...*kerr.Error) {
			t.Helper()
			wg.Wait()
			for i, a := range answers {
				wantCode(t, a.name, a.code, want[i])
			}
			answers = nil
		}
		send("x first", "x", pid, epoch, tp("t", 0))
		send("x second", "x", pid, epoch, tp("t", 1))
		send("y", "y", other, otherEpoch, tp("t", 0))
		if got := log.LogEndOffset() - log.HighWatermark(); got != 2 {
			t.Fatalf("%d writes past the high watermark, want 2 (x's first and y's; x's second waits)", got)
		}
		time.Sleep(time.Second)
		log.setStuck(false)
		check(nil, nil, nil)
		if m := e.committedMeta("x"); len(m.partitions) != 2 {
			t.Fatalf("x has %v, want t/0 and t/1", m.sortedPartitions())
		}
		e.memoryMatchesLog("after slow replication", log.memLog)

		// Cut off: the first add times out with its batch in the log;
		// the second, queued behind it, times out too and is dropped.
		log.setStuck(true)
		send("x third", "x", pid, epoch, tp("t", 2))
		time.Sleep(time.Second)
		send("x fourth", "x", pid, epoch, tp("t", 3))
		check(kerr.CoordinatorNotAvailable, kerr.CoordinatorNotAvailable)
		log.setStuck(false)
		synctest.Wait()
		if m := e.committedMeta("x"); len(m.partitions) != 3 {
			t.Fatalf("x has %v after the heal, want t/0-2 (the third's write was in the log, the fourth never ran)", m.sortedPartitions())
		}
		e.memoryMatchesLog("after the heal", log.memLog)
	})
}

// TestTxnAppendErrors: a write the partition refuses is not applied, and
// the request gets the code Kafka 4.4's TransactionStateManager maps the
// append error to: NOT_ENOUGH_REPLICAS and REQUEST_TIMED_OUT answer
// COORDINATOR_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER and
// KAFKA_STORAGE_ERROR answer NOT_COORDINATOR, MESSAGE_TOO_LARGE answers
// UNKNOWN_SERVER_ERROR, for every request kind that writes.
func TestTxnAppendErrors(t *testing.T) {
	for _, tc := range []struct {
		err  *kerr.Error
		want *kerr.Error
	}{
		{kerr.NotEnoughReplicas, kerr.CoordinatorNotAvailable},
		{kerr.NotEnoughReplicasAfterAppend, kerr.CoordinatorNotAvailable},
		{kerr.RequestTimedOut, kerr.CoordinatorNotAvailable},
		{kerr.UnknownTopicOrPartition, kerr.CoordinatorNotAvailable},
		{kerr.NotLeaderForPartition, kerr.NotCoordinator},
		{kerr.KafkaStorageError, kerr.NotCoordinator},
		{kerr.MessageTooLarge, kerr.UnknownServerError},
		{kerr.RecordListTooLarge, kerr.UnknownServerError},
	} {
		t.Run(tc.err.Message, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, log := newReplEnv(t)
				pid, epoch := e.init("x", 60000)
				e.addOK("x", pid, epoch, tp("t", 0))
				pid2, epoch2 := e.init("y", 60000)
				before := log.LogEndOffset()
				log.setAppendErr(tc.err)
				wantCode(t, "InitProducerId", e.initReq(5, "y", 60000, pid2, epoch2).ErrorCode, tc.want)
				wantCode(t, "InitProducerId of a new id", e.initReq(5, "new", 60000, -1, -1).ErrorCode, tc.want)
				wantCode(t, "AddPartitionsToTxn", e.add(3, "x", pid, epoch, tp("t", 1))[tp("t", 1)], tc.want)
				wantCode(t, "AddOffsetsToTxn", e.addOffsets(3, "x", pid, epoch, tp(coordinator.OffsetsTopic, 1)), tc.want)
				wantCode(t, "implicit add", e.c.AddPartitionsImplicit(t.Context(), "y", pid2, epoch2, tp("t", 1)), tc.want)
				wantCode(t, "EndTxn", e.end(3, "x", pid, epoch, true).ErrorCode, tc.want)
				log.setAppendErr(nil)
				if got := log.LogEndOffset(); got != before {
					t.Fatalf("log end %d, want %d: a refused write is not in the log", got, before)
				}
				if m := e.committedMeta("x"); m.state != Ongoing || len(m.partitions) != 1 {
					t.Fatalf("x: %v %v, want Ongoing with t/0 only", m.state, m.sortedPartitions())
				}
				if m := e.committedMeta("y"); m.epoch != epoch2 {
					t.Fatalf("y at epoch %d, want %d", m.epoch, epoch2)
				}
				if m := e.committedMeta("new"); m != nil {
					t.Fatalf("new: %+v, want none", m)
				}
				e.memoryMatchesLog("after refused writes", log.memLog)
				// The retries succeed.
				wantCode(t, "EndTxn retried", e.end(3, "x", pid, epoch, true).ErrorCode, nil)
				if r := e.initReq(5, "y", 60000, pid2, epoch2); r.ErrorCode != 0 || r.ProducerEpoch != epoch2+1 {
					t.Fatalf("InitProducerId retried: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch)
				}
			})
		})
	}
}

// TestWriteFaultsPipelined is TestWriteFaults over a replicated log whose
// writes are pipelined, with and without leader epochs.
func TestWriteFaultsPipelined(t *testing.T) {
	t.Run("epochs", func(t *testing.T) {
		testWriteFaults(t, func(l *memLog) Log { return newReplLog(l) })
	})
	t.Run("high watermark alone", func(t *testing.T) {
		testWriteFaults(t, func(l *memLog) Log { return plainPipelined{newReplLog(l)} })
	})
}

// TestTxnWriteOfALostEpochNotInstalled: a write appended by this leader,
// whose leadership then moves on (a new leader epoch) while the high
// watermark passes the write's offset (as on a node that became a
// follower, truncated the write and copied the new leader's records) is
// not installed: the request times out, and the broker unloads the shard
// (the next leader's load decides). Installing it would answer an EndTxn
// that the new leader's log does not hold.
func TestTxnWriteOfALostEpochNotInstalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, log := newReplEnv(t)
		pid, epoch := e.init("x", 60000)
		e.addOK("x", pid, epoch, tp("t", 0))
		log.setStuck(true)
		var code int16
		done := make(chan struct{})
		go func() {
			defer close(done)
			code = e.end(3, "x", pid, epoch, true).ErrorCode
		}()
		synctest.Wait()
		log.newEpoch()
		log.setStuck(false)
		<-done
		wantCode(t, "EndTxn whose leadership moved", code, kerr.CoordinatorNotAvailable)
		if m := e.committedMeta("x"); m.state != Ongoing {
			t.Fatalf("x %v, want Ongoing: the PrepareCommit of a lost epoch is not installed", m.state)
		}
		if calls := e.markers.callList(); len(calls) != 0 {
			t.Fatalf("markers %+v for a write of a lost epoch", calls)
		}
	})
}

// describeIDs is describeAll over every id of txns, sorted.
func describeIDs(txns map[string]*txnMeta) string {
	ids := make([]string, 0, len(txns))
	for id := range txns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var out string
	for _, id := range ids {
		m := txns[id]
		out += fmt.Sprintf("%s: %v pid=%d epoch=%d timeout=%d parts=%v start=%d update=%d prev=%d tv=%d\n",
			id, m.state, m.producerID, m.epoch, m.timeoutMs, m.sortedPartitions(), m.startMs, m.updateMs, m.prevProducerID, m.clientTV)
	}
	return out
}

// TestTxnInitFenceCutOff: InitProducerId of an id with an ongoing
// transaction at a coordinator cut off from its replicas. Its fencing
// write (PrepareAbort, epoch bumped) is appended but not committed, so it
// is answered COORDINATOR_NOT_AVAILABLE 5 s after it came. When the cut
// heals the fence is installed and its abort completes, but the request
// whose caller gave up does not go on to bump the epoch once more: the
// client's retry does, by one.
func TestTxnInitFenceCutOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, log := newReplEnv(t)
		pid, epoch := e.init("x", 60000)
		e.addOK("x", pid, epoch, tp("t", 0))
		log.setStuck(true)
		var r *kmsg.InitProducerIDResponse
		took := answeredAfter(func() { r = e.initReq(4, "x", 60000, -1, -1) })
		if r.ErrorCode != kerr.CoordinatorNotAvailable.Code || took != 5*time.Second {
			t.Fatalf("InitProducerId fencing while cut off: %v after %v, want COORDINATOR_NOT_AVAILABLE after 5 s", kerr.ErrorForCode(r.ErrorCode), took)
		}
		if m := e.committedMeta("x"); m.state != Ongoing || m.epoch != epoch {
			t.Fatalf("x %v at epoch %d before the fence is committed, want Ongoing at %d", m.state, m.epoch, epoch)
		}
		log.setStuck(false)
		synctest.Wait()
		if m := e.committedMeta("x"); m.state != CompleteAbort || m.epoch != epoch+1 {
			t.Fatalf("x %v at epoch %d after the heal, want CompleteAbort at %d (the fence alone)", m.state, m.epoch, epoch+1)
		}
		if calls := e.markers.callList(); len(calls) != 1 || calls[0].commit || calls[0].epoch != epoch+1 {
			t.Fatalf("markers %+v, want one abort round at epoch %d", calls, epoch+1)
		}
		if p, ep := e.init("x", 60000); p != pid || ep != epoch+2 {
			t.Fatalf("InitProducerId retried: %d/%d, want %d/%d", p, ep, pid, epoch+2)
		}
		e.memoryMatchesLog("after the retry", log.memLog)
	})
}
