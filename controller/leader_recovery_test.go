package controller

import (
	"bytes"
	"reflect"
	"testing"
)

// TestLeaderRecoveryRecords: the state survives the records' encoding and
// a snapshot; a change without the field leaves it.
func TestLeaderRecoveryRecords(t *testing.T) {
	id := Uuid{4}
	recs := []Record{
		RegisterBrokerRecord{BrokerID: 1, Host: "h", Port: 1},
		RegisterBrokerRecord{BrokerID: 2, Host: "h", Port: 2},
		TopicRecord{Name: "t", ID: id},
		PartitionRecord{TopicID: id, Partition: 0, Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderRecoveryState: LeaderRecovering},
		PartitionRecord{TopicID: id, Partition: 1, Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1},
		PartitionChangeRecord{TopicID: id, Partition: 1, Leader: ptrTo(int32(2)), ISR: []int32{2}, LeaderRecoveryState: ptrTo(LeaderRecovering)},
		PartitionChangeRecord{TopicID: id, Partition: 1, ISR: []int32{2, 1}},
	}
	for _, rec := range recs {
		payload, err := encodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRecord(payloadVersion(rec), rec.recordType(), payload)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, rec) {
			t.Fatalf("round trip %#v, want %#v", got, rec)
		}
	}
	img, err := applyBatch(EmptyImage("c", 1), 0, recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range img.Topics["t"].Partitions {
		if p.LeaderRecoveryState != LeaderRecovering {
			t.Fatalf("partition %d state %d, want RECOVERING", p.Partition, p.LeaderRecoveryState)
		}
	}
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, img); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSnapshot(bytes.NewReader(buf.Bytes()), EmptyImage("c", 1))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, img) {
		t.Fatalf("snapshot round trip:\n got %+v\nwant %+v", got, img)
	}
}

// TestMarkUncleanElections: only a leader from outside the ISR and ELR
// is unclean; a batch is followed change by change; a partition already
// RECOVERING is not marked again.
func TestMarkUncleanElections(t *testing.T) {
	id := Uuid{4}
	img, err := applyBatch(EmptyImage("c", 1), 0, []Record{
		RegisterBrokerRecord{BrokerID: 1, Host: "h", Port: 1},
		RegisterBrokerRecord{BrokerID: 2, Host: "h", Port: 2},
		RegisterBrokerRecord{BrokerID: 3, Host: "h", Port: 3},
		TopicRecord{Name: "t", ID: id},
		PartitionRecord{TopicID: id, Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1},
		PartitionRecord{TopicID: id, Partition: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: -1, ELR: []int32{2}},
		PartitionRecord{TopicID: id, Partition: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: -1, LeaderRecoveryState: LeaderRecovering},
	})
	if err != nil {
		t.Fatal(err)
	}
	recs := markUncleanElections(img, []Record{
		PartitionChangeRecord{TopicID: id, Partition: 0, Leader: ptrTo(int32(2))},                       // clean: in the ISR
		PartitionChangeRecord{TopicID: id, Partition: 0, Leader: ptrTo(int32(3)), ISR: []int32{3}},      // unclean
		PartitionChangeRecord{TopicID: id, Partition: 0, Leader: ptrTo(int32(1)), ISR: []int32{1}},      // unclean again, already RECOVERING
		PartitionChangeRecord{TopicID: id, Partition: 1, Leader: ptrTo(int32(2)), ISR: []int32{2}},      // clean: an ELR member
		PartitionChangeRecord{TopicID: id, Partition: 2, Leader: ptrTo(int32(3)), ISR: []int32{3}},      // unclean, RECOVERING already
		PartitionChangeRecord{TopicID: id, Partition: 1, Leader: ptrTo(int32(-1)), ISR: []int32{2}},     // no leader
		PartitionChangeRecord{TopicID: Uuid{9}, Partition: 0, Leader: ptrTo(int32(3)), ISR: []int32{3}}, // unknown topic
	})
	want := []bool{false, true, false, false, false, false, false}
	for i, rec := range recs {
		if got := rec.(PartitionChangeRecord).LeaderRecoveryState != nil; got != want[i] {
			t.Errorf("change %d: marked %v, want %v", i, got, want[i])
		}
	}
}
