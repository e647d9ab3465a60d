package acl

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Authorizer decides requests against a set of ACLs: super.users and
// allow.everyone.if.no.acl.found of the broker's configuration.
type Authorizer struct {
	SuperUsers                []string
	AllowEveryoneIfNoACLFound bool
}

// Request is who asks: the connection's principal ("User:alice") and
// the client's IP address.
type Request struct {
	Principal string
	Host      string
}

// Resource is what is asked about: a resource type and a name (a topic,
// a group id, a transactional id, ClusterName).
type Resource struct {
	Type kmsg.ACLResourceType
	Name string
}

// Cluster is the CLUSTER resource.
var Cluster = Resource{Type: kmsg.ACLResourceTypeCluster, Name: ClusterName}

// Topic returns the TOPIC resource of name.
func Topic(name string) Resource { return Resource{Type: kmsg.ACLResourceTypeTopic, Name: name} }

// Group returns the GROUP resource of a group id.
func Group(id string) Resource { return Resource{Type: kmsg.ACLResourceTypeGroup, Name: id} }

// TransactionalID returns the TRANSACTIONAL_ID resource of id.
func TransactionalID(id string) Resource {
	return Resource{Type: kmsg.ACLResourceTypeTransactionalId, Name: id}
}

// IsSuperUser reports whether principal is in super.users.
func (a Authorizer) IsSuperUser(principal string) bool {
	return slices.Contains(a.SuperUsers, principal)
}

// appliesTo reports whether b's resource pattern covers r.
func appliesTo(b Binding, r Resource) bool {
	if b.ResourceType != r.Type {
		return false
	}
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral:
		return b.ResourceName == r.Name || b.ResourceName == Wildcard
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(r.Name, b.ResourceName)
	}
	return false
}

// concerns reports whether b's entry is about the request's principal and
// host.
func concerns(b Binding, req Request) bool {
	if b.Principal != req.Principal && b.Principal != WildcardPrincipal {
		return false
	}
	return b.Host == Wildcard || b.Host == req.Host
}

// grants reports whether an ALLOW entry for acl lets op through, with
// Kafka's implied operations.
func grants(acl, op kmsg.ACLOperation) bool {
	if acl == kmsg.ACLOperationAll || acl == op {
		return true
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		switch acl {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return acl == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// Authorize reports whether req may perform op on r under acls.
func (a Authorizer) Authorize(acls []Binding, req Request, op kmsg.ACLOperation, r Resource) bool {
	if a.IsSuperUser(req.Principal) {
		return true
	}
	found, allowed := false, false
	for _, b := range acls {
		if !appliesTo(b, r) {
			continue
		}
		found = true
		if !concerns(b, req) {
			continue
		}
		switch b.Permission {
		case kmsg.ACLPermissionTypeDeny:
			// A DENY covers its own operation and ALL only: DENY READ
			// does not deny DESCRIBE.
			if b.Operation == kmsg.ACLOperationAll || b.Operation == op {
				return false
			}
		case kmsg.ACLPermissionTypeAllow:
			allowed = allowed || grants(b.Operation, op)
		}
	}
	if !found {
		return a.AllowEveryoneIfNoACLFound
	}
	return allowed
}

// AuthorizeAny reports whether req may perform op on at least one
// resource of type typ: Kafka's authorizeByResourceType, which
// InitProducerId uses to let an idempotent producer in when it may WRITE
// some topic. An ALLOW for op (or ALL; no implied operations) on the
// wildcard, on a literal name not denied literally or by a prefix, or on
// a prefix not denied by a shorter-or-equal prefix, is enough; a DENY
// on the wildcard forbids everything.
func (a Authorizer) AuthorizeAny(acls []Binding, req Request, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	// As Kafka, a resource of an arbitrary name first: it lets super users
	// through, and allow.everyone.if.no.acl.found where no ACL applies.
	if a.Authorize(acls, req, op, Resource{Type: typ, Name: "hardcode"}) {
		return true
	}
	denyLiteral, denyPrefix := map[string]bool{}, map[string]bool{}
	var allowLiteral, allowPrefix []string
	for _, b := range acls {
		if b.ResourceType != typ || !concerns(b, req) || (b.Operation != op && b.Operation != kmsg.ACLOperationAll) {
			continue
		}
		literal := b.PatternType == kmsg.ACLResourcePatternTypeLiteral
		switch b.Permission {
		case kmsg.ACLPermissionTypeDeny:
			switch {
			case literal && b.ResourceName == Wildcard:
				return false
			case literal:
				denyLiteral[b.ResourceName] = true
			default:
				denyPrefix[b.ResourceName] = true
			}
		case kmsg.ACLPermissionTypeAllow:
			switch {
			case literal && b.ResourceName == Wildcard:
				allowLiteral = append(allowLiteral, Wildcard)
			case literal:
				allowLiteral = append(allowLiteral, b.ResourceName)
			default:
				allowPrefix = append(allowPrefix, b.ResourceName)
			}
		}
	}
	if slices.Contains(allowLiteral, Wildcard) {
		return true
	}
	dominated := func(name string) bool {
		for i := 1; i <= len(name); i++ {
			if denyPrefix[name[:i]] {
				return true
			}
		}
		return false
	}
	for _, n := range allowLiteral {
		if !denyLiteral[n] && !dominated(n) {
			return true
		}
	}
	for _, n := range allowPrefix {
		if !dominated(n) {
			return true
		}
	}
	return false
}

// Operations of each resource type that authorized-operations fields
// report (Kafka's supported operations of the resource).
var (
	topicOperations = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
		kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs}
	groupOperations = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs}
	clusterOperations = []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe}
)

// SupportedOperations returns the operations Kafka reports in the
// authorized-operations bit fields for a resource type.
func SupportedOperations(typ kmsg.ACLResourceType) []kmsg.ACLOperation {
	switch typ {
	case kmsg.ACLResourceTypeTopic:
		return topicOperations
	case kmsg.ACLResourceTypeGroup:
		return groupOperations
	case kmsg.ACLResourceTypeCluster:
		return clusterOperations
	}
	return nil
}

// AuthorizedOperations returns the bit field (1<<operation) of the
// supported operations of r that req may perform.
func (a Authorizer) AuthorizedOperations(acls []Binding, req Request, r Resource) int32 {
	var bits int32
	for _, op := range SupportedOperations(r.Type) {
		if a.Authorize(acls, req, op, r) {
			bits |= 1 << uint(op)
		}
	}
	return bits
}
