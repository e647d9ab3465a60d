package compattests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// TestOffsetsRetention runs the broker with offsets.retention.minutes=1 (Kafka's least
// value) and a half-second retention check, and checks KIP-211's rule with real
// clients: the offsets of a group without members (kadm's simple commit) disappear
// once they are older than the retention, not before, while the offsets of a group
// with a live member subscribed to the topic stay.
func TestOffsetsRetention(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{Overrides: map[string]string{
		"offsets.retention.minutes":           "1",
		"offsets.retention.check.interval.ms": "500",
		"group.initial.rebalance.delay.ms":    "0",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, adm := newAdmin(t, b.Addr)
	const topic = "retention-offsets"
	createTopicKadm(t, ctx, adm, topic, groupPartitions, nil)
	produceGroupBatch(t, ctx, b.Addr, topic, "r1")

	// A live member of group "ret-active" consumes and commits.
	member, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumerGroup("ret-active"), kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(groupSession), kgo.HeartbeatInterval(groupHeartbeat), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer member.Close()
	for got := 0; got == 0; {
		fs := member.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("member consumed nothing: %v", ctx.Err())
		}
		got = fs.NumRecords()
	}
	if err := member.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("member commit: %v", err)
	}

	// Group "ret-empty" has no members: a simple commit.
	commitAt := time.Now()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 3, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "ret-empty", offs); err != nil {
		t.Fatalf("kadm CommitAllOffsets: %v", err)
	}
	has := func(group string) bool {
		t.Helper()
		resp, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatalf("kadm FetchOffsets(%s): %v", group, err)
		}
		n := 0
		resp.Each(func(o kadm.OffsetResponse) {
			if o.Err == nil && o.At >= 0 {
				n++
			}
		})
		return n > 0
	}
	if !has("ret-empty") || !has("ret-active") {
		t.Fatal("offsets missing right after the commits")
	}

	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	var goneAt time.Time
	for goneAt.IsZero() {
		select {
		case <-ctx.Done():
			t.Fatal("offsets of the empty group never expired")
		case <-ticker.C:
		}
		if !has("ret-empty") {
			goneAt = time.Now()
		}
	}
	if age := goneAt.Sub(commitAt); age < time.Minute-time.Second {
		t.Fatalf("offsets of the empty group expired %v after the commit, before offsets.retention.minutes=1", age)
	}
	if !has("ret-active") {
		t.Fatal("offsets of the group with a live member expired")
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("kadm ListGroups: %v", err)
	}
	if _, ok := groups["ret-empty"]; ok {
		t.Fatalf("group ret-empty still listed after its offsets expired: %v", groups.Groups())
	}
	t.Logf("empty group's offsets expired %v after the commit", goneAt.Sub(commitAt).Round(100*time.Millisecond))
}
