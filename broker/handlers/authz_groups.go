package handlers

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller/acl"
)

// Group APIs: the group needs READ to join, sync, heartbeat, leave and
// commit (GROUP_AUTHORIZATION_FAILED), DESCRIBE to be found, described
// and have its offsets fetched, DELETE to be deleted; committed topics
// need READ and fetched offsets' topics DESCRIBE
// (TOPIC_AUTHORIZATION_FAILED), as Kafka's KafkaApis.
func authzGroupCheck(key int16) authzFunc {
	switch kmsg.Key(key) {
	case kmsg.OffsetCommit:
		return authzOffsetCommit
	case kmsg.OffsetFetch:
		return authzOffsetFetch
	case kmsg.FindCoordinator:
		return authzFindCoordinator
	case kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.LeaveGroup:
		return authzGroupMembership
	case kmsg.DescribeGroups:
		return authzDescribeGroups
	case kmsg.ListGroups:
		return authzListGroups
	case kmsg.DeleteGroups:
		return authzDeleteGroups
	case kmsg.OffsetDelete:
		return authzOffsetDelete
	case kmsg.ConsumerGroupHeartbeat:
		return authzConsumerGroupHeartbeat
	case kmsg.ConsumerGroupDescribe:
		return authzConsumerGroupDescribe
	case kmsg.StreamsGroupHeartbeat:
		return authzStreamsGroupHeartbeat
	case kmsg.StreamsGroupDescribe:
		return authzStreamsGroupDescribe
	case kmsg.StreamsGroupTopologyDescriptionUpdate:
		return authzStreamsTopologyDescriptionUpdate
	}
	return nil
}

func (d *Deps) authorizedGroup(r *Request, op kmsg.ACLOperation, group string) bool {
	return d.authorized(r, op, acl.Group(group))
}

// splitGroups returns the groups r may perform op on and the others, in
// request order.
func (d *Deps) splitGroups(r *Request, op kmsg.ACLOperation, groups []string) (keep, denied []string) {
	for _, g := range groups {
		if d.authorizedGroup(r, op, g) {
			keep = append(keep, g)
		} else {
			denied = append(denied, g)
		}
	}
	return keep, denied
}

// authzGroupMembership: JoinGroup, SyncGroup, Heartbeat and LeaveGroup
// need READ on the group; the answer is the API's error response with
// GROUP_AUTHORIZATION_FAILED.
func authzGroupMembership(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	code := kerr.GroupAuthorizationFailed.Code
	switch req := r.Body.(type) {
	case *kmsg.JoinGroupRequest:
		if !d.authorizedGroup(r, kmsg.ACLOperationRead, req.Group) {
			resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
			resp.ErrorCode, resp.Generation = code, -1
			return resp, nil
		}
	case *kmsg.SyncGroupRequest:
		if !syncGroupLacksProtocol(r) && !d.authorizedGroup(r, kmsg.ACLOperationRead, req.Group) {
			resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
			resp.ErrorCode = code
			return resp, nil
		}
	case *kmsg.HeartbeatRequest:
		if !d.authorizedGroup(r, kmsg.ACLOperationRead, req.Group) {
			resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
			resp.ErrorCode = code
			return resp, nil
		}
	case *kmsg.LeaveGroupRequest:
		if !d.authorizedGroup(r, kmsg.ACLOperationRead, req.Group) {
			resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
			resp.ErrorCode = code
			return resp, nil
		}
	}
	return next(d, r)
}

// authzOffsetCommit: READ on the group, else every partition is
// GROUP_AUTHORIZATION_FAILED; READ on each topic, else its partitions are
// TOPIC_AUTHORIZATION_FAILED.
func authzOffsetCommit(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetCommitRequest)
	code := kerr.TopicAuthorizationFailed.Code
	var denied []kmsg.OffsetCommitRequestTopic
	if !d.authorizedGroup(r, kmsg.ACLOperationRead, req.Group) {
		denied, req.Topics = req.Topics, nil
		code = kerr.GroupAuthorizationFailed.Code
	} else {
		denied = splitTopics(d, r, kmsg.ACLOperationRead, &req.Topics, func(t *kmsg.OffsetCommitRequestTopic) (string, [16]byte) { return t.Topic, t.TopicID })
	}
	var resp kmsg.Response
	if len(req.Topics) > 0 || len(denied) == 0 {
		var err error
		if resp, err = next(d, r); err != nil {
			return resp, err
		}
	} else {
		resp = req.ResponseKind()
	}
	cr := resp.(*kmsg.OffsetCommitResponse)
	for _, t := range denied {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		cr.Topics = append(cr.Topics, rt)
	}
	return cr, nil
}

// authzOffsetFetch: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED);
// named topics need DESCRIBE (their partitions TOPIC_AUTHORIZATION_FAILED),
// and a fetch of all offsets leaves out the topics the principal may not
// DESCRIBE.
func authzOffsetFetch(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetFetchRequest)
	v := r.Header.APIVersion
	img := d.Controller.Image()
	describable := func(name string, id [16]byte) bool {
		n, ok := topicName(img, name, id)
		return !ok || d.authorized(r, kmsg.ACLOperationDescribe, acl.Topic(n))
	}
	deniedPartition := func(p int32) kmsg.OffsetFetchResponseTopicPartition {
		rp := kmsg.NewOffsetFetchResponseTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, kerr.TopicAuthorizationFailed.Code
		rp.Metadata = ptrTo("")
		return rp
	}
	if v < 8 {
		if !d.authorizedGroup(r, kmsg.ACLOperationDescribe, req.Group) {
			resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			for _, t := range req.Topics {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := deniedPartition(p)
					rp.ErrorCode = kerr.GroupAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
		all := req.Topics == nil
		var keep, denied []kmsg.OffsetFetchRequestTopic
		for _, t := range req.Topics {
			if describable(t.Topic, [16]byte{}) {
				keep = append(keep, t)
			} else {
				denied = append(denied, t)
			}
		}
		if !all {
			req.Topics = keep
			if req.Topics == nil {
				req.Topics = []kmsg.OffsetFetchRequestTopic{}
			}
		}
		resp, err := next(d, r)
		if err != nil {
			return resp, err
		}
		fr := resp.(*kmsg.OffsetFetchResponse)
		if all {
			kept := fr.Topics[:0]
			for _, t := range fr.Topics {
				if describable(t.Topic, [16]byte{}) {
					kept = append(kept, t)
				}
			}
			fr.Topics = kept
		}
		for _, t := range denied {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := deniedPartition(p)
				rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition{Partition: rp.Partition, Offset: rp.Offset,
					LeaderEpoch: rp.LeaderEpoch, Metadata: rp.Metadata, ErrorCode: rp.ErrorCode})
			}
			fr.Topics = append(fr.Topics, rt)
		}
		return fr, nil
	}
	// v8+: several groups.
	var keepGroups []kmsg.OffsetFetchRequestGroup
	var deniedGroups []string
	deniedTopics := map[string][]kmsg.OffsetFetchRequestGroupTopic{}
	allTopics := map[string]bool{}
	for _, g := range req.Groups {
		if !d.authorizedGroup(r, kmsg.ACLOperationDescribe, g.Group) {
			deniedGroups = append(deniedGroups, g.Group)
			continue
		}
		if g.Topics == nil {
			allTopics[g.Group] = true
		} else {
			var keep []kmsg.OffsetFetchRequestGroupTopic
			for _, t := range g.Topics {
				if describable(t.Topic, t.TopicID) {
					keep = append(keep, t)
				} else {
					deniedTopics[g.Group] = append(deniedTopics[g.Group], t)
				}
			}
			if keep == nil {
				keep = []kmsg.OffsetFetchRequestGroupTopic{}
			}
			g.Topics = keep
		}
		keepGroups = append(keepGroups, g)
	}
	req.Groups = keepGroups
	var fr *kmsg.OffsetFetchResponse
	if len(req.Groups) > 0 {
		resp, err := next(d, r)
		if err != nil {
			return resp, err
		}
		fr = resp.(*kmsg.OffsetFetchResponse)
	} else {
		fr = req.ResponseKind().(*kmsg.OffsetFetchResponse)
	}
	for i := range fr.Groups {
		g := &fr.Groups[i]
		if allTopics[g.Group] {
			kept := g.Topics[:0]
			for _, t := range g.Topics {
				if describable(t.Topic, t.TopicID) {
					kept = append(kept, t)
				}
			}
			g.Topics = kept
		}
		for _, t := range deniedTopics[g.Group] {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, kerr.TopicAuthorizationFailed.Code
				rp.Metadata = ptrTo("")
				rt.Partitions = append(rt.Partitions, rp)
			}
			g.Topics = append(g.Topics, rt)
		}
	}
	for _, name := range deniedGroups {
		g := kmsg.NewOffsetFetchResponseGroup()
		g.Group, g.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
		fr.Groups = append(fr.Groups, g)
	}
	return fr, nil
}

// authzFindCoordinator: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED)
// or the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
// CLUSTER_ACTION for a share-partition key (CLUSTER_AUTHORIZATION_FAILED).
func authzFindCoordinator(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	denied := func(key string) int16 {
		switch req.CoordinatorType {
		case 0:
			if !d.authorizedGroup(r, kmsg.ACLOperationDescribe, key) {
				return kerr.GroupAuthorizationFailed.Code
			}
		case 1:
			if !d.authorized(r, kmsg.ACLOperationDescribe, acl.TransactionalID(key)) {
				return kerr.TransactionalIDAuthorizationFailed.Code
			}
		case 2: // share-partition keys are for brokers only (v6+; older: INVALID_REQUEST)
			if r.Header.APIVersion >= 6 && !d.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
				return kerr.ClusterAuthorizationFailed.Code
			}
		}
		return 0
	}
	if r.Header.APIVersion < 4 {
		if code := denied(req.CoordinatorKey); code != 0 {
			resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
			resp.ErrorCode, resp.NodeID, resp.Port = code, -1, -1
			resp.ErrorMessage = ptrTo(kerr.ErrorForCode(code).(*kerr.Error).Message)
			return resp, nil
		}
		return next(d, r)
	}
	var keep []string
	var deniedKeys []kmsg.FindCoordinatorResponseCoordinator
	for _, k := range req.CoordinatorKeys {
		if code := denied(k); code != 0 {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.ErrorCode, c.NodeID, c.Port = k, code, -1, -1
			c.ErrorMessage = ptrTo(kerr.ErrorForCode(code).(*kerr.Error).Message)
			deniedKeys = append(deniedKeys, c)
			continue
		}
		keep = append(keep, k)
	}
	if len(deniedKeys) == 0 {
		return next(d, r)
	}
	req.CoordinatorKeys = keep
	var fr *kmsg.FindCoordinatorResponse
	if len(keep) > 0 {
		resp, err := next(d, r)
		if err != nil {
			return resp, err
		}
		fr = resp.(*kmsg.FindCoordinatorResponse)
	} else {
		fr = req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	}
	fr.Coordinators = append(fr.Coordinators, deniedKeys...)
	return fr, nil
}

// authzDescribeGroups: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED);
// authorized operations are the principal's.
func authzDescribeGroups(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeGroupsRequest)
	keep, denied := d.splitGroups(r, kmsg.ACLOperationDescribe, req.Groups)
	req.Groups = keep
	var dr *kmsg.DescribeGroupsResponse
	if len(keep) > 0 {
		resp, err := next(d, r)
		if err != nil {
			return resp, err
		}
		dr = resp.(*kmsg.DescribeGroupsResponse)
	} else {
		dr = req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	}
	if req.IncludeAuthorizedOperations {
		for i := range dr.Groups {
			if dr.Groups[i].ErrorCode == 0 {
				dr.Groups[i].AuthorizedOperations = d.authorizedOperations(r, acl.Group(dr.Groups[i].Group))
			}
		}
	}
	for _, g := range denied {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group, dg.ErrorCode, dg.AuthorizedOperations = g, kerr.GroupAuthorizationFailed.Code, math.MinInt32
		dr.Groups = append(dr.Groups, dg)
	}
	return dr, nil
}

// authzListGroups: with DESCRIBE on the cluster every group, else only the
// groups the principal may DESCRIBE.
func authzListGroups(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	resp, err := next(d, r)
	if err != nil || d.authorizedCluster(r, kmsg.ACLOperationDescribe) {
		return resp, err
	}
	lr := resp.(*kmsg.ListGroupsResponse)
	kept := lr.Groups[:0]
	for _, g := range lr.Groups {
		if d.authorizedGroup(r, kmsg.ACLOperationDescribe, g.Group) {
			kept = append(kept, g)
		}
	}
	lr.Groups = kept
	return lr, nil
}

// authzDeleteGroups: DELETE on each group (GROUP_AUTHORIZATION_FAILED).
func authzDeleteGroups(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteGroupsRequest)
	keep, denied := d.splitGroups(r, kmsg.ACLOperationDelete, req.Groups)
	req.Groups = keep
	var dr *kmsg.DeleteGroupsResponse
	if len(keep) > 0 {
		resp, err := next(d, r)
		if err != nil {
			return resp, err
		}
		dr = resp.(*kmsg.DeleteGroupsResponse)
	} else {
		dr = req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	}
	for _, g := range denied {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		dr.Groups = append(dr.Groups, dg)
	}
	return dr, nil
}

// authzOffsetDelete: DELETE on the group (top-level
// GROUP_AUTHORIZATION_FAILED); READ on each topic (its partitions
// TOPIC_AUTHORIZATION_FAILED).
func authzOffsetDelete(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetDeleteRequest)
	if !d.authorizedGroup(r, kmsg.ACLOperationDelete, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	denied := splitTopics(d, r, kmsg.ACLOperationRead, &req.Topics, func(t *kmsg.OffsetDeleteRequestTopic) (string, [16]byte) { return t.Topic, [16]byte{} })
	resp, err := next(d, r)
	if err != nil || len(denied) == 0 {
		return resp, err
	}
	or := resp.(*kmsg.OffsetDeleteResponse)
	if or.ErrorCode != 0 {
		return or, nil
	}
	for _, t := range denied {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		or.Topics = append(or.Topics, rt)
	}
	return or, nil
}

// authzConsumerGroupHeartbeat: authzGroupHeartbeat.
func authzConsumerGroupHeartbeat(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	return authzGroupHeartbeat(d, r, next, groupHeartbeatAuthz{group: req.Group, topics: req.SubscribedTopicNames, deny: func(code int16, msg *string) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	}})
}

// groupHeartbeatAuthz is what authzGroupHeartbeat checks of a consumer or
// share group heartbeat: its group and subscribed topics, and how to
// answer a refusal (error code and message).
type groupHeartbeatAuthz struct {
	group  string
	topics []string
	deny   func(code int16, msg *string) kmsg.Response
}

// authzGroupHeartbeat is the check of ConsumerGroupHeartbeat and
// ShareGroupHeartbeat: READ on the group (GROUP_AUTHORIZATION_FAILED),
// and DESCRIBE on every subscribed topic (TOPIC_AUTHORIZATION_FAILED
// naming those it may not describe).
func authzGroupHeartbeat(d *Deps, r *Request, next Handler, hb groupHeartbeatAuthz) (kmsg.Response, error) {
	if !d.authorizedGroup(r, kmsg.ACLOperationRead, hb.group) {
		return hb.deny(kerr.GroupAuthorizationFailed.Code, nil), nil
	}
	if msg := d.undescribableTopics(r, hb.topics); msg != nil {
		return hb.deny(kerr.TopicAuthorizationFailed.Code, msg), nil
	}
	return next(d, r)
}

// authzConsumerGroupDescribe: authzGroupDescribe.
func authzConsumerGroupDescribe(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ConsumerGroupDescribeRequest)
	return authzGroupDescribe(d, r, next, groupDescribeAuthz[kmsg.ConsumerGroupDescribeResponseGroup]{
		ids:        &req.Groups,
		includeOps: req.IncludeAuthorizedOperations,
		groups: func(resp kmsg.Response) *[]kmsg.ConsumerGroupDescribeResponseGroup {
			return &resp.(*kmsg.ConsumerGroupDescribeResponse).Groups
		},
		newGroup: kmsg.NewConsumerGroupDescribeResponseGroup,
		fields: func(g *kmsg.ConsumerGroupDescribeResponseGroup) (*string, *int16, **string, *int32) {
			return &g.Group, &g.ErrorCode, &g.ErrorMessage, &g.AuthorizedOperations
		},
	})
}

// groupDescribeAuthz is what authzGroupDescribe needs of a consumer or
// share group describe: the request's group ids and whether it asks for
// authorized operations; the groups of an answer, a new answer group,
// and pointers to a group's id, error code, error message and authorized
// operations.
type groupDescribeAuthz[G any] struct {
	ids        *[]string
	includeOps bool
	groups     func(kmsg.Response) *[]G
	newGroup   func() G
	fields     func(*G) (id *string, code *int16, msg **string, ops *int32)
}

// authzGroupDescribe is the check of ConsumerGroupDescribe and
// ShareGroupDescribe: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED,
// authorized operations unknown); the authorized operations of the others
// are the principal's. Without an allowed group the request is not run.
func authzGroupDescribe[G any](d *Deps, r *Request, next Handler, gd groupDescribeAuthz[G]) (kmsg.Response, error) {
	keep, denied := d.splitGroups(r, kmsg.ACLOperationDescribe, *gd.ids)
	*gd.ids = keep
	resp := r.Body.ResponseKind()
	if len(keep) > 0 {
		var err error
		if resp, err = next(d, r); err != nil {
			return resp, err
		}
	}
	groups := gd.groups(resp)
	if gd.includeOps {
		for i := range *groups {
			if id, code, _, ops := gd.fields(&(*groups)[i]); *code == 0 {
				*ops = d.authorizedOperations(r, acl.Group(*id))
			}
		}
	}
	for _, g := range denied {
		dg := gd.newGroup()
		id, code, msg, ops := gd.fields(&dg)
		*id, *code, *ops = g, kerr.GroupAuthorizationFailed.Code, math.MinInt32
		*msg = ptrTo(kerr.GroupAuthorizationFailed.Message)
		*groups = append(*groups, dg)
	}
	return resp, nil
}

// authzStreamsGroupHeartbeat: authzGroupHeartbeat, the topics being the
// topology's source topics (a join).
func authzStreamsGroupHeartbeat(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.StreamsGroupHeartbeatRequest)
	var topics []string
	if req.Topology != nil {
		for _, st := range req.Topology.Subtopologies {
			topics = append(topics, st.SourceTopics...)
		}
	}
	return authzGroupHeartbeat(d, r, next, groupHeartbeatAuthz{group: req.Group, topics: topics, deny: func(code int16, msg *string) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	}})
}

// authzStreamsTopologyDescriptionUpdate: READ on the group
// (GROUP_AUTHORIZATION_FAILED with its message), checked after the streams
// protocol gate as Kafka 4.4's KafkaApis does, so the handler answers
// UNSUPPORTED_VERSION first when streams groups are off.
func authzStreamsTopologyDescriptionUpdate(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.StreamsGroupTopologyDescriptionUpdateRequest)
	if streamsGroupsOn(d) && !d.authorizedGroup(r, kmsg.ACLOperationRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
		resp.ErrorCode, resp.ErrorMessage = kerr.GroupAuthorizationFailed.Code, ptrTo(kerr.GroupAuthorizationFailed.Message)
		return resp, nil
	}
	return next(d, r)
}

// authzStreamsGroupDescribe: authzGroupDescribe.
func authzStreamsGroupDescribe(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.StreamsGroupDescribeRequest)
	return authzGroupDescribe(d, r, next, groupDescribeAuthz[kmsg.StreamsGroupDescribeResponseGroup]{
		ids:        &req.Groups,
		includeOps: req.IncludeAuthorizedOperations,
		groups: func(resp kmsg.Response) *[]kmsg.StreamsGroupDescribeResponseGroup {
			return &resp.(*kmsg.StreamsGroupDescribeResponse).Groups
		},
		newGroup: kmsg.NewStreamsGroupDescribeResponseGroup,
		fields: func(g *kmsg.StreamsGroupDescribeResponseGroup) (*string, *int16, **string, *int32) {
			return &g.Group, &g.ErrorCode, &g.ErrorMessage, &g.AuthorizedOperations
		},
	})
}
