// This file checks, on the real binary, what happens to a share
// consumer's records when its connection to the partition leader closes
// without a goodbye (a killed process, a dropped network): as Kafka 4.4,
// the leader closes the share session opened on that connection and
// releases the records the member had acquired, so another member gets
// them at once instead of after the acquisition lock timeout.

package compattests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// shareFetchRaw sends one ShareFetch of partition 0 of topicID for a
// member (the partition named only when epoch is 0, which opens the
// session) and returns the response and the offsets acquired, with their
// delivery counts.
func shareFetchRaw(ctx context.Context, cl *kgo.Client, group, member string, epoch int32, topicID [16]byte, maxWait int32) (*kmsg.ShareFetchResponse, map[int64]int16, error) {
	f := kmsg.NewPtrShareFetchRequest()
	f.GroupID, f.MemberID, f.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), epoch
	f.MaxWaitMillis, f.MinBytes, f.MaxBytes, f.MaxRecords, f.BatchSize = maxWait, 1, 1<<20, 500, 500
	if epoch == 0 {
		ft := kmsg.NewShareFetchRequestTopic()
		ft.TopicID = topicID
		fp := kmsg.NewShareFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = 0, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
	}
	resp, err := f.RequestWith(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	got := map[int64]int16{}
	for _, ft := range resp.Topics {
		for _, fp := range ft.Partitions {
			for _, ar := range fp.AcquiredRecords {
				for o := ar.FirstOffset; o <= ar.LastOffset; o++ {
					got[o] = ar.DeliveryCount
				}
			}
		}
	}
	return resp, got, nil
}

// joinShareGroup joins member to group (subscribed to topic) and waits
// until it is assigned partition 0.
func joinShareGroup(t *testing.T, ctx context.Context, cl *kgo.Client, group, member, topic string) {
	t.Helper()
	r := shareHeartbeat(t, ctx, cl, group, member, 0, topic)
	epoch := r.MemberEpoch
	if !pollUntil(60*time.Second, func() bool {
		if r.ErrorCode == 0 && r.Assignment != nil && len(r.Assignment.TopicPartitions) == 1 {
			return true
		}
		r = shareHeartbeat(t, ctx, cl, group, member, epoch)
		epoch = r.MemberEpoch
		return false
	}) {
		t.Fatalf("%s: no assignment: %+v", member, r)
	}
}

// shareTopicWithRecords creates topic with one partition, sets group's
// share.auto.offset.reset to earliest and produces n one-byte records
// ('a', 'b', ...) to it; it returns the topic's id.
func shareTopicWithRecords(t *testing.T, ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic, group string, n int) [16]byte {
	t.Helper()
	topicID := createTopicKadm(t, ctx, adm, topic, 1, nil)
	setGroupConfig(t, ctx, cl, group, "share.auto.offset.reset", "earliest")
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte{byte('a' + i)}})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return topicID
}

// acquireShareRecords has member, already assigned partition 0 of
// topicID, fetch until it has acquired n records (a new session after a
// failed fetch); it returns the acquired offsets with their delivery
// counts and the member's next share session epoch.
func acquireShareRecords(t *testing.T, ctx context.Context, cl *kgo.Client, group, member string, topicID [16]byte, n int) (map[int64]int16, int32) {
	t.Helper()
	epoch := int32(0)
	acquired := map[int64]int16{}
	if !pollUntil(60*time.Second, func() bool {
		resp, got, err := shareFetchRaw(ctx, cl, group, member, epoch, topicID, 500)
		if err != nil || resp.ErrorCode != 0 {
			t.Logf("%s's ShareFetch epoch %d: %v %+v", member, epoch, err, resp)
			epoch = 0 // open a new session
			return false
		}
		epoch++
		for o, c := range got {
			acquired[o] = c
		}
		return len(acquired) == n
	}) {
		t.Fatalf("%s acquired %d of %d records", member, len(acquired), n)
	}
	return acquired, epoch
}

// TestShareConnectionCloseReleases: member A acquires 10 records and its
// client goes away without closing its share session (no ShareFetch or
// ShareAcknowledge with epoch -1, no leave heartbeat: its connections just
// close). With the acquisition lock at 60 s, member B must get the 10
// records well before that, with delivery count 2; and A's session is
// gone (its next epoch is SHARE_SESSION_NOT_FOUND). Before the fix B got
// them only when the locks expired, and the session stayed until the
// session cache filled up.
func TestShareConnectionCloseReleases(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	requireShareGroups(t, b.Addr)
	ctx := testContext(t, 150*time.Second)
	cl, adm := newAdmin(t, b.Addr)
	const topic, group, memberA, memberB = "sclose-t", "sclose-g", "sclose-member-a", "sclose-member-b"
	topicID := shareTopicWithRecords(t, ctx, cl, adm, topic, group, 10)
	// The longest lock a group may set (group.share.max.record.lock.duration.ms):
	// a test that passed by lock expiry would take a minute.
	setGroupConfig(t, ctx, cl, group, "share.record.lock.duration.ms", "60000")

	// A, on its own client (its own connections), acquires all 10.
	// franz-go closes a connection idle for 20 s by default, which would
	// release A's records early if B's join were slow: not here.
	clA, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConnIdleTimeout(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer clA.Close()
	start := time.Now()
	joinShareGroup(t, ctx, clA, group, memberA, topic)
	t.Logf("A joined in %v", time.Since(start))
	_, epochA := acquireShareRecords(t, ctx, clA, group, memberA, topicID, 10)

	// B joins and, while A holds the locks, gets nothing.
	clB, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConnIdleTimeout(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer clB.Close()
	start = time.Now()
	joinShareGroup(t, ctx, clB, group, memberB, topic)
	t.Logf("B joined in %v", time.Since(start))
	resp, got, err := shareFetchRaw(ctx, clB, group, memberB, 0, topicID, 0)
	if err != nil || resp.ErrorCode != 0 || len(got) != 0 {
		t.Fatalf("B's first fetch while A holds the records: %v %+v acquired %v", err, resp, got)
	}
	epochB := int32(1)

	// A's client goes: its connections close, nothing else is said.
	clA.Close()
	closed := time.Now()
	acquiredB := map[int64]int16{}
	for len(acquiredB) < 10 {
		if waited := time.Since(closed); waited > 30*time.Second {
			t.Fatalf("B has %d of A's 10 records %v after A's connection closed (lock timeout 60 s): they were not released on close", len(acquiredB), waited)
		}
		resp, got, err := shareFetchRaw(ctx, clB, group, memberB, epochB, topicID, 1000)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("B's ShareFetch epoch %d: %v %+v", epochB, err, resp)
		}
		epochB++
		for o, c := range got {
			acquiredB[o] = c
		}
	}
	t.Logf("B got A's 10 records %v after A's connection closed", time.Since(closed).Round(time.Millisecond))
	for o, c := range acquiredB {
		if c != 2 {
			t.Errorf("offset %d: delivery count %d, want 2 (A's delivery was counted)", o, c)
		}
	}

	// A's session went with its connection: a new connection going on
	// with A's next epoch finds none.
	clA2, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer clA2.Close()
	if resp, _, err := shareFetchRaw(ctx, clA2, group, memberA, epochA, topicID, 0); err != nil || resp.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("A's next epoch %d on a new connection: %v %+v, want SHARE_SESSION_NOT_FOUND", epochA, err, resp)
	}
}
