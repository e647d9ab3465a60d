package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka 4.4 takes the topics of a Metadata request as a set, and from v12,
// when any entry has a topic id, the ids only (KafkaApis, javap;
// compat-tests/diff fuzzing found both).
func TestMetadataTopicsAsKafkaTakesThem(t *testing.T) {
	e := newAdminEnv(t)
	id := e.createTopic(t, "a", 1, nil)
	e.createTopic(t, "b", 1, nil)
	unknown := [16]byte{9, 9, 9}
	topic := func(name string, id [16]byte) kmsg.MetadataRequestTopic {
		mt := kmsg.NewMetadataRequestTopic()
		if name != "" {
			mt.Topic = kmsg.StringPtr(name)
		}
		mt.TopicID = id
		return mt
	}
	call := func(v int16, topics ...kmsg.MetadataRequestTopic) []kmsg.MetadataResponseTopic {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = topics
		return e.call(t, req, v).(*kmsg.MetadataResponse).Topics
	}

	// A name twice: answered once.
	if got := call(12, topic("a", [16]byte{}), topic("a", [16]byte{})); len(got) != 1 || got[0].ErrorCode != 0 {
		t.Fatalf("a twice: %+v", got)
	}
	// By name and by an unknown id: the id decides, the name is ignored,
	// and so is b, named without an id.
	got := call(12, topic("a", unknown), topic("b", [16]byte{}))
	if len(got) != 1 || got[0].Topic != nil || got[0].TopicID != unknown || got[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("a by an unknown id: %+v", got)
	}
	// A known id twice, one with another topic's name: a, once.
	got = call(12, topic("b", [16]byte(id)), topic("", [16]byte(id)))
	if len(got) != 1 || got[0].Topic == nil || *got[0].Topic != "a" || got[0].ErrorCode != 0 {
		t.Fatalf("a by id twice: %+v", got)
	}
	// Before v12 the names are used.
	got = call(11, topic("b", [16]byte{}), topic("a", [16]byte{}), topic("b", [16]byte{}))
	if len(got) != 2 || *got[0].Topic != "b" || *got[1].Topic != "a" {
		t.Fatalf("v11 by names: %+v", got)
	}
}

// Before v12 a topic id or a null name fails the whole request, as in
// Kafka 4.4: every topic INVALID_REQUEST as named, no brokers, controller
// -1 (compat-tests/diff fuzzing).
func TestMetadataTopicIDsBeforeV12(t *testing.T) {
	e := newAdminEnv(t)
	id := e.createTopic(t, "a", 1, nil)
	for _, v := range []int16{10, 11} {
		req := kmsg.NewPtrMetadataRequest()
		byName, byID := kmsg.NewMetadataRequestTopic(), kmsg.NewMetadataRequestTopic()
		byName.Topic = kmsg.StringPtr("a")
		byID.TopicID = [16]byte(id)
		req.Topics = []kmsg.MetadataRequestTopic{byName, byID, byName}
		resp := e.call(t, req, v).(*kmsg.MetadataResponse)
		if len(resp.Brokers) != 0 || resp.ControllerID != -1 || len(resp.Topics) != 3 {
			t.Fatalf("v%d: brokers %d controller %d topics %d", v, len(resp.Brokers), resp.ControllerID, len(resp.Topics))
		}
		for i, want := range []string{"a", "", "a"} {
			got := resp.Topics[i]
			if got.ErrorCode != kerr.InvalidRequest.Code || got.Topic == nil || *got.Topic != want || len(got.Partitions) != 0 {
				t.Errorf("v%d topic %d: %+v", v, i, got)
			}
		}
	}
}
