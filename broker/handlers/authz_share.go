package handlers

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller/acl"
)

// Share group APIs (KIP-932), as Kafka's KafkaApis checks them:
// ShareGroupHeartbeat needs READ on the group and DESCRIBE on the
// subscribed topics; ShareGroupDescribe DESCRIBE on each group;
// DescribeShareGroupOffsets DESCRIBE on the group and its topics;
// AlterShareGroupOffsets READ on the group and its topics;
// DeleteShareGroupOffsets DELETE on the group and READ on its topics.
func authzShareCheck(key int16) authzFunc {
	switch kmsg.Key(key) {
	case kmsg.ShareGroupHeartbeat:
		return authzShareGroupHeartbeat
	case kmsg.ShareGroupDescribe:
		return authzShareGroupDescribe
	case kmsg.DescribeShareGroupOffsets:
		return authzDescribeShareGroupOffsets
	case kmsg.AlterShareGroupOffsets:
		return authzAlterShareGroupOffsets
	case kmsg.DeleteShareGroupOffsets:
		return authzDeleteShareGroupOffsets
	}
	return nil
}

// deniedTopicsMessage is Kafka's message naming the topics not authorized.
func deniedTopicsMessage(denied []string) *string {
	msg := "The following topics are not authorized: " + strings.Join(denied, ", ")
	return &msg
}

// undescribableTopics is the message naming the topics of a group
// heartbeat's subscription r may not DESCRIBE, nil when it may describe
// them all (consumer and share group heartbeats).
func (d *Deps) undescribableTopics(r *Request, topics []string) *string {
	var denied []string
	for _, t := range topics {
		if !d.authorized(r, kmsg.ACLOperationDescribe, acl.Topic(t)) {
			denied = append(denied, t)
		}
	}
	if len(denied) == 0 {
		return nil
	}
	return deniedTopicsMessage(denied)
}

// topicsByRead splits topics by whether r may READ the topic name of
// each (AlterShareGroupOffsets, DeleteShareGroupOffsets); unlike
// splitTopics, an unknown topic is denied like any other.
func topicsByRead[T any](d *Deps, r *Request, topics []T, name func(T) string) (keep, denied []T) {
	for _, t := range topics {
		if d.authorized(r, kmsg.ACLOperationRead, acl.Topic(name(t))) {
			keep = append(keep, t)
		} else {
			denied = append(denied, t)
		}
	}
	return keep, denied
}

func authzShareGroupHeartbeat(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ShareGroupHeartbeatRequest)
	return authzGroupHeartbeat(d, r, next, groupHeartbeatAuthz{group: req.GroupID, topics: req.SubscribedTopicNames, deny: func(code int16, msg *string) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	}})
}

func authzShareGroupDescribe(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ShareGroupDescribeRequest)
	return authzGroupDescribe(d, r, next, groupDescribeAuthz[kmsg.ShareGroupDescribeResponseGroup]{
		ids:        &req.GroupIDs,
		includeOps: req.IncludeAuthorizedOperations,
		groups: func(resp kmsg.Response) *[]kmsg.ShareGroupDescribeResponseGroup {
			return &resp.(*kmsg.ShareGroupDescribeResponse).Groups
		},
		newGroup: kmsg.NewShareGroupDescribeResponseGroup,
		fields: func(g *kmsg.ShareGroupDescribeResponseGroup) (*string, *int16, **string, *int32) {
			return &g.GroupID, &g.ErrorCode, &g.ErrorMessage, &g.AuthorizedOperations
		},
	})
}

func authzDescribeShareGroupOffsets(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	type deniedTopic struct {
		group int
		topic kmsg.DescribeShareGroupOffsetsRequestGroupTopic
	}
	var deniedGroups []string
	var deniedTopics []deniedTopic
	var keep []kmsg.DescribeShareGroupOffsetsRequestGroup
	for _, g := range req.Groups {
		if !d.authorizedGroup(r, kmsg.ACLOperationDescribe, g.GroupID) {
			deniedGroups = append(deniedGroups, g.GroupID)
			continue
		}
		if g.Topics != nil {
			var topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic
			for _, t := range g.Topics {
				if d.authorized(r, kmsg.ACLOperationDescribe, acl.Topic(t.Topic)) {
					topics = append(topics, t)
				} else {
					deniedTopics = append(deniedTopics, deniedTopic{len(keep), t})
				}
			}
			if topics == nil {
				topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{}
			}
			g.Topics = topics
		}
		keep = append(keep, g)
	}
	req.Groups = keep
	var sr *kmsg.DescribeShareGroupOffsetsResponse
	if len(keep) > 0 {
		resp, err := next(d, r)
		if err != nil {
			return resp, err
		}
		sr = resp.(*kmsg.DescribeShareGroupOffsetsResponse)
	} else {
		sr = req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	}
	for _, dt := range deniedTopics {
		if dt.group >= len(sr.Groups) || sr.Groups[dt.group].ErrorCode != 0 {
			continue
		}
		ot := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		ot.Topic = dt.topic.Topic
		for _, p := range dt.topic.Partitions {
			op := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			op.Partition, op.StartOffset, op.LeaderEpoch, op.Lag = p, -1, -1, -1
			op.ErrorCode = kerr.TopicAuthorizationFailed.Code
			op.ErrorMessage = ptrTo(kerr.TopicAuthorizationFailed.Message)
			ot.Partitions = append(ot.Partitions, op)
		}
		sr.Groups[dt.group].Topics = append(sr.Groups[dt.group].Topics, ot)
	}
	for _, g := range deniedGroups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		rg.ErrorMessage = ptrTo(kerr.GroupAuthorizationFailed.Message)
		sr.Groups = append(sr.Groups, rg)
	}
	return sr, nil
}

func authzAlterShareGroupOffsets(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	if !d.authorizedGroup(r, kmsg.ACLOperationRead, req.GroupID) {
		resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		resp.ErrorMessage = ptrTo(kerr.GroupAuthorizationFailed.Message)
		return resp, nil
	}
	var denied []kmsg.AlterShareGroupOffsetsRequestTopic
	req.Topics, denied = topicsByRead(d, r, req.Topics, func(t kmsg.AlterShareGroupOffsetsRequestTopic) string { return t.Topic })
	resp, err := next(d, r)
	if err != nil {
		return resp, err
	}
	ar := resp.(*kmsg.AlterShareGroupOffsetsResponse)
	if ar.ErrorCode != 0 {
		return ar, nil
	}
	for _, t := range denied {
		ot := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		ot.Topic = t.Topic
		for _, p := range t.Partitions {
			op := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			op.Partition, op.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			op.ErrorMessage = ptrTo(kerr.TopicAuthorizationFailed.Message)
			ot.Partitions = append(ot.Partitions, op)
		}
		ar.Topics = append(ar.Topics, ot)
	}
	return ar, nil
}

func authzDeleteShareGroupOffsets(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	if !d.authorizedGroup(r, kmsg.ACLOperationDelete, req.GroupID) {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		resp.ErrorMessage = ptrTo(kerr.GroupAuthorizationFailed.Message)
		return resp, nil
	}
	var denied []kmsg.DeleteShareGroupOffsetsRequestTopic
	req.Topics, denied = topicsByRead(d, r, req.Topics, func(t kmsg.DeleteShareGroupOffsetsRequestTopic) string { return t.Topic })
	resp, err := next(d, r)
	if err != nil {
		return resp, err
	}
	dr := resp.(*kmsg.DeleteShareGroupOffsetsResponse)
	if dr.ErrorCode != 0 {
		return dr, nil
	}
	for _, t := range denied {
		ot := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		ot.Topic, ot.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
		ot.ErrorMessage = ptrTo(kerr.TopicAuthorizationFailed.Message)
		dr.Topics = append(dr.Topics, ot)
	}
	return dr, nil
}
