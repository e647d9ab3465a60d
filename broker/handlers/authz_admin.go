package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller/acl"
)

// Admin APIs: topics need CREATE (or CREATE on the cluster), DELETE,
// ALTER, DESCRIBE_CONFIGS and ALTER_CONFIGS; the cluster ALTER
// (elections, reassignments, SCRAM credentials), DESCRIBE (log dirs,
// reassignments, SCRAM credentials, the quorum) and the config operations
// of broker resources, as Kafka's KafkaApis and ControllerApis.
func authzAdminCheck(key int16) authzFunc {
	switch kmsg.Key(key) {
	case kmsg.CreateTopics:
		return authzCreateTopics
	case kmsg.DeleteTopics:
		return authzDeleteTopics
	case kmsg.CreatePartitions:
		return authzCreatePartitions
	case kmsg.DescribeConfigs:
		return authzDescribeConfigs
	case kmsg.AlterConfigs, kmsg.IncrementalAlterConfigs:
		return authzAlterConfigs
	case kmsg.DescribeCluster:
		return authzDescribeCluster
	case kmsg.DescribeLogDirs:
		return authzDescribeLogDirs
	case kmsg.AlterReplicaLogDirs:
		return authzAlterReplicaLogDirs
	case kmsg.ListConfigResources:
		return authzListConfigResources
	case kmsg.ElectLeaders:
		return authzElectLeaders
	case kmsg.AlterPartitionAssignments:
		return authzAlterPartitionAssignments
	case kmsg.AddRaftVoter, kmsg.RemoveRaftVoter, kmsg.UnregisterBroker, kmsg.UnregisterController:
		return authzClusterAlter
	case kmsg.ListPartitionReassignments, kmsg.DescribeUserSCRAMCredentials, kmsg.DescribeQuorum:
		return authzClusterDescribe
	case kmsg.AlterUserSCRAMCredentials:
		return authzAlterUserScram
	case kmsg.DescribeClientQuotas, kmsg.AlterClientQuotas:
		return authzClientQuotas
	case kmsg.UpdateFeatures:
		return authzUpdateFeatures
	}
	return nil
}

// authzClientQuotas: DescribeClientQuotas needs DESCRIBE_CONFIGS on the
// cluster (top-level CLUSTER_AUTHORIZATION_FAILED), AlterClientQuotas
// ALTER_CONFIGS (every entry CLUSTER_AUTHORIZATION_FAILED), as Kafka.
func authzClientQuotas(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	code, msg := kerr.ClusterAuthorizationFailed.Code, ptrTo(kerr.ClusterAuthorizationFailed.Message)
	switch req := r.Body.(type) {
	case *kmsg.DescribeClientQuotasRequest:
		if !d.authorizedCluster(r, kmsg.ACLOperationDescribeConfigs) {
			resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
			resp.ErrorCode, resp.ErrorMessage = code, msg
			return resp, nil
		}
	case *kmsg.AlterClientQuotasRequest:
		if !d.authorizedCluster(r, kmsg.ACLOperationAlterConfigs) {
			resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
			for _, e := range req.Entries {
				re := kmsg.NewAlterClientQuotasResponseEntry()
				re.ErrorCode, re.ErrorMessage = code, msg
				for _, ent := range e.Entity {
					re.Entity = append(re.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: ent.Type, Name: ent.Name})
				}
				resp.Entries = append(resp.Entries, re)
			}
			return resp, nil
		}
	}
	return next(d, r)
}

// authorizationFailed is Kafka's message of authorization failures of
// topic creations and deletions.
const authorizationFailed = "Authorization failed."

// authzCreateTopics: CREATE on the cluster or on each topic
// (TOPIC_AUTHORIZATION_FAILED); the configs of a created topic are
// returned only with DESCRIBE_CONFIGS on it (else the topic config error
// is TOPIC_AUTHORIZATION_FAILED).
func authzCreateTopics(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	var denied []string
	if !d.authorizedCluster(r, kmsg.ACLOperationCreate) {
		keep := req.Topics[:0:0]
		for _, t := range req.Topics {
			if d.authorized(r, kmsg.ACLOperationCreate, acl.Topic(t.Topic)) {
				keep = append(keep, t)
			} else {
				denied = append(denied, t.Topic)
			}
		}
		req.Topics = keep
	}
	var cr *kmsg.CreateTopicsResponse
	if len(req.Topics) > 0 || len(denied) == 0 {
		resp, err := next(d, r)
		if err != nil {
			return resp, err
		}
		cr = resp.(*kmsg.CreateTopicsResponse)
	} else {
		cr = req.ResponseKind().(*kmsg.CreateTopicsResponse)
	}
	for i := range cr.Topics {
		t := &cr.Topics[i]
		if t.ErrorCode == 0 && !d.authorized(r, kmsg.ACLOperationDescribeConfigs, acl.Topic(t.Topic)) {
			t.ConfigErrorCode, t.Configs = kerr.TopicAuthorizationFailed.Code, nil
			t.NumPartitions, t.ReplicationFactor = -1, -1
		}
	}
	for _, name := range denied {
		t := kmsg.NewCreateTopicsResponseTopic()
		t.Topic, t.ErrorCode, t.ErrorMessage = name, kerr.TopicAuthorizationFailed.Code, ptrTo(authorizationFailed)
		t.NumPartitions, t.ReplicationFactor = -1, -1
		cr.Topics = append(cr.Topics, t)
	}
	return cr, nil
}

// authzDeleteTopics: a topic the principal may not DESCRIBE, or that
// exists and it may not DELETE, is TOPIC_AUTHORIZATION_FAILED; one it may
// describe that does not exist is left to the handler (unknown).
func authzDeleteTopics(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteTopicsRequest)
	img := d.Controller.Image()
	deniedName := func(name string) bool {
		if !d.authorized(r, kmsg.ACLOperationDescribe, acl.Topic(name)) {
			return true
		}
		return img.Topics[name] != nil && !d.authorized(r, kmsg.ACLOperationDelete, acl.Topic(name))
	}
	var denied []kmsg.DeleteTopicsResponseTopic
	deny := func(name *string, id [16]byte) {
		t := kmsg.NewDeleteTopicsResponseTopic()
		t.Topic, t.TopicID, t.ErrorCode, t.ErrorMessage = name, id, kerr.TopicAuthorizationFailed.Code, ptrTo(authorizationFailed)
		denied = append(denied, t)
	}
	var keepNames []string
	for _, n := range req.TopicNames {
		if deniedName(n) {
			deny(ptrTo(n), [16]byte{})
		} else {
			keepNames = append(keepNames, n)
		}
	}
	var keepTopics []kmsg.DeleteTopicsRequestTopic
	for _, t := range req.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		if n, ok := topicName(img, name, t.TopicID); ok && n != "" && deniedName(n) {
			deny(t.Topic, t.TopicID)
			continue
		}
		keepTopics = append(keepTopics, t)
	}
	if len(denied) == 0 {
		return next(d, r)
	}
	req.TopicNames, req.Topics = keepNames, keepTopics
	var dr *kmsg.DeleteTopicsResponse
	if len(keepNames)+len(keepTopics) > 0 {
		resp, err := next(d, r)
		if err != nil {
			return resp, err
		}
		dr = resp.(*kmsg.DeleteTopicsResponse)
	} else {
		dr = req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	}
	dr.Topics = append(dr.Topics, denied...)
	return dr, nil
}

// authzCreatePartitions: ALTER on each topic (TOPIC_AUTHORIZATION_FAILED).
func authzCreatePartitions(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	var keep []kmsg.CreatePartitionsRequestTopic
	var denied []string
	for _, t := range req.Topics {
		if d.authorized(r, kmsg.ACLOperationAlter, acl.Topic(t.Topic)) {
			keep = append(keep, t)
		} else {
			denied = append(denied, t.Topic)
		}
	}
	if len(denied) == 0 {
		return next(d, r)
	}
	req.Topics = keep
	var cr *kmsg.CreatePartitionsResponse
	if len(keep) > 0 {
		resp, err := next(d, r)
		if err != nil {
			return resp, err
		}
		cr = resp.(*kmsg.CreatePartitionsResponse)
	} else {
		cr = req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	}
	for _, name := range denied {
		t := kmsg.NewCreatePartitionsResponseTopic()
		t.Topic, t.ErrorCode, t.ErrorMessage = name, kerr.TopicAuthorizationFailed.Code, ptrTo(authorizationFailed)
		cr.Topics = append(cr.Topics, t)
	}
	return cr, nil
}

// configAuthz returns the error code of a config operation op on a
// config resource the principal may not perform it on, or 0: topics are
// authorized on the topic, groups on the group, brokers, broker loggers
// and client metrics on the cluster.
func (d *Deps) configAuthz(r *Request, op kmsg.ACLOperation, typ kmsg.ConfigResourceType, name string) int16 {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !d.authorized(r, op, acl.Topic(name)) {
			return kerr.TopicAuthorizationFailed.Code
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !d.authorized(r, op, acl.Group(name)) {
			return kerr.GroupAuthorizationFailed.Code
		}
	default:
		if !d.authorizedCluster(r, op) {
			return kerr.ClusterAuthorizationFailed.Code
		}
	}
	return 0
}

// authzDescribeConfigs: DESCRIBE_CONFIGS on each resource.
func authzDescribeConfigs(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	if _, bad := describeConfigsUnknownType(req); bad {
		return next(d, r) // the whole request is INVALID_REQUEST, as in Kafka
	}
	var keep []kmsg.DescribeConfigsRequestResource
	var denied []kmsg.DescribeConfigsResponseResource
	for _, res := range req.Resources {
		code := d.configAuthz(r, kmsg.ACLOperationDescribeConfigs, res.ResourceType, res.ResourceName)
		if code == 0 {
			keep = append(keep, res)
			continue
		}
		out := kmsg.NewDescribeConfigsResponseResource()
		out.ResourceType, out.ResourceName, out.ErrorCode = res.ResourceType, res.ResourceName, code
		out.ErrorMessage = ptrTo(kerr.ErrorForCode(code).(*kerr.Error).Message)
		denied = append(denied, out)
	}
	if len(denied) == 0 {
		return next(d, r)
	}
	req.Resources = keep
	var dr *kmsg.DescribeConfigsResponse
	if len(keep) > 0 {
		resp, err := next(d, r)
		if err != nil {
			return resp, err
		}
		dr = resp.(*kmsg.DescribeConfigsResponse)
	} else {
		dr = req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	}
	dr.Resources = append(dr.Resources, denied...)
	return dr, nil
}

// authzAlterConfigs: ALTER_CONFIGS on each resource (AlterConfigs and
// IncrementalAlterConfigs).
func authzAlterConfigs(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	type denial struct {
		typ  kmsg.ConfigResourceType
		name string
		code int16
	}
	var denied []denial
	check := func(typ kmsg.ConfigResourceType, name string) bool {
		if code := d.configAuthz(r, kmsg.ACLOperationAlterConfigs, typ, name); code != 0 {
			denied = append(denied, denial{typ, name, code})
			return false
		}
		return true
	}
	var remaining int
	switch req := r.Body.(type) {
	case *kmsg.AlterConfigsRequest:
		var keep []kmsg.AlterConfigsRequestResource
		for _, res := range req.Resources {
			if check(res.ResourceType, res.ResourceName) {
				keep = append(keep, res)
			}
		}
		req.Resources, remaining = keep, len(keep)
	case *kmsg.IncrementalAlterConfigsRequest:
		var keep []kmsg.IncrementalAlterConfigsRequestResource
		for _, res := range req.Resources {
			if check(res.ResourceType, res.ResourceName) {
				keep = append(keep, res)
			}
		}
		req.Resources, remaining = keep, len(keep)
	}
	if len(denied) == 0 {
		return next(d, r)
	}
	var resp kmsg.Response = r.Body.ResponseKind()
	if remaining > 0 {
		var err error
		if resp, err = next(d, r); err != nil {
			return resp, err
		}
	}
	for _, dn := range denied {
		msg := ptrTo(kerr.ErrorForCode(dn.code).(*kerr.Error).Message)
		switch out := resp.(type) {
		case *kmsg.AlterConfigsResponse:
			res := kmsg.NewAlterConfigsResponseResource()
			res.ResourceType, res.ResourceName, res.ErrorCode, res.ErrorMessage = dn.typ, dn.name, dn.code, msg
			out.Resources = append(out.Resources, res)
		case *kmsg.IncrementalAlterConfigsResponse:
			res := kmsg.NewIncrementalAlterConfigsResponseResource()
			res.ResourceType, res.ResourceName, res.ErrorCode, res.ErrorMessage = dn.typ, dn.name, dn.code, msg
			out.Resources = append(out.Resources, res)
		}
	}
	return resp, nil
}

// authzDescribeCluster: the cluster's authorized operations are the
// principal's (Kafka checks nothing else).
func authzDescribeCluster(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	resp, err := next(d, r)
	if err != nil {
		return resp, err
	}
	if req := r.Body.(*kmsg.DescribeClusterRequest); req.IncludeClusterAuthorizedOperations {
		resp.(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations = d.authorizedOperations(r, acl.Cluster)
	}
	return resp, nil
}

// authzDescribeLogDirs: DESCRIBE on the cluster, else no log dirs and
// (v3+) CLUSTER_AUTHORIZATION_FAILED.
func authzDescribeLogDirs(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	if d.authorizedCluster(r, kmsg.ACLOperationDescribe) {
		return next(d, r)
	}
	resp := r.Body.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	return resp, nil
}

// authzAlterReplicaLogDirs: ALTER on the cluster, else every partition
// named is CLUSTER_AUTHORIZATION_FAILED, grouped per directory and topic
// as named (Kafka's AlterReplicaLogDirsRequest.getErrorResponse).
func authzAlterReplicaLogDirs(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	if d.authorizedCluster(r, kmsg.ACLOperationAlter) {
		return next(d, r)
	}
	req := r.Body.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	for _, dir := range req.Dirs {
		for _, t := range dir.Topics {
			rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	return resp, nil
}

// authzListConfigResources: DESCRIBE_CONFIGS on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED and no resources, as Kafka 4.4.
func authzListConfigResources(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	if d.authorizedCluster(r, kmsg.ACLOperationDescribeConfigs) {
		return next(d, r)
	}
	resp := r.Body.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	return resp, nil
}

// authzElectLeaders: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED
// at the top and for every partition named.
func authzElectLeaders(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	if d.authorizedCluster(r, kmsg.ACLOperationAlter) {
		return next(d, r)
	}
	req := r.Body.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
			rp.ErrorMessage = ptrTo(kerr.ClusterAuthorizationFailed.Message)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// authzAlterPartitionAssignments: ALTER on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED at the top.
func authzAlterPartitionAssignments(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	if d.authorizedCluster(r, kmsg.ACLOperationAlter) {
		return next(d, r)
	}
	resp := r.Body.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, ptrTo(kerr.ClusterAuthorizationFailed.Message)
	return resp, nil
}

// authzClusterDescribe: ListPartitionReassignments,
// DescribeUserScramCredentials and DescribeQuorum need DESCRIBE on the
// cluster, else a top-level CLUSTER_AUTHORIZATION_FAILED.
func authzClusterDescribe(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	if d.authorizedCluster(r, kmsg.ACLOperationDescribe) {
		return next(d, r)
	}
	code, msg := kerr.ClusterAuthorizationFailed.Code, ptrTo(kerr.ClusterAuthorizationFailed.Message)
	resp := r.Body.ResponseKind()
	switch out := resp.(type) {
	case *kmsg.ListPartitionReassignmentsResponse:
		out.ErrorCode, out.ErrorMessage = code, msg
	case *kmsg.DescribeUserSCRAMCredentialsResponse:
		out.ErrorCode, out.ErrorMessage = code, msg
	case *kmsg.DescribeQuorumResponse:
		out.ErrorCode, out.ErrorMessage = code, msg
	}
	return resp, nil
}

// authzAlterUserScram: ALTER on the cluster, else every user's result is
// CLUSTER_AUTHORIZATION_FAILED.
func authzAlterUserScram(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	if d.authorizedCluster(r, kmsg.ACLOperationAlter) {
		return next(d, r)
	}
	req := r.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	seen := map[string]bool{}
	add := func(user string) {
		if seen[user] {
			return
		}
		seen[user] = true
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode = user, kerr.ClusterAuthorizationFailed.Code
		res.ErrorMessage = ptrTo(kerr.ClusterAuthorizationFailed.Message)
		resp.Results = append(resp.Results, res)
	}
	for _, del := range req.Deletions {
		add(del.Name)
	}
	for _, up := range req.Upsertions {
		add(up.Name)
	}
	return resp, nil
}

// authzClusterAlter: AddRaftVoter, RemoveRaftVoter, UnregisterBroker and
// UnregisterController need ALTER on the cluster, else a top-level
// CLUSTER_AUTHORIZATION_FAILED (Kafka's authorizeClusterOperation).
func authzClusterAlter(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	if d.authorizedCluster(r, kmsg.ACLOperationAlter) {
		return next(d, r)
	}
	code, msg := kerr.ClusterAuthorizationFailed.Code, ptrTo(kerr.ClusterAuthorizationFailed.Message)
	resp := r.Body.ResponseKind()
	switch out := resp.(type) {
	case *kmsg.AddRaftVoterResponse:
		out.ErrorCode, out.ErrorMessage = code, msg
	case *kmsg.RemoveRaftVoterResponse:
		out.ErrorCode, out.ErrorMessage = code, msg
	case *kmsg.UnregisterBrokerResponse:
		out.ErrorCode, out.ErrorMessage = code, msg
	case *kmsg.UnregisterControllerResponse:
		out.ErrorCode, out.ErrorMessage = code, msg
	}
	return resp, nil
}
