package coordinator

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func alterShareReq(group, topic string, offsets map[int32]int64) *kmsg.AlterShareGroupOffsetsRequest {
	r := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	r.GroupID = group
	t := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	t.Topic = topic
	for p, o := range offsets {
		t.Partitions = append(t.Partitions, kmsg.AlterShareGroupOffsetsRequestTopicPartition{Partition: p, StartOffset: o})
	}
	r.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{t}
	return r
}

func describeShareOffsetsReq(group, topic string, partitions ...int32) *kmsg.DescribeShareGroupOffsetsRequest {
	r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	r.Version = 1
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	if topic != "" {
		g.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: partitions}}
	}
	r.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{g}
	return r
}

// TestShareAdminAPIs drives the share admin APIs and the classic group
// APIs against a share group: changes refused while it has a member, then
// AlterShareGroupOffsets re-initializing at a higher state epoch,
// DescribeShareGroupOffsets reading the Persister, DeleteShareGroupOffsets
// and DeleteGroups deleting the share state.
func TestShareAdminAPIs(t *testing.T) {
	l := newLogs()
	img := fakeImage{"orders": 2}
	p := newFakePersister()
	c := newTestCoordinator(t, l, func(o *Options) { o.Persister = p })
	ctx := t.Context()
	cl := Client{ID: "cl", Host: "/127.0.0.1"}
	orders := topicIDOf("orders")
	k0 := SharePartitionKey{Group: "sg", TopicID: orders, Partition: 0}

	r := c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", 0, "orders"))
	wantCode(t, "join", r.ErrorCode, nil)
	before, _, _ := p.ReadSummary(ctx, k0)

	a := c.AlterShareGroupOffsets(ctx, img, alterShareReq("sg", "orders", map[int32]int64{0: 7}))
	wantCode(t, "alter a live group", a.ErrorCode, kerr.NonEmptyGroup)
	d := c.DeleteShareGroupOffsets(ctx, img, &kmsg.DeleteShareGroupOffsetsRequest{GroupID: "sg", Topics: []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "orders"}}})
	wantCode(t, "delete offsets of a live group", d.ErrorCode, kerr.NonEmptyGroup)
	del := c.DeleteGroups(ctx, &kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"sg"}})
	wantCode(t, "delete a live group", del.Groups[0].ErrorCode, kerr.NonEmptyGroup)

	// The classic APIs see a share group as Kafka 4.4 answers.
	lg := c.ListGroups(ctx, &kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"Share"}, StatesFilter: []string{"stable"}})
	if len(lg.Groups) != 1 || lg.Groups[0].GroupType != "share" || lg.Groups[0].ProtocolType != "share" || lg.Groups[0].GroupState != "Stable" {
		t.Fatalf("ListGroups: %+v", lg.Groups)
	}
	if lg := c.ListGroups(ctx, &kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"consumer"}}); len(lg.Groups) != 0 {
		t.Fatalf("ListGroups consumer: %+v", lg.Groups)
	}
	dg := c.DescribeGroups(ctx, &kmsg.DescribeGroupsRequest{Version: 6, Groups: []string{"sg"}})
	wantCode(t, "DescribeGroups v6", dg.Groups[0].ErrorCode, kerr.GroupIDNotFound)
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version = 8
	of.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "sg"}}
	if g := c.OffsetFetch(ctx, of).Groups[0]; g.ErrorCode != 0 || g.Topics != nil {
		t.Fatalf("OffsetFetch of a share group: %+v", g)
	}
	codes := commitCodes(c.OffsetCommit(ctx, commitReq("sg", "", -1, "orders", map[int32]int64{0: 5})))
	wantCode(t, "OffsetCommit to a share group", codes[0], kerr.GroupIDNotFound)

	// Empty the group, then reset partition 0.
	wantCode(t, "leave", c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", -1)).ErrorCode, nil)
	a = c.AlterShareGroupOffsets(ctx, img, alterShareReq("sg", "orders", map[int32]int64{0: 7, 5: 1}))
	wantCode(t, "alter", a.ErrorCode, nil)
	for _, tp := range a.Topics[0].Partitions {
		want := error(nil)
		if tp.Partition == 5 {
			want = kerr.UnknownTopicOrPartition
		}
		if got := kerr.ErrorForCode(tp.ErrorCode); got != want {
			t.Fatalf("alter partition %d: %v, want %v", tp.Partition, got, want)
		}
	}
	after, _, _ := p.ReadSummary(ctx, k0)
	if after.StartOffset != 7 || after.StateEpoch <= before.StateEpoch {
		t.Fatalf("after alter: %+v (before %+v): want start 7 and a higher state epoch", after, before)
	}
	dr := c.DescribeShareGroupOffsets(ctx, img, describeShareOffsetsReq("sg", "orders", 0, 1, 9))
	parts := dr.Groups[0].Topics[0].Partitions
	if dr.Groups[0].ErrorCode != 0 || len(parts) != 3 || parts[0].StartOffset != 7 || parts[1].StartOffset != -1 || parts[2].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("describe offsets: %+v", dr.Groups[0])
	}
	// Unknown group: no error, no state (Kafka 4.4).
	dr = c.DescribeShareGroupOffsets(ctx, img, describeShareOffsetsReq("nope", "orders", 0))
	if g := dr.Groups[0]; g.ErrorCode != 0 || g.Topics[0].Partitions[0].StartOffset != -1 {
		t.Fatalf("describe offsets of no group: %+v", g)
	}

	// Delete the topic's offsets: the state goes, the group forgets it.
	d = c.DeleteShareGroupOffsets(ctx, img, &kmsg.DeleteShareGroupOffsetsRequest{GroupID: "sg", Topics: []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "orders"}, {Topic: "gone"}}})
	if d.ErrorCode != 0 || d.Topics[0].ErrorCode != 0 || d.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete offsets: %+v", d)
	}
	if keys := p.keys(); len(keys) != 0 {
		t.Fatalf("share state left after DeleteShareGroupOffsets: %v", keys)
	}
	d = c.DeleteShareGroupOffsets(ctx, img, &kmsg.DeleteShareGroupOffsetsRequest{GroupID: "sg", Topics: []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "orders"}}})
	if tp := d.Topics[0]; tp.ErrorCode != kerr.UnknownTopicOrPartition.Code || tp.ErrorMessage == nil || *tp.ErrorMessage != "There is no offset information to delete." {
		t.Fatalf("delete offsets again: %+v", d)
	}
	if dr = c.DescribeShareGroupOffsets(ctx, img, describeShareOffsetsReq("sg", "")); dr.Groups[0].Topics != nil {
		t.Fatalf("describe all after delete: %+v", dr.Groups[0])
	}

	// A member comes back (initializing again), leaves; DeleteGroups
	// deletes the group and its share state.
	r = c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", 0, "orders"))
	wantCode(t, "rejoin", r.ErrorCode, nil)
	if len(p.keys()) != 2 {
		t.Fatalf("rejoin initialized %d share-partitions, want 2", len(p.keys()))
	}
	wantCode(t, "leave again", c.ShareGroupHeartbeat(ctx, cl, img, sgReq("sg", "m1", -1)).ErrorCode, nil)

	// Restart: the empty group and its initialized partitions survive.
	c.Close()
	c = newTestCoordinator(t, l, func(o *Options) { o.Persister = p })
	del = c.DeleteGroups(ctx, &kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"sg"}})
	wantCode(t, "delete the empty group", del.Groups[0].ErrorCode, nil)
	if keys := p.keys(); len(keys) != 0 {
		t.Fatalf("share state left after DeleteGroups: %v", keys)
	}
	del = c.DeleteGroups(ctx, &kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"sg"}})
	wantCode(t, "delete again", del.Groups[0].ErrorCode, kerr.GroupIDNotFound)
	if d := describeShare(t, c, "sg"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe after delete: %+v", d)
	}
}
