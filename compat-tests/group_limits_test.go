package compattests

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// TestGroupLimitsFromSettings checks issue 11 item 17 against the real
// binary: offset.metadata.max.bytes is accepted as a setting and limits
// commit metadata (it was refused at start as unknown), and
// message.max.bytes bounds the group metadata record a SyncGroup writes (a
// JoinGroup with 50 MiB of metadata became a 52 MB record): the leader's
// SyncGroup gets UNKNOWN_SERVER_ERROR, as from Kafka's coordinator, and the
// broker keeps serving.
func TestGroupLimitsFromSettings(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{Overrides: map[string]string{
		"offset.metadata.max.bytes": "16",
		"message.max.bytes":         "100000",
	}})
	ctx := testContext(t, time.Minute)
	cl, adm := newAdmin(t, b.Addr)
	created, err := adm.CreateTopic(ctx, 1, 1, nil, "limits")
	if err != nil || created.Err != nil {
		t.Fatalf("CreateTopic: %v / %v", err, created.Err)
	}
	waitTopicReady(t, ctx, adm, "limits", 1)

	commit := func(metadata string) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "simple", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = "limits", created.ID // v10+ names topics by id
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset, rp.Metadata = 0, &metadata
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("OffsetCommit: %v", err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(strings.Repeat("m", 16)); code != 0 {
		t.Errorf("16 bytes of metadata: %v", kerr.ErrorForCode(code))
	}
	if code := commit(strings.Repeat("m", 17)); code != kerr.OffsetMetadataTooLarge.Code {
		t.Errorf("17 bytes of metadata: %v, want OFFSET_METADATA_TOO_LARGE", kerr.ErrorForCode(code))
	}

	// One member with 200 kB of protocol metadata joins and syncs (kgo
	// routes group requests to the group's coordinator).
	coord := cl
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "big", 10000, 10000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: make([]byte, 200_000)}}
	jr, err := join.RequestWith(ctx, coord)
	if err != nil {
		t.Fatal(err)
	}
	if jr.ErrorCode == kerr.MemberIDRequired.Code {
		join.MemberID = jr.MemberID
		if jr, err = join.RequestWith(ctx, coord); err != nil {
			t.Fatal(err)
		}
	}
	if jr.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(jr.ErrorCode))
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "big", jr.MemberID, jr.Generation
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jr.MemberID, MemberAssignment: []byte{}}}
	sr, err := sync.RequestWith(ctx, coord)
	if err != nil {
		t.Fatal(err)
	}
	if sr.ErrorCode != kerr.UnknownServerError.Code {
		t.Errorf("sync of a 200 kB group record with message.max.bytes=100000: %v, want UNKNOWN_SERVER_ERROR", kerr.ErrorForCode(sr.ErrorCode))
	}
	if code := commit("ok"); code != 0 {
		t.Errorf("commit after the refused sync: %v", kerr.ErrorForCode(code))
	}
}
