package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller/acl"
)

// DeleteAcls, key 31, versions 1-3 (v2+ flexible; v0 was removed in
// Kafka 4.0). v1 added the resource pattern type of each filter.
//
// Without an authorizer every filter answers SECURITY_DISABLED. Otherwise
// the principal needs ALTER on the CLUSTER (CLUSTER_AUTHORIZATION_FAILED
// for every filter); the active controller (to which other nodes forward
// the request) removes every ACL any filter matches, atomically, and each
// filter's result lists the ACLs it matched. A filter with an UNKNOWN
// value closes the connection, as Kafka, which fails to parse it
// (ErrUnknownACLElements).
func handleDeleteAcls(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	filters := make([]acl.Filter, len(req.Filters))
	for i, f := range req.Filters {
		filters[i] = acl.Filter{
			ResourceType: f.ResourceType, ResourceName: f.ResourceName, PatternType: f.ResourcePatternType,
			Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType,
		}
		if filters[i].HasUnknown() {
			return nil, ErrUnknownACLElements
		}
	}
	fail := func(code int16, msg string) (kmsg.Response, error) {
		for range req.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, ptrTo(msg)
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}
	if !d.authorizedCluster(r, kmsg.ACLOperationAlter) {
		return fail(kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Message)
	}
	if d.Authz == nil {
		return fail(kerr.SecurityDisabled.Code, "No Authorizer is configured.")
	}
	for _, res := range d.Controller.DeleteACLs(filters) {
		out := kmsg.NewDeleteACLsResponseResult()
		out.ErrorCode = res.ErrorCode
		if res.ErrorCode != 0 {
			out.ErrorMessage = ptrTo(res.Message)
		}
		for _, b := range res.Deleted {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
			out.MatchingACLs = append(out.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, out)
	}
	return resp, nil
}
