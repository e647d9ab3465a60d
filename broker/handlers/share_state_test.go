package handlers

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller/acl"
	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/coordinator/sharecoord"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
)

// shareLog opens the one __share_group_state partition of these tests.
func shareLog(t *testing.T) *storage.Log {
	t.Helper()
	l, err := storage.OpenLog(storage.LogOptions{FS: vfs.NewMem(), Dir: "/data/" + share.StateTopic + "-0", Config: storage.DefaultLogConfig()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// newShareCoordinator is a coordinator of one partition on l, loaded when
// load is set.
func newShareCoordinator(t *testing.T, l *storage.Log, load bool) *sharecoord.Coordinator {
	t.Helper()
	c, err := sharecoord.New(sharecoord.Options{NumPartitions: 1, Log: func(int32) (coordinator.Log, bool) { return coordinator.StorageLog(l), true }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if load {
		if err := c.LoadPartition(0); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestSharePersisterOverTheWire: node 1's Persister calls node 2, which
// leads the state partition, through the handlers of APIs 83-87 (each
// request and response encoded at the highest version served): the
// answers map back to the Persister's results, Kafka's errors included.
// Then the partition moves to node 1 (node 2 unloads it, node 1 loads
// it): the calls in between get NOT_COORDINATOR and are retried until
// node 1's own coordinator answers, with the state as written.
func TestSharePersisterOverTheWire(t *testing.T) {
	e := newAdminEnv(t)
	l := shareLog(t)
	node1 := newShareCoordinator(t, l, false)
	node2 := newShareCoordinator(t, l, true)
	e.d.ShareCoordinator = node2
	var leader atomic.Int32
	leader.Store(2)
	var remoteCalls, moveAfter atomic.Int32
	p, err := sharecoord.NewPersister(sharecoord.RouterOptions{
		Local:   node1,
		NodeID:  1,
		Leaders: func() []int32 { return []int32{leader.Load()} },
		Send: func(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
			if broker != 2 {
				t.Errorf("sent %s to broker %d", kmsg.NameForKey(req.Key()), broker)
			}
			n := remoteCalls.Add(1)
			v := req.MaxVersion()
			for _, en := range Table() {
				if en.Key == req.Key() {
					v = en.MaxVersion
				}
			}
			resp := e.call(t, req, v)
			if m := moveAfter.Load(); m != 0 && n >= m && leader.Load() == 2 {
				// The new leader loads the partition (in the
				// background: LOAD_IN_PROGRESS meanwhile).
				if err := node1.LoadPartition(0); err != nil {
					t.Error(err)
				}
				leader.Store(1)
			}
			return resp, nil
		},
		RetryBackoff: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	k := share.Key{Group: "g", Partition: 0}
	copy(k.TopicID[:], "wire-test-topic!")

	if _, ok, err := p.Read(ctx, k, 0); ok || err != nil {
		t.Fatalf("Read before Initialize: ok %v err %v", ok, err)
	}
	if _, ok, err := p.ReadSummary(ctx, k); ok || err != nil {
		t.Fatalf("ReadSummary before Initialize: ok %v err %v", ok, err)
	}
	if err := p.Write(ctx, k, share.State{}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("Write before Initialize: %v, want INVALID_REQUEST", err)
	}
	if err := p.Initialize(ctx, k, 2, 7); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	if err := p.Initialize(ctx, k, 1, 7); !errors.Is(err, kerr.FencedStateEpoch) {
		t.Fatalf("Initialize with an older state epoch: %v, want FENCED_STATE_EPOCH", err)
	}
	want := share.State{StateEpoch: 2, LeaderEpoch: 4, StartOffset: 7, Batches: []share.Batch{
		{FirstOffset: 7, LastOffset: 8, DeliveryState: share.StateArchived, DeliveryCount: 5},
		{FirstOffset: 9, LastOffset: 12, DeliveryState: share.StateAvailable, DeliveryCount: 1},
	}}
	if st, ok, err := p.Read(ctx, k, 4); err != nil || !ok || st.StartOffset != 7 || st.StateEpoch != 2 {
		t.Fatalf("Read after Initialize: %+v %v %v", st, ok, err)
	}
	if err := p.Write(ctx, k, want); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if st, ok, err := p.Read(ctx, k, 4); err != nil || !ok || !reflect.DeepEqual(st, want) {
		t.Fatalf("Read = %+v %v %v, want %+v", st, ok, err, want)
	}
	stale := want
	stale.LeaderEpoch = 3
	if err := p.Write(ctx, k, stale); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("Write from an older leader: %v, want FENCED_LEADER_EPOCH", err)
	}
	if _, _, err := p.Read(ctx, k, 3); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("Read from an older leader: %v, want FENCED_LEADER_EPOCH", err)
	}
	if st, ok, err := p.ReadSummary(ctx, k); err != nil || !ok || st.StartOffset != 7 || st.LeaderEpoch != 4 || st.StateEpoch != 2 {
		t.Fatalf("ReadSummary: %+v %v %v", st, ok, err)
	}
	if got := remoteCalls.Load(); got < 10 {
		t.Fatalf("%d calls went over the wire, want every one", got)
	}

	// The partition moves: node 2 stops serving it, node 1 loads it from
	// the log. Calls meanwhile get NOT_COORDINATOR and are retried.
	node2.UnloadPartition(0)
	moveAfter.Store(remoteCalls.Load() + 3)
	st, ok, err := p.Read(ctx, k, 5)
	want.LeaderEpoch = 5
	if err != nil || !ok || !reflect.DeepEqual(st, want) {
		t.Fatalf("Read across the move = %+v %v %v, want %+v", st, ok, err, want)
	}
	if err := p.Delete(ctx, k); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, ok, err := node1.ReadSummary(ctx, k); ok || err != nil {
		t.Fatalf("ReadSummary after Delete: ok %v err %v", ok, err)
	}
	if n, m := remoteCalls.Load(), moveAfter.Load(); n < m {
		t.Fatalf("only %d calls before the move, want %d NOT_COORDINATOR answers first", n, m)
	}
}

// TestShareStateDeliveryCompleteCount: WriteShareGroupState v1 carries
// delivery_complete_count, which ReadShareGroupStateSummary v1 answers;
// Initialize sets it to 0 (-1 without a start offset), as Kafka 4.4.
func TestShareStateDeliveryCompleteCount(t *testing.T) {
	e := newAdminEnv(t)
	e.d.ShareCoordinator = newShareCoordinator(t, shareLog(t), true)
	var id [16]byte
	copy(id[:], "dcc-test-topic-!")
	summary := func() kmsg.ReadShareGroupStateSummaryResponseTopicPartition {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			r := kmsg.NewPtrReadShareGroupStateSummaryRequest()
			r.GroupID = "g"
			r.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: id, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}}}}
			p := e.call(t, r, 1).(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[0]
			if p.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
				return p
			}
			if time.Now().After(deadline) {
				t.Fatal("the share coordinator never loaded its partition")
			}
		}
	}
	if p := summary(); p.ErrorCode != 0 || p.StartOffset != -1 || p.StateEpoch != 0 || p.LeaderEpoch != 0 || p.DeliveryCompleteCount != -1 {
		t.Fatalf("summary before Initialize: %+v", p)
	}
	in := kmsg.NewPtrInitializeShareGroupStateRequest()
	in.GroupID = "g"
	in.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0, StateEpoch: 1, StartOffset: 3}}}}
	if p := e.call(t, in, 0).(*kmsg.InitializeShareGroupStateResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 {
		t.Fatalf("Initialize: %+v", p)
	}
	if p := summary(); p.StartOffset != 3 || p.StateEpoch != 1 || p.DeliveryCompleteCount != 0 {
		t.Fatalf("summary after Initialize: %+v", p)
	}
	for v := int16(0); v <= 1; v++ {
		w := kmsg.NewPtrWriteShareGroupStateRequest()
		w.GroupID = "g"
		wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		wp.StateEpoch, wp.LeaderEpoch, wp.StartOffset, wp.DeliveryCompleteCount = 1, 0, 10, 9
		w.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{wp}}}
		if p := e.call(t, w, v).(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 {
			t.Fatalf("Write v%d: %+v", v, p)
		}
		want := int32(-1) // v0 has no count
		if v == 1 {
			want = 9
		}
		if p := summary(); p.StartOffset != 10 || p.DeliveryCompleteCount != want {
			t.Fatalf("summary after Write v%d: %+v, want count %d", v, p, want)
		}
	}
}

// TestShareStateAuthorization: APIs 83-87 and FindCoordinator SHARE need
// CLUSTER_ACTION, as Kafka's; other principals get
// CLUSTER_AUTHORIZATION_FAILED for every partition or key.
func TestShareStateAuthorization(t *testing.T) {
	e := newAdminEnv(t)
	e.d.ShareCoordinator = newShareCoordinator(t, shareLog(t), true)
	e.d.Authz = &Authz{Authorizer: acl.Authorizer{SuperUsers: []string{"User:broker"}}}
	var id [16]byte
	copy(id[:], "authz-test-topic")
	denied := kerr.ClusterAuthorizationFailed.Code

	read := kmsg.NewPtrReadShareGroupStateRequest()
	read.GroupID = "g"
	read.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}
	for _, p := range e.callAs(t, "User:bob", read, 0).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions {
		if p.ErrorCode != denied {
			t.Errorf("ReadShareGroupState as bob, partition %d: code %d", p.Partition, p.ErrorCode)
		}
	}
	if p := e.callAs(t, "User:broker", read, 0).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]; p.ErrorCode == denied {
		t.Errorf("ReadShareGroupState as the super user: %+v", p)
	}
	reqs := []kmsg.Request{
		&kmsg.InitializeShareGroupStateRequest{GroupID: "g", Topics: []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{}}}}},
		&kmsg.WriteShareGroupStateRequest{GroupID: "g", Topics: []kmsg.WriteShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{{}}}}},
		&kmsg.DeleteShareGroupStateRequest{GroupID: "g", Topics: []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{}}}}},
		&kmsg.ReadShareGroupStateSummaryRequest{GroupID: "g", Topics: []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: id, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{}}}}},
	}
	for _, req := range reqs {
		var code int16
		switch r := e.callAs(t, "User:bob", req, 0).(type) {
		case *kmsg.InitializeShareGroupStateResponse:
			code = r.Topics[0].Partitions[0].ErrorCode
		case *kmsg.WriteShareGroupStateResponse:
			code = r.Topics[0].Partitions[0].ErrorCode
		case *kmsg.DeleteShareGroupStateResponse:
			code = r.Topics[0].Partitions[0].ErrorCode
		case *kmsg.ReadShareGroupStateSummaryResponse:
			code = r.Topics[0].Partitions[0].ErrorCode
		}
		if code != denied {
			t.Errorf("%s as bob: code %d", kmsg.NameForKey(req.Key()), code)
		}
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 2, []string{sharecoord.CoordinatorKey(share.Key{Group: "g", TopicID: id})}
	if c := e.callAs(t, "User:bob", fc, 6).(*kmsg.FindCoordinatorResponse).Coordinators[0]; c.ErrorCode != denied {
		t.Errorf("FindCoordinator SHARE as bob: %+v", c)
	}
	if c := e.callAs(t, "User:bob", fc, 5).(*kmsg.FindCoordinatorResponse).Coordinators[0]; c.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("FindCoordinator SHARE v5 as bob: %+v, want INVALID_REQUEST", c)
	}
	bad := kmsg.NewPtrFindCoordinatorRequest()
	bad.CoordinatorType, bad.CoordinatorKeys = 2, []string{"bad-key", "g:topicName:0"}
	for _, c := range e.callAs(t, "User:broker", bad, 6).(*kmsg.FindCoordinatorResponse).Coordinators {
		if c.ErrorCode != kerr.InvalidRequest.Code || c.ErrorMessage == nil || *c.ErrorMessage != "" || c.NodeID != -1 || c.Port != -1 {
			t.Errorf("FindCoordinator SHARE with key %q: %+v, want INVALID_REQUEST with an empty message, as Kafka 4.4", c.Key, c)
		}
	}
}
