package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

func deleteByName(names ...string) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = names
	for _, n := range names {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = strp(n)
		req.Topics = append(req.Topics, t)
	}
	return req
}

func TestDeleteTopicsByName(t *testing.T) {
	for _, v := range []int16{0, 1, 3, 4, 5, 6} {
		e := newAdminEnv(t)
		e.createTopic(t, "a", 1, nil)
		e.createTopic(t, "b", 1, nil)
		resp := e.call(t, deleteByName("a", "missing", "b", "b"), v).(*kmsg.DeleteTopicsResponse)
		want := []topicCode{{"a", 0}, {"missing", kerr.UnknownTopicOrPartition.Code}, {"b", kerr.InvalidRequest.Code}}
		if len(resp.Topics) != len(want) {
			t.Fatalf("v%d: %d results: %+v", v, len(resp.Topics), resp.Topics)
		}
		for i, w := range want {
			got := resp.Topics[i]
			if deref(got.Topic) != w.topic || got.ErrorCode != w.code {
				t.Errorf("v%d result %d: got %s/%d, want %s/%d", v, i, deref(got.Topic), got.ErrorCode, w.topic, w.code)
			}
			if v >= 5 && (got.ErrorCode != 0) != (got.ErrorMessage != nil) {
				t.Errorf("v%d result %d: code %d message %v", v, i, got.ErrorCode, got.ErrorMessage)
			}
		}
		img := e.d.Controller.Image()
		if img.Topics["a"] != nil || img.Topics["b"] == nil {
			t.Errorf("v%d: a deleted=%v, b kept=%v", v, img.Topics["a"] == nil, img.Topics["b"] != nil)
		}
	}
}

func TestDeleteTopicsByID(t *testing.T) {
	e := newAdminEnv(t)
	id := e.createTopic(t, "a", 1, nil)
	req := kmsg.NewPtrDeleteTopicsRequest()
	for _, u := range []controller.Uuid{id, {1, 2, 3}} {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.TopicID = u
		req.Topics = append(req.Topics, rt)
	}
	resp := e.call(t, req, 6).(*kmsg.DeleteTopicsResponse)
	if len(resp.Topics) != 2 {
		t.Fatalf("%+v", resp.Topics)
	}
	if got := resp.Topics[0]; got.ErrorCode != 0 || deref(got.Topic) != "a" || got.TopicID != id {
		t.Errorf("by id: %+v", got)
	}
	if got := resp.Topics[1]; got.ErrorCode != kerr.UnknownTopicID.Code || got.Topic != nil {
		t.Errorf("unknown id: %+v", got)
	}
	if e.d.Controller.Image().Topics["a"] != nil {
		t.Error("not deleted")
	}
}

func TestDeleteTopicsWholeRequestErrors(t *testing.T) {
	both := kmsg.NewDeleteTopicsRequestTopic()
	both.Topic, both.TopicID = strp("a"), [16]byte{9}
	neither := kmsg.NewDeleteTopicsRequestTopic()
	named := kmsg.NewDeleteTopicsRequestTopic()
	named.Topic = strp("a")
	for _, tc := range []struct {
		name    string
		disable bool
		v       int16
		topics  []kmsg.DeleteTopicsRequestTopic
		code    int16
	}{
		{"both", false, 6, []kmsg.DeleteTopicsRequestTopic{named, both}, kerr.InvalidRequest.Code},
		{"neither", false, 6, []kmsg.DeleteTopicsRequestTopic{neither, named}, kerr.InvalidRequest.Code},
		{"disabled", true, 6, []kmsg.DeleteTopicsRequestTopic{named}, kerr.TopicDeletionDisabled.Code},
		{"disabled v2", true, 2, []kmsg.DeleteTopicsRequestTopic{named}, kerr.InvalidRequest.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e *adminEnv
			if tc.disable {
				e = newAdminEnv(t, "delete.topic.enable=false")
			} else {
				e = newAdminEnv(t)
			}
			e.createTopic(t, "a", 1, nil)
			req := kmsg.NewPtrDeleteTopicsRequest()
			req.Topics = tc.topics
			for _, rt := range tc.topics {
				if rt.Topic != nil {
					req.TopicNames = append(req.TopicNames, *rt.Topic)
				}
			}
			resp := e.call(t, req, tc.v).(*kmsg.DeleteTopicsResponse)
			if len(resp.Topics) == 0 {
				t.Fatal("no results")
			}
			for _, rt := range resp.Topics {
				if rt.ErrorCode != tc.code {
					t.Errorf("got %d, want %d", rt.ErrorCode, tc.code)
				}
			}
			if e.d.Controller.Image().Topics["a"] == nil {
				t.Error("topic deleted despite the error")
			}
		})
	}
}
