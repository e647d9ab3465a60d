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

// newInternalEnv is an adminEnv holding __consumer_offsets (one partition,
// with its log) and a user topic "user".
func newInternalEnv(t *testing.T) (*adminEnv, controller.Uuid) {
	t.Helper()
	e := newAdminEnv(t)
	id, err := e.d.Controller.CreateInternalTopic(controller.ConsumerOffsetsTopic, 1, 1, map[string]string{"cleanup.policy": "compact"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: controller.ConsumerOffsetsTopic}, id, storage.DefaultLogConfig()); err != nil {
		t.Fatal(err)
	}
	e.createTopic(t, "user", 1, nil)
	return e, id
}

// TestProduceToInternalTopic is the regression test for issue 11 item 7: a
// client's Produce of a garbage record to __consumer_offsets was accepted
// and broke that coordinator partition at every start. Kafka refuses it
// with INVALID_TOPIC_EXCEPTION "Cannot append to internal topic", by name
// and by id, unless the client id is "__admin_client".
func TestProduceToInternalTopic(t *testing.T) {
	e, id := newInternalEnv(t)
	batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(),
		Records: []wire.Record{{Key: []byte("garbage"), Value: []byte("garbage")}}})
	if err != nil {
		t.Fatal(err)
	}
	produce := func(v int16, clientID string) kmsg.ProduceResponseTopicPartition {
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = controller.ConsumerOffsetsTopic, id
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		req.SetVersion(v)
		decoded := kmsg.NewPtrProduceRequest()
		decoded.SetVersion(v)
		if err := decoded.ReadFrom(req.AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
		resp, err := handleProduce(e.d, &Request{Header: wire.RequestHeader{APIKey: 0, APIVersion: v, ClientID: &clientID}, Body: decoded})
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	for _, v := range []int16{3, 8, 9, 13} {
		p := produce(v, "attacker")
		if p.ErrorCode != kerr.InvalidTopicException.Code || p.BaseOffset != -1 {
			t.Errorf("v%d: error %d offset %d, want INVALID_TOPIC_EXCEPTION and -1", v, p.ErrorCode, p.BaseOffset)
		}
		if v >= 8 && (p.ErrorMessage == nil || *p.ErrorMessage != "Cannot append to internal topic __consumer_offsets") {
			t.Errorf("v%d: message %v", v, deref(p.ErrorMessage))
		}
	}
	l, _ := e.d.Logs.Log(storage.TopicPartition{Topic: controller.ConsumerOffsetsTopic})
	if leo := l.LogEndOffset(); leo != 0 {
		t.Fatalf("a refused produce reached the log: end offset %d", leo)
	}
	if p := produce(9, adminClientID); p.ErrorCode != 0 || l.LogEndOffset() != 1 {
		t.Errorf("%s: error %d, log end %d; Kafka lets this client id write", adminClientID, p.ErrorCode, l.LogEndOffset())
	}
}

// TestDeleteInternalTopics is the regression test for issue 11 item 7:
// DeleteTopics of __consumer_offsets answered 0, stopped every group and
// lost all committed offsets. It is refused by name and by id; other
// topics of the same request are deleted.
func TestDeleteInternalTopics(t *testing.T) {
	e, id := newInternalEnv(t)
	resp := e.call(t, deleteByName(controller.ConsumerOffsetsTopic, "user"), 5).(*kmsg.DeleteTopicsResponse)
	if len(resp.Topics) != 2 {
		t.Fatalf("%+v", resp.Topics)
	}
	if got := resp.Topics[0]; deref(got.Topic) != controller.ConsumerOffsetsTopic || got.ErrorCode != kerr.InvalidTopicException.Code ||
		deref(got.ErrorMessage) != "Cannot delete internal topic __consumer_offsets" {
		t.Errorf("by name: %s %d %s", deref(got.Topic), got.ErrorCode, deref(got.ErrorMessage))
	}
	if got := resp.Topics[1]; got.ErrorCode != 0 {
		t.Errorf("user topic: %d", got.ErrorCode)
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.TopicID = id
	req.Topics = append(req.Topics, rt)
	resp = e.call(t, req, 6).(*kmsg.DeleteTopicsResponse)
	if got := resp.Topics[0]; got.ErrorCode != kerr.InvalidTopicException.Code || got.TopicID != id || deref(got.Topic) != controller.ConsumerOffsetsTopic {
		t.Errorf("by id: %+v", got)
	}
	img := e.d.Controller.Image()
	if img.Topics[controller.ConsumerOffsetsTopic] == nil || img.Topics["user"] != nil {
		t.Errorf("internal kept %v, user deleted %v", img.Topics[controller.ConsumerOffsetsTopic] != nil, img.Topics["user"] == nil)
	}
	// An internal name that does not exist is just unknown.
	resp = e.call(t, deleteByName(controller.TransactionStateTopic), 4).(*kmsg.DeleteTopicsResponse)
	if got := resp.Topics[0]; got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("missing internal topic: %d", got.ErrorCode)
	}
}

// TestDeleteRecordsOfInternalTopic: DeleteRecords on __consumer_offsets
// would drop committed offsets; Kafka answers INVALID_TOPIC_EXCEPTION.
func TestDeleteRecordsOfInternalTopic(t *testing.T) {
	e, _ := newInternalEnv(t)
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = controller.ConsumerOffsetsTopic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Offset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := e.call(t, req, 2).(*kmsg.DeleteRecordsResponse)
	if got := resp.Topics[0].Partitions[0]; got.ErrorCode != kerr.InvalidTopicException.Code {
		t.Errorf("error %d, want INVALID_TOPIC_EXCEPTION", got.ErrorCode)
	}
}
