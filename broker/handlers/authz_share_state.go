package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share coordinator APIs (83-87) are inter-broker: they need
// CLUSTER_ACTION on the cluster, else every partition gets
// CLUSTER_AUTHORIZATION_FAILED, as Kafka's KafkaApis answers them.
func authzShareStateCheck(key int16) authzFunc {
	switch kmsg.Key(key) {
	case kmsg.InitializeShareGroupState, kmsg.ReadShareGroupState, kmsg.WriteShareGroupState,
		kmsg.DeleteShareGroupState, kmsg.ReadShareGroupStateSummary:
		return authzShareState
	}
	return nil
}

func authzShareState(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	if d.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
		return next(d, r)
	}
	code := kerr.ClusterAuthorizationFailed.Code
	msg := kerr.ClusterAuthorizationFailed.Message
	switch req := r.Body.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewInitializeShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, &msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.ReadShareGroupStateRequest:
		resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewReadShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, &msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.WriteShareGroupStateRequest:
		resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewWriteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, &msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.DeleteShareGroupStateRequest:
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewDeleteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, &msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.ReadShareGroupStateSummaryRequest:
		resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, &msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	return next(d, r)
}
