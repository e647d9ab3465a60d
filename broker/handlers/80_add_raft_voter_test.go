package handlers

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/quorum"
	"github.com/samsa-broker/samsa/wire"
)

// fakeVoters records the changes asked of it and answers err.
type fakeVoters struct {
	added   []quorum.Member
	removed [][16]byte
	updated []quorum.Member
	// unregistered are the ids UnregisterController was asked for.
	unregistered []int32
	err          error
	// leader, epoch and notLeading are LeaderAndEpoch's answer (this
	// node, node 1, leads unless notLeading).
	epoch      int64
	notLeading bool
}

func (f *fakeVoters) UpdateVoter(_ context.Context, _ int32, m quorum.Member) error {
	f.updated = append(f.updated, m)
	return f.err
}

func (f *fakeVoters) LeaderAndEpoch() (int32, int64, quorum.Member, bool) {
	return 1, f.epoch, quorum.Member{Addr: "c1:9093"}, !f.notLeading
}

func (f *fakeVoters) AddVoter(_ context.Context, _ int32, m quorum.Member) error {
	f.added = append(f.added, m)
	return f.err
}

func (f *fakeVoters) RemoveVoter(_ context.Context, _ int32, dir [16]byte) error {
	f.removed = append(f.removed, dir)
	return f.err
}

func (f *fakeVoters) Members() (map[int32]quorum.Member, map[int32]bool, error) {
	return map[int32]quorum.Member{1: {Addr: "c1:9093"}, 4: {Addr: "c4:9093", Listener: "CONTROLLER"}, 5: {Addr: "b5:9092"},
			6: {Addr: "c6:9093", Listener: "CONTROLLER"}, 7: {Addr: "c7:9093", Listener: "CONTROLLER", Unregistered: true}},
		map[int32]bool{1: true, 4: true}, nil
}

// Controllers: the voters and node 6, a controller removed from the
// voters; not 5 (a broker-only observer) nor 7 (unregistered).
func (f *fakeVoters) Controllers() (map[int32]quorum.Member, error) {
	return map[int32]quorum.Member{1: {Addr: "c1:9093"}, 4: {Addr: "c4:9093", Listener: "CONTROLLER"}, 6: {Addr: "c6:9093", Listener: "CONTROLLER"}}, nil
}

func (f *fakeVoters) UnregisterController(_ context.Context, id int32) error {
	f.unregistered = append(f.unregistered, id)
	return f.err
}

// TestRaftVoterHandlers: AddRaftVoter and RemoveRaftVoter check what
// Kafka checks first (cluster id, then a valid voter key, then the
// controller listener) and map the quorum's errors to Kafka's codes.
func TestRaftVoterHandlers(t *testing.T) {
	e := newAdminEnv(t, "controller.listener.names=CONTROLLER")
	f := &fakeVoters{}
	e.d.Voters = f
	wrong := "other"
	ctrl := []kmsg.AddRaftVoterRequestListener{{Name: "controller", Host: "c4", Port: 9093}}
	for _, tc := range []struct {
		name string
		req  *kmsg.AddRaftVoterRequest
		err  error
		want int16
	}{
		{"other cluster", &kmsg.AddRaftVoterRequest{ClusterID: &wrong, VoterID: 4, VoterDirectoryID: [16]byte{4}, Listeners: ctrl}, nil, kerr.InconsistentClusterID.Code},
		{"zero directory id", &kmsg.AddRaftVoterRequest{VoterID: 4, Listeners: ctrl}, nil, kerr.InvalidRequest.Code},
		{"no controller listener", &kmsg.AddRaftVoterRequest{VoterID: 4, VoterDirectoryID: [16]byte{4},
			Listeners: []kmsg.AddRaftVoterRequestListener{{Name: "PLAINTEXT", Host: "c4", Port: 9092}}}, nil, kerr.InvalidRequest.Code},
		{"added", &kmsg.AddRaftVoterRequest{VoterID: 4, VoterDirectoryID: [16]byte{4}, Listeners: ctrl}, nil, 0},
		{"duplicate", &kmsg.AddRaftVoterRequest{VoterID: 4, VoterDirectoryID: [16]byte{4}, Listeners: ctrl}, quorum.ErrDuplicateVoter, kerr.DuplicateVoter.Code},
		{"lagging", &kmsg.AddRaftVoterRequest{VoterID: 4, VoterDirectoryID: [16]byte{4}, Listeners: ctrl}, fmt.Errorf("x: %w", quorum.ErrNotCaughtUp), kerr.RequestTimedOut.Code},
		{"not leader", &kmsg.AddRaftVoterRequest{VoterID: 4, VoterDirectoryID: [16]byte{4}, Listeners: ctrl}, controller.ErrNotController, kerr.NotLeaderForPartition.Code},
		{"change pending", &kmsg.AddRaftVoterRequest{VoterID: 4, VoterDirectoryID: [16]byte{4}, Listeners: ctrl}, fmt.Errorf("x: %w", quorum.ErrChangePending), kerr.RequestTimedOut.Code},
	} {
		f.err = tc.err
		for v := int16(0); v <= 1; v++ {
			resp := e.call(t, tc.req, v).(*kmsg.AddRaftVoterResponse)
			if resp.ErrorCode != tc.want {
				t.Errorf("add %s v%d: %v, want %v", tc.name, v, kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(tc.want))
			}
		}
	}
	if len(f.added) == 0 || f.added[0] != (quorum.Member{Addr: "c4:9093", Listener: "controller", DirectoryID: [16]byte{4}}) {
		t.Errorf("members added: %+v", f.added)
	}
	for _, tc := range []struct {
		name string
		req  *kmsg.RemoveRaftVoterRequest
		err  error
		want int16
	}{
		{"other cluster", &kmsg.RemoveRaftVoterRequest{ClusterID: &wrong, VoterID: 4}, nil, kerr.InconsistentClusterID.Code},
		{"removed", &kmsg.RemoveRaftVoterRequest{VoterID: 4, VoterDirectoryID: [16]byte{4}}, nil, 0},
		{"unknown", &kmsg.RemoveRaftVoterRequest{VoterID: 9, VoterDirectoryID: [16]byte{9}}, quorum.ErrVoterNotFound, kerr.VoterNotFound.Code},
		{"zero id", &kmsg.RemoveRaftVoterRequest{VoterID: 9}, quorum.ErrInvalidVoter, kerr.InvalidRequest.Code},
		{"change pending", &kmsg.RemoveRaftVoterRequest{VoterID: 4, VoterDirectoryID: [16]byte{4}}, fmt.Errorf("x: %w", quorum.ErrChangePending), kerr.RequestTimedOut.Code},
	} {
		f.err = tc.err
		resp := e.call(t, tc.req, 0).(*kmsg.RemoveRaftVoterResponse)
		if resp.ErrorCode != tc.want {
			t.Errorf("remove %s: %v, want %v", tc.name, kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(tc.want))
		}
	}
	// DescribeCluster on a controller listener lists the registered
	// controllers.
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 2
	out, err := handleDescribeCluster(e.d, &Request{Header: wire.RequestHeader{APIKey: req.Key(), APIVersion: 1}, Body: req, Controller: true})
	if err != nil {
		t.Fatal(err)
	}
	resp := out.(*kmsg.DescribeClusterResponse)
	if len(resp.Brokers) != 3 || resp.Brokers[0].NodeID != 1 || resp.Brokers[1].NodeID != 4 || resp.Brokers[1].Host != "c4" || resp.Brokers[1].Port != 9093 ||
		resp.Brokers[2].NodeID != 6 {
		t.Errorf("controllers %+v", resp.Brokers)
	}
}

// TestUnregisterBrokerHandler: an unknown id is BROKER_ID_NOT_REGISTERED;
// a registered broker goes.
func TestUnregisterBrokerHandler(t *testing.T) {
	e := newAdminEnv(t)
	if err := e.d.Controller.RegisterBroker(controller.Broker{ID: 2, Host: "h2", Port: 9093}); err != nil {
		t.Fatal(err)
	}
	resp := e.call(t, &kmsg.UnregisterBrokerRequest{BrokerID: 7}, 0).(*kmsg.UnregisterBrokerResponse)
	if resp.ErrorCode != kerr.BrokerIDNotRegistered.Code || resp.ErrorMessage == nil {
		t.Errorf("unknown broker: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	resp = e.call(t, &kmsg.UnregisterBrokerRequest{BrokerID: 2}, 0).(*kmsg.UnregisterBrokerResponse)
	if resp.ErrorCode != 0 {
		t.Errorf("unregister 2: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if _, ok := e.d.Controller.Image().Brokers[2]; ok {
		t.Error("broker 2 still registered")
	}
}

// TestUnregisterControllerHandler: the quorum's answers become Kafka
// 4.4's codes (QuorumController.unregisterController: INVALID_REQUEST for
// the active controller itself, CONTROLLER_ID_NOT_REGISTERED, 136, for an
// id that is not registered), and the request needs ALTER on the cluster.
func TestUnregisterControllerHandler(t *testing.T) {
	e := newAdminEnv(t)
	f := &fakeVoters{}
	e.d.Voters = f
	for _, tc := range []struct {
		name string
		err  error
		want int16
	}{
		{"registered", nil, 0},
		{"active", fmt.Errorf("x: %w", quorum.ErrUnregisterActive), kerr.InvalidRequest.Code},
		{"unknown", fmt.Errorf("x: %w", quorum.ErrControllerNotRegistered), kerr.ControllerIDNotRegistered.Code},
		{"not leader", controller.ErrNotController, kerr.NotController.Code},
	} {
		f.err = tc.err
		resp := e.call(t, &kmsg.UnregisterControllerRequest{ControllerID: 6}, 0).(*kmsg.UnregisterControllerResponse)
		if resp.ErrorCode != tc.want || (tc.want != 0) != (resp.ErrorMessage != nil) {
			t.Errorf("%s: %v %v, want %v", tc.name, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage, kerr.ErrorForCode(tc.want))
		}
	}
	if len(f.unregistered) != 4 || f.unregistered[0] != 6 {
		t.Errorf("UnregisterController calls %v", f.unregistered)
	}
	if kerr.ControllerIDNotRegistered.Code != 136 {
		t.Errorf("CONTROLLER_ID_NOT_REGISTERED is %d in kerr, Kafka 4.4 has 136", kerr.ControllerIDNotRegistered.Code)
	}
}
