// This file checks, on the real binary, DescribeShareGroupOffsets v1's Lag
// (KIP-1226) and the share state of a deleted topic, with raw share-group
// requests (ShareGroupHeartbeat, ShareFetch, ShareAcknowledge) so that
// which records are acknowledged and which are still acquired is exact.

package compattests

import (
	"context"
	"encoding/binary"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// describeShareLag returns partition 0's start offset, lag and error code
// as DescribeShareGroupOffsets v1 answers for group and topic.
func describeShareLag(ctx context.Context, cl *kgo.Client, group, topic string) (start, lag int64, code int16, err error) {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = 1
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group, Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, 0, 0, err
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 || len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 {
		return 0, 0, g.ErrorCode, nil
	}
	p := g.Topics[0].Partitions[0]
	return p.StartOffset, p.Lag, p.ErrorCode, nil
}

// waitShareLag polls DescribeShareGroupOffsets until partition 0 shows
// the wanted start offset (-2: any) and lag.
func waitShareLag(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string, wantStart, wantLag int64) {
	t.Helper()
	var start, lag int64
	var code int16
	var err error
	if !pollUntil(60*time.Second, func() bool {
		start, lag, code, err = describeShareLag(ctx, cl, group, topic)
		return err == nil && code == 0 && lag == wantLag && (wantStart == -2 || start == wantStart)
	}) {
		t.Fatalf("DescribeShareGroupOffsets: start %d lag %d code %d err %v; want start %d lag %d", start, lag, code, err, wantStart, wantLag)
	}
}

// TestShareGroupLagBinary: 12 records, a member acquires them all and
// accepts 0-8: Lag 3 (the acquired 9-11), as Kafka 4.4 answers; the
// member leaves and the group is reset to offset 4: Lag 8. The topic is
// then deleted: the share coordinator writes the tombstone of the
// share-partition's state in __share_group_state.
func TestShareGroupLagBinary(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	requireShareGroups(t, b.Addr)
	shareLagChecks(t, b.Addr)
}

// TestShareGroupLagKafka runs the checks of TestShareGroupLagBinary
// against Apache Kafka 4.4 (SAMSA_SHARE_LAG_KAFKA=1; the reference broker
// takes about 10 s to start, more than CI should spend on this).
func TestShareGroupLagKafka(t *testing.T) {
	if os.Getenv("SAMSA_SHARE_LAG_KAFKA") == "" {
		t.Skip("set SAMSA_SHARE_LAG_KAFKA=1 to run against Kafka 4.4")
	}
	t.Parallel()
	k := kafkaref.Start(t, kafkaref.Options{})
	shareLagChecks(t, k.Bootstrap())
}

func shareLagChecks(t *testing.T, addr string) {
	ctx := testContext(t, 150*time.Second)
	cl, adm := newAdmin(t, addr)
	const topic, group, member = "slag-lag", "slag-group", "slag-member-0001"
	// Records from the start: share.auto.offset.reset=earliest.
	topicID := shareTopicWithRecords(t, ctx, cl, adm, topic, group, 12)
	joinShareGroup(t, ctx, cl, group, member, topic)
	_, sessionEpoch := acquireShareRecords(t, ctx, cl, group, member, topicID, 12)

	// Accept 0-8; 9-11 stay acquired.
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), sessionEpoch
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = topicID
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = 0, 8, []int8{1}
	ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, ab)
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)
	if ar, err := ack.RequestWith(ctx, cl); err != nil || ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ShareAcknowledge 0-8: %v %+v", err, ar)
	}
	// Kafka 4.4 answers start 0 here (it moves the start offset lazily),
	// samsa 9: either way HWM 12 - start - delivered = 3.
	waitShareLag(t, ctx, cl, group, topic, -2, 3)

	// Leave (9-11 are released), reset to 4: HWM 12 - 4 = Lag 8.
	if lv := shareHeartbeat(t, ctx, cl, group, member, -1); lv.ErrorCode != 0 {
		t.Fatalf("leave: %+v", lv)
	}
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = group
	alter.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 4}}}}
	if ar, err := alter.RequestWith(ctx, cl); err != nil || ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AlterShareGroupOffsets to 4: %v %+v", err, ar)
	}
	waitShareLag(t, ctx, cl, group, topic, 4, 8)

	// Delete the topic: the share-partition's state is tombstoned.
	if dr, err := adm.DeleteTopics(ctx, topic); err != nil || dr[topic].Err != nil {
		t.Fatalf("DeleteTopics: %v %+v", err, dr)
	}
	key := binary.BigEndian.AppendUint16(nil, 0) // ShareSnapshotKey
	key = binary.BigEndian.AppendUint16(key, uint16(len(group)))
	key = append(key, group...)
	key = append(key, topicID[:]...)
	key = binary.BigEndian.AppendUint32(key, 0)
	state, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("__share_group_state"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer state.Close()
	snapshots, tombstone := 0, false
	for !tombstone {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fs := state.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("no tombstone for the deleted topic's share-partition in __share_group_state (%d snapshots seen)", snapshots)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if string(rec.Key) != string(key) {
				return
			}
			if rec.Value == nil {
				tombstone = true
			} else {
				snapshots++
			}
		})
	}
	if snapshots == 0 {
		t.Fatalf("the tombstone came without any snapshot of the share-partition before it")
	}
}
