package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// DeleteTopics, key 20, versions 0-6.
//
//   - v0: topic_names, timeout_ms; each topic answered with an error code.
//   - v1: throttle_time_ms (always 0).
//   - v4: flexible.
//   - v5: error_message.
//   - v6: topics, each given by name or by topic id (exactly one of them;
//     both or neither fails the whole request with INVALID_REQUEST);
//     results carry the topic id, and the name when it is known.
//
// With delete.topic.enable=false every topic fails with
// TOPIC_DELETION_DISABLED (INVALID_REQUEST "Topic deletion is disabled."
// before v3, which had no such code), as Kafka does. A name or id given
// more than once is not deleted and gets one INVALID_REQUEST result. An
// unknown name is UNKNOWN_TOPIC_OR_PARTITION, an unknown id UNKNOWN_TOPIC_ID.
// timeout_ms is ignored: the controller commits before answering.
//
// The internal topics (__consumer_offsets, __transaction_state), by name or
// by id, are refused with INVALID_TOPIC_EXCEPTION "Cannot delete internal
// topic X". This differs from Kafka 4.4 on purpose: its controller
// (ReplicationControlManager.deleteTopic) deletes them for any client its
// authorizer lets through, and with no authorizer that is everyone, so one
// request loses every committed offset and open transaction; only its
// kafka-topics tool refuses, on the client side. samsa refuses on the
// broker whatever the ACLs (a super user too), with the code Kafka uses
// for the other operations it forbids on internal topics (Produce,
// DeleteRecords).
func handleDeleteTopics(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	v := r.Header.APIVersion

	// refs is the request as (name, id) pairs, exactly one of them set.
	type ref struct {
		name *string
		id   controller.Uuid
	}
	var refs []ref
	wholeCode, wholeMsg := int16(0), ""
	if v < 6 {
		for i := range req.TopicNames {
			refs = append(refs, ref{name: &req.TopicNames[i]})
		}
	} else {
		for _, t := range req.Topics {
			id := controller.Uuid(t.TopicID)
			refs = append(refs, ref{name: t.Topic, id: id})
			switch {
			case wholeCode != 0:
			case t.Topic == nil && id.IsZero():
				wholeCode, wholeMsg = kerr.InvalidRequest.Code, "Neither topic name nor id were specified."
			case t.Topic != nil && !id.IsZero():
				wholeCode, wholeMsg = kerr.InvalidRequest.Code, "You may not specify both topic name and topic id."
			}
		}
	}
	if !d.Config.DeleteTopicEnable {
		if v < 3 {
			wholeCode, wholeMsg = kerr.InvalidRequest.Code, "Topic deletion is disabled."
		} else {
			wholeCode, wholeMsg = kerr.TopicDeletionDisabled.Code, ""
		}
	}
	result := func(name *string, id controller.Uuid, code int16, msg string) kmsg.DeleteTopicsResponseTopic {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic = name
		rt.TopicID = id
		rt.ErrorCode = code
		rt.ErrorMessage = adminErrorMessage(code, msg)
		return rt
	}
	if wholeCode != 0 {
		for _, rf := range refs {
			resp.Topics = append(resp.Topics, result(rf.name, rf.id, wholeCode, wholeMsg))
		}
		return resp, nil
	}

	nameCount := map[string]int{}
	idCount := map[controller.Uuid]int{}
	for _, rf := range refs {
		if rf.name != nil {
			nameCount[*rf.name]++
		} else {
			idCount[rf.id]++
		}
	}
	// internalTopic returns the existing internal topic a ref names, if any.
	img := d.Controller.Image()
	internalTopic := func(rf ref) *controller.Topic {
		t := img.TopicsByID[rf.id]
		if rf.name != nil {
			t = img.Topics[*rf.name]
		}
		if t == nil || !isInternalTopic(t.Name) {
			return nil
		}
		return t
	}
	var names []string
	var ids []controller.Uuid
	for _, rf := range refs {
		if internalTopic(rf) != nil {
			continue
		}
		if rf.name != nil && nameCount[*rf.name] == 1 {
			names = append(names, *rf.name)
		} else if rf.name == nil && idCount[rf.id] == 1 {
			ids = append(ids, rf.id)
		}
	}
	var results []controller.DeleteTopicResult
	if len(names)+len(ids) > 0 {
		results = d.Controller.DeleteTopics(names, ids)
	}
	// The controller lists names first, then ids, each in request order.
	byName := map[string]controller.DeleteTopicResult{}
	byID := map[controller.Uuid]controller.DeleteTopicResult{}
	for i, res := range results {
		if i < len(names) {
			byName[names[i]] = res
		} else if i-len(names) < len(ids) {
			byID[ids[i-len(names)]] = res
		}
	}

	reportedName := map[string]bool{}
	reportedID := map[controller.Uuid]bool{}
	for _, rf := range refs {
		switch {
		case rf.name != nil && nameCount[*rf.name] > 1:
			if !reportedName[*rf.name] {
				reportedName[*rf.name] = true
				resp.Topics = append(resp.Topics, result(rf.name, controller.Uuid{}, kerr.InvalidRequest.Code, "Duplicate topic name given more than once."))
			}
		case rf.name == nil && idCount[rf.id] > 1:
			if !reportedID[rf.id] {
				reportedID[rf.id] = true
				resp.Topics = append(resp.Topics, result(nil, rf.id, kerr.InvalidRequest.Code, "Duplicate topic id given more than once."))
			}
		case internalTopic(rf) != nil:
			t := internalTopic(rf)
			resp.Topics = append(resp.Topics, result(&t.Name, t.ID, kerr.InvalidTopicException.Code, "Cannot delete internal topic "+t.Name))
		case rf.name != nil:
			res, ok := byName[*rf.name]
			if !ok {
				resp.Topics = append(resp.Topics, result(rf.name, controller.Uuid{}, kerr.UnknownServerError.Code, "The controller returned no result for this topic."))
				continue
			}
			resp.Topics = append(resp.Topics, result(rf.name, res.ID, res.ErrorCode, res.ErrorMessage))
		default:
			res, ok := byID[rf.id]
			if !ok {
				resp.Topics = append(resp.Topics, result(nil, rf.id, kerr.UnknownServerError.Code, "The controller returned no result for this topic."))
				continue
			}
			var name *string
			if res.Name != "" {
				n := res.Name
				name = &n
			}
			resp.Topics = append(resp.Topics, result(name, rf.id, res.ErrorCode, res.ErrorMessage))
		}
	}
	return resp, nil
}
