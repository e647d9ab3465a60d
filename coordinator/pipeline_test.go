package coordinator

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AppendUncommitted makes replicatedLog a PipelinedLog: the batch is in
// the log at once, committed when the high watermark passes it.
func (l *replicatedLog) AppendUncommitted(batch []byte) (int64, error) {
	l.hw.Lock()
	lost := l.hw.lost
	l.hw.Unlock()
	if lost {
		return 0, fmt.Errorf("replicatedlog: %w", kerr.NotLeaderForPartition)
	}
	if err := l.memLog.Append(batch); err != nil {
		return 0, err
	}
	end := l.LogEndOffset()
	l.wake()
	return end, nil
}

// HighWatermark is the log end offset unless stuck, else where it stopped.
func (l *replicatedLog) HighWatermark() int64 {
	l.hw.Lock()
	defer l.hw.Unlock()
	if !l.hw.stuck {
		l.hw.offset = l.LogEndOffset()
	}
	return l.hw.offset
}

// wake lets waiters look at the log again.
func (l *replicatedLog) wake() {
	l.hw.Lock()
	defer l.hw.Unlock()
	close(l.hw.changed)
	l.hw.changed = make(chan struct{})
}

// moveStuckHW sets the high watermark of a stuck log: part of its tail
// was replicated.
func (l *replicatedLog) moveStuckHW(offset int64) {
	l.hw.Lock()
	defer l.hw.Unlock()
	l.hw.offset = offset
	close(l.hw.changed)
	l.hw.changed = make(chan struct{})
}

var _ PipelinedLog = (*replicatedLog)(nil)

// fetchOne is group's committed offset of orders/p from a plain
// OffsetFetch (v8), -1 for none.
func fetchOne(t *testing.T, c *Coordinator, group string, p int32, stable bool) (int64, int16) {
	t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	r.RequireStable = stable
	r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{p}}}}}
	g := c.OffsetFetch(t.Context(), r).Groups[0]
	if g.ErrorCode != 0 {
		return -1, g.ErrorCode
	}
	return g.Topics[0].Partitions[0].Offset, 0
}

// TestQueuedWritesFailWithinTheirOwnTimeout: a coordinator cut off from
// its replicas. Four offset commits arrive a second apart, then a
// heartbeat; each is answered COORDINATOR_NOT_AVAILABLE one write
// timeout (5 s) after its own arrival, as Kafka's runtime, which appends
// each write at once and fails it at its own deadline. Before the shard
// pipelined its writes it waited for the replicas of each before the
// next, so the fourth commit failed 20 s after the first arrived and the
// heartbeat behind them later still (issue 14).
func TestQueuedWritesFailWithinTheirOwnTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, logs := newStuckableCoordinator(t)
		ctx := t.Context()
		const group = "g-queue"
		log := logs[PartitionFor(group, testPartitions)]
		member, gen := joinAndSyncLong(t, c, group)
		log.set(true, false)
		start := time.Now()
		const n = 4
		type answer struct {
			code    int16
			arrived time.Duration
			took    time.Duration
		}
		answers := make([]answer, n+1)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				a := &answers[i]
				a.arrived = time.Since(start)
				a.took = answeredAfter(func() {
					a.code = commitCodes(c.OffsetCommit(ctx, commitReq(group, member, gen, "orders", map[int32]int64{0: int64(10 + i)})))[0]
				})
			})
			synctest.Wait()
			time.Sleep(time.Second) // the fake clock: the next arrives a second later
		}
		wg.Go(func() {
			a := &answers[n]
			a.arrived = time.Since(start)
			a.took = answeredAfter(func() { a.code = c.Heartbeat(ctx, heartbeatReq(group, member, gen)).ErrorCode })
		})
		wg.Wait()
		for i, a := range answers {
			wantCode(t, fmt.Sprintf("request %d (arrived at %v)", i, a.arrived), a.code, kerr.CoordinatorNotAvailable)
			if a.took != 5*time.Second {
				t.Errorf("request %d arrived at %v and was answered %v later, want the 5 s write timeout", i, a.arrived, a.took)
			}
		}
		// Every commit is in the log, in order, past the high watermark.
		if got, want := log.LogEndOffset(), log.HighWatermark()+n; got != want {
			t.Fatalf("log end %d, want %d (%d commits past the high watermark)", got, want, n)
		}

		// The cut heals: the commits were kept, the last one wins, and
		// every answer is immediate again.
		log.set(false, false)
		var code int16
		if el := answeredAfter(func() {
			code = commitCodes(c.OffsetCommit(ctx, commitReq(group, member, gen, "orders", map[int32]int64{1: 3})))[0]
		}); el != 0 {
			t.Fatalf("commit after the heal took %v", el)
		}
		wantCode(t, "commit after the heal", code, nil)
		if got, code := fetchOne(t, c, group, 0, false); code != 0 || got != 10+n-1 {
			t.Fatalf("fetch after the heal: offset %d (%s), want %d", got, errName(code), 10+n-1)
		}
	})
}

// TestTimedOutCommitKeptOnceCommitted: a commit whose answer timed out
// waiting for the replicas stays in the shard's memory, because its
// batch is in the log: while it is past the high watermark a plain
// OffsetFetch (a read of committed state) still answers the offset
// before it, and require_stable fails as a write would; once the batch
// is committed both answer the new offset. The shard used to drop it, and
// answered the old offset although the log, and every later load of it,
// held the new one. A commit whose append itself failed is not kept.
func TestTimedOutCommitKeptOnceCommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, logs := newStuckableCoordinator(t)
		ctx := t.Context()
		const group = "g-kept"
		log := logs[PartitionFor(group, testPartitions)]
		commit := func(p int32, off int64) int16 {
			return commitCodes(c.OffsetCommit(ctx, commitReq(group, "", -1, "orders", map[int32]int64{p: off})))[0]
		}
		wantOffset := func(what string, p int32, stable bool, want int64, wantErr *kerr.Error) {
			t.Helper()
			got, code := fetchOne(t, c, group, p, stable)
			wantCode(t, what, code, wantErr)
			if wantErr == nil && got != want {
				t.Fatalf("%s: offset %d, want %d", what, got, want)
			}
		}
		wantCode(t, "first commit", commit(0, 5), nil)

		log.set(true, false)
		wantCode(t, "commit while cut off", commit(0, 10), kerr.CoordinatorNotAvailable)
		wantCode(t, "commit of a new partition while cut off", commit(1, 7), kerr.CoordinatorNotAvailable)
		wantOffset("plain fetch while cut off", 0, false, 5, nil)
		wantOffset("plain fetch of the new partition while cut off", 1, false, -1, nil)
		if got := fetchAll(t, c, group); len(got) != 1 || got["orders/0"] != 5 {
			t.Fatalf("fetch of every partition while cut off: %v, want orders/0 at 5 only", got)
		}
		// A write operation whose wait failed: COORDINATOR_NOT_AVAILABLE,
		// or NOT_COORDINATOR as Kafka 4.4's OffsetFetch answers it.
		if _, code := fetchOne(t, c, group, 0, true); code != kerr.CoordinatorNotAvailable.Code && code != kerr.NotCoordinator.Code {
			t.Fatalf("require_stable fetch while cut off: %s, want COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR", errName(code))
		}

		// Part of the tail is replicated: the first commit only.
		log.moveStuckHW(log.HighWatermark() + 1)
		wantOffset("plain fetch with the first timed-out commit committed", 0, false, 10, nil)
		wantOffset("plain fetch with the second not", 1, false, -1, nil)

		log.set(false, false)
		wantOffset("plain fetch after the heal", 0, false, 10, nil)
		wantOffset("plain fetch of the new partition after the heal", 1, false, 7, nil)
		wantOffset("require_stable fetch after the heal", 0, true, 10, nil)

		// An append that fails leaves nothing behind.
		log.mu.Lock()
		log.mu.failAppends = 1
		log.mu.Unlock()
		wantCode(t, "commit whose append fails", commit(0, 20), kerr.CoordinatorNotAvailable)
		wantOffset("plain fetch after a failed append", 0, false, 10, nil)
		wantOffset("require_stable fetch after a failed append", 0, true, 10, nil)
		log.set(true, true)
		wantCode(t, "commit once led elsewhere", commit(0, 21), kerr.NotCoordinator)
		log.set(false, false)
		wantOffset("fetch after the refused commit", 0, false, 10, nil)

		// What the shard kept is what the log holds: a reload agrees.
		p := PartitionFor(group, testPartitions)
		c.UnloadPartition(p)
		if err := c.LoadPartition(p); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitLoaded(ctx); err != nil {
			t.Fatal(err)
		}
		wantOffset("fetch after a reload", 0, false, 10, nil)
		wantOffset("fetch of the new partition after a reload", 1, false, 7, nil)
	})
}

// TestTimedOutDeleteAndMarkerKept: the same for the other writes that
// change committed offsets. A DeleteGroups and a transaction's commit
// marker whose answers timed out are kept: until they are committed a
// plain OffsetFetch answers the offsets before them, afterwards the
// group is gone and the transaction's offset is committed.
func TestTimedOutDeleteAndMarkerKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, logs := newStuckableCoordinator(t)
		ctx := t.Context()
		const gone, txg = "g-deleted", "g-txn"
		commit := func(group string, p int32, off int64) int16 {
			return commitCodes(c.OffsetCommit(ctx, commitReq(group, "", -1, "orders", map[int32]int64{p: off})))[0]
		}
		wantCode(t, "commit", commit(gone, 0, 5), nil)
		wantCode(t, "commit", commit(txg, 0, 6), nil)
		wantTxnOK(t, "txn commit", c.TxnOffsetCommit(ctx, txnReq(txg, 42, 0, "orders", map[int32]int64{0: 60})))
		for _, l := range logs {
			l.set(true, false)
		}

		del := kmsg.NewPtrDeleteGroupsRequest()
		del.Version = 2
		del.Groups = []string{gone}
		wantCode(t, "delete while cut off", c.DeleteGroups(ctx, del).Groups[0].ErrorCode, kerr.CoordinatorNotAvailable)
		code := c.CompleteTxn(ctx, PartitionFor(txg, testPartitions), 42, 0, true, 0)
		wantCode(t, "commit marker while cut off", code, kerr.CoordinatorNotAvailable)
		if got, code := fetchOne(t, c, gone, 0, false); code != 0 || got != 5 {
			t.Fatalf("fetch of the deleted group while cut off: %d (%s), want 5", got, errName(code))
		}
		if got, code := fetchOne(t, c, txg, 0, false); code != 0 || got != 6 {
			t.Fatalf("fetch of the transaction's group while cut off: %d (%s), want 6", got, errName(code))
		}

		for _, l := range logs {
			l.set(false, false)
		}
		if got, code := fetchOne(t, c, gone, 0, false); code != 0 || got != -1 {
			t.Fatalf("fetch of the deleted group after the heal: %d (%s), want none", got, errName(code))
		}
		if got, code := fetchOne(t, c, txg, 0, false); code != 0 || got != 60 {
			t.Fatalf("fetch of the transaction's group after the heal: %d (%s), want 60", got, errName(code))
		}
		// The marker is not written twice: a retry succeeds at once.
		complete(t, c, txg, 42, 0, true)
	})
}

// TestConsumerGroupJoinKeptOnceCommitted: a KIP-848 join whose records
// timed out waiting for the replicas is kept, as Kafka keeps it:
// ConsumerGroupDescribe, a read of committed state, shows the group
// without the member until the records are committed, and with it
// afterwards.
func TestConsumerGroupJoinKeptOnceCommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, logs := newStuckableCoordinator(t)
		ctx := t.Context()
		img := fakeImage{"orders": 2}
		cl := Client{ID: "cl", Host: "/127.0.0.1"}
		const group = "cg-kept"
		log := logs[PartitionFor(group, testPartitions)]
		wantCode(t, "join", c.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq(group, "m1", "orders")).ErrorCode, nil)
		log.set(true, false)
		wantCode(t, "join while cut off", c.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq(group, "m2", "orders")).ErrorCode, kerr.CoordinatorNotAvailable)
		if d := cgDescribe(t, c, group); len(d.Members) != 1 {
			t.Fatalf("members %d while the join is not committed, want 1", len(d.Members))
		}
		// A group whose first join is not committed does not exist
		// yet for the reads.
		const fresh = "cg-fresh"
		for _, l := range logs {
			l.set(true, false)
		}
		wantCode(t, "first join of a new group while cut off", c.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq(fresh, "m1", "orders")).ErrorCode, kerr.CoordinatorNotAvailable)
		wantCode(t, "describe of the new group while cut off", cgDescribe(t, c, fresh).ErrorCode, kerr.GroupIDNotFound)
		listed := func() map[string]string {
			out := map[string]string{}
			for _, g := range c.ListGroups(ctx, kmsg.NewPtrListGroupsRequest()).Groups {
				out[g.Group] = g.GroupState
			}
			return out
		}
		if got := listed(); len(got) != 1 || got[group] == "" {
			t.Fatalf("groups listed while cut off: %v, want %s alone", got, group)
		}
		for _, l := range logs {
			l.set(false, false)
		}
		if d := cgDescribe(t, c, group); len(d.Members) != 2 {
			t.Fatalf("members %d once the join is committed, want 2", len(d.Members))
		}
		if d := cgDescribe(t, c, fresh); d.ErrorCode != 0 || len(d.Members) != 1 {
			t.Fatalf("new group once its join is committed: %s, %d members, want 1", errName(d.ErrorCode), len(d.Members))
		}
		if got := listed(); len(got) != 2 || got[fresh] == "" {
			t.Fatalf("groups listed after the heal: %v, want %s and %s", got, group, fresh)
		}
	})
}

// TestExpiryKeptOnceCommitted: expired offsets leave memory before their
// tombstones are appended. While the tombstones are past the high
// watermark a plain OffsetFetch still answers the offsets; once they are
// committed the offsets are gone. When the append fails the offsets come
// back, and the next check expires them.
func TestExpiryKeptOnceCommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := map[int32]*replicatedLog{}
		for p := range int32(testPartitions) {
			logs[p] = newReplicatedLog()
		}
		c := newTestCoordinator(t, nil, func(o *Options) {
			o.OpenLog = func(p int32) (Log, error) { return logs[p], nil }
			o.OffsetsRetention = time.Hour
			o.OffsetsRetentionCheckInterval = time.Minute
		})
		ctx := t.Context()
		const group = "g-expiry"
		log := logs[PartitionFor(group, testPartitions)]
		commit := func(p int32, off int64) {
			t.Helper()
			wantCode(t, "commit", commitCodes(c.OffsetCommit(ctx, commitReq(group, "", -1, "orders", map[int32]int64{p: off})))[0], nil)
		}
		wantOffsets := func(what, want string) {
			t.Helper()
			if got := fmt.Sprint(fetchAll(t, c, group)); got != want {
				t.Fatalf("%s: offsets %s, want %s", what, got, want)
			}
		}
		commit(0, 5)
		time.Sleep(30 * time.Minute)
		commit(1, 7)
		time.Sleep(20 * time.Minute)
		log.set(true, false)
		time.Sleep(10*time.Minute + 30*time.Second) // the check at 60 min expires orders/0
		synctest.Wait()
		if end, hw := log.LogEndOffset(), log.HighWatermark(); end != hw+1 {
			t.Fatalf("log end %d, high watermark %d: want the tombstone past it", end, hw)
		}
		wantOffsets("expired while cut off", "map[orders/0:5 orders/1:7]")
		log.set(false, false)
		wantOffsets("expired once committed", "map[orders/1:7]")

		time.Sleep(25 * time.Minute) // 85.5 min
		log.mu.Lock()
		log.mu.failAppends = 1
		log.mu.Unlock()
		time.Sleep(5 * time.Minute) // the check at 90 min fails to write
		synctest.Wait()
		wantOffsets("expiry whose append failed", "map[orders/1:7]")
		time.Sleep(time.Minute) // the check at 91 min writes
		synctest.Wait()
		wantOffsets("expired at the next check", "map[]")
	})
}
