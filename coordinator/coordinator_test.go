package coordinator

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// memLog is an in-memory Log: batches get offsets as they are appended.
type memLog struct {
	mu struct {
		sync.Mutex
		batches [][]byte
		bases   []int64
		next    int64
		// failAppends makes the next n Appends fail.
		failAppends int
	}
}

var errInjected = errors.New("memlog: injected failure")

func (l *memLog) Append(batch []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.failAppends > 0 {
		l.mu.failAppends--
		return errInjected
	}
	h, err := wire.ParseBatchHeader(batch)
	if err != nil {
		return err
	}
	b := append([]byte(nil), batch...)
	wire.SetBaseOffset(b, l.mu.next)
	l.mu.batches = append(l.mu.batches, b)
	l.mu.bases = append(l.mu.bases, l.mu.next)
	l.mu.next += int64(h.LastOffsetDelta) + 1
	return nil
}

func (l *memLog) Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []byte
	for i, b := range l.mu.batches {
		h, _ := wire.ParseBatchHeader(b)
		if h.LastOffset() < offset || l.mu.bases[i] >= maxOffset {
			continue
		}
		if len(out)+len(b) > maxBytes && !(minOneBatch && len(out) == 0) {
			break
		}
		out = append(out, b...)
	}
	return out, nil
}

func (l *memLog) LogStartOffset() int64 { return 0 }

func (l *memLog) LogEndOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.next
}

func (l *memLog) failNext(n int) {
	l.mu.Lock()
	l.mu.failAppends = n
	l.mu.Unlock()
}

// logs holds one memLog per partition, surviving coordinator restarts.
type logs struct {
	mu struct {
		sync.Mutex
		byPartition map[int32]*memLog
	}
}

func newLogs() *logs {
	l := &logs{}
	l.mu.byPartition = map[int32]*memLog{}
	return l
}

func (l *logs) open(p int32) (Log, error) { return l.get(p), nil }

func (l *logs) get(p int32) *memLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.byPartition[p] == nil {
		l.mu.byPartition[p] = &memLog{}
	}
	return l.mu.byPartition[p]
}

const testPartitions = 4

func newTestCoordinator(t *testing.T, l *logs, tweak ...func(*Options)) *Coordinator {
	t.Helper()
	n := 0
	var mu sync.Mutex
	opts := Options{
		NumPartitions:         testPartitions,
		OpenLog:               l.open,
		InitialRebalanceDelay: -1,
		NewMemberID: func(prefix string) string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("%s-%d", prefix, n)
		},
	}
	for _, f := range tweak {
		f(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.LoadAll(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitLoaded(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func consumerMetadata(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

func joinReq(group, member string, topics ...string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group = group
	r.MemberID = member
	r.SessionTimeoutMillis = 10000
	r.RebalanceTimeoutMillis = 20000
	r.ProtocolType = "consumer"
	r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: consumerMetadata(topics...)}}
	return r
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: error %s, want %s", what, errName(got), errName(w))
	}
}

// joinAndSync makes one member join a group alone and sync; it returns the
// member id and generation.
func joinAndSync(t *testing.T, c *Coordinator, group string, topics ...string) (string, int32) {
	t.Helper()
	ctx := t.Context()
	r := c.JoinGroup(ctx, Client{ID: "cl", Host: "/127.0.0.1"}, joinReq(group, "", topics...))
	wantCode(t, "first join", r.ErrorCode, kerr.MemberIDRequired)
	r = c.JoinGroup(ctx, Client{ID: "cl", Host: "/127.0.0.1"}, joinReq(group, r.MemberID, topics...))
	wantCode(t, "join", r.ErrorCode, nil)
	s := kmsg.NewPtrSyncGroupRequest()
	s.Version = 5
	s.Group, s.MemberID, s.Generation = group, r.MemberID, r.Generation
	s.ProtocolType, s.Protocol = ptr("consumer"), ptr("range")
	s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: r.MemberID, MemberAssignment: []byte("all")}}
	sr := c.SyncGroup(ctx, s)
	wantCode(t, "sync", sr.ErrorCode, nil)
	if string(sr.MemberAssignment) != "all" {
		t.Fatalf("assignment %q", sr.MemberAssignment)
	}
	return r.MemberID, r.Generation
}

func commitReq(group, member string, gen int32, topic string, offsets map[int32]int64) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 9
	r.Group, r.MemberID, r.Generation = group, member, gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	for p := range int32(len(offsets) * 4) {
		o, ok := offsets[p]
		if !ok {
			continue
		}
		pp := kmsg.NewOffsetCommitRequestTopicPartition()
		pp.Partition, pp.Offset, pp.LeaderEpoch, pp.Metadata = p, o, 7, ptr("md")
		t.Partitions = append(t.Partitions, pp)
	}
	r.Topics = append(r.Topics, t)
	return r
}

func commitCodes(r *kmsg.OffsetCommitResponse) []int16 {
	var out []int16
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

func fetchAll(t *testing.T, c *Coordinator, group string) map[string]int64 {
	t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group}}
	resp := c.OffsetFetch(t.Context(), r)
	if len(resp.Groups) != 1 {
		t.Fatalf("groups %d", len(resp.Groups))
	}
	wantCode(t, "fetch", resp.Groups[0].ErrorCode, nil)
	out := map[string]int64{}
	for _, tp := range resp.Groups[0].Topics {
		for _, p := range tp.Partitions {
			out[fmt.Sprintf("%s/%d", tp.Topic, p.Partition)] = p.Offset
		}
	}
	return out
}

// TestCommitFetchSurvivesRestart commits as a member and as a simple
// consumer, restarts the coordinator over the same logs, and reads the
// offsets and the group back.
func TestCommitFetchSurvivesRestart(t *testing.T) {
	l := newLogs()
	c := newTestCoordinator(t, l)
	ctx := t.Context()
	member, gen := joinAndSync(t, c, "g1", "orders")
	resp := c.OffsetCommit(ctx, commitReq("g1", member, gen, "orders", map[int32]int64{0: 10, 1: 20}))
	for _, code := range commitCodes(resp) {
		wantCode(t, "commit", code, nil)
	}
	resp = c.OffsetCommit(ctx, commitReq("g1", member, gen+1, "orders", map[int32]int64{0: 11}))
	wantCode(t, "commit stale generation", commitCodes(resp)[0], kerr.IllegalGeneration)
	resp = c.OffsetCommit(ctx, commitReq("g1", "", -1, "orders", map[int32]int64{0: 11}))
	wantCode(t, "simple commit to a non-empty group", commitCodes(resp)[0], kerr.UnknownMemberID)
	resp = c.OffsetCommit(ctx, commitReq("simple", "", -1, "orders", map[int32]int64{3: 33}))
	wantCode(t, "simple commit", commitCodes(resp)[0], nil)
	resp = c.OffsetCommit(ctx, commitReq("nogroup", "m", 3, "orders", map[int32]int64{3: 33}))
	wantCode(t, "member commit to no group", commitCodes(resp)[0], kerr.GroupIDNotFound)

	want := map[string]int64{"orders/0": 10, "orders/1": 20}
	if got := fetchAll(t, c, "g1"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fetch %v, want %v", got, want)
	}
	c.Close()

	c2 := newTestCoordinator(t, l)
	if got := fetchAll(t, c2, "g1"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after restart: fetch %v, want %v", got, want)
	}
	if got := fetchAll(t, c2, "simple"); got["orders/3"] != 33 {
		t.Fatalf("after restart: simple group %v", got)
	}
	d := c2.DescribeGroups(ctx, &kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"g1"}})
	g := d.Groups[0]
	if g.State != "Stable" || len(g.Members) != 1 || g.Members[0].MemberID != member || string(g.Members[0].MemberAssignment) != "all" {
		t.Fatalf("after restart: describe %+v", g)
	}
	// The restored member carries on without rejoining.
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g1", member, gen
	wantCode(t, "heartbeat after restart", c2.Heartbeat(ctx, hb).ErrorCode, nil)
	// A v1 fetch of one known and one unknown partition.
	f := kmsg.NewPtrOffsetFetchRequest()
	f.Version = 1
	f.Group = "g1"
	f.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{1, 9}}}
	fr := c2.OffsetFetch(ctx, f)
	ps := fr.Topics[0].Partitions
	if ps[0].Offset != 20 || ps[0].LeaderEpoch != 7 || *ps[0].Metadata != "md" || ps[1].Offset != -1 {
		t.Fatalf("v1 fetch %+v", ps)
	}
}

func TestPartitionFor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		hash int32
	}{
		{"", 0},
		{"hello", 99162322},
		{"\U0001F600", 1772899}, // a surrogate pair: hashed as two UTF-16 units
		{"polygenelubricants", -1 << 31},
	} {
		if got := javaStringHash(tc.in); got != tc.hash {
			t.Errorf("javaStringHash(%q) = %d, want %d", tc.in, got, tc.hash)
		}
	}
	if p := PartitionFor("polygenelubricants", 50); p != 0 {
		t.Errorf("MinInt32 hash maps to partition %d, want 0", p)
	}
	if p := PartitionFor("hello", 50); p != 99162322%50 {
		t.Errorf("PartitionFor(hello) = %d", p)
	}
}

// TestRebalanceTwoMembers runs a real rebalance through the blocking
// JoinGroup and SyncGroup calls, then a session expiry, on a fake clock.
func TestRebalanceTwoMembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCoordinator(t, newLogs())
		ctx := t.Context()
		a, gen := joinAndSync(t, c, "g", "t")

		// b joins; its JoinGroup blocks until a rejoins.
		bJoined := make(chan *kmsg.JoinGroupResponse, 1)
		first := c.JoinGroup(ctx, Client{ID: "b"}, joinReq("g", "", "t"))
		go func() { bJoined <- c.JoinGroup(ctx, Client{ID: "b"}, joinReq("g", first.MemberID, "t")) }()
		synctest.Wait()
		select {
		case <-bJoined:
			t.Fatal("b's JoinGroup returned before a rejoined")
		default:
		}
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID, hb.Generation = "g", a, gen
		wantCode(t, "heartbeat during rebalance", c.Heartbeat(ctx, hb).ErrorCode, kerr.RebalanceInProgress)
		ra := c.JoinGroup(ctx, Client{ID: "cl"}, joinReq("g", a, "t"))
		rb := <-bJoined
		wantCode(t, "a rejoin", ra.ErrorCode, nil)
		wantCode(t, "b join", rb.ErrorCode, nil)
		if ra.Generation != gen+1 || rb.Generation != gen+1 || ra.LeaderID != a || len(ra.Members) != 2 || len(rb.Members) != 0 {
			t.Fatalf("join responses: a %+v b %+v", ra, rb)
		}

		// b's SyncGroup waits for the leader's.
		bSynced := make(chan *kmsg.SyncGroupResponse, 1)
		go func() {
			s := kmsg.NewPtrSyncGroupRequest()
			s.Group, s.MemberID, s.Generation = "g", rb.MemberID, rb.Generation
			bSynced <- c.SyncGroup(ctx, s)
		}()
		synctest.Wait()
		s := kmsg.NewPtrSyncGroupRequest()
		s.Group, s.MemberID, s.Generation = "g", a, ra.Generation
		s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{
			{MemberID: a, MemberAssignment: []byte("A")},
			{MemberID: rb.MemberID, MemberAssignment: []byte("B")},
		}
		wantCode(t, "leader sync", c.SyncGroup(ctx, s).ErrorCode, nil)
		if sb := <-bSynced; sb.ErrorCode != 0 || string(sb.MemberAssignment) != "B" {
			t.Fatalf("b sync %+v", sb)
		}

		// Only a heartbeats; b's session (10s) expires and a is told to
		// rejoin.
		hb.Generation = ra.Generation
		var code int16
		for range 4 {
			time.Sleep(3 * time.Second)
			code = c.Heartbeat(ctx, hb).ErrorCode
		}
		wantCode(t, "heartbeat after b expired", code, kerr.RebalanceInProgress)
		ra = c.JoinGroup(ctx, Client{ID: "cl"}, joinReq("g", a, "t"))
		if ra.ErrorCode != 0 || len(ra.Members) != 1 {
			t.Fatalf("rejoin alone %+v", ra)
		}

		lg := c.ListGroups(ctx, &kmsg.ListGroupsRequest{Version: 5, StatesFilter: []string{"completingrebalance"}})
		if len(lg.Groups) != 1 || lg.Groups[0].Group != "g" || lg.Groups[0].GroupType != "classic" {
			t.Fatalf("list %+v", lg.Groups)
		}
		lg = c.ListGroups(ctx, &kmsg.ListGroupsRequest{Version: 5, StatesFilter: []string{"Stable"}})
		if len(lg.Groups) != 0 {
			t.Fatalf("list Stable %+v", lg.Groups)
		}
	})
}

// TestShutdownReleasesBlockedJoin checks that a JoinGroup blocked in a
// rebalance returns NOT_COORDINATOR when its partition is unloaded.
func TestShutdownReleasesBlockedJoin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCoordinator(t, newLogs())
		ctx := t.Context()
		joinAndSync(t, c, "g", "t")
		first := c.JoinGroup(ctx, Client{ID: "b"}, joinReq("g", "", "t"))
		done := make(chan *kmsg.JoinGroupResponse, 1)
		go func() { done <- c.JoinGroup(ctx, Client{ID: "b"}, joinReq("g", first.MemberID, "t")) }()
		synctest.Wait()
		c.UnloadPartition(PartitionFor("g", testPartitions))
		wantCode(t, "blocked join", (<-done).ErrorCode, kerr.NotCoordinator)
		wantCode(t, "join after unload", c.JoinGroup(ctx, Client{}, joinReq("g", "", "t")).ErrorCode, kerr.NotCoordinator)
	})
}

func TestDeleteGroupsAndOffsetDelete(t *testing.T) {
	l := newLogs()
	c := newTestCoordinator(t, l)
	ctx := t.Context()
	member, gen := joinAndSync(t, c, "busy", "subscribed")
	c.OffsetCommit(ctx, commitReq("busy", member, gen, "subscribed", map[int32]int64{0: 1}))
	c.OffsetCommit(ctx, commitReq("busy", member, gen, "old", map[int32]int64{0: 2}))
	c.OffsetCommit(ctx, commitReq("idle", "", -1, "t", map[int32]int64{0: 5}))

	dr := c.DeleteGroups(ctx, &kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"busy", "idle", "missing", ""}})
	codes := []int16{}
	for _, g := range dr.Groups {
		codes = append(codes, g.ErrorCode)
	}
	// "" is a group id like any other (Kafka 4.4, compat-tests/diff fuzzing).
	want := []int16{kerr.NonEmptyGroup.Code, 0, kerr.GroupIDNotFound.Code, kerr.GroupIDNotFound.Code}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("delete groups codes %v, want %v", codes, want)
	}

	od := &kmsg.OffsetDeleteRequest{Group: "busy", Topics: []kmsg.OffsetDeleteRequestTopic{
		{Topic: "subscribed", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		{Topic: "old", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
	}}
	odr := c.OffsetDelete(ctx, od)
	wantCode(t, "offset delete", odr.ErrorCode, nil)
	wantCode(t, "subscribed topic", odr.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)
	wantCode(t, "unsubscribed topic", odr.Topics[1].Partitions[0].ErrorCode, nil)
	wantCode(t, "offset delete missing group", c.OffsetDelete(ctx, &kmsg.OffsetDeleteRequest{Group: "idle"}).ErrorCode, kerr.GroupIDNotFound)
	c.Close()

	c2 := newTestCoordinator(t, l)
	if got := fetchAll(t, c2, "busy"); fmt.Sprint(got) != "map[subscribed/0:1]" {
		t.Fatalf("busy after restart %v", got)
	}
	if got := fetchAll(t, c2, "idle"); len(got) != 0 {
		t.Fatalf("deleted group after restart %v", got)
	}
	d := c2.DescribeGroups(ctx, &kmsg.DescribeGroupsRequest{Version: 6, Groups: []string{"idle"}})
	wantCode(t, "describe deleted", d.Groups[0].ErrorCode, kerr.GroupIDNotFound)
}

// TestOffsetsExpire checks offsets.retention.minutes: an empty group's
// offsets and then the group itself go once retention passes.
func TestOffsetsExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLogs()
		c := newTestCoordinator(t, l, func(o *Options) {
			o.OffsetsRetention = time.Hour
			o.OffsetsRetentionCheckInterval = time.Minute
		})
		ctx := t.Context()
		c.OffsetCommit(ctx, commitReq("g", "", -1, "t", map[int32]int64{0: 5}))
		time.Sleep(50 * time.Minute)
		if got := fetchAll(t, c, "g"); got["t/0"] != 5 {
			t.Fatalf("before retention %v", got)
		}
		time.Sleep(11 * time.Minute)
		if got := fetchAll(t, c, "g"); len(got) != 0 {
			t.Fatalf("after retention %v", got)
		}
		lg := c.ListGroups(ctx, &kmsg.ListGroupsRequest{Version: 4})
		if len(lg.Groups) != 0 {
			t.Fatalf("expired group still listed: %+v", lg.Groups)
		}
		c.Close()
		c2 := newTestCoordinator(t, l)
		if got := fetchAll(t, c2, "g"); len(got) != 0 {
			t.Fatalf("after restart %v", got)
		}
	})
}

// TestWriteFailures injects Append failures: a failed commit is not
// visible, a failed leader SyncGroup fails the sync.
func TestWriteFailures(t *testing.T) {
	l := newLogs()
	c := newTestCoordinator(t, l)
	ctx := t.Context()
	l.get(PartitionFor("g", testPartitions)).failNext(1)
	resp := c.OffsetCommit(ctx, commitReq("g", "", -1, "t", map[int32]int64{0: 5}))
	wantCode(t, "failed commit", commitCodes(resp)[0], kerr.CoordinatorNotAvailable)
	if got := fetchAll(t, c, "g"); len(got) != 0 {
		t.Fatalf("failed commit visible: %v", got)
	}

	r := c.JoinGroup(ctx, Client{ID: "cl"}, joinReq("h", "", "t"))
	r = c.JoinGroup(ctx, Client{ID: "cl"}, joinReq("h", r.MemberID, "t"))
	l.get(PartitionFor("h", testPartitions)).failNext(1)
	s := kmsg.NewPtrSyncGroupRequest()
	s.Group, s.MemberID, s.Generation = "h", r.MemberID, r.Generation
	wantCode(t, "failed sync store", c.SyncGroup(ctx, s).ErrorCode, kerr.CoordinatorNotAvailable)
}

// blockingLog blocks OpenLog until released, to observe the load phase.
func TestLoadInProgressAndFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		l := newLogs()
		c, err := New(Options{NumPartitions: 1, OpenLog: func(p int32) (Log, error) {
			<-release
			return l.open(p)
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.LoadAll(); err != nil {
			t.Fatal(err)
		}
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group = "g"
		wantCode(t, "heartbeat while loading", c.Heartbeat(t.Context(), hb).ErrorCode, kerr.CoordinatorLoadInProgress)
		close(release)
		if err := c.WaitLoaded(t.Context()); err != nil {
			t.Fatal(err)
		}
		wantCode(t, "heartbeat loaded", c.Heartbeat(t.Context(), hb).ErrorCode, kerr.UnknownMemberID)
	})

	// A record that does not decode no longer fails the load (issue 11
	// item 7, see TestLoadSkipsGarbageRecords): the partition serves.
	l := newLogs()
	batch, err := encodeBatch(time.Now(), []wire.Record{{Key: []byte{0, 1, 0xff}, Value: []byte("x")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.get(0).Append(batch); err != nil {
		t.Fatal(err)
	}
	c := newTestCoordinator(t, l, func(o *Options) { o.NumPartitions = 1 })
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group = "g"
	wantCode(t, "heartbeat after a load that skipped garbage", c.Heartbeat(t.Context(), hb).ErrorCode, kerr.UnknownMemberID)
}

// TestLoadSkipsGarbageRecords is the regression test for issue 11 item 7:
// a client produced one garbage record to __consumer_offsets, and from
// then on that coordinator partition failed to load at every start
// (COORDINATOR_NOT_AVAILABLE forever, every group and committed offset of
// the partition unreachable). Records and batches that do not decode are
// now skipped with an ERROR line naming the offset; the commits before
// and after them load.
func TestLoadSkipsGarbageRecords(t *testing.T) {
	l := newLogs()
	c := newTestCoordinator(t, l, func(o *Options) { o.NumPartitions = 1 })
	ctx := t.Context()
	resp := c.OffsetCommit(ctx, commitReq("g", "", -1, "orders", map[int32]int64{0: 10}))
	wantCode(t, "commit before", commitCodes(resp)[0], nil)
	c.Close()

	garbage := []wire.Record{
		{Key: []byte("garbage"), Value: []byte("garbage")},                               // unknown key version 0x6761
		{Key: []byte{0, 1, 0xff}, Value: []byte("x")},                                    // offset commit key that does not decode
		{Key: offsetCommitKey("g", topicPartition{"orders", 5}), Value: []byte{0, 3, 1}}, // value that does not decode
		{Key: groupMetadataKey("g2"), Value: []byte{0, 9, 9, 9}},                         // group metadata that does not decode
		{Key: []byte{0}}, // key too short
	}
	batch, err := encodeBatch(time.Now(), garbage)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.get(0).Append(batch); err != nil {
		t.Fatal(err)
	}
	// A batch whose records do not decode at all (a record count that
	// lies), with a valid CRC so that only the coordinator notices.
	bad, err := encodeBatch(time.Now(), []wire.Record{{Key: []byte("k"), Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint32(bad[57:], 1000)
	wire.RecomputeCRC(bad)
	if err := l.get(0).Append(bad); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	c2 := newTestCoordinator(t, l, func(o *Options) {
		o.NumPartitions = 1
		o.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: &out}, nil))
	})
	resp = c2.OffsetCommit(ctx, commitReq("g", "", -1, "orders", map[int32]int64{1: 11}))
	wantCode(t, "commit after loading garbage", commitCodes(resp)[0], nil)
	if got := fetchAll(t, c2, "g"); got["orders/0"] != 10 || got["orders/1"] != 11 || len(got) != 2 {
		t.Fatalf("offsets after loading garbage: %v, want orders/0=10 orders/1=11", got)
	}
	c2.Close()
	logged := out.String()
	// One ERROR per record that does not decode and one for the bad
	// batch; the unknown key version gets one WARN, as in Kafka.
	if n, want := strings.Count(logged, "level=ERROR msg=\"coordinator: skipped a record that does not decode"), (len(garbage)-1)+1; n != want {
		t.Errorf("%d skip lines, want %d; log:\n%s", n, want, logged)
	}
	if !strings.Contains(logged, "level=WARN msg=\"coordinator: ignored records of unknown types") || !strings.Contains(logged, "first_offset=1") {
		t.Errorf("no WARN for the unknown key version at offset 1:\n%s", logged)
	}
	if !strings.Contains(logged, "offset=6 err=") {
		t.Errorf("skip lines are not errors naming the offset:\n%s", logged)
	}

	c3 := newTestCoordinator(t, l, func(o *Options) { o.NumPartitions = 1 })
	if got := fetchAll(t, c3, "g"); got["orders/0"] != 10 || got["orders/1"] != 11 {
		t.Fatalf("offsets after a second restart: %v", got)
	}
}

// syncWriter serialises writes of concurrent shard goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func TestFindCoordinator(t *testing.T) {
	c := newTestCoordinator(t, newLogs())
	self := Node{ID: 1, Host: "broker", Port: 9092}
	r := c.FindCoordinator(&kmsg.FindCoordinatorRequest{Version: 3, CoordinatorKey: "g"}, self)
	if r.ErrorCode != 0 || r.NodeID != 1 || r.Host != "broker" || r.Port != 9092 {
		t.Fatalf("v3 %+v", r)
	}
	c.UnloadPartition(PartitionFor("x", testPartitions))
	r = c.FindCoordinator(&kmsg.FindCoordinatorRequest{Version: 4, CoordinatorKeys: []string{"g", "x"}}, self)
	if len(r.Coordinators) != 2 || r.Coordinators[0].NodeID != 1 || r.Coordinators[1].ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("v4 %+v", r.Coordinators)
	}
	r = c.FindCoordinator(&kmsg.FindCoordinatorRequest{Version: 4, CoordinatorType: 5, CoordinatorKeys: []string{"g"}}, self)
	wantCode(t, "bad key type", r.Coordinators[0].ErrorCode, kerr.InvalidRequest)
}

// fakeTopics resolves one topic ID.
type fakeTopics struct{}

var ordersID = [16]byte{1, 2, 3}

func (fakeTopics) TopicName(id [16]byte) (string, bool) { return "orders", id == ordersID }
func (fakeTopics) TopicID(name string) ([16]byte, bool) { return ordersID, name == "orders" }

func TestTopicIDsV10(t *testing.T) {
	c := newTestCoordinator(t, newLogs(), func(o *Options) { o.Topics = fakeTopics{} })
	ctx := t.Context()
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 10
	r.Group = "g"
	r.Topics = []kmsg.OffsetCommitRequestTopic{
		{TopicID: ordersID, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 42}}},
		{TopicID: [16]byte{9}, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}},
	}
	resp := c.OffsetCommit(ctx, r)
	codes := commitCodes(resp)
	wantCode(t, "known id", codes[0], nil)
	wantCode(t, "unknown id", codes[1], kerr.UnknownTopicID)
	if got := fetchAll(t, c, "g"); got["orders/0"] != 42 {
		t.Fatalf("fetch by name %v", got)
	}
	f := kmsg.NewPtrOffsetFetchRequest()
	f.Version = 10
	f.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}, {Group: "other", Topics: []kmsg.OffsetFetchRequestGroupTopic{{TopicID: ordersID, Partitions: []int32{0}}}}}
	fr := c.OffsetFetch(ctx, f)
	if len(fr.Groups) != 2 || fr.Groups[0].Topics[0].TopicID != ordersID || fr.Groups[0].Topics[0].Partitions[0].Offset != 42 ||
		fr.Groups[1].Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("v10 fetch %+v", fr.Groups)
	}
}

// TestGroupRecordOverMaxMessageBytes is the regression test for issue 11
// item 17: a JoinGroup with 50 MiB of protocol metadata was stored as a
// 52 MB __consumer_offsets record, which every later load then had to
// read. As Kafka's CoordinatorRuntime does, a write larger than the
// offsets topic's max.message.bytes is refused before it reaches the log,
// and the client gets UNKNOWN_SERVER_ERROR (Kafka's mapping of
// RECORD_LIST_TOO_LARGE / MESSAGE_TOO_LARGE for coordinator writes): the
// leader's SyncGroup, which writes the group's metadata with the members'
// subscriptions, and an OffsetCommit too large for one batch. The join
// itself writes nothing for a non-empty group, in Kafka as here.
func TestGroupRecordOverMaxMessageBytes(t *testing.T) {
	l := newLogs()
	const limit = 10_000
	c := newTestCoordinator(t, l, func(o *Options) { o.NumPartitions = 1; o.MaxMessageBytes = limit })
	ctx := t.Context()
	big := joinReq("g", "")
	big.Protocols[0].Metadata = make([]byte, 2*limit)
	r := c.JoinGroup(ctx, Client{ID: "cl", Host: "/h"}, big)
	wantCode(t, "first join", r.ErrorCode, kerr.MemberIDRequired)
	big.MemberID = r.MemberID
	r = c.JoinGroup(ctx, Client{ID: "cl", Host: "/h"}, big)
	wantCode(t, "join", r.ErrorCode, nil)
	before := l.get(0).LogEndOffset()
	s := kmsg.NewPtrSyncGroupRequest()
	s.Version = 5
	s.Group, s.MemberID, s.Generation = "g", r.MemberID, r.Generation
	s.ProtocolType, s.Protocol = ptr("consumer"), ptr("range")
	s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: r.MemberID, MemberAssignment: []byte("all")}}
	wantCode(t, "sync of a group whose metadata is over the limit", c.SyncGroup(ctx, s).ErrorCode, kerr.UnknownServerError)
	if after := l.get(0).LogEndOffset(); after != before {
		t.Fatalf("log end %d -> %d: the oversized record was written", before, after)
	}

	// A group of small members still works, and a commit over the limit is refused.
	member, gen := joinAndSync(t, c, "small", "orders")
	offsets := map[int32]int64{}
	for p := range int32(500) {
		offsets[p] = int64(p)
	}
	for _, code := range commitCodes(c.OffsetCommit(ctx, commitReq("small", member, gen, "orders", offsets))) {
		wantCode(t, "commit of 500 partitions in one batch over the limit", code, kerr.UnknownServerError)
	}
	for _, code := range commitCodes(c.OffsetCommit(ctx, commitReq("small", member, gen, "orders", map[int32]int64{0: 1}))) {
		wantCode(t, "small commit", code, nil)
	}
}
