package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/acl"
)

// DescribeAcls, key 29, versions 1-3 (v2+ flexible; v0 was removed in
// Kafka 4.0). v1 added the resource pattern type of the filter.
//
// A filter with an UNKNOWN value closes the connection, as Kafka, which
// fails to parse it (ErrUnknownACLElements).
//
// Without an authorizer: SECURITY_DISABLED "No Authorizer is configured
// on the broker", as Kafka. Otherwise the principal needs DESCRIBE on the
// CLUSTER (CLUSTER_AUTHORIZATION_FAILED), and the answer is the ACLs of
// this node's image matched by the filter (acl.Filter: ANY, MATCH,
// LITERAL, PREFIXED), grouped by resource pattern in the order the
// patterns were first created. Served locally: like Kafka's brokers, each
// node answers from the metadata it has applied.
func handleDescribeAcls(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	f := acl.Filter{
		ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType,
	}
	if f.HasUnknown() {
		return nil, ErrUnknownACLElements
	}
	if !d.authorizedCluster(r, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = ptrTo(kerr.ClusterAuthorizationFailed.Message)
		return resp, nil
	}
	if d.Authz == nil {
		resp.ErrorCode = kerr.SecurityDisabled.Code
		resp.ErrorMessage = ptrTo("No Authorizer is configured on the broker")
		return resp, nil
	}
	resp.ErrorMessage = ptrTo("") // Kafka 4.4's default on success
	type pattern struct {
		typ  kmsg.ACLResourceType
		name string
		pat  kmsg.ACLResourcePatternType
	}
	index := map[pattern]int{}
	for _, b := range controller.DescribeACLs(d.Controller.Image(), f) {
		p := pattern{b.ResourceType, b.ResourceName, b.PatternType}
		i, ok := index[p]
		if !ok {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = p.typ, p.name, p.pat
			resp.Resources = append(resp.Resources, res)
			i = len(resp.Resources) - 1
			index[p] = i
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
	}
	return resp, nil
}
