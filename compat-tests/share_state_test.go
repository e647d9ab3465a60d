// This file checks the share coordinator (KIP-932) on the real binary
// through its inter-broker APIs (83-87), as another broker calls them:
// share-partition state written, the broker killed and restarted, the
// state read back; and, on three processes, the leader of the state's
// __share_group_state partition killed, the state read and written again
// through the new leader.

package compattests

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// shareStateClient sends share state requests to chosen brokers.
type shareStateClient struct {
	t     *testing.T
	cl    *kgo.Client
	group string
	topic [16]byte
}

func (c *shareStateClient) key() string {
	return fmt.Sprintf("%s:%s:0", c.group, base64.RawURLEncoding.EncodeToString(c.topic[:]))
}

// coordinator asks every seed in turn (FindCoordinator v6, key type 2)
// until one answers a coordinator other than avoid, then waits until that
// coordinator has loaded the key (a summary read answers without a
// retriable error), and returns its node id.
func (c *shareStateClient) coordinator(ctx context.Context, avoid int32) int32 {
	c.t.Helper()
	var node int32 = -1
	var last error
	if !pollUntil(90*time.Second, func() bool {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version, fc.CoordinatorType, fc.CoordinatorKeys = 6, 2, []string{c.key()}
		resp, err := fc.RequestWith(ctx, c.cl)
		if err != nil {
			last = err
			return false
		}
		if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 || resp.Coordinators[0].NodeID == avoid {
			last = fmt.Errorf("coordinators %+v", resp.Coordinators)
			return false
		}
		node = resp.Coordinators[0].NodeID
		_, code, err := c.summary(ctx, node)
		if err != nil || retriableShareCode(code) {
			last = fmt.Errorf("summary from %d: code %d, %v", node, code, err)
			return false
		}
		return true
	}) {
		c.t.Fatalf("no share coordinator for %s (other than %d): %v", c.key(), avoid, last)
	}
	return node
}

func retriableShareCode(code int16) bool {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.RequestTimedOut.Code:
		return true
	}
	return false
}

func (c *shareStateClient) summary(ctx context.Context, node int32) (kmsg.ReadShareGroupStateSummaryResponseTopicPartition, int16, error) {
	r := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	r.Version = 1
	r.GroupID = c.group
	r.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: c.topic, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}}}}
	resp, err := r.RequestWith(ctx, c.cl.Broker(int(node)))
	if err != nil {
		return kmsg.ReadShareGroupStateSummaryResponseTopicPartition{}, 0, err
	}
	p := resp.Topics[0].Partitions[0]
	return p, p.ErrorCode, nil
}

func (c *shareStateClient) initialize(ctx context.Context, node, stateEpoch int32, start int64) int16 {
	c.t.Helper()
	r := kmsg.NewPtrInitializeShareGroupStateRequest()
	r.GroupID = c.group
	r.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: c.topic, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0, StateEpoch: stateEpoch, StartOffset: start}}}}
	resp, err := r.RequestWith(ctx, c.cl.Broker(int(node)))
	if err != nil {
		c.t.Fatalf("InitializeShareGroupState: %v", err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// shareState is what ReadShareGroupState answers, for comparing.
type shareState struct {
	Code       int16
	StateEpoch int32
	Start      int64
	Batches    []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch
}

// read reads the state from node at leaderEpoch, retrying answers that
// are retriable (a write of the new leader epoch waits for the ISR) for
// up to a minute.
func (c *shareStateClient) read(ctx context.Context, node, leaderEpoch int32) shareState {
	c.t.Helper()
	var st shareState
	pollUntil(60*time.Second, func() bool {
		st = c.readOnce(ctx, node, leaderEpoch)
		return !retriableShareCode(st.Code)
	})
	return st
}

func (c *shareStateClient) readOnce(ctx context.Context, node, leaderEpoch int32) shareState {
	c.t.Helper()
	r := kmsg.NewPtrReadShareGroupStateRequest()
	r.GroupID = c.group
	r.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: c.topic, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0, LeaderEpoch: leaderEpoch}}}}
	resp, err := r.RequestWith(ctx, c.cl.Broker(int(node)))
	if err != nil {
		c.t.Fatalf("ReadShareGroupState: %v", err)
	}
	p := resp.Topics[0].Partitions[0]
	return shareState{Code: p.ErrorCode, StateEpoch: p.StateEpoch, Start: p.StartOffset, Batches: p.StateBatches}
}

// write writes the state through node, retrying retriable answers for up
// to a minute.
func (c *shareStateClient) write(ctx context.Context, node, stateEpoch, leaderEpoch int32, start int64, batches []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch) int16 {
	c.t.Helper()
	var code int16
	pollUntil(60*time.Second, func() bool {
		code = c.writeOnce(ctx, node, stateEpoch, leaderEpoch, start, batches)
		return !retriableShareCode(code)
	})
	return code
}

func (c *shareStateClient) writeOnce(ctx context.Context, node, stateEpoch, leaderEpoch int32, start int64, batches []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch) int16 {
	c.t.Helper()
	r := kmsg.NewPtrWriteShareGroupStateRequest()
	r.GroupID = c.group
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset = 0, stateEpoch, leaderEpoch, start
	for _, b := range batches {
		p.StateBatches = append(p.StateBatches, kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount})
	}
	r.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: c.topic, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{p}}}
	resp, err := r.RequestWith(ctx, c.cl.Broker(int(node)))
	if err != nil {
		c.t.Fatalf("WriteShareGroupState: %v", err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func wantShareCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if want == nil && got != 0 || want != nil && got != want.Code {
		t.Fatalf("%s: error code %d (%v), want %v", what, got, kerr.ErrorForCode(got), want)
	}
}

func testBatches(start int64) []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch {
	return []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{
		{FirstOffset: start, LastOffset: start + 4, DeliveryState: 2, DeliveryCount: 1},
		{FirstOffset: start + 5, LastOffset: start + 5, DeliveryState: 0, DeliveryCount: 3},
		{FirstOffset: start + 6, LastOffset: start + 9, DeliveryState: 4, DeliveryCount: 5},
	}
}

// TestShareStateSurvivesRestart: share-partition state initialized and
// written, the broker killed (SIGKILL) and restarted: the state reads back
// as written, and the leader epoch recorded before the kill still fences.
func TestShareStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{Overrides: map[string]string{
		"share.coordinator.state.topic.num.partitions":     "3",
		"share.coordinator.state.topic.replication.factor": "1",
		"share.coordinator.state.topic.min.isr":            "1",
	}})
	ctx := testContext(t, 3*time.Minute)
	cl, adm := newAdmin(t, b.Addr)
	id := createTopicKadm(t, ctx, adm, "share-restart", 1, nil)
	c := &shareStateClient{t: t, cl: cl, group: "sg-restart", topic: id}

	node := c.coordinator(ctx, -1)
	wantShareCode(t, "Initialize", c.initialize(ctx, node, 1, -1), nil)
	if st := c.read(ctx, node, 4); st.Code != 0 || st.StateEpoch != 1 || st.Start != -1 || len(st.Batches) != 0 {
		t.Fatalf("Read after Initialize: %+v", st)
	}
	wantShareCode(t, "Write", c.write(ctx, node, 1, 4, 100, testBatches(100)), nil)
	want := shareState{StateEpoch: 1, Start: 100, Batches: testBatches(100)}

	// The state topic is internal, as Kafka's: Metadata says so and a
	// client's Produce to it is refused.
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	internal := false
	for _, tp := range md.Topics {
		if tp.Topic != nil && *tp.Topic == "__share_group_state" {
			internal = tp.IsInternal
		}
	}
	if !internal {
		t.Fatalf("Metadata does not list __share_group_state as internal")
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "__share_group_state", Value: []byte("garbage")}).FirstErr(); !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("Produce to __share_group_state: %v, want INVALID_TOPIC_EXCEPTION", err)
	}

	b.Kill(t)
	b.Restart(t)
	requireCleanStart(t, b)
	node = c.coordinator(ctx, -1)
	if got := c.read(ctx, node, 4); !reflect.DeepEqual(got, want) {
		t.Fatalf("Read after the restart = %+v, want %+v", got, want)
	}
	if got := c.read(ctx, node, 3); got.Code != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("Read with an older leader epoch after the restart: %+v, want FENCED_LEADER_EPOCH", got)
	}
}

// TestShareStateLeaderKilled: three processes, the state topic with
// replication factor 3 (min.insync.replicas 2). State written through the
// leader of the key's __share_group_state partition, that leader killed
// (SIGKILL): FindCoordinator names another node, which answers the state
// as written, takes a write at a newer leader epoch and fences the older
// one.
func TestShareStateLeaderKilled(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t, 3, harness.ClusterOptions{Env: []string{
		"KAFKA_BROKER_SESSION_TIMEOUT_MS=3000", "KAFKA_BROKER_HEARTBEAT_INTERVAL_MS=500",
		"KAFKA_SHARE_COORDINATOR_STATE_TOPIC_NUM_PARTITIONS=3",
	}})
	ctx := testContext(t, 4*time.Minute)
	cl, adm := newAdmin(t, c.Addrs()[0], kgo.SeedBrokers(c.Addrs()...))
	var id [16]byte
	if !pollUntil(60*time.Second, func() bool {
		resp, err := adm.CreateTopic(ctx, 1, 3, nil, "share-kill")
		if err == nil && resp.Err == nil {
			id = resp.ID
			return true
		}
		if err == nil && resp.Err == kerr.TopicAlreadyExists {
			td, derr := adm.ListTopics(ctx, "share-kill")
			if derr == nil {
				id = td["share-kill"].ID
				return id != [16]byte{}
			}
		}
		return false
	}) {
		t.Fatal("cannot create topic share-kill")
	}
	s := &shareStateClient{t: t, cl: cl, group: "sg-kill", topic: id}
	leader := s.coordinator(ctx, -1)
	wantShareCode(t, "Initialize", s.initialize(ctx, leader, 0, -1), nil)
	if st := s.read(ctx, leader, 1); st.Code != 0 {
		t.Fatalf("Read after Initialize: %+v", st)
	}
	wantShareCode(t, "Write", s.write(ctx, leader, 0, 1, 40, testBatches(40)), nil)
	want := shareState{Start: 40, Batches: testBatches(40)}

	t.Logf("killing node %d, the share coordinator of %s", leader, s.key())
	c.Brokers[leader-1].Kill(t)
	next := s.coordinator(ctx, leader)
	t.Logf("node %d took over", next)
	if got := s.read(ctx, next, 2); !reflect.DeepEqual(got, want) {
		t.Fatalf("Read from the new coordinator = %+v, want %+v", got, want)
	}
	wantShareCode(t, "Write at the new leader epoch", s.write(ctx, next, 0, 2, 50, testBatches(50)), nil)
	wantShareCode(t, "Write at the old leader epoch", s.write(ctx, next, 0, 1, 60, nil), kerr.FencedLeaderEpoch)
	if got, want := s.read(ctx, next, 2), (shareState{Start: 50, Batches: testBatches(50)}); !reflect.DeepEqual(got, want) {
		t.Fatalf("Read after the write = %+v, want %+v", got, want)
	}
}
