package controller

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
)

// dirImage is an image with brokers 1 (dirs a, b; b cordoned, a
// offline) and 2 (dir c), and topic t with p0 on 1,2 (directories b, c)
// and p1 on 2,1 (c, UNASSIGNED).
func dirImage(t *testing.T) *Image {
	t.Helper()
	a, b, c := Uuid{0xda, 'a'}, Uuid{0xda, 'b'}, Uuid{0xda, 'c'}
	id := Uuid{1, 2, 3}
	img, err := applyBatch(EmptyImage("c", 1), 0, []Record{
		RegisterBrokerRecord{BrokerID: 1, Host: "h1", Port: 9092, Epoch: 0, LogDirs: []Uuid{a, b}},
		RegisterBrokerRecord{BrokerID: 2, Host: "h2", Port: 9093, Epoch: 1, LogDirs: []Uuid{c}},
		TopicRecord{Name: "t", ID: id},
		PartitionRecord{TopicID: id, Partition: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, Directories: []Uuid{DirUnassigned, c}},
		PartitionRecord{TopicID: id, Partition: 1, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2, Directories: []Uuid{c, DirUnassigned}},
		ReplicaDirsRecord{BrokerID: 1, Epoch: 0, Dir: b, Replicas: []TopicIDPartitions{{TopicID: id, Partitions: []int32{0}}}},
		BrokerCordonedDirsRecord{BrokerID: 1, Epoch: 0, Dirs: []Uuid{b}},
		BrokerOfflineDirsRecord{BrokerID: 1, Epoch: 0, Dirs: []Uuid{a}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestDirectorySnapshotRoundTrip: registrations' log dirs, replica
// directories, cordoned and offline directories survive a snapshot.
func TestDirectorySnapshotRoundTrip(t *testing.T) {
	img := dirImage(t)
	if got := img.Topics["t"].Partitions[0].Directories; !slices.Equal(got, []Uuid{{0xda, 'b'}, {0xda, 'c'}}) {
		t.Fatalf("t-0 directories %v", got)
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

// TestReplicaDirsRecordRules: a report for a partition the broker does
// not replicate, or of a deleted topic, changes nothing; a change of
// replicas keeps the directories of the replicas that stay.
func TestReplicaDirsRecordRules(t *testing.T) {
	img := dirImage(t)
	id := img.Topics["t"].ID
	c := Uuid{0xda, 'c'}
	for _, rec := range []ReplicaDirsRecord{
		{BrokerID: 2, Dir: Uuid{0xda, 'z'}, Replicas: []TopicIDPartitions{{TopicID: Uuid{9}, Partitions: []int32{0}}}},
		{BrokerID: 2, Dir: c, Replicas: []TopicIDPartitions{{TopicID: id, Partitions: []int32{0, 1, 7, -1}}}},
	} {
		if changesReplicaDirs(img, rec) {
			t.Errorf("%+v changes directories", rec)
		}
		after, err := Apply(img, rec)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(after.Topics, img.Topics) {
			t.Errorf("%+v changed the topics", rec)
		}
	}
	after, err := Apply(img, PartitionChangeRecord{TopicID: id, Partition: 0, Replicas: []int32{2, 3, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := after.Topics["t"].Partitions[0].Directories, []Uuid{c, DirUnassigned, {0xda, 'b'}}; !slices.Equal(got, want) {
		t.Fatalf("realigned directories %v, want %v", got, want)
	}
	// Broker 1's replica of t-1 is UNASSIGNED: not in an offline
	// directory; its replica of t-0 is in b, online although cordoned.
	if img.ReplicaOffline(1, id, 1) || img.ReplicaOffline(1, id, 0) {
		t.Fatal("replica outside the offline directory is offline")
	}
	lost, err := Apply(img, ReplicaDirsRecord{BrokerID: 2, Epoch: 1, Dir: DirLost, Replicas: []TopicIDPartitions{{TopicID: id, Partitions: []int32{1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !lost.ReplicaOffline(2, id, 1) {
		t.Fatal("a replica in the LOST directory is online")
	}
}
