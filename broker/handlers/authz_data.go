package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/acl"
	"github.com/samsa-broker/samsa/replica"
)

// authzCheck returns the authorization of an API (nil: the API checks
// nothing, or checks inside its handler, as the ACL APIs do). Each
// function makes the checks of Kafka's KafkaApis / ControllerApis handler
// of the API; see the comment on each.
func authzCheck(key int16) authzFunc {
	if f := authzShareStateCheck(key); f != nil {
		return f
	}
	if f := authzControllerCheck(key); f != nil {
		return f
	}
	switch kmsg.Key(key) {
	case kmsg.Produce:
		return authzProduce
	case kmsg.Fetch:
		return authzFetch
	case kmsg.ListOffsets:
		return authzListOffsets
	case kmsg.Metadata:
		return authzMetadata
	case kmsg.OffsetForLeaderEpoch:
		return authzOffsetForLeaderEpoch
	case kmsg.DeleteRecords:
		return authzDeleteRecords
	case kmsg.ShareFetch, kmsg.ShareAcknowledge:
		return authzShareFetchCheck(key)
	}
	if f := authzGroupCheck(key); f != nil {
		return f
	}
	if f := authzTxnCheck(key); f != nil {
		return f
	}
	if f := authzShareCheck(key); f != nil {
		return f
	}
	return authzAdminCheck(key)
}

// topicName is the name of a request's topic: name, or the topic of id
// when name is empty (requests that carry topic ids). ok is false for an
// unknown (or zero) id: the handler answers UNKNOWN_TOPIC_ID, as Kafka
// does before it authorizes.
func topicName(img *controller.Image, name string, id [16]byte) (string, bool) {
	if name != "" {
		return name, true
	}
	if t := img.TopicsByID[controller.Uuid(id)]; t != nil {
		return t.Name, true
	}
	return "", false
}

// splitTopics keeps in *topics the elements whose topic r may perform op
// on (or whose topic id is unknown, for the handler to refuse) and
// returns the others.
func splitTopics[T any](d *Deps, r *Request, op kmsg.ACLOperation, topics *[]T, key func(*T) (string, [16]byte)) []T {
	img := d.Controller.Image()
	var keep, denied []T
	for i := range *topics {
		t := &(*topics)[i]
		n, id := key(t)
		name, ok := topicName(img, n, id)
		if ok && !d.authorized(r, op, acl.Topic(name)) {
			denied = append(denied, *t)
			continue
		}
		keep = append(keep, *t)
	}
	*topics = keep
	return denied
}

// authzProduce: a transactional produce needs WRITE on its transactional
// id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition); each
// topic needs WRITE (TOPIC_AUTHORIZATION_FAILED). Since KIP-679 an
// idempotent producer needs nothing on the cluster.
func authzProduce(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ProduceRequest)
	key := func(t *kmsg.ProduceRequestTopic) (string, [16]byte) { return t.Topic, t.TopicID }
	var denied []kmsg.ProduceRequestTopic
	code := kerr.TopicAuthorizationFailed.Code
	if req.TransactionID != nil && !d.authorized(r, kmsg.ACLOperationWrite, acl.TransactionalID(*req.TransactionID)) {
		denied, req.Topics = req.Topics, nil
		code = kerr.TransactionalIDAuthorizationFailed.Code
	} else {
		denied = splitTopics(d, r, kmsg.ACLOperationWrite, &req.Topics, key)
	}
	var resp kmsg.Response = req.ResponseKind()
	var err error
	if len(req.Topics) > 0 {
		if resp, err = next(d, r); err != nil || resp == nil {
			return resp, err
		}
	} else if req.Acks == 0 {
		return nil, nil
	}
	pr := resp.(*kmsg.ProduceResponse)
	for _, t := range denied {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		pr.Topics = append(pr.Topics, rt)
	}
	return pr, nil
}

// fetchDenied returns, for a consumer's fetch, which of wants (the
// partitions it reads, its session's included) it may not READ; nil when
// every one is allowed.
func (d *Deps) fetchDenied(r *Request, img *controller.Image, wants []sessionKey) []bool {
	if d.Authz == nil {
		return nil
	}
	var denied []bool
	for i, k := range wants {
		name, ok := topicName(img, k.topic, k.topicID)
		if ok && !d.authorized(r, kmsg.ACLOperationRead, acl.Topic(name)) {
			if denied == nil {
				denied = make([]bool, len(wants))
			}
			denied[i] = true
		}
	}
	return denied
}

// authzFetch: a follower's fetch needs CLUSTER_ACTION (else every
// partition is TOPIC_AUTHORIZATION_FAILED, as Kafka). A consumer's needs
// READ on each topic: checked by the handler (fetchDenied), so that the
// partitions of an incremental fetch session are checked on every fetch.
func authzFetch(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FetchRequest)
	req.Version = r.Header.APIVersion
	var denied []kmsg.FetchRequestTopic
	if replica.FetchReplicaID(req) >= 0 && !d.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
		denied, req.Topics = req.Topics, nil
	}
	if len(denied) == 0 {
		return next(d, r)
	}
	resp, err := next(d, r)
	if err != nil {
		return resp, err
	}
	var fr *kmsg.FetchResponse
	switch v := resp.(type) {
	case *FileFetch:
		fr = v.FetchResponse
	case *kmsg.FetchResponse:
		fr = v
	default:
		return resp, nil
	}
	for _, t := range denied {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		fr.Topics = append(fr.Topics, rt)
	}
	return resp, nil
}

// authzListOffsets: DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED).
func authzListOffsets(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListOffsetsRequest)
	denied := splitTopics(d, r, kmsg.ACLOperationDescribe, &req.Topics, func(t *kmsg.ListOffsetsRequestTopic) (string, [16]byte) { return t.Topic, [16]byte{} })
	resp, err := next(d, r)
	if err != nil || len(denied) == 0 {
		return resp, err
	}
	lr := resp.(*kmsg.ListOffsetsResponse)
	for _, t := range denied {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		lr.Topics = append(lr.Topics, rt)
	}
	return lr, nil
}

// authzOffsetForLeaderEpoch: a follower's request (v3+ replica id) needs
// CLUSTER_ACTION, else every partition is CLUSTER_AUTHORIZATION_FAILED; a
// client's needs DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED).
func authzOffsetForLeaderEpoch(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetForLeaderEpochRequest)
	var denied []kmsg.OffsetForLeaderEpochRequestTopic
	code := kerr.TopicAuthorizationFailed.Code
	if r.Header.APIVersion >= 3 && req.ReplicaID >= 0 {
		if !d.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
			denied, req.Topics = req.Topics, nil
			code = kerr.ClusterAuthorizationFailed.Code
		}
	} else {
		denied = splitTopics(d, r, kmsg.ACLOperationDescribe, &req.Topics, func(t *kmsg.OffsetForLeaderEpochRequestTopic) (string, [16]byte) { return t.Topic, [16]byte{} })
	}
	resp, err := next(d, r)
	if err != nil || len(denied) == 0 {
		return resp, err
	}
	or := resp.(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range denied {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = p.Partition, code, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		or.Topics = append(or.Topics, rt)
	}
	return or, nil
}

// authzDeleteRecords: DELETE on each topic (TOPIC_AUTHORIZATION_FAILED).
func authzDeleteRecords(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteRecordsRequest)
	denied := splitTopics(d, r, kmsg.ACLOperationDelete, &req.Topics, func(t *kmsg.DeleteRecordsRequestTopic) (string, [16]byte) { return t.Topic, [16]byte{} })
	resp, err := next(d, r)
	if err != nil || len(denied) == 0 {
		return resp, err
	}
	dr := resp.(*kmsg.DeleteRecordsResponse)
	for _, t := range denied {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.LowWatermark = p.Partition, kerr.TopicAuthorizationFailed.Code, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		dr.Topics = append(dr.Topics, rt)
	}
	return dr, nil
}

// authzMetadata: topics the principal may not DESCRIBE are left out of an
// all-topics answer and are TOPIC_AUTHORIZATION_FAILED when named; a
// named topic that does not exist is auto-created only with CREATE on the
// cluster or the topic, else TOPIC_AUTHORIZATION_FAILED. The authorized
// operations of the cluster and of each topic are the principal's.
func authzMetadata(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.MetadataRequest)
	v := r.Header.APIVersion
	img := d.Controller.Image()
	allTopics := req.Topics == nil || (v == 0 && len(req.Topics) == 0)
	autoCreate := (v < 4 || req.AllowAutoTopicCreation) && d.Config != nil && d.Config.AutoCreateTopicsEnable
	var deniedDescribe, deniedCreate []kmsg.MetadataRequestTopic
	if !allTopics && metadataIDsBeforeV12(v, req.Topics) {
		return next(d, r) // the whole request is INVALID_REQUEST, as in Kafka
	}
	if !allTopics {
		req.Topics = metadataTopics(v, req.Topics)
		var keep []kmsg.MetadataRequestTopic
		for _, t := range req.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			}
			name, known := topicName(img, name, t.TopicID)
			switch {
			case !known:
				keep = append(keep, t)
			case !d.authorized(r, kmsg.ACLOperationDescribe, acl.Topic(name)):
				deniedDescribe = append(deniedDescribe, t)
			case autoCreate && img.Topics[name] == nil && !d.authorizedCluster(r, kmsg.ACLOperationCreate) &&
				!d.authorized(r, kmsg.ACLOperationCreate, acl.Topic(name)):
				deniedCreate = append(deniedCreate, t)
			default:
				keep = append(keep, t)
			}
		}
		req.Topics = keep
	}
	emptied := !allTopics && len(req.Topics) == 0
	if emptied {
		req.Topics = []kmsg.MetadataRequestTopic{} // v1+: no topics (v0: dropped below)
	}
	resp, err := next(d, r)
	if err != nil {
		return resp, err
	}
	mr := resp.(*kmsg.MetadataResponse)
	if emptied {
		mr.Topics = nil
	}
	kept := mr.Topics[:0]
	for _, t := range mr.Topics {
		if t.Topic != nil && t.ErrorCode == 0 {
			if allTopics && !d.authorized(r, kmsg.ACLOperationDescribe, acl.Topic(*t.Topic)) {
				continue
			}
			if req.IncludeTopicAuthorizedOperations {
				t.AuthorizedOperations = d.authorizedOperations(r, acl.Topic(*t.Topic))
			}
		}
		kept = append(kept, t)
	}
	mr.Topics = kept
	for _, t := range append(deniedCreate, deniedDescribe...) {
		rt := kmsg.NewMetadataResponseTopic()
		rt.ErrorCode, rt.Topic, rt.TopicID = kerr.TopicAuthorizationFailed.Code, t.Topic, t.TopicID
		rt.Partitions = []kmsg.MetadataResponseTopicPartition{}
		mr.Topics = append(mr.Topics, rt)
	}
	if req.IncludeClusterAuthorizedOperations {
		mr.AuthorizedOperations = d.authorizedOperations(r, acl.Cluster)
	}
	return mr, nil
}
