package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// groupEnv is an admin test env with a group coordinator over real
// __consumer_offsets logs.
type groupEnv struct {
	*adminEnv
	c *coordinator.Coordinator
}

func newGroupEnv(t *testing.T) *groupEnv {
	t.Helper()
	e := newAdminEnv(t)
	// FindCoordinator answers the leader of the key's partition.
	if _, err := e.d.Controller.CreateInternalTopic(coordinator.OffsetsTopic, 3, 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	c, err := coordinator.New(coordinator.Options{
		NumPartitions:         3,
		InitialRebalanceDelay: -1,
		OpenLog: func(p int32) (coordinator.Log, error) {
			tp := storage.TopicPartition{Topic: coordinator.OffsetsTopic, Partition: p}
			if l, ok := e.d.Logs.Log(tp); ok {
				return coordinator.StorageLog(l), nil
			}
			l, err := e.d.Logs.CreateLog(tp, [16]byte{}, storage.DefaultLogConfig())
			if err != nil {
				return nil, err
			}
			return coordinator.StorageLog(l), nil
		},
	})
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
	e.d.Groups = c
	return &groupEnv{adminEnv: e, c: c}
}

// groupCall sends req at version v to handle through the wire encoding and
// decodes the response back, like adminEnv.call but without the dispatch
// table (the group rows are added to it by the lead).
func groupCall(t *testing.T, d *Deps, handle Handler, req kmsg.Request, v int16) kmsg.Response {
	t.Helper()
	req.SetVersion(v)
	decoded := kmsg.RequestForKey(req.Key())
	decoded.SetVersion(v)
	if err := decoded.ReadFrom(req.AppendTo(nil)); err != nil {
		t.Fatalf("decoding request v%d: %v", v, err)
	}
	client := "test-client"
	resp, err := handle(d, &Request{
		Header:     wire.RequestHeader{APIKey: req.Key(), APIVersion: v, ClientID: &client},
		Body:       decoded,
		ClientHost: "127.0.0.1:50000",
	})
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	resp.SetVersion(v)
	back := decoded.ResponseKind()
	back.SetVersion(v)
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatalf("decoding response v%d: %v", v, err)
	}
	return back
}

func TestFindCoordinator(t *testing.T) {
	e := newGroupEnv(t)
	for v := int16(0); v <= 6; v++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = "g"
		req.CoordinatorKeys = []string{"g", "h"}
		resp := groupCall(t, e.d, handleFindCoordinator, req, v).(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			if resp.ErrorCode != 0 || resp.NodeID != e.d.Config.NodeID || resp.Host != "localhost" || resp.Port != 9092 {
				t.Errorf("v%d: %+v", v, resp)
			}
			continue
		}
		if len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "h" || resp.Coordinators[1].NodeID != e.d.Config.NodeID ||
			resp.Coordinators[1].Port != 9092 || resp.Coordinators[1].ErrorCode != 0 {
			t.Errorf("v%d: %+v", v, resp.Coordinators)
		}
	}
}

// TestGroupHandlersWithoutCoordinator: with no coordinator wired in every
// group API answers COORDINATOR_NOT_AVAILABLE, at its highest version.
func TestGroupHandlersWithoutCoordinator(t *testing.T) {
	e := newAdminEnv(t)
	na := kerr.CoordinatorNotAvailable.Code
	fc := groupCall(t, e.d, handleFindCoordinator, &kmsg.FindCoordinatorRequest{CoordinatorKeys: []string{"g"}}, 6).(*kmsg.FindCoordinatorResponse)
	jg := groupCall(t, e.d, handleJoinGroup, &kmsg.JoinGroupRequest{Group: "g"}, 9).(*kmsg.JoinGroupResponse)
	sg := groupCall(t, e.d, handleSyncGroup, &kmsg.SyncGroupRequest{Group: "g", ProtocolType: kmsg.StringPtr("consumer"), Protocol: kmsg.StringPtr("range")}, 5).(*kmsg.SyncGroupResponse)
	hb := groupCall(t, e.d, handleHeartbeat, &kmsg.HeartbeatRequest{Group: "g"}, 4).(*kmsg.HeartbeatResponse)
	lg := groupCall(t, e.d, handleLeaveGroup, &kmsg.LeaveGroupRequest{Group: "g"}, 5).(*kmsg.LeaveGroupResponse)
	dg := groupCall(t, e.d, handleDescribeGroups, &kmsg.DescribeGroupsRequest{Groups: []string{"g"}}, 6).(*kmsg.DescribeGroupsResponse)
	ls := groupCall(t, e.d, handleListGroups, &kmsg.ListGroupsRequest{}, 5).(*kmsg.ListGroupsResponse)
	del := groupCall(t, e.d, handleDeleteGroups, &kmsg.DeleteGroupsRequest{Groups: []string{"g"}}, 3).(*kmsg.DeleteGroupsResponse)
	od := groupCall(t, e.d, handleOffsetDelete, &kmsg.OffsetDeleteRequest{Group: "g"}, 0).(*kmsg.OffsetDeleteResponse)
	oc := groupCall(t, e.d, handleOffsetCommit, &kmsg.OffsetCommitRequest{Group: "g", Topics: []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{}}}}}, 9).(*kmsg.OffsetCommitResponse)
	of := groupCall(t, e.d, handleOffsetFetch, &kmsg.OffsetFetchRequest{Groups: []kmsg.OffsetFetchRequestGroup{{Group: "g"}}}, 9).(*kmsg.OffsetFetchResponse)
	for name, code := range map[string]int16{
		"FindCoordinator": fc.Coordinators[0].ErrorCode, "JoinGroup": jg.ErrorCode, "SyncGroup": sg.ErrorCode,
		"Heartbeat": hb.ErrorCode, "LeaveGroup": lg.ErrorCode, "DescribeGroups": dg.Groups[0].ErrorCode,
		"ListGroups": ls.ErrorCode, "DeleteGroups": del.Groups[0].ErrorCode, "OffsetDelete": od.ErrorCode,
		"OffsetCommit": oc.Topics[0].Partitions[0].ErrorCode, "OffsetFetch": of.Groups[0].ErrorCode,
	} {
		if code != na {
			t.Errorf("%s: error %d, want COORDINATOR_NOT_AVAILABLE", name, code)
		}
	}
}
