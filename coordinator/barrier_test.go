package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// replicatedLog is a memLog with a high watermark, as a leader's
// __consumer_offsets partition: while stuck (the leader cut off from its
// followers) an append stays in the log past the high watermark and
// fails after the write timeout with REQUEST_TIMED_OUT; once lost (the
// partition led elsewhere) appends and waits answer
// NOT_LEADER_OR_FOLLOWER.
type replicatedLog struct {
	memLog
	timeout time.Duration
	hw      struct {
		sync.Mutex
		offset  int64
		stuck   bool
		lost    bool
		changed chan struct{}
	}
}

func newReplicatedLog() *replicatedLog {
	l := &replicatedLog{timeout: 5 * time.Second}
	l.hw.changed = make(chan struct{})
	return l
}

func (l *replicatedLog) Append(batch []byte) error {
	l.hw.Lock()
	lost := l.hw.lost
	l.hw.Unlock()
	if lost {
		return fmt.Errorf("replicatedlog: %w", kerr.NotLeaderForPartition)
	}
	if err := l.memLog.Append(batch); err != nil {
		return err
	}
	return l.WaitCommitted(context.Background(), l.LogEndOffset())
}

func (l *replicatedLog) WaitCommitted(ctx context.Context, offset int64) error {
	timer := time.NewTimer(l.timeout)
	defer timer.Stop()
	for {
		l.hw.Lock()
		if !l.hw.stuck {
			l.hw.offset = l.LogEndOffset()
		}
		hw, lost, changed := l.hw.offset, l.hw.lost, l.hw.changed
		l.hw.Unlock()
		switch {
		case lost:
			return fmt.Errorf("replicatedlog: %w", kerr.NotLeaderForPartition)
		case hw >= offset:
			return nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return fmt.Errorf("replicatedlog: %w", kerr.RequestTimedOut)
		case <-ctx.Done():
			return fmt.Errorf("replicatedlog: %w", kerr.RequestTimedOut)
		}
	}
}

// set changes the log's state and wakes its waiters.
func (l *replicatedLog) set(stuck, lost bool) {
	l.hw.Lock()
	defer l.hw.Unlock()
	l.hw.stuck, l.hw.lost = stuck, lost
	close(l.hw.changed)
	l.hw.changed = make(chan struct{})
}

// newStuckableCoordinator is a coordinator over one replicatedLog per
// partition.
func newStuckableCoordinator(t *testing.T) (*Coordinator, map[int32]*replicatedLog) {
	logs := map[int32]*replicatedLog{}
	for p := range int32(testPartitions) {
		logs[p] = newReplicatedLog()
	}
	c := newTestCoordinator(t, nil, func(o *Options) {
		o.OpenLog = func(p int32) (Log, error) { return logs[p], nil }
	})
	return c, logs
}

func heartbeatReq(group, member string, generation int32) *kmsg.HeartbeatRequest {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group, r.MemberID, r.Generation = group, member, generation
	return r
}

// answeredAfter runs f and returns how long it took (the fake clock of
// the synctest bubble).
func answeredAfter(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// TestClassicAnswersWaitForCommittedWrites: a classic group's coordinator
// cut off from its replicas. The commit fails after the write timeout
// (COORDINATOR_NOT_AVAILABLE) and leaves its batch in the log; Heartbeat,
// a rejoin, SyncGroup and OffsetFetch with require_stable then wait for
// that batch and fail after the timeout (the fetch NOT_COORDINATOR, the
// others COORDINATOR_NOT_AVAILABLE), as Kafka's runtime
// answers write operations, instead of answering from memory (which kept
// a member of a cut-off coordinator consuming). OffsetFetch without
// require_stable still answers at once. Once the cut heals every answer
// is immediate again; when the partition is led elsewhere they are
// NOT_COORDINATOR.
func TestClassicAnswersWaitForCommittedWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, logs := newStuckableCoordinator(t)
		ctx := t.Context()
		const group = "g-barrier"
		log := logs[PartitionFor(group, testPartitions)]
		member, gen := joinAndSyncLong(t, c, group)
		var code int16
		if el := answeredAfter(func() { code = c.Heartbeat(ctx, heartbeatReq(group, member, gen)).ErrorCode }); el != 0 {
			t.Fatalf("heartbeat with everything committed waited %v", el)
		}
		wantCode(t, "heartbeat", code, nil)

		log.set(true, false)
		// Nothing uncommitted yet: answered from memory, as Kafka does.
		wantCode(t, "heartbeat before any write", c.Heartbeat(ctx, heartbeatReq(group, member, gen)).ErrorCode, nil)
		el := answeredAfter(func() {
			code = commitCodes(c.OffsetCommit(ctx, commitReq(group, member, gen, "orders", map[int32]int64{0: 10})))[0]
		})
		wantCode(t, "commit while cut off", code, kerr.CoordinatorNotAvailable)
		if el != 5*time.Second {
			t.Fatalf("commit failed after %v, want the 5 s write timeout", el)
		}
		el = answeredAfter(func() { code = c.Heartbeat(ctx, heartbeatReq(group, member, gen)).ErrorCode })
		wantCode(t, "heartbeat after an uncommitted write", code, kerr.CoordinatorNotAvailable)
		if el != 5*time.Second {
			t.Fatalf("heartbeat failed after %v, want the 5 s write timeout", el)
		}
		sr := c.SyncGroup(ctx, syncReq(group, member, gen))
		wantCode(t, "sync after an uncommitted write", sr.ErrorCode, kerr.CoordinatorNotAvailable)
		// Kafka 4.4 answers a require_stable fetch whose wait failed
		// NOT_COORDINATOR (handleOffsetFetchException).
		wantCode(t, "require_stable fetch", fetchGroupCode(t, c, group, true), kerr.NotCoordinator)
		if el := answeredAfter(func() { code = fetchGroupCode(t, c, group, false) }); el != 0 {
			t.Fatalf("plain fetch waited %v", el)
		}
		wantCode(t, "plain fetch", code, nil)
		// A request that ends first is answered COORDINATOR_NOT_AVAILABLE
		// too, when it ends.
		short, cancel := context.WithTimeout(ctx, time.Second)
		el = answeredAfter(func() { code = c.Heartbeat(short, heartbeatReq(group, member, gen)).ErrorCode })
		cancel()
		wantCode(t, "heartbeat with a 1 s context", code, kerr.CoordinatorNotAvailable)
		if el != time.Second {
			t.Fatalf("heartbeat with a 1 s context answered after %v", el)
		}

		// The cut heals: the failed commit's batch is committed after
		// all, and the answers are immediate.
		log.set(false, false)
		if el := answeredAfter(func() { code = c.Heartbeat(ctx, heartbeatReq(group, member, gen)).ErrorCode }); el != 0 {
			t.Fatalf("heartbeat after the heal waited %v", el)
		}
		wantCode(t, "heartbeat after the heal", code, nil)
		wantCode(t, "require_stable fetch after the heal", fetchGroupCode(t, c, group, true), nil)

		// The partition is led elsewhere: NOT_COORDINATOR, so the
		// client looks the coordinator up again.
		log.set(true, false)
		wantCode(t, "commit while cut off again", commitCodes(c.OffsetCommit(ctx, commitReq(group, member, gen, "orders", map[int32]int64{0: 11})))[0], kerr.CoordinatorNotAvailable)
		log.set(true, true)
		wantCode(t, "heartbeat once led elsewhere", c.Heartbeat(ctx, heartbeatReq(group, member, gen)).ErrorCode, kerr.NotCoordinator)
		wantCode(t, "commit once led elsewhere", commitCodes(c.OffsetCommit(ctx, commitReq(group, member, gen, "orders", map[int32]int64{0: 12})))[0], kerr.NotCoordinator)
		// Errors the group gives are not held: the member learns at once.
		log.set(true, false)
		if el := answeredAfter(func() { code = c.Heartbeat(ctx, heartbeatReq(group, "nobody", gen)).ErrorCode }); el != 0 {
			t.Fatalf("an unknown member's heartbeat waited %v", el)
		}
		wantCode(t, "unknown member", code, kerr.UnknownMemberID)
		// A rejoin (the leader's, which starts a rebalance) is not
		// answered before the group's metadata is committed either.
		j := c.JoinGroup(ctx, Client{ID: "cl", Host: "/127.0.0.1"}, joinReq(group, member, "orders"))
		wantCode(t, "rejoin while cut off", j.ErrorCode, kerr.CoordinatorNotAvailable)
	})
}

// TestConsumerGroupHeartbeatWaitsForCommittedWrites: the same for a
// KIP-848 group: after a commit that could not be replicated, a
// ConsumerGroupHeartbeat that writes nothing fails with
// COORDINATOR_NOT_AVAILABLE after the write timeout instead of keeping the
// member's assignment alive; a heartbeat whose own records are not
// committed fails the same way and leaves the group as it was.
func TestConsumerGroupHeartbeatWaitsForCommittedWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, logs := newStuckableCoordinator(t)
		ctx := t.Context()
		img := fakeImage{"orders": 2}
		cl := Client{ID: "cl", Host: "/127.0.0.1"}
		const group = "cg-barrier"
		log := logs[PartitionFor(group, testPartitions)]
		resp := c.ConsumerGroupHeartbeat(ctx, cl, img, cgJoinReq(group, "m1", "orders"))
		wantCode(t, "join", resp.ErrorCode, nil)
		hb := func(member string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
			r := cgJoinReq(group, member, "orders")
			r.MemberEpoch = epoch
			return c.ConsumerGroupHeartbeat(ctx, cl, img, r)
		}
		wantCode(t, "heartbeat", hb("m1", resp.MemberEpoch).ErrorCode, nil)

		log.set(true, false)
		wantCode(t, "heartbeat before any write", hb("m1", resp.MemberEpoch).ErrorCode, nil)
		wantCode(t, "commit while cut off", commitCodes(c.OffsetCommit(ctx, commitReq(group, "m1", resp.MemberEpoch, "orders", map[int32]int64{0: 3})))[0], kerr.CoordinatorNotAvailable)
		var code int16
		el := answeredAfter(func() { code = hb("m1", resp.MemberEpoch).ErrorCode })
		wantCode(t, "heartbeat after an uncommitted write", code, kerr.CoordinatorNotAvailable)
		if el != 5*time.Second {
			t.Fatalf("heartbeat failed after %v, want the 5 s write timeout", el)
		}
		// A new member's join writes records, which are not committed.
		wantCode(t, "join while cut off", hb("m2", 0).ErrorCode, kerr.CoordinatorNotAvailable)
		if d := cgDescribe(t, c, group); len(d.Members) != 1 {
			t.Fatalf("members %d after a join whose records failed, want 1", len(d.Members))
		}
		log.set(false, false)
		wantCode(t, "heartbeat after the heal", hb("m1", resp.MemberEpoch).ErrorCode, nil)
		log.set(true, true)
		wantCode(t, "heartbeat once led elsewhere", func() int16 {
			// Something must be uncommitted for the barrier to ask.
			c.OffsetCommit(ctx, commitReq(group, "m1", resp.MemberEpoch, "orders", map[int32]int64{0: 4}))
			log.set(true, false)
			c.OffsetCommit(ctx, commitReq(group, "m1", resp.MemberEpoch, "orders", map[int32]int64{0: 4}))
			log.set(true, true)
			return hb("m1", resp.MemberEpoch).ErrorCode
		}(), kerr.NotCoordinator)
	})
}

// joinAndSyncLong makes one member with a one-minute session timeout
// join a group alone and sync, so that its session outlives the several
// write timeouts a test waits through; it returns the member id and
// generation.
func joinAndSyncLong(t *testing.T, c *Coordinator, group string) (string, int32) {
	t.Helper()
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}
	req := func(member string) *kmsg.JoinGroupRequest {
		r := joinReq(group, member, "orders")
		r.SessionTimeoutMillis = 60000
		r.RebalanceTimeoutMillis = 60000
		return r
	}
	r := c.JoinGroup(ctx, cl, req(""))
	wantCode(t, "first join", r.ErrorCode, kerr.MemberIDRequired)
	r = c.JoinGroup(ctx, cl, req(r.MemberID))
	wantCode(t, "join", r.ErrorCode, nil)
	s := syncReq(group, r.MemberID, r.Generation)
	s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: r.MemberID, MemberAssignment: []byte("all")}}
	wantCode(t, "sync", c.SyncGroup(ctx, s).ErrorCode, nil)
	return r.MemberID, r.Generation
}

func syncReq(group, member string, gen int32) *kmsg.SyncGroupRequest {
	s := kmsg.NewPtrSyncGroupRequest()
	s.Version = 5
	s.Group, s.MemberID, s.Generation = group, member, gen
	s.ProtocolType, s.Protocol = ptr("consumer"), ptr("range")
	return s
}

func fetchGroupCode(t *testing.T, c *Coordinator, group string, requireStable bool) int16 {
	t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	r.RequireStable = requireStable
	r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group}}
	return c.OffsetFetch(t.Context(), r).Groups[0].ErrorCode
}

// TestWriteErrorMapping: Kafka 4.4's mapping of a coordinator write's
// failure to the client's error (CoordinatorOperationExceptionHelper).
func TestWriteErrorMapping(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want *kerr.Error
	}{
		{kerr.RequestTimedOut, kerr.CoordinatorNotAvailable},
		{kerr.NotEnoughReplicas, kerr.CoordinatorNotAvailable},
		{kerr.UnknownTopicOrPartition, kerr.CoordinatorNotAvailable},
		{kerr.NotLeaderForPartition, kerr.NotCoordinator},
		{kerr.KafkaStorageError, kerr.NotCoordinator},
		{kerr.MessageTooLarge, kerr.UnknownServerError},
		{kerr.RecordListTooLarge, kerr.UnknownServerError},
		{kerr.InvalidFetchSize, kerr.UnknownServerError},
		{ErrRecordTooLarge, kerr.UnknownServerError},
		{errInjected, kerr.CoordinatorNotAvailable},
	} {
		wrapped := fmt.Errorf("%w: %w", ErrWrite, fmt.Errorf("replica: append not committed: %w", tc.err))
		if got := writeError(wrapped); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.err, got, tc.want)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", kerr.NotLeaderForPartition), kerr.NotLeaderForPartition) {
		t.Fatal("kerr errors do not wrap")
	}
}
