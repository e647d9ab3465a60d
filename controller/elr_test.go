package controller

import (
	"reflect"
	"slices"
	"testing"
)

// TestELRRecordRoundTrip encodes and decodes the records that carry
// eligible leader replicas, with the payload version each is written at,
// and checks that an empty ISR survives the trip (JSON omits an empty
// list, which would read back as "ISR unchanged").
func TestELRRecordRoundTrip(t *testing.T) {
	id := Uuid{1, 2, 3}
	cases := []struct {
		name    string
		rec     Record
		version int8
	}{
		{"change without ELR", PartitionChangeRecord{TopicID: id, Partition: 1, ISR: []int32{1, 2}}, recordVersion},
		{"change bumping the epoch", PartitionChangeRecord{TopicID: id, BumpLeaderEpoch: true, Leader: ptrTo(int32(1))}, partitionChangeV2},
		{"change emptying the ISR", PartitionChangeRecord{TopicID: id, ISR: []int32{}, Leader: ptrTo(int32(-1)),
			ELR: &[]int32{1, 2}, LastKnownELR: &[]int32{1}}, partitionChangeV3},
		{"change emptying the ISR alone", PartitionChangeRecord{TopicID: id, ISR: []int32{}}, partitionChangeV3},
		{"change clearing the ELR", PartitionChangeRecord{TopicID: id, ELR: &[]int32{}, LastKnownELR: &[]int32{}}, partitionChangeV3},
		{"change with ELR and epoch bump", PartitionChangeRecord{TopicID: id, ELR: &[]int32{3}, BumpLeaderEpoch: true}, partitionChangeV3},
		{"partition without ELR", PartitionRecord{TopicID: id, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1}, recordVersion},
		{"partition with ELR", PartitionRecord{TopicID: id, Replicas: []int32{1, 2, 3}, ISR: []int32{}, Leader: -1,
			ELR: []int32{1, 2}, LastKnownELR: []int32{1}}, partitionV2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if v := payloadVersion(c.rec); v != c.version {
				t.Fatalf("payload version %d, want %d", v, c.version)
			}
			payload, err := encodeRecord(c.rec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeRecord(c.version, c.rec.recordType(), payload)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.rec) {
				t.Fatalf("decoded %#v\nwant %#v (payload %s)", got, c.rec, payload)
			}
		})
	}
}

// TestELROlderRecords checks that records written before eligible leader
// replicas decode with none, and that a version this build does not know
// is refused.
func TestELROlderRecords(t *testing.T) {
	rec, err := decodeRecord(recordVersion, RecordPartitionChange, []byte(`{"topic_id":"AQIDAAAAAAAAAAAAAAAAAA","partition":0,"isr":[1,2]}`))
	if err != nil {
		t.Fatal(err)
	}
	ch := rec.(PartitionChangeRecord)
	if ch.ELR != nil || ch.LastKnownELR != nil || !slices.Equal(ch.ISR, []int32{1, 2}) {
		t.Fatalf("decoded %#v", ch)
	}
	rec, err = decodeRecord(recordVersion, RecordPartitionChange, []byte(`{"topic_id":"AQIDAAAAAAAAAAAAAAAAAA","partition":0}`))
	if err != nil || rec.(PartitionChangeRecord).ISR != nil {
		t.Fatalf("a change without isr decoded as %#v, %v", rec, err)
	}
	if _, err := decodeRecord(4, RecordPartitionChange, []byte(`{}`)); err == nil {
		t.Fatal("payload version 4 of a partition change decoded")
	}
	if _, err := decodeRecord(partitionV2, RecordTopic, []byte(`{}`)); err == nil {
		t.Fatal("payload version 2 of a topic record decoded")
	}
	if _, err := decodeRecord(partitionChangeV3, RecordPartitionChange, []byte(`{"empty_isr":true,"isr":[1]}`)); err == nil {
		t.Fatal("empty_isr with members decoded")
	}
}

// TestBuildELRChange is the table of the ELR rules for one partition with
// replicas 1, 2, 3 and min.insync.replicas 2.
func TestBuildELRChange(t *testing.T) {
	top := &Topic{Name: "t", ID: Uuid{9}}
	alive := func(ids ...int32) func(int32) bool {
		return func(r int32) bool { return slices.Contains(ids, r) }
	}
	type want struct {
		changed             bool
		leader              int32
		isr, elr, lastKnown []int32
	}
	cases := []struct {
		name string
		p    Partition
		c    elrChange
		want want
	}{
		{"shrink to min.isr: no ELR",
			Partition{Leader: 1, ISR: []int32{1, 2, 3}},
			elrChange{isr: []int32{1, 2}, acceptable: alive(1, 2)},
			want{true, 1, []int32{1, 2}, nil, nil}},
		{"shrink below min.isr: removed member eligible",
			Partition{Leader: 1, ISR: []int32{1, 2}},
			elrChange{isr: []int32{1}, acceptable: alive(1)},
			want{true, 1, []int32{1}, []int32{2}, nil}},
		{"last member fenced: ISR empty, leader eligible and last known",
			Partition{Leader: 1, ISR: []int32{1}, ELR: []int32{2}},
			elrChange{isr: []int32{}, acceptable: alive()},
			want{true, -1, []int32{}, []int32{1, 2}, []int32{1}}},
		{"ELR member back: clean election",
			Partition{Leader: -1, ISR: []int32{}, ELR: []int32{1, 2}, LastKnownELR: []int32{1}},
			elrChange{isr: []int32{}, acceptable: alive(2, 3)},
			want{true, 2, []int32{2}, []int32{1}, []int32{}}},
		{"non-eligible replica back: nothing",
			Partition{Leader: -1, ISR: []int32{}, ELR: []int32{1, 2}, LastKnownELR: []int32{1}},
			elrChange{isr: []int32{}, acceptable: alive(3)},
			want{false, -1, []int32{}, []int32{1, 2}, []int32{1}}},
		{"non-eligible replica back with unclean election",
			Partition{Leader: -1, ISR: []int32{}, ELR: []int32{1, 2}, LastKnownELR: []int32{1}},
			elrChange{isr: []int32{}, acceptable: alive(3), election: electUnclean},
			want{true, 3, []int32{3}, nil, []int32{}}},
		{"unclean shutdown leaves the ELR",
			Partition{Leader: -1, ISR: []int32{}, ELR: []int32{1, 2}, LastKnownELR: []int32{1}},
			elrChange{isr: []int32{}, acceptable: alive(), uncleanShutdown: 2},
			want{true, -1, []int32{}, []int32{1}, []int32{1}}},
		{"last known leader back with ISR and ELR empty",
			Partition{Leader: -1, ISR: []int32{}, LastKnownELR: []int32{1}},
			elrChange{isr: []int32{}, acceptable: alive(1, 3)},
			want{true, 1, []int32{1}, nil, []int32{}}},
		{"ISR grows to min.isr: ELR cleared",
			Partition{Leader: 2, ISR: []int32{2}, ELR: []int32{1}},
			elrChange{isr: []int32{2, 3}, acceptable: alive(2, 3)},
			want{true, 2, []int32{2, 3}, nil, nil}},
		{"ISR grows below min.isr: member leaves the ELR",
			Partition{Leader: 2, ISR: []int32{2}, ELR: []int32{1, 3}},
			elrChange{isr: []int32{2, 3}, acceptable: alive(2, 3), minISR: 3},
			want{true, 2, []int32{2, 3}, []int32{1}, nil}},
		{"leader fenced, ISR member left: clean failover, leaver eligible",
			Partition{Leader: 1, ISR: []int32{1, 2}},
			elrChange{isr: []int32{2}, acceptable: alive(2, 3)},
			want{true, 2, []int32{2}, []int32{1}, nil}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.p.Replicas = []int32{1, 2, 3}
			if c.c.minISR == 0 {
				c.c.minISR = 2
			}
			if c.c.uncleanShutdown == 0 {
				c.c.uncleanShutdown = -1
			}
			rec, changed := buildELRChange(top, c.p, c.c)
			if changed != c.want.changed {
				t.Fatalf("changed=%v, want %v (%+v)", changed, c.want.changed, rec)
			}
			img := EmptyImage("c", 1)
			img, err := Apply(img, TopicRecord{Name: top.Name, ID: top.ID})
			if err != nil {
				t.Fatal(err)
			}
			img, err = Apply(img, PartitionRecord{TopicID: top.ID, Replicas: c.p.Replicas, ISR: c.p.ISR, Leader: c.p.Leader, ELR: c.p.ELR, LastKnownELR: c.p.LastKnownELR})
			if err != nil {
				t.Fatal(err)
			}
			if changed {
				if img, err = Apply(img, rec); err != nil {
					t.Fatal(err)
				}
			}
			got := img.Topics["t"].Partitions[0]
			if got.Leader != c.want.leader || !slices.Equal(got.ISR, c.want.isr) && len(got.ISR)+len(c.want.isr) > 0 ||
				!slices.Equal(got.ELR, c.want.elr) && len(got.ELR)+len(c.want.elr) > 0 ||
				!slices.Equal(got.LastKnownELR, c.want.lastKnown) && len(got.LastKnownELR)+len(c.want.lastKnown) > 0 {
				t.Fatalf("leader=%d isr=%v elr=%v lastKnown=%v, want %+v", got.Leader, got.ISR, got.ELR, got.LastKnownELR, c.want)
			}
		})
	}
}

// TestReassignmentWithELR completes a reassignment with eligible leader
// replicas on: the AlterPartition that brings the new replica into the ISR
// also moves the leader off a removed replica (a decision that once
// panicked), and the ELR keeps only replicas of the new assignment.
func TestReassignmentWithELR(t *testing.T) {
	c := newTestController(t, 4, func(o *Options) { o.EligibleLeaderReplicas = func(*Topic) int { return 3 } })
	r := c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2, 3}}}}, false)[0]
	if r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	if res := reassign(t, c, "t", 0, []int32{2, 3, 4}); res.ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
	p := c.Image().Topics["t"].Partitions[0]
	got, code, msg := c.AlterPartition(AlterPartition{TopicID: r.ID, Partition: 0, LeaderID: 1, LeaderEpoch: 0, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{1, 2}})
	if code != 0 || !slices.Equal(got.ELR, []int32{3}) {
		t.Fatalf("shrink: %d %s %+v", code, msg, got)
	}
	got, code, msg = c.AlterPartition(AlterPartition{TopicID: r.ID, Partition: 0, LeaderID: 1, LeaderEpoch: 0, PartitionEpoch: got.PartitionEpoch, NewISR: []int32{1, 2, 4}})
	if code != 0 {
		t.Fatalf("expand: %d %s", code, msg)
	}
	if !slices.Equal(got.Replicas, []int32{2, 3, 4}) || !slices.Equal(got.ISR, []int32{2, 4}) || got.Leader != 2 || got.Reassigning() ||
		!slices.Equal(got.ELR, []int32{3}) || len(got.LastKnownELR) != 0 {
		t.Fatalf("completed: %+v", got)
	}
}

// TestFenceLastISRMemberWithELR fences both replicas of a partition with
// min.insync.replicas 1, with and without eligible leader replicas:
// without, the last ISR member stays in the ISR; with, the ISR becomes
// empty and that member is eligible and the last known leader. Either way
// it leads again once unfenced.
func TestFenceLastISRMemberWithELR(t *testing.T) {
	for _, on := range []bool{false, true} {
		c := newTestController(t, 2, func(o *Options) {
			if on {
				o.EligibleLeaderReplicas = func(*Topic) int { return 1 }
			}
		})
		if r := c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2}}}}, false)[0]; r.ErrorCode != 0 {
			t.Fatalf("%+v", r)
		}
		for _, id := range []int32{2, 1} {
			if err := c.FenceBroker(id, true); err != nil {
				t.Fatal(err)
			}
		}
		p := c.Image().Topics["t"].Partitions[0]
		switch {
		case !on && (p.Leader != -1 || !slices.Equal(p.ISR, []int32{1}) || len(p.ELR) != 0):
			t.Fatalf("without ELR: %+v", p)
		case on && (p.Leader != -1 || len(p.ISR) != 0 || !slices.Equal(p.ELR, []int32{1}) || !slices.Equal(p.LastKnownELR, []int32{1})):
			t.Fatalf("with ELR: %+v", p)
		}
		if err := c.FenceBroker(1, false); err != nil {
			t.Fatal(err)
		}
		if p := c.Image().Topics["t"].Partitions[0]; p.Leader != 1 || !slices.Equal(p.ISR, []int32{1}) || len(p.ELR) != 0 || len(p.LastKnownELR) != 0 {
			t.Fatalf("ELR %v: broker 1 back: %+v", on, p)
		}
	}
}

// TestELRMinISRCapped: min.insync.replicas above the replica count counts
// as the replica count (Kafka's getTopicEffectiveMinIsr), so a full ISR
// of two replicas with min.insync.replicas 3 tracks no ELR, and a shrink
// to one does.
func TestELRMinISRCapped(t *testing.T) {
	top := &Topic{Name: "t", ID: Uuid{9}}
	p := Partition{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}, ELR: []int32{2}}
	rec, changed := buildELRChange(top, p, elrChange{isr: []int32{1, 2}, acceptable: func(int32) bool { return true }, uncleanShutdown: -1, minISR: 3})
	if !changed || rec.ELR == nil || len(*rec.ELR) != 0 {
		t.Fatalf("ISR back to both replicas: %+v", rec)
	}
	p = Partition{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}
	rec, _ = buildELRChange(top, p, elrChange{isr: []int32{1}, acceptable: func(int32) bool { return true }, uncleanShutdown: -1, minISR: 3})
	if rec.ELR == nil || !slices.Equal(*rec.ELR, []int32{2}) {
		t.Fatalf("shrink to one: %+v", rec)
	}
}

// TestElectUncleanWithELR: a partition whose eligible replicas are all
// down stays leaderless while unclean.leader.election.enable is off; once
// the topic allows it, ElectUnclean (the controller's timer) elects the
// live non-eligible replica, resetting the ISR to it and clearing the ELR
// and last known leader.
func TestElectUncleanWithELR(t *testing.T) {
	allow := false
	c := newTestController(t, 3, func(o *Options) {
		o.EligibleLeaderReplicas = func(*Topic) int { return 2 }
		o.UncleanLeaderElection = func(*Topic) bool { return allow }
	})
	if r := c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2, 3}}}}, false)[0]; r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	for _, id := range []int32{3, 2, 1} {
		if err := c.FenceBroker(id, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.FenceBroker(3, false); err != nil {
		t.Fatal(err)
	}
	p := c.Image().Topics["t"].Partitions[0]
	if p.Leader != -1 || len(p.ISR) != 0 || !slices.Equal(p.ELR, []int32{1, 2}) || !slices.Equal(p.LastKnownELR, []int32{1}) {
		t.Fatalf("before: %+v", p)
	}
	if n, err := c.ElectUnclean(); n != 0 || err != nil {
		t.Fatalf("unclean election not allowed: %d %v", n, err)
	}
	allow = true
	if n, err := c.ElectUnclean(); n != 1 || err != nil {
		t.Fatalf("unclean election: %d %v", n, err)
	}
	p = c.Image().Topics["t"].Partitions[0]
	if p.Leader != 3 || !slices.Equal(p.ISR, []int32{3}) || len(p.ELR) != 0 || len(p.LastKnownELR) != 0 {
		t.Fatalf("after: %+v", p)
	}
}
