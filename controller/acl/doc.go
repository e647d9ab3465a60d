// Package acl is samsa's authorization model, Kafka's StandardAuthorizer:
// ACL bindings (a resource pattern and an access control entry), the
// filters of DescribeAcls and DeleteAcls, and the decision of whether a
// principal connected from a host may perform an operation on a resource.
//
// Everything here is pure: the ACLs come in as a slice (from the metadata
// image, controller/acl.go), the request's principal and client address
// as strings, and nothing is read from the network, the clock or files.
//
// The decision (Authorizer.Authorize) follows Kafka:
//
//   - a super user (super.users) may do everything;
//   - the ACLs that apply to a resource are its LITERAL ACLs, the LITERAL
//     "*" ACLs of its type and the PREFIXED ACLs whose name starts it;
//   - an entry applies to a request when its principal is the request's
//     or User:* and its host is the client's IP address or "*";
//   - a DENY entry for the operation or ALL wins over any ALLOW;
//   - an ALLOW entry for the operation or ALL allows it, and so do
//     READ, WRITE, DELETE and ALTER for DESCRIBE, and ALTER_CONFIGS for
//     DESCRIBE_CONFIGS (implied operations);
//   - a resource no ACL applies to at all (whatever its principal or host)
//     is allowed only with allow.everyone.if.no.acl.found=true.
//
// Usage:
//
//	a := acl.Authorizer{SuperUsers: []string{"User:admin"}}
//	ok := a.Authorize(bindings, acl.Request{Principal: "User:alice", Host: "10.0.0.7"},
//		kmsg.ACLOperationRead, acl.Resource{Type: kmsg.ACLResourceTypeTopic, Name: "orders"})
package acl
