package handlers

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/quorum"
)

// TestUpdateRaftVoterHandler: UpdateRaftVoter checks what Kafka's
// KafkaRaftClient checks, in its order (cluster id, leader epoch,
// leadership, voter key, controller listener, kraft.version range), then
// maps the quorum's errors; CurrentLeader names the leader.
func TestUpdateRaftVoterHandler(t *testing.T) {
	e := newAdminEnv(t, "controller.listener.names=CONTROLLER")
	f := &fakeVoters{epoch: 5}
	e.d.Voters = f
	wrong := "other"
	ctrl := []kmsg.UpdateRaftVoterRequestListener{{Name: "CONTROLLER", Host: "c2", Port: 9093}}
	versions := kmsg.UpdateRaftVoterRequestKRaftVersionFeature{MinSupportedVersion: 0, MaxSupportedVersion: 1}
	mk := func(mod func(*kmsg.UpdateRaftVoterRequest)) *kmsg.UpdateRaftVoterRequest {
		r := &kmsg.UpdateRaftVoterRequest{CurrentLeaderEpoch: 5, VoterID: 2, VoterDirectoryID: [16]byte{2}, Listeners: ctrl, KRaftVersionFeature: versions}
		if mod != nil {
			mod(r)
		}
		return r
	}
	for _, tc := range []struct {
		name       string
		req        *kmsg.UpdateRaftVoterRequest
		notLeading bool
		err        error
		want       int16
	}{
		{"other cluster", mk(func(r *kmsg.UpdateRaftVoterRequest) { r.ClusterID = &wrong; r.CurrentLeaderEpoch = 1 }), false, nil, kerr.InconsistentClusterID.Code},
		{"older epoch", mk(func(r *kmsg.UpdateRaftVoterRequest) { r.CurrentLeaderEpoch = 4 }), false, nil, kerr.FencedLeaderEpoch.Code},
		{"unknown epoch (-1)", mk(func(r *kmsg.UpdateRaftVoterRequest) { r.CurrentLeaderEpoch = -1 }), false, nil, kerr.FencedLeaderEpoch.Code},
		{"newer epoch", mk(func(r *kmsg.UpdateRaftVoterRequest) { r.CurrentLeaderEpoch = 6 }), false, nil, kerr.UnknownLeaderEpoch.Code},
		{"not leading", mk(func(r *kmsg.UpdateRaftVoterRequest) { r.VoterDirectoryID = [16]byte{} }), true, nil, kerr.NotLeaderForPartition.Code},
		{"zero directory id", mk(func(r *kmsg.UpdateRaftVoterRequest) { r.VoterDirectoryID = [16]byte{} }), false, nil, kerr.InvalidRequest.Code},
		{"no controller listener", mk(func(r *kmsg.UpdateRaftVoterRequest) {
			r.Listeners = []kmsg.UpdateRaftVoterRequestListener{{Name: "PLAINTEXT", Host: "c2", Port: 9092}}
		}), false, nil, kerr.InvalidRequest.Code},
		{"reversed range", mk(func(r *kmsg.UpdateRaftVoterRequest) { r.KRaftVersionFeature.MinSupportedVersion = 2 }), false, nil, kerr.InvalidRequest.Code},
		{"range without kraft.version 1", mk(func(r *kmsg.UpdateRaftVoterRequest) { r.KRaftVersionFeature.MaxSupportedVersion = 0 }), false, nil, kerr.InvalidRequest.Code},
		{"updated", mk(nil), false, nil, 0},
		{"unknown voter", mk(nil), false, fmt.Errorf("x: %w", quorum.ErrVoterNotFound), kerr.VoterNotFound.Code},
		{"not caught up at the new address", mk(nil), false, fmt.Errorf("x: %w", quorum.ErrNotCaughtUp), kerr.RequestTimedOut.Code},
		{"leader's own endpoint", mk(nil), false, fmt.Errorf("x: %w", quorum.ErrLeaderEndpoint), kerr.InvalidRequest.Code},
		{"lost leadership", mk(nil), false, controller.ErrNotController, kerr.NotLeaderForPartition.Code},
	} {
		f.err, f.notLeading, f.updated = tc.err, tc.notLeading, nil
		resp := e.call(t, tc.req, 0).(*kmsg.UpdateRaftVoterResponse)
		if resp.ErrorCode != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(tc.want))
		}
		if l := resp.CurrentLeader; l.LeaderID != 1 || l.LeaderEpoch != 5 || l.Host != "c1" || l.Port != 9093 {
			t.Errorf("%s: current leader %+v", tc.name, l)
		}
		reached := tc.want == 0 || tc.err != nil
		if reached != (len(f.updated) == 1) {
			t.Errorf("%s: the quorum was asked %d updates", tc.name, len(f.updated))
		}
	}
	f.err, f.updated = nil, nil
	e.call(t, mk(nil), 0)
	if want := (quorum.Member{Addr: "c2:9093", Listener: "CONTROLLER", DirectoryID: [16]byte{2}}); len(f.updated) != 1 || f.updated[0] != want {
		t.Errorf("member updated: %+v, want %+v", f.updated, want)
	}
}
