package compattests

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
	"github.com/samsa-broker/samsa/wire"
)

// updateVoterCase is one UpdateRaftVoter request, built from the leader's
// epoch and controller listener, with the answer Kafka 4.4 gives.
type updateVoterCase struct {
	name string
	mod  func(r *kmsg.UpdateRaftVoterRequest)
	want int16
}

// updateVoterErrorCases are answered alike by Kafka 4.4's leader (a
// static quorum of one, kraft.version 0) and samsa's active controller,
// in Kafka's order of checks (recorded from kafka-ref; Kafka's leader
// exits with a fatal fault when asked to update itself, so no case
// reaches that far on it).
var updateVoterErrorCases = []updateVoterCase{
	{"other cluster", func(r *kmsg.UpdateRaftVoterRequest) { r.ClusterID = kmsg.StringPtr("diff-no-such-cluster") }, kerr.InconsistentClusterID.Code},
	{"unknown epoch (-1)", func(r *kmsg.UpdateRaftVoterRequest) { r.CurrentLeaderEpoch = -1 }, kerr.FencedLeaderEpoch.Code},
	{"newer epoch", func(r *kmsg.UpdateRaftVoterRequest) { r.CurrentLeaderEpoch++ }, kerr.UnknownLeaderEpoch.Code},
	{"zero directory id", func(r *kmsg.UpdateRaftVoterRequest) { r.VoterDirectoryID = [16]byte{} }, kerr.InvalidRequest.Code},
	{"no controller listener", func(r *kmsg.UpdateRaftVoterRequest) { r.Listeners[0].Name = "PLAINTEXT" }, kerr.InvalidRequest.Code},
	{"reversed version range", func(r *kmsg.UpdateRaftVoterRequest) { r.KRaftVersionFeature.MinSupportedVersion = 2 }, kerr.InvalidRequest.Code},
	{"unknown voter", func(r *kmsg.UpdateRaftVoterRequest) { r.VoterID = 99 }, kerr.VoterNotFound.Code},
}

// updateVoter sends UpdateRaftVoter for voter id at ctrl (its controller
// listener, host:port), with the epoch given and the kraft.version range
// 0-1, changed by mod, to the controller listener at to.
func updateVoter(ctx context.Context, to string, epoch int32, id int32, dir [16]byte, ctrl string, mod func(*kmsg.UpdateRaftVoterRequest)) (*kmsg.UpdateRaftVoterResponse, error) {
	host, port, err := net.SplitHostPort(ctrl)
	if err != nil {
		return nil, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, err
	}
	r := kmsg.NewPtrUpdateRaftVoterRequest()
	r.CurrentLeaderEpoch, r.VoterID, r.VoterDirectoryID = epoch, id, dir
	r.Listeners = []kmsg.UpdateRaftVoterRequestListener{{Name: "CONTROLLER", Host: host, Port: uint16(p)}}
	r.KRaftVersionFeature.MinSupportedVersion, r.KRaftVersionFeature.MaxSupportedVersion = 0, 1
	if mod != nil {
		mod(r)
	}
	// Not through kgo: neither samsa's nor (to clients) Kafka's controller
	// listener needs to advertise the API for it to be served, and kgo
	// refuses a key ApiVersions did not list.
	var d net.Dialer
	rctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	conn, err := d.DialContext(rctx, "tcp", to)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	deadline, _ := rctx.Deadline()
	conn.SetDeadline(deadline)
	client := "compat-update-voter"
	if _, err := conn.Write(wire.AppendRequest(nil, wire.RequestHeader{APIVersion: 0, CorrelationID: 1, ClientID: &client}, r)); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		return nil, err
	}
	if len(body) < 5 {
		return nil, fmt.Errorf("short UpdateRaftVoter response: %d bytes", len(body))
	}
	resp := kmsg.NewPtrUpdateRaftVoterResponse()
	return resp, resp.ReadFrom(body[5:]) // correlation id, empty header tags
}

// TestUpdateRaftVoter (KIP-853, issue 13 item 3): UpdateRaftVoter on the
// controller listener of three combined nodes. The error cases answer as
// Kafka 4.4 does (checked against kafka-ref when Java is there), with
// CurrentLeader naming the leader; another voter answers
// NOT_LEADER_OR_FOLLOWER. A follower voter reporting its listener and the
// directory id of its meta.properties is recorded (samsa removes it and
// adds it back: hashicorp/raft cannot change a live member's address in
// place without a data race) and DescribeQuorum then shows that directory
// id; the same report again changes nothing; the quorum keeps serving.
func TestUpdateRaftVoter(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t, 3, harness.ClusterOptions{})
	ctx := testContext(t, 4*time.Minute)
	entry := c.Brokers[0].Addr
	waitQuorum(t, ctx, entry, "three voters", func(v quorumView) bool { return len(v.voters) == 3 })

	// Retried while leadership moves (the leader's epoch and address are
	// read again each time).
	// to picks, for the leader of the moment, the node to send to, the
	// voter to update and its directory id ("" to wait for another
	// leader).
	ask := func(what string, to func(leader int32) (string, int32, [16]byte), mod func(*kmsg.UpdateRaftVoterRequest), want int16) {
		t.Helper()
		var last string
		if !pollUntil(90*time.Second, func() bool {
			resp, err := describeQuorum(ctx, entry)
			if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				last = "DescribeQuorum failed"
				return false
			}
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.LeaderID < 1 || p.LeaderID > 3 {
				last = "no leader"
				return false
			}
			addr, id, dir := to(p.LeaderID)
			if addr == "" {
				last = "no node to ask"
				return false
			}
			ur, err := updateVoter(ctx, addr, p.LeaderEpoch, id, dir, c.ControllerAddrs[id-1], mod)
			if err != nil {
				last = err.Error()
				return false
			}
			if ur.ErrorCode != want {
				last = kerr.ErrorForCode(ur.ErrorCode).Error()
				// The leader moved between DescribeQuorum and this request.
				return false
			}
			if ur.CurrentLeader.LeaderID < 1 || ur.CurrentLeader.LeaderEpoch < 1 {
				last = "no current leader in the answer"
				return false
			}
			if want != kerr.NotLeaderForPartition.Code && (ur.CurrentLeader.LeaderID != p.LeaderID ||
				net.JoinHostPort(ur.CurrentLeader.Host, strconv.Itoa(int(ur.CurrentLeader.Port))) != c.ControllerAddrs[p.LeaderID-1]) {
				last = fmt.Sprintf("current leader %+v", ur.CurrentLeader)
				return false
			}
			return true
		}) {
			t.Fatalf("%s: never answered %v (last: %s)", what, kerr.ErrorForCode(want), last)
		}
	}
	voter1 := func(addr func(leader int32) string) func(int32) (string, int32, [16]byte) {
		return func(leader int32) (string, int32, [16]byte) { return addr(leader), 1, [16]byte{9, 9} }
	}
	leaderCtrl := voter1(func(leader int32) string { return c.ControllerAddrs[leader-1] })
	follower := func(leader int32) int32 { return leader%3 + 1 }

	for _, tc := range updateVoterErrorCases {
		ask(tc.name, leaderCtrl, tc.mod, tc.want)
	}
	// kraft.version: samsa's quorums behave as 1 (voter changes), Kafka's
	// static ones as 0, so a range without 1 is refused here.
	ask("range without kraft.version 1", leaderCtrl, func(r *kmsg.UpdateRaftVoterRequest) { r.KRaftVersionFeature.MaxSupportedVersion = 0 }, kerr.InvalidRequest.Code)
	ask("sent to a follower", voter1(func(leader int32) string { return c.ControllerAddrs[follower(leader)-1] }), nil, kerr.NotLeaderForPartition.Code)

	// A follower voter reports its directory id. The target is a follower
	// of the leader of the moment, chosen again while no request was sent
	// (the active controller's own endpoint does not change while it
	// leads); once one was sent, a leader change to the target waits for
	// the next leader.
	var target int32
	var dir [16]byte
	sent := false
	ask("update a follower", func(leader int32) (string, int32, [16]byte) {
		if !sent && (target == 0 || target == leader) {
			target = follower(leader)
			dir, _ = directoryID(t, c.Brokers[target-1].Dir)
		}
		if target == leader {
			return "", 0, dir
		}
		sent = true
		return c.ControllerAddrs[leader-1], target, dir
	}, nil, 0)
	waitQuorum(t, ctx, entry, "the follower's directory id", func(v quorumView) bool {
		leo, ok := v.leo[target]
		return len(v.voters) == 3 && v.voters[target] == dir && ok && leo >= 0
	})
	// Unchanged: no change is needed, on any leader (the target's too).
	ask("the same update again", func(leader int32) (string, int32, [16]byte) {
		return c.ControllerAddrs[leader-1], target, dir
	}, nil, 0)
	_, adm := newAdmin(t, entry)
	if !pollUntil(90*time.Second, func() bool {
		_, err := adm.CreateTopic(ctx, 1, 3, nil, "update-voter-after")
		return err == nil || strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS")
	}) {
		t.Fatal("no topic could be created after the voter update")
	}

	if testing.Short() || !kafkaToolsAvailable() {
		return
	}
	kafkaref.Require(t)
	k := kafkaref.Start(t, kafkaref.Options{})
	b, err := os.ReadFile(filepath.Join(k.Dir(), "controllers"))
	if err != nil {
		t.Fatal(err)
	}
	_, kctrl, _ := strings.Cut(strings.TrimSpace(string(b)), "@")
	dq, err := describeQuorum(ctx, k.Addrs()[0])
	if err != nil || len(dq.Topics) != 1 || len(dq.Topics[0].Partitions) != 1 {
		t.Fatalf("Kafka's DescribeQuorum: %+v %v", dq, err)
	}
	epoch := dq.Topics[0].Partitions[0].LeaderEpoch
	for _, tc := range updateVoterErrorCases {
		resp, err := updateVoter(ctx, kctrl, epoch, 1, [16]byte{9, 9}, kctrl, tc.mod)
		if err != nil {
			t.Fatalf("Kafka, %s: %v", tc.name, err)
		}
		if resp.ErrorCode != tc.want {
			t.Errorf("Kafka, %s: %v, samsa answers %v", tc.name, kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(tc.want))
		}
	}
}
