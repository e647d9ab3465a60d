package coordinator

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire"
)

// txnReq is a TxnOffsetCommit v3 of a producer that is not a group member.
func txnReq(group string, producerID int64, epoch int16, topic string, offsets map[int32]int64) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version = 3
	r.TransactionalID = fmt.Sprintf("tx-%d", producerID)
	r.Group, r.ProducerID, r.ProducerEpoch = group, producerID, epoch
	r.Generation, r.MemberID = -1, ""
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic = topic
	for p := range int32(16) {
		o, ok := offsets[p]
		if !ok {
			continue
		}
		pp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		pp.Partition, pp.Offset, pp.LeaderEpoch, pp.Metadata = p, o, 4, ptr("txn")
		t.Partitions = append(t.Partitions, pp)
	}
	r.Topics = append(r.Topics, t)
	return r
}

func txnCodes(r *kmsg.TxnOffsetCommitResponse) []int16 {
	var out []int16
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

func wantTxnOK(t *testing.T, what string, r *kmsg.TxnOffsetCommitResponse) {
	t.Helper()
	for _, code := range txnCodes(r) {
		wantCode(t, what, code, nil)
	}
}

// stableFetch fetches topic partitions 0..n-1 of group with require_stable
// (v8) and renders each as offset or error name, e.g. "0:10 1:UNSTABLE_OFFSET_COMMIT".
func stableFetch(t *testing.T, c *Coordinator, group, topic string, n int32, stable bool) string {
	t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	r.RequireStable = stable
	ps := make([]int32, n)
	for i := range ps {
		ps[i] = int32(i)
	}
	r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: ps}}}}
	resp := c.OffsetFetch(t.Context(), r)
	wantCode(t, "fetch", resp.Groups[0].ErrorCode, nil)
	var parts []string
	for _, p := range resp.Groups[0].Topics[0].Partitions {
		if p.ErrorCode != 0 {
			parts = append(parts, fmt.Sprintf("%d:%s", p.Partition, errName(p.ErrorCode)))
			continue
		}
		parts = append(parts, fmt.Sprintf("%d:%d", p.Partition, p.Offset))
	}
	return strings.Join(parts, " ")
}

func wantFetch(t *testing.T, what string, c *Coordinator, group string, n int32, stable bool, want string) {
	t.Helper()
	if got := stableFetch(t, c, group, "t", n, stable); got != want {
		t.Fatalf("%s: fetch %q, want %q", what, got, want)
	}
}

func complete(t *testing.T, c *Coordinator, group string, producerID int64, epoch int16, commit bool) {
	t.Helper()
	code := c.CompleteTxn(t.Context(), PartitionFor(group, c.NumPartitions()), producerID, epoch, commit, 0)
	wantCode(t, fmt.Sprintf("complete producer %d commit=%v", producerID, commit), code, nil)
}

// TestTxnOffsetsStageCommitAbort: staged offsets are invisible (and
// unstable) until the commit marker; an abort drops them.
func TestTxnOffsetsStageCommitAbort(t *testing.T) {
	c := newTestCoordinator(t, newLogs())
	ctx := t.Context()
	wantTxnOK(t, "stage", c.TxnOffsetCommit(ctx, txnReq("g", 1, 0, "t", map[int32]int64{0: 10, 1: 11})))
	wantFetch(t, "pending", c, "g", 3, false, "0:-1 1:-1 2:-1")
	wantFetch(t, "pending, stable", c, "g", 3, true, "0:UNSTABLE_OFFSET_COMMIT 1:UNSTABLE_OFFSET_COMMIT 2:-1")
	if !c.HasPendingTxnOffsets(ctx, "g", "t", 0) || c.HasPendingTxnOffsets(ctx, "g", "t", 2) {
		t.Fatal("HasPendingTxnOffsets")
	}
	if got := fetchAll(t, c, "g"); len(got) != 0 {
		t.Fatalf("all offsets while pending: %v", got)
	}
	lg := c.ListGroups(ctx, &kmsg.ListGroupsRequest{Version: 4})
	if len(lg.Groups) != 1 || lg.Groups[0].Group != "g" {
		t.Fatalf("a group with only pending offsets exists, as in Kafka: %+v", lg.Groups)
	}

	complete(t, c, "g", 1, 0, true)
	wantFetch(t, "committed", c, "g", 3, true, "0:10 1:11 2:-1")
	if c.HasPendingTxnOffsets(ctx, "g", "t", 0) {
		t.Fatal("pending after commit")
	}
	// Leader epoch and metadata travel.
	f := kmsg.NewPtrOffsetFetchRequest()
	f.Version = 7
	f.Group = "g"
	f.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	p := c.OffsetFetch(ctx, f).Topics[0].Partitions[0]
	if p.Offset != 10 || p.LeaderEpoch != 4 || *p.Metadata != "txn" {
		t.Fatalf("v7 fetch %+v", p)
	}

	wantTxnOK(t, "stage 2", c.TxnOffsetCommit(ctx, txnReq("g", 1, 0, "t", map[int32]int64{0: 20})))
	wantFetch(t, "second pending", c, "g", 2, true, "0:UNSTABLE_OFFSET_COMMIT 1:11")
	wantFetch(t, "second pending, not stable", c, "g", 2, false, "0:10 1:11")
	complete(t, c, "g", 1, 0, false)
	wantFetch(t, "aborted", c, "g", 2, true, "0:10 1:11")

	// A marker with nothing pending is written and succeeds (retries).
	complete(t, c, "g", 1, 0, false)
	complete(t, c, "g", 99, 0, true)
	wantFetch(t, "after idle markers", c, "g", 2, true, "0:10 1:11")
}

// TestTxnOffsetsLogOrder: when a transaction commits, its offset replaces a
// plain commit written before its batch, and loses to one written after
// it (Kafka compares record offsets).
func TestTxnOffsetsLogOrder(t *testing.T) {
	l := newLogs()
	c := newTestCoordinator(t, l)
	ctx := t.Context()
	c.OffsetCommit(ctx, commitReq("g", "", -1, "t", map[int32]int64{0: 5}))
	wantTxnOK(t, "stage", c.TxnOffsetCommit(ctx, txnReq("g", 1, 0, "t", map[int32]int64{0: 10, 1: 11})))
	wantCode(t, "later plain commit", commitCodes(c.OffsetCommit(ctx, commitReq("g", "", -1, "t", map[int32]int64{1: 7})))[0], nil)
	wantFetch(t, "before marker", c, "g", 2, false, "0:5 1:7")
	wantFetch(t, "before marker, stable", c, "g", 2, true, "0:UNSTABLE_OFFSET_COMMIT 1:UNSTABLE_OFFSET_COMMIT")
	complete(t, c, "g", 1, 0, true)
	want := "0:10 1:7"
	wantFetch(t, "after marker", c, "g", 2, true, want)
	c.Close()
	c2 := newTestCoordinator(t, l)
	wantFetch(t, "reloaded", c2, "g", 2, true, want)
}

// TestTxnOffsetsTwoProducers: each producer's offsets complete on their
// own; a partition stays unstable while any producer has one pending.
func TestTxnOffsetsTwoProducers(t *testing.T) {
	l := newLogs()
	c := newTestCoordinator(t, l)
	ctx := t.Context()
	wantTxnOK(t, "p1", c.TxnOffsetCommit(ctx, txnReq("g", 1, 0, "t", map[int32]int64{0: 10})))
	wantTxnOK(t, "p2", c.TxnOffsetCommit(ctx, txnReq("g", 2, 0, "t", map[int32]int64{0: 20, 1: 21})))
	// p1 stages again in the same transaction: its latest offset counts.
	wantTxnOK(t, "p1 again", c.TxnOffsetCommit(ctx, txnReq("g", 1, 0, "t", map[int32]int64{0: 12})))
	complete(t, c, "g", 2, 0, false)
	wantFetch(t, "p2 aborted", c, "g", 2, true, "0:UNSTABLE_OFFSET_COMMIT 1:-1")
	complete(t, c, "g", 1, 0, true)
	wantFetch(t, "p1 committed", c, "g", 2, true, "0:12 1:-1")

	// Both commit: the later record wins, whatever the marker order.
	wantTxnOK(t, "p1", c.TxnOffsetCommit(ctx, txnReq("g", 1, 0, "t", map[int32]int64{0: 30})))
	wantTxnOK(t, "p2", c.TxnOffsetCommit(ctx, txnReq("g", 2, 0, "t", map[int32]int64{0: 40})))
	complete(t, c, "g", 2, 0, true)
	complete(t, c, "g", 1, 0, true)
	wantFetch(t, "both committed", c, "g", 1, true, "0:40")
	c.Close()
	wantFetch(t, "reloaded", newTestCoordinator(t, l), "g", 2, true, "0:40 1:-1")
}

// TestTxnOffsetsChecks covers the request checks of TxnOffsetCommit and
// CompleteTxn.
func TestTxnOffsetsChecks(t *testing.T) {
	c := newTestCoordinator(t, newLogs(), func(o *Options) { o.MaxMetadataBytes = 8 })
	ctx := t.Context()
	member, gen := joinAndSync(t, c, "g", "t")

	// A producer outside the group (v0-v2, or v3 without member) may
	// commit to a stable group.
	r := txnReq("g", 1, 0, "t", map[int32]int64{0: 1})
	r.Version = 0
	wantTxnOK(t, "v0", c.TxnOffsetCommit(ctx, r))
	wantTxnOK(t, "v3 no member", c.TxnOffsetCommit(ctx, txnReq("g", 1, 0, "t", map[int32]int64{0: 1})))

	for _, tc := range []struct {
		name       string
		gen        int32
		member     string
		instanceID *string
		want       *kerr.Error
	}{
		{"member", gen, member, nil, nil},
		{"old generation", gen - 1, member, nil, kerr.IllegalGeneration},
		{"unknown member", gen, "nobody", nil, kerr.UnknownMemberID},
		{"member without generation", -1, member, nil, kerr.IllegalGeneration},
		{"unknown instance", gen, member, ptr("i1"), kerr.UnknownMemberID},
	} {
		r := txnReq("g", 1, 0, "t", map[int32]int64{0: 2})
		r.Generation, r.MemberID, r.InstanceID = tc.gen, tc.member, tc.instanceID
		wantCode(t, tc.name, txnCodes(c.TxnOffsetCommit(ctx, r))[0], tc.want)
	}

	// Static member fenced by a newer member id of its instance.
	jr := joinReq("s", "", "t")
	jr.InstanceID = ptr("i1")
	j := c.JoinGroup(ctx, Client{ID: "cl"}, jr)
	wantCode(t, "static join", j.ErrorCode, nil)
	r = txnReq("s", 1, 0, "t", map[int32]int64{0: 2})
	r.Generation, r.MemberID, r.InstanceID = j.Generation, "someone-else", ptr("i1")
	wantCode(t, "fenced instance", txnCodes(c.TxnOffsetCommit(ctx, r))[0], kerr.FencedInstanceID)
	// Kafka accepts transactional commits while the group completes a
	// rebalance (no REBALANCE_IN_PROGRESS).
	r.MemberID = j.MemberID
	wantCode(t, "completing rebalance", txnCodes(c.TxnOffsetCommit(ctx, r))[0], nil)

	r = txnReq("nogroup", 1, 0, "t", map[int32]int64{0: 2})
	r.Generation, r.MemberID = 3, "m"
	wantCode(t, "member of no group", txnCodes(c.TxnOffsetCommit(ctx, r))[0], kerr.IllegalGeneration)
	// From v6 Kafka 4.4 names it (supportsGroupIdNotFoundError).
	r.Version = 6
	wantCode(t, "member of no group v6", txnCodes(c.TxnOffsetCommit(ctx, r))[0], kerr.GroupIDNotFound)
	if lg := c.ListGroups(ctx, &kmsg.ListGroupsRequest{Version: 4}); len(lg.Groups) != 2 {
		t.Fatalf("a refused commit left a group: %+v", lg.Groups)
	}
	wantCode(t, "empty group id", txnCodes(c.TxnOffsetCommit(ctx, txnReq("", 1, 0, "t", map[int32]int64{0: 2})))[0], kerr.InvalidGroupID)

	r = txnReq("m", 1, 0, "t", map[int32]int64{0: 2, 1: 3})
	r.Topics[0].Partitions[1].Metadata = ptr("far too long")
	codes := txnCodes(c.TxnOffsetCommit(ctx, r))
	wantCode(t, "short metadata", codes[0], nil)
	wantCode(t, "long metadata", codes[1], kerr.OffsetMetadataTooLarge)
	complete(t, c, "m", 1, 0, true)
	wantFetch(t, "too large not staged", c, "m", 2, true, "0:2 1:-1")

	// Producer epochs fence zombies; coordinator epochs fence old
	// transaction coordinators.
	wantTxnOK(t, "epoch 1", c.TxnOffsetCommit(ctx, txnReq("z", 7, 1, "t", map[int32]int64{0: 1})))
	wantCode(t, "epoch 0 commit", txnCodes(c.TxnOffsetCommit(ctx, txnReq("z", 7, 0, "t", map[int32]int64{0: 2})))[0], kerr.InvalidProducerEpoch)
	p := PartitionFor("z", testPartitions)
	wantCode(t, "epoch 0 marker", c.CompleteTxn(ctx, p, 7, 0, true, 5), kerr.InvalidProducerEpoch)
	wantCode(t, "marker", c.CompleteTxn(ctx, p, 7, 2, false, 5), nil) // the bumped epoch of a fencing abort
	wantCode(t, "fenced coordinator", c.CompleteTxn(ctx, p, 7, 2, false, 4), kerr.TransactionCoordinatorFenced)
	wantCode(t, "epoch 1 after bump", txnCodes(c.TxnOffsetCommit(ctx, txnReq("z", 7, 1, "t", map[int32]int64{0: 2})))[0], kerr.InvalidProducerEpoch)
	wantFetch(t, "fenced producer", c, "z", 1, true, "0:-1")

	c.UnloadPartition(p)
	wantCode(t, "not loaded", c.CompleteTxn(ctx, p, 7, 2, true, 5), kerr.NotCoordinator)
	wantCode(t, "not coordinator", txnCodes(c.TxnOffsetCommit(ctx, txnReq("z", 7, 2, "t", map[int32]int64{0: 2})))[0], kerr.NotCoordinator)
}

// TestTxnOffsetsWriteFailures: a failed stage leaves nothing pending; a
// failed marker leaves the offsets pending for the retry.
func TestTxnOffsetsWriteFailures(t *testing.T) {
	l := newLogs()
	c := newTestCoordinator(t, l)
	ctx := t.Context()
	log := l.get(PartitionFor("g", testPartitions))
	log.failNext(1)
	wantCode(t, "failed stage", txnCodes(c.TxnOffsetCommit(ctx, txnReq("g", 1, 0, "t", map[int32]int64{0: 10})))[0], kerr.CoordinatorNotAvailable)
	wantFetch(t, "after failed stage", c, "g", 1, true, "0:-1")
	if lg := c.ListGroups(ctx, &kmsg.ListGroupsRequest{Version: 4}); len(lg.Groups) != 0 {
		t.Fatalf("failed stage left a group: %+v", lg.Groups)
	}
	wantTxnOK(t, "stage", c.TxnOffsetCommit(ctx, txnReq("g", 1, 0, "t", map[int32]int64{0: 10})))
	log.failNext(1)
	wantCode(t, "failed marker", c.CompleteTxn(ctx, PartitionFor("g", testPartitions), 1, 0, true, 0), kerr.CoordinatorNotAvailable)
	wantFetch(t, "after failed marker", c, "g", 1, true, "0:UNSTABLE_OFFSET_COMMIT")
	complete(t, c, "g", 1, 0, true)
	wantFetch(t, "retried marker", c, "g", 1, true, "0:10")
}

// TestTxnOffsetsDelete: OffsetDelete and DeleteGroups tombstone pending
// offsets too, so a later commit marker brings nothing back, live or after
// reload.
func TestTxnOffsetsDelete(t *testing.T) {
	l := newLogs()
	c := newTestCoordinator(t, l)
	ctx := t.Context()
	{

		// OffsetDelete of a partition with only a pending offset.
		c.OffsetCommit(ctx, commitReq("d", "", -1, "t", map[int32]int64{0: 1}))
		wantTxnOK(t, "stage", c.TxnOffsetCommit(ctx, txnReq("d", 1, 0, "t", map[int32]int64{1: 10, 2: 20})))
		od := kmsg.NewPtrOffsetDeleteRequest()
		od.Group = "d"
		od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 1}}}}
		odr := c.OffsetDelete(ctx, od)
		wantCode(t, "offset delete", odr.ErrorCode, nil)
		wantFetch(t, "after offset delete", c, "d", 3, true, "0:1 1:-1 2:UNSTABLE_OFFSET_COMMIT")
		complete(t, c, "d", 1, 0, true)
		wantFetch(t, "committed after offset delete", c, "d", 3, true, "0:1 1:-1 2:20")

		// DeleteGroups drops every pending offset of the group.
		wantTxnOK(t, "stage", c.TxnOffsetCommit(ctx, txnReq("x", 2, 0, "t", map[int32]int64{0: 5})))
		dg := c.DeleteGroups(ctx, &kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"x"}})
		wantCode(t, "delete group", dg.Groups[0].ErrorCode, nil)
		if c.HasPendingTxnOffsets(ctx, "x", "t", 0) {
			t.Fatal("pending after DeleteGroups")
		}
		complete(t, c, "x", 2, 0, true)
		wantFetch(t, "committed after delete", c, "x", 1, true, "0:-1")
		if lg := c.ListGroups(ctx, &kmsg.ListGroupsRequest{Version: 4}); len(lg.Groups) != 1 || lg.Groups[0].Group != "d" {
			t.Fatalf("the marker brought x back: %+v", lg.Groups)
		}
		c.Close()
		c2 := newTestCoordinator(t, l)
		wantFetch(t, "d reloaded", c2, "d", 3, true, "0:1 1:-1 2:20")
		wantFetch(t, "x reloaded", c2, "x", 1, true, "0:-1")
	}
}

// TestTxnOffsetsExpire: expiry keeps an offset with a pending one on its
// partition, and a group with pending offsets.
func TestTxnOffsetsExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLogs()
		c := newTestCoordinator(t, l, func(o *Options) {
			o.OffsetsRetention = time.Hour
			o.OffsetsRetentionCheckInterval = time.Minute
		})
		ctx := t.Context()
		// Expiry: e's committed offset on t/0 is past retention but a
		// transaction has one pending there, so it stays; f has only a
		// pending offset and is not deleted.
		c.OffsetCommit(ctx, commitReq("e", "", -1, "t", map[int32]int64{0: 3, 1: 4}))
		wantTxnOK(t, "stage e", c.TxnOffsetCommit(ctx, txnReq("e", 3, 0, "t", map[int32]int64{0: 30})))
		wantTxnOK(t, "stage f", c.TxnOffsetCommit(ctx, txnReq("f", 4, 0, "t", map[int32]int64{0: 40})))
		time.Sleep(2 * time.Hour)
		wantFetch(t, "e expired but pending", c, "e", 2, false, "0:3 1:-1")
		lg := c.ListGroups(ctx, &kmsg.ListGroupsRequest{Version: 4})
		names := map[string]bool{}
		for _, g := range lg.Groups {
			names[g.Group] = true
		}
		if !names["e"] || !names["f"] || len(names) != 2 {
			t.Fatalf("groups after expiry: %v", names)
		}
		complete(t, c, "e", 3, 0, true)
		complete(t, c, "f", 4, 0, false)
		wantFetch(t, "e committed", c, "e", 2, true, "0:30 1:-1")
		c.Close()

		c2 := newTestCoordinator(t, l, func(o *Options) { o.OffsetsRetention = time.Hour })
		wantFetch(t, "e reloaded", c2, "e", 2, true, "0:30 1:-1")
		wantFetch(t, "f reloaded", c2, "f", 1, true, "0:-1")
	})
}

// TestTxnOffsetsLoadTolerates: load skips control batches that are not
// transaction markers and markers of unknown producers, and applies a
// transactional batch's non-offset records as usual.
func TestTxnOffsetsLoadTolerates(t *testing.T) {
	ls := newLoadState()
	var data []byte
	add := func(b []byte, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		wire.SetBaseOffset(b, int64(len(data))) // any increasing offsets
		data = append(data, b...)
	}
	add(wire.EncodeControlBatch(5, 0, true, 0, -1, 0)) // nothing pending
	add(wire.EncodeBatch(wire.BatchSpec{ProducerID: 6, BaseSequence: -1, Control: true, Transactional: true,
		Records: []wire.Record{{Key: []byte{0, 0, 0, 3}, Value: []byte{0, 0}}}})) // control type 3: not a marker
	add(wire.EncodeBatch(wire.BatchSpec{ProducerID: 6, BaseSequence: -1, Transactional: true,
		Records: []wire.Record{
			{Key: offsetCommitKey("g", topicPartition{"t", 0}), Value: offsetCommitValue(offsetEntry{offset: 9})},
			{Key: groupMetadataKey("g"), Value: NewGroup(&GroupConfig{}, "g", time.Time{}).metadataValue().AppendTo(nil)},
		}}))
	if _, err := ls.applyBatches(data, 0); err != nil {
		t.Fatal(err)
	}
	if ls.groups["g"] == nil || len(ls.offsets["g"]) != 0 {
		t.Fatalf("groups %v offsets %v", ls.groups, ls.offsets)
	}
	if e, ok := ls.txn.pendingOffset(6, "g", topicPartition{"t", 0}); !ok || e.offset != 9 {
		t.Fatalf("pending %+v %v", e, ok)
	}
}

// TestTxnOffsetsCrashReload runs transactions over real storage logs that
// sync every append, and crashes (keeping only synced data) between a
// staged batch and its marker, and right after a marker.
func TestTxnOffsetsCrashReload(t *testing.T) {
	cfg := storage.DefaultLogConfig()
	cfg.SegmentBytes = 4096
	cfg.FlushIntervalMessages = 1
	const dir = "/data/__consumer_offsets-%d"
	type node struct {
		c    *Coordinator
		logs map[int32]*storage.Log
	}
	start := func(fs *vfs.MemFS) *node {
		n := &node{logs: map[int32]*storage.Log{}}
		for p := range int32(2) {
			l, err := storage.OpenLog(storage.LogOptions{FS: fs, Dir: fmt.Sprintf(dir, p), Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			n.logs[p] = l
		}
		n.c = newTestCoordinator(t, newLogs(), func(o *Options) {
			o.NumPartitions = 2
			o.OpenLog = func(p int32) (Log, error) { return StorageLog(n.logs[p]), nil }
		})
		return n
	}
	stop := func(n *node) {
		n.c.Close()
		for _, l := range n.logs {
			_ = l.Close()
		}
	}
	ctx := t.Context()
	fs := vfs.NewMem()
	n := start(fs)
	// Enough traffic to cross segments.
	for i := range 40 {
		n.c.OffsetCommit(ctx, commitReq("g", "", -1, "t", map[int32]int64{int32(i % 3): int64(i)}))
	}
	wantFetch(t, "plain", n.c, "g", 3, true, "0:39 1:37 2:38")
	wantTxnOK(t, "stage p1", n.c.TxnOffsetCommit(ctx, txnReq("g", 1, 0, "t", map[int32]int64{0: 100, 1: 101})))
	wantTxnOK(t, "stage p2", n.c.TxnOffsetCommit(ctx, txnReq("g", 2, 0, "t", map[int32]int64{2: 202})))

	// Crash before any marker: both transactions stay pending.
	crashed := fs.CrashClone()
	stop(n)
	fs = crashed
	n = start(fs)
	wantFetch(t, "reloaded, pending", n.c, "g", 3, false, "0:39 1:37 2:38")
	wantFetch(t, "reloaded, pending, stable", n.c, "g", 3, true, "0:UNSTABLE_OFFSET_COMMIT 1:UNSTABLE_OFFSET_COMMIT 2:UNSTABLE_OFFSET_COMMIT")
	// The transaction coordinator re-sends its markers after recovering.
	complete(t, n.c, "g", 1, 0, true)
	wantFetch(t, "p1 committed", n.c, "g", 3, true, "0:100 1:101 2:UNSTABLE_OFFSET_COMMIT")

	// Crash right after the marker.
	crashed = fs.CrashClone()
	stop(n)
	fs = crashed
	n = start(fs)
	wantFetch(t, "reloaded after marker", n.c, "g", 3, true, "0:100 1:101 2:UNSTABLE_OFFSET_COMMIT")
	if code := n.c.CompleteTxn(ctx, PartitionFor("g", 2), 2, 0, false, 0); code != 0 {
		t.Fatalf("abort p2: %s", errName(code))
	}
	// Fencing state survives too.
	wantCode(t, "old epoch after reload", txnCodes(n.c.TxnOffsetCommit(ctx, txnReq("g", 1, -1, "t", map[int32]int64{0: 1})))[0], kerr.InvalidProducerEpoch)

	crashed = fs.CrashClone()
	stop(n)
	n = start(crashed)
	wantFetch(t, "reloaded after abort", n.c, "g", 3, true, "0:100 1:101 2:38")
	stop(n)
}

// FuzzLoadTxnBatches feeds the loader corrupted transactional and control
// batches: it must return an error or a state, never panic, and the
// pending index must agree with the producers' pending offsets.
func FuzzLoadTxnBatches(f *testing.F) {
	var seed []byte
	for i, b := range [][]byte{
		mustBatch(wire.EncodeBatch(wire.BatchSpec{ProducerID: 3, ProducerEpoch: 1, BaseSequence: -1, Transactional: true, Records: []wire.Record{
			{Key: offsetCommitKey("g", topicPartition{"t", 0}), Value: offsetCommitValue(offsetEntry{offset: 5})},
			{Key: offsetCommitKey("g", topicPartition{"t", 1}), Value: offsetCommitValue(offsetEntry{offset: 6})},
		}})),
		mustBatch(encodeBatch(time.UnixMilli(0), []wire.Record{{Key: offsetCommitKey("g", topicPartition{"t", 1})}})),
		mustBatch(wire.EncodeControlBatch(3, 1, true, 2, -1, 0)),
	} {
		wire.SetBaseOffset(b, int64(i*2))
		seed = append(seed, b...)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)-5])
	f.Fuzz(func(t *testing.T, data []byte) {
		ls := newLoadState()
		_, _ = ls.applyBatches(data, 0)
		if ls.txn == nil {
			return
		}
		for group, byTP := range ls.txn.open {
			for tp, ids := range byTP {
				for id := range ids {
					if _, ok := ls.txn.pendingOffset(id, group, tp); !ok {
						t.Fatalf("index names producer %d for %s %v with nothing pending", id, group, tp)
					}
				}
			}
		}
		for id, p := range ls.txn.producers {
			for group, byTP := range p.pending {
				for tp := range byTP {
					if _, ok := ls.txn.open[group][tp][id]; !ok {
						t.Fatalf("producer %d pending %s %v not indexed", id, group, tp)
					}
				}
			}
		}
	})
}

func mustBatch(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestTxnOffsetsConsumerGroup: a KIP-848 group checks the member epoch;
// a stale one is ILLEGAL_GENERATION (Kafka's mapping for TxnOffsetCommit),
// and old request versions need no v9 as OffsetCommit does.
func TestTxnOffsetsConsumerGroup(t *testing.T) {
	c := newTestCoordinator(t, newLogs())
	ctx := t.Context()
	resp := c.ConsumerGroupHeartbeat(ctx, Client{ID: "cl", Host: "/h"}, fakeImage{"t": 2}, cgJoinReq("cg", "m1", "t"))
	wantCode(t, "join", resp.ErrorCode, nil)
	for _, tc := range []struct {
		name   string
		member string
		epoch  int32
		want   *kerr.Error
	}{
		{"member", "m1", resp.MemberEpoch, nil},
		{"stale epoch", "m1", resp.MemberEpoch + 1, kerr.IllegalGeneration},
		{"unknown member", "m9", resp.MemberEpoch, kerr.UnknownMemberID},
		{"no member, live group", "", -1, kerr.UnknownMemberID},
	} {
		r := txnReq("cg", 1, 0, "t", map[int32]int64{0: 3})
		r.MemberID, r.Generation = tc.member, tc.epoch
		wantCode(t, tc.name, txnCodes(c.TxnOffsetCommit(ctx, r))[0], tc.want)
	}
	// From v6 a stale member epoch is named as such
	// (supportsStaleMemberEpochError).
	r := txnReq("cg", 1, 0, "t", map[int32]int64{0: 3})
	r.Version, r.MemberID, r.Generation = 6, "m1", resp.MemberEpoch+1
	wantCode(t, "stale epoch v6", txnCodes(c.TxnOffsetCommit(ctx, r))[0], kerr.StaleMemberEpoch)
	complete(t, c, "cg", 1, 0, true)
	wantFetch(t, "committed", c, "cg", 1, true, "0:3")
}

// TestTxnOffsetsConsumerGroupDeleteAndExpire: deleting an empty KIP-848
// group drops its pending transactional offsets (a later commit marker
// brings nothing back); expiry keeps a group while a transaction still
// has offsets pending for it.
func TestTxnOffsetsConsumerGroupDeleteAndExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLogs()
		c := newTestCoordinator(t, l, func(o *Options) {
			o.OffsetsRetention = time.Hour
			o.OffsetsRetentionCheckInterval = time.Minute
		})
		ctx := t.Context()
		leave := func(group, member string, epoch int32) {
			hb := cgJoinReq(group, member, "t")
			hb.MemberEpoch = -1
			wantCode(t, "leave "+group, c.ConsumerGroupHeartbeat(ctx, Client{ID: "cl", Host: "/h"}, fakeImage{"t": 2}, hb).ErrorCode, nil)
		}
		for _, g := range []string{"del", "exp"} {
			resp := c.ConsumerGroupHeartbeat(ctx, Client{ID: "cl", Host: "/h"}, fakeImage{"t": 2}, cgJoinReq(g, "m1", "t"))
			wantCode(t, "join "+g, resp.ErrorCode, nil)
			r := txnReq(g, 7, 0, "t", map[int32]int64{0: 11})
			if g == "exp" {
				r = txnReq(g, 8, 0, "t", map[int32]int64{0: 12})
			}
			r.MemberID, r.Generation = "m1", resp.MemberEpoch
			wantTxnOK(t, "stage "+g, c.TxnOffsetCommit(ctx, r))
			leave(g, "m1", resp.MemberEpoch)
		}

		dg := c.DeleteGroups(ctx, &kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"del"}})
		wantCode(t, "delete consumer group", dg.Groups[0].ErrorCode, nil)
		if c.HasPendingTxnOffsets(ctx, "del", "t", 0) {
			t.Fatal("pending offsets survive DeleteGroups")
		}
		complete(t, c, "del", 7, 0, true)
		wantFetch(t, "deleted group after commit marker", c, "del", 1, true, "0:-1")

		// Two retention periods later "exp" is still there: its
		// transaction has not ended.
		time.Sleep(2 * time.Hour)
		names := map[string]bool{}
		for _, g := range c.ListGroups(ctx, &kmsg.ListGroupsRequest{Version: 4}).Groups {
			names[g.Group] = true
		}
		if !names["exp"] || names["del"] {
			t.Fatalf("groups after expiry: %v", names)
		}
		complete(t, c, "exp", 8, 0, true)
		wantFetch(t, "exp committed", c, "exp", 1, true, "0:12")
		c.Close()
		c2 := newTestCoordinator(t, l, func(o *Options) { o.OffsetsRetention = time.Hour })
		wantFetch(t, "del reloaded", c2, "del", 1, true, "0:-1")
		wantFetch(t, "exp reloaded", c2, "exp", 1, true, "0:12")
	})
}
