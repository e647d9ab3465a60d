package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller/acl"
)

// Transaction APIs: a transactional id needs WRITE to be used
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and DESCRIBE to be described or
// listed; the partitions added need WRITE on their topics, the offsets
// committed READ on the group and the topics; WriteTxnMarkers is
// inter-broker (CLUSTER_ACTION), as Kafka's KafkaApis.
func authzTxnCheck(key int16) authzFunc {
	switch kmsg.Key(key) {
	case kmsg.InitProducerID:
		return authzInitProducerID
	case kmsg.AddPartitionsToTxn:
		return authzAddPartitionsToTxn
	case kmsg.AddOffsetsToTxn:
		return authzAddOffsetsToTxn
	case kmsg.EndTxn:
		return authzEndTxn
	case kmsg.TxnOffsetCommit:
		return authzTxnOffsetCommit
	case kmsg.WriteTxnMarkers:
		return authzWriteTxnMarkers
	case kmsg.DescribeProducers:
		return authzDescribeProducers
	case kmsg.DescribeTransactions:
		return authzDescribeTransactions
	case kmsg.ListTransactions:
		return authzListTransactions
	}
	return nil
}

func (d *Deps) authorizedTxn(r *Request, op kmsg.ACLOperation, id string) bool {
	return d.authorized(r, op, acl.TransactionalID(id))
}

// authzInitProducerID: a transactional producer needs WRITE on its id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent one
// IDEMPOTENT_WRITE on the cluster or WRITE on some topic
// (CLUSTER_AUTHORIZATION_FAILED), as Kafka since KIP-679.
func authzInitProducerID(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	code := int16(0)
	if req.TransactionalID != nil {
		if !d.authorizedTxn(r, kmsg.ACLOperationWrite, *req.TransactionalID) {
			code = kerr.TransactionalIDAuthorizationFailed.Code
		}
	} else if !d.authorizedCluster(r, kmsg.ACLOperationIdempotentWrite) && !d.authorizedAny(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
		code = kerr.ClusterAuthorizationFailed.Code
	}
	if code == 0 {
		return next(d, r)
	}
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
	return resp, nil
}

// authzAddPartitionsToTxn: v0-3 (clients) need WRITE on the transactional
// id (every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each
// topic (TOPIC_AUTHORIZATION_FAILED, the other partitions then
// OPERATION_NOT_ATTEMPTED); v4+ (brokers verifying) CLUSTER_ACTION
// (top-level CLUSTER_AUTHORIZATION_FAILED).
func authzAddPartitionsToTxn(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if r.Header.APIVersion >= 4 {
		if !d.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp, nil
		}
		return next(d, r)
	}
	txnDenied := !d.authorizedTxn(r, kmsg.ACLOperationWrite, req.TransactionalID)
	topicDenied := map[string]bool{}
	if !txnDenied {
		for _, t := range req.Topics {
			if !d.authorized(r, kmsg.ACLOperationWrite, acl.Topic(t.Topic)) {
				topicDenied[t.Topic] = true
			}
		}
	}
	if !txnDenied && len(topicDenied) == 0 {
		return next(d, r)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		code := kerr.OperationNotAttempted.Code
		switch {
		case txnDenied:
			code = kerr.TransactionalIDAuthorizationFailed.Code
		case topicDenied[t.Topic]:
			code = kerr.TopicAuthorizationFailed.Code
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// authzAddOffsetsToTxn: WRITE on the transactional id, READ on the group.
func authzAddOffsetsToTxn(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !d.authorizedTxn(r, kmsg.ACLOperationWrite, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case !d.authorizedGroup(r, kmsg.ACLOperationRead, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	default:
		return next(d, r)
	}
	return resp, nil
}

// authzEndTxn: WRITE on the transactional id.
func authzEndTxn(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.EndTxnRequest)
	if !d.authorizedTxn(r, kmsg.ACLOperationWrite, req.TransactionalID) {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		return resp, nil
	}
	return next(d, r)
}

// authzTxnOffsetCommit: WRITE on the transactional id and READ on the
// group (every partition gets the failure), READ on each topic
// (TOPIC_AUTHORIZATION_FAILED).
func authzTxnOffsetCommit(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.TxnOffsetCommitRequest)
	code := kerr.TopicAuthorizationFailed.Code
	var denied []kmsg.TxnOffsetCommitRequestTopic
	switch {
	case !d.authorizedTxn(r, kmsg.ACLOperationWrite, req.TransactionalID):
		denied, req.Topics, code = req.Topics, nil, kerr.TransactionalIDAuthorizationFailed.Code
	case !d.authorizedGroup(r, kmsg.ACLOperationRead, req.Group):
		denied, req.Topics, code = req.Topics, nil, kerr.GroupAuthorizationFailed.Code
	default:
		denied = splitTopics(d, r, kmsg.ACLOperationRead, &req.Topics, func(t *kmsg.TxnOffsetCommitRequestTopic) (string, [16]byte) { return t.Topic, t.TopicID })
	}
	if len(denied) == 0 {
		return next(d, r)
	}
	var tr *kmsg.TxnOffsetCommitResponse
	if len(req.Topics) > 0 {
		resp, err := next(d, r)
		if err != nil {
			return resp, err
		}
		tr = resp.(*kmsg.TxnOffsetCommitResponse)
	} else {
		tr = req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	}
	for _, t := range denied {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		tr.Topics = append(tr.Topics, rt)
	}
	return tr, nil
}

// authzWriteTxnMarkers: CLUSTER_ACTION, else every partition of every
// marker is CLUSTER_AUTHORIZATION_FAILED.
func authzWriteTxnMarkers(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	if d.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
		return next(d, r)
	}
	req := r.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

// authzDescribeProducers: READ on each topic (its partitions
// TOPIC_AUTHORIZATION_FAILED).
func authzDescribeProducers(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeProducersRequest)
	denied := splitTopics(d, r, kmsg.ACLOperationRead, &req.Topics, func(t *kmsg.DescribeProducersRequestTopic) (string, [16]byte) { return t.Topic, [16]byte{} })
	if len(denied) == 0 {
		return next(d, r)
	}
	var dr *kmsg.DescribeProducersResponse
	if len(req.Topics) > 0 {
		resp, err := next(d, r)
		if err != nil {
			return resp, err
		}
		dr = resp.(*kmsg.DescribeProducersResponse)
	} else {
		dr = req.ResponseKind().(*kmsg.DescribeProducersResponse)
	}
	for _, t := range denied {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, kerr.TopicAuthorizationFailed.Code
			rp.ErrorMessage = ptrTo(kerr.TopicAuthorizationFailed.Message)
			rt.Partitions = append(rt.Partitions, rp)
		}
		dr.Topics = append(dr.Topics, rt)
	}
	return dr, nil
}

// authzDescribeTransactions: DESCRIBE on each transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); the topics of a described
// transaction the principal may not DESCRIBE are left out.
func authzDescribeTransactions(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeTransactionsRequest)
	var keep, denied []string
	for _, id := range req.TransactionalIDs {
		if d.authorizedTxn(r, kmsg.ACLOperationDescribe, id) {
			keep = append(keep, id)
		} else {
			denied = append(denied, id)
		}
	}
	req.TransactionalIDs = keep
	var dr *kmsg.DescribeTransactionsResponse
	if len(keep) > 0 {
		resp, err := next(d, r)
		if err != nil {
			return resp, err
		}
		dr = resp.(*kmsg.DescribeTransactionsResponse)
	} else {
		dr = req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	}
	for i := range dr.TransactionStates {
		s := &dr.TransactionStates[i]
		kept := s.Topics[:0]
		for _, t := range s.Topics {
			if d.authorized(r, kmsg.ACLOperationDescribe, acl.Topic(t.Topic)) {
				kept = append(kept, t)
			}
		}
		s.Topics = kept
	}
	for _, id := range denied {
		s := kmsg.NewDescribeTransactionsResponseTransactionState()
		s.TransactionalID, s.ErrorCode = id, kerr.TransactionalIDAuthorizationFailed.Code
		s.ProducerID, s.ProducerEpoch, s.StartTimestamp, s.TimeoutMillis = -1, -1, -1, -1
		dr.TransactionStates = append(dr.TransactionStates, s)
	}
	return dr, nil
}

// authzListTransactions: only the transactional ids the principal may
// DESCRIBE.
func authzListTransactions(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	resp, err := next(d, r)
	if err != nil {
		return resp, err
	}
	lr := resp.(*kmsg.ListTransactionsResponse)
	kept := lr.TransactionStates[:0]
	for _, s := range lr.TransactionStates {
		if d.authorizedTxn(r, kmsg.ACLOperationDescribe, s.TransactionalID) {
			kept = append(kept, s)
		}
	}
	lr.TransactionStates = kept
	return lr, nil
}
