package handlers

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// TestFetchAndProduceOfDeletedLogAreNotStorageErrors: a consumer Fetch or a
// Produce that reaches a partition whose log was deleted (closed) after the
// request looked it up, its log directory being fine, is answered as Kafka
// answers a partition it no longer hosts, NOT_LEADER_OR_FOLLOWER while the
// topic is still in the metadata, never KAFKA_STORAGE_ERROR (56), on which
// kafka-go's Reader gives up. Found by kafka-go's own TestReader "topic being
// recreated will return an error" (compat-tests/suites): its Reader got
// KAFKA_STORAGE_ERROR while the topic was deleted and created again.
func TestFetchAndProduceOfDeletedLogAreNotStorageErrors(t *testing.T) {
	e := newSessionEnv(t, "gone")
	e.produce(t, "gone", 0, "before the delete")
	tp := storage.TopicPartition{Topic: "gone", Partition: 0}
	// What the log syncer does when a topic is deleted; the image (and so
	// the replica manager) has not moved on yet: the window of the race.
	if err := e.d.Logs.DeleteLog(tp); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int16{4, 11, 12, 13, 18} {
		resp := e.fetch(t, v, 0, -1, []fetchPos{{"gone", 0, 1}}, nil)
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.NotLeaderForPartition.Code {
			t.Errorf("fetch v%d of a deleted log: error %d, want NOT_LEADER_OR_FOLLOWER (%d)", v, got, kerr.NotLeaderForPartition.Code)
		}
	}
	for _, v := range []int16{9, 13} {
		batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(),
			Records: []wire.Record{{Value: []byte("after the delete")}}})
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks = 1
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "gone", e.ids["gone"]
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = 0, batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		sp := e.call(t, req, v).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.BaseOffset != -1 {
			t.Errorf("produce v%d to a deleted log: error %d offset %d, want NOT_LEADER_OR_FOLLOWER (%d) offset -1", v, sp.ErrorCode, sp.BaseOffset, kerr.NotLeaderForPartition.Code)
		}
	}
}

// TestUnhostedPartitionCode: once the topic is gone from the metadata the
// answer is UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID for a request by
// id, also when the name now belongs to a recreated topic with a new id).
func TestUnhostedPartitionCode(t *testing.T) {
	old := &controller.Topic{Name: "t", ID: controller.Uuid{1}}
	recreated := &controller.Topic{Name: "t", ID: controller.Uuid{2}}
	with := func(ts ...*controller.Topic) *controller.Image {
		img := &controller.Image{Topics: map[string]*controller.Topic{}, TopicsByID: map[controller.Uuid]*controller.Topic{}}
		for _, t := range ts {
			img.Topics[t.Name], img.TopicsByID[t.ID] = t, t
		}
		return img
	}
	for _, c := range []struct {
		name string
		img  *controller.Image
		byID bool
		want int16
	}{
		{"still there, by name", with(old), false, kerr.NotLeaderForPartition.Code},
		{"still there, by id", with(old), true, kerr.NotLeaderForPartition.Code},
		{"deleted, by name", with(), false, kerr.UnknownTopicOrPartition.Code},
		{"deleted, by id", with(), true, kerr.UnknownTopicID.Code},
		{"recreated, by name", with(recreated), false, kerr.NotLeaderForPartition.Code},
		{"recreated, by id", with(recreated), true, kerr.UnknownTopicID.Code},
	} {
		if got := unhostedPartitionCode(c.img, old, c.byID); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
}
