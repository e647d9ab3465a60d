package compattests

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// hardeningProbes sends the requests of issue 11 items 7 and 17 to the
// broker at addr, in this order, and returns each one's error code:
//
//   - produce-internal: a Produce to __consumer_offsets by an ordinary client;
//   - delete-records-internal: DeleteRecords of __consumer_offsets;
//   - apiversions-bad-name: ApiVersions v3+ with client software name "bad name";
//   - offset-metadata-4097: an OffsetCommit with 4097 bytes of metadata
//     (offset.metadata.max.bytes is 4096);
//   - join-big / sync-big: a JoinGroup with 1.2 MB of protocol metadata
//     (over message.max.bytes, 1048588) and the leader's SyncGroup, which
//     stores the group's metadata;
//   - delete-internal: DeleteTopics of __consumer_offsets (last: Kafka deletes it).
func hardeningProbes(t *testing.T, ctx context.Context, addr string) map[string]int16 {
	t.Helper()
	cl, adm := newAdmin(t, addr)
	out := map[string]int16{}
	created, err := adm.CreateTopic(ctx, 1, 1, nil, "probe")
	if err != nil || created.Err != nil {
		t.Fatalf("CreateTopic: %v / %v", err, created.Err)
	}
	waitTopicReady(t, ctx, adm, "probe", 1)
	// A first commit makes the broker create __consumer_offsets.
	offs := kadm.Offsets{}
	offs.AddOffset("probe", 0, 1, -1)
	if resp, err := adm.CommitOffsets(ctx, "probe-group", offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v / %v", err, resp.Error())
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("probe"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	err = prod.ProduceSync(ctx, &kgo.Record{Topic: "__consumer_offsets", Key: []byte{0, 1, 0xff}, Value: []byte("x")}).FirstErr()
	out["produce-internal"] = codeOf(err)

	dr := kmsg.NewPtrDeleteRecordsRequest()
	drt := kmsg.NewDeleteRecordsRequestTopic()
	drt.Topic = "__consumer_offsets"
	drp := kmsg.NewDeleteRecordsRequestTopicPartition()
	drp.Offset = -1
	drt.Partitions = append(drt.Partitions, drp)
	dr.Topics = append(dr.Topics, drt)
	if resp, err := dr.RequestWith(ctx, cl); err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	} else {
		out["delete-records-internal"] = resp.Topics[0].Partitions[0].ErrorCode
	}

	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "bad name", "1.0"
	if resp, err := av.RequestWith(ctx, cl); err != nil {
		t.Fatalf("ApiVersions: %v", err)
	} else {
		out["apiversions-bad-name"] = resp.ErrorCode
	}

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "probe-group", -1
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic, oct.TopicID = "probe", created.ID
	ocp := kmsg.NewOffsetCommitRequestTopicPartition()
	ocp.Offset, ocp.Metadata = 2, kmsg.StringPtr(strings.Repeat("m", 4097))
	oct.Partitions = append(oct.Partitions, ocp)
	oc.Topics = append(oc.Topics, oct)
	if resp, err := oc.RequestWith(ctx, cl); err != nil {
		t.Fatalf("OffsetCommit: %v", err)
	} else {
		out["offset-metadata-4097"] = resp.Topics[0].Partitions[0].ErrorCode
	}

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "big-group", 30000, 30000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: make([]byte, 1_200_000)}}
	jr, err := join.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("JoinGroup: %v", err)
	}
	if jr.ErrorCode == kerr.MemberIDRequired.Code {
		join.MemberID = jr.MemberID
		if jr, err = join.RequestWith(ctx, cl); err != nil {
			t.Fatalf("JoinGroup: %v", err)
		}
	}
	out["join-big"] = jr.ErrorCode
	if jr.ErrorCode == 0 {
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.MemberID, sync.Generation = "big-group", jr.MemberID, jr.Generation
		sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jr.MemberID, MemberAssignment: []byte{}}}
		sr, err := sync.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("SyncGroup: %v", err)
		}
		out["sync-big"] = sr.ErrorCode
	}

	del, err := adm.DeleteTopics(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	out["delete-internal"] = codeOf(del["__consumer_offsets"].Err)
	return out
}

// codeOf returns the Kafka error code of err, 0 for nil, -1 for a non-Kafka error.
func codeOf(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return -1
}

// TestHardeningAgainstKafka runs hardeningProbes against Apache Kafka 4.4
// and against samsa and compares the answers (issue 11 items 7 and 17).
// Every probe must agree except delete-internal: Kafka 4.4 deletes
// __consumer_offsets for any client its authorizer admits (everyone, with
// none), losing every committed offset; samsa, which has no authorizer yet,
// refuses with INVALID_TOPIC_EXCEPTION (see 20_delete_topics.go).
func TestHardeningAgainstKafka(t *testing.T) {
	kafka := kafkaref.Start(t, kafkaref.Options{})
	samsa := harness.Start(t, harness.Options{})
	ctx := testContext(t, 3*time.Minute)
	want := hardeningProbes(t, ctx, kafka.Bootstrap())
	got := hardeningProbes(t, ctx, samsa.Addr)
	t.Logf("Kafka 4.4: %v", want)
	t.Logf("samsa:     %v", got)
	for probe, code := range want {
		if probe == "delete-internal" {
			if code != 0 || got[probe] != kerr.InvalidTopicException.Code {
				t.Errorf("delete-internal: Kafka %v, samsa %v; want Kafka to delete and samsa to refuse",
					kerr.ErrorForCode(code), kerr.ErrorForCode(got[probe]))
			}
			continue
		}
		if got[probe] != code {
			t.Errorf("%s: samsa %v, Kafka 4.4 %v", probe, kerr.ErrorForCode(got[probe]), kerr.ErrorForCode(code))
		}
	}
	if len(got) != len(want) {
		t.Errorf("probes answered: samsa %d, Kafka %d", len(got), len(want))
	}

	// Item 15: franz-go keeps its KIP-227 fetch session with both.
	for _, b := range []struct{ name, addr string }{{"Kafka 4.4", kafka.Bootstrap()}, {"samsa", samsa.Addr}} {
		fetches, resets := fetchSessionRun(t, ctx, b.addr)
		t.Logf("%s: %d fetch requests, %d fetch session resets", b.name, fetches, len(resets))
		if len(resets) > 0 {
			t.Errorf("%s: franz-go reset its fetch session %d times; first: %s", b.name, len(resets), resets[0])
		}
	}
}
