package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller/acl"
)

// CreateAcls, key 30, versions 1-3 (v2+ flexible; v0 was removed in
// Kafka 4.0). v1 added the resource pattern type.
//
// Without an authorizer every creation answers SECURITY_DISABLED "No
// Authorizer is configured.". Otherwise the principal needs ALTER on the
// CLUSTER, else every creation is CLUSTER_AUTHORIZATION_FAILED; each
// creation is then validated (acl.ValidateNew, INVALID_REQUEST with
// Kafka's messages; a principal without a type is INVALID_REQUEST too)
// and stored in the metadata log by the active controller
// (controller.CreateACLs), to which other nodes forward the request.
// Creating an ACL that exists succeeds and stores nothing. A creation with
// an UNKNOWN value closes the connection, as Kafka, which fails to parse
// it (ErrUnknownACLElements); one with ANY or MATCH values is
// INVALID_REQUEST, where Kafka fails the whole request with
// UNKNOWN_SERVER_ERROR (compat-tests/FINDINGS.md).
func handleCreateAcls(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for _, c := range req.Creations {
		b := acl.Binding{ResourceType: c.ResourceType, PatternType: c.ResourcePatternType, Operation: c.Operation, Permission: c.PermissionType}
		if b.HasUnknown() {
			return nil, ErrUnknownACLElements
		}
	}
	fail := func(code int16, msg string) (kmsg.Response, error) {
		for range req.Creations {
			res := kmsg.NewCreateACLsResponseResult()
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
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	var bindings []acl.Binding
	var at []int
	for i, c := range req.Creations {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
		resp.Results[i].ErrorMessage = ptrTo("") // Kafka 4.4's default on success
		b := acl.Binding{
			ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: c.ResourcePatternType,
			Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType,
		}
		if msg := acl.ParsePrincipal(b.Principal); msg != "" {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, ptrTo(msg)
			continue
		}
		bindings = append(bindings, b)
		at = append(at, i)
	}
	if len(bindings) == 0 {
		return resp, nil
	}
	for j, res := range d.Controller.CreateACLs(bindings) {
		if res.ErrorCode != 0 {
			resp.Results[at[j]].ErrorCode, resp.Results[at[j]].ErrorMessage = res.ErrorCode, ptrTo(res.Message)
		}
	}
	return resp, nil
}
