package acl

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func allow(typ kmsg.ACLResourceType, name string, pat kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation) Binding {
	return Binding{ResourceType: typ, ResourceName: name, PatternType: pat, Principal: principal, Host: host, Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

func deny(typ kmsg.ACLResourceType, name string, pat kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation) Binding {
	b := allow(typ, name, pat, principal, host, op)
	b.Permission = kmsg.ACLPermissionTypeDeny
	return b
}

const (
	topicT   = kmsg.ACLResourceTypeTopic
	groupT   = kmsg.ACLResourceTypeGroup
	clusterT = kmsg.ACLResourceTypeCluster
	txnT     = kmsg.ACLResourceTypeTransactionalId
	literal  = kmsg.ACLResourcePatternTypeLiteral
	prefixed = kmsg.ACLResourcePatternTypePrefixed
	opAll    = kmsg.ACLOperationAll
	opRead   = kmsg.ACLOperationRead
	opWrite  = kmsg.ACLOperationWrite
	opDesc   = kmsg.ACLOperationDescribe
	opDel    = kmsg.ACLOperationDelete
	opAlter  = kmsg.ACLOperationAlter
	opCreate = kmsg.ACLOperationCreate
	opDC     = kmsg.ACLOperationDescribeConfigs
	opAC     = kmsg.ACLOperationAlterConfigs
	opCA     = kmsg.ACLOperationClusterAction
	opIW     = kmsg.ACLOperationIdempotentWrite
)

// TestAuthorize is the decision table: each row one request against one
// set of ACLs, with the answer Kafka's StandardAuthorizer gives.
func TestAuthorize(t *testing.T) {
	alice := Request{Principal: "User:alice", Host: "10.0.0.1"}
	bob := Request{Principal: "User:bob", Host: "10.0.0.2"}
	admin := Request{Principal: "User:admin", Host: "10.0.0.3"}
	tests := []struct {
		name  string
		auth  Authorizer
		acls  []Binding
		req   Request
		op    kmsg.ACLOperation
		res   Resource
		allow bool
	}{
		{name: "no acls, default denies", req: alice, op: opRead, res: Topic("t")},
		{name: "no acls, allow everyone", auth: Authorizer{AllowEveryoneIfNoACLFound: true}, req: alice, op: opRead, res: Topic("t"), allow: true},
		{name: "super user", auth: Authorizer{SuperUsers: []string{"User:admin"}}, acls: []Binding{deny(topicT, "t", literal, "User:admin", "*", opAll)}, req: admin, op: opRead, res: Topic("t"), allow: true},
		{name: "literal allow", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opRead)}, req: alice, op: opRead, res: Topic("t"), allow: true},
		{name: "literal allow other topic", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opRead)}, req: alice, op: opRead, res: Topic("u")},
		{name: "literal allow other principal", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opRead)}, req: bob, op: opRead, res: Topic("t")},
		{name: "acls exist for resource, allow everyone does not apply", auth: Authorizer{AllowEveryoneIfNoACLFound: true},
			acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opRead)}, req: bob, op: opRead, res: Topic("t")},
		{name: "acls of other resource, allow everyone applies", auth: Authorizer{AllowEveryoneIfNoACLFound: true},
			acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opRead)}, req: bob, op: opRead, res: Topic("u"), allow: true},
		{name: "wildcard resource", acls: []Binding{allow(topicT, "*", literal, "User:alice", "*", opWrite)}, req: alice, op: opWrite, res: Topic("any"), allow: true},
		{name: "wildcard principal", acls: []Binding{allow(topicT, "t", literal, "User:*", "*", opRead)}, req: bob, op: opRead, res: Topic("t"), allow: true},
		{name: "prefixed", acls: []Binding{allow(topicT, "orders-", prefixed, "User:alice", "*", opRead)}, req: alice, op: opRead, res: Topic("orders-eu"), allow: true},
		{name: "prefixed does not match shorter", acls: []Binding{allow(topicT, "orders-", prefixed, "User:alice", "*", opRead)}, req: alice, op: opRead, res: Topic("orders")},
		{name: "prefixed star is literal text", acls: []Binding{allow(topicT, "*", prefixed, "User:alice", "*", opRead)}, req: alice, op: opRead, res: Topic("t")},
		{name: "host matches", acls: []Binding{allow(topicT, "t", literal, "User:alice", "10.0.0.1", opRead)}, req: alice, op: opRead, res: Topic("t"), allow: true},
		{name: "host differs", acls: []Binding{allow(topicT, "t", literal, "User:alice", "10.0.0.9", opRead)}, req: alice, op: opRead, res: Topic("t")},
		{name: "deny wins", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opRead), deny(topicT, "t", prefixed, "User:alice", "*", opRead)}, req: alice, op: opRead, res: Topic("t")},
		{name: "deny all wins", acls: []Binding{allow(topicT, "*", literal, "User:*", "*", opAll), deny(topicT, "t", literal, "User:alice", "10.0.0.1", opAll)}, req: alice, op: opWrite, res: Topic("t")},
		{name: "deny other host does not apply", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opRead), deny(topicT, "t", literal, "User:alice", "10.9.9.9", opRead)}, req: alice, op: opRead, res: Topic("t"), allow: true},
		{name: "deny read does not deny describe", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opWrite), deny(topicT, "t", literal, "User:alice", "*", opRead)}, req: alice, op: opDesc, res: Topic("t"), allow: true},
		{name: "read implies describe", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opRead)}, req: alice, op: opDesc, res: Topic("t"), allow: true},
		{name: "write implies describe", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opWrite)}, req: alice, op: opDesc, res: Topic("t"), allow: true},
		{name: "delete implies describe", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opDel)}, req: alice, op: opDesc, res: Topic("t"), allow: true},
		{name: "alter implies describe", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opAlter)}, req: alice, op: opDesc, res: Topic("t"), allow: true},
		{name: "create does not imply describe", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opCreate)}, req: alice, op: opDesc, res: Topic("t")},
		{name: "describe does not imply read", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opDesc)}, req: alice, op: opRead, res: Topic("t")},
		{name: "alter configs implies describe configs", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opAC)}, req: alice, op: opDC, res: Topic("t"), allow: true},
		{name: "alter does not imply alter configs", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opAlter)}, req: alice, op: opAC, res: Topic("t")},
		{name: "all", acls: []Binding{allow(groupT, "g", literal, "User:alice", "*", opAll)}, req: alice, op: opDel, res: Group("g"), allow: true},
		{name: "group acl is not a topic acl", acls: []Binding{allow(groupT, "t", literal, "User:alice", "*", opRead)}, req: alice, op: opRead, res: Topic("t")},
		{name: "cluster action", acls: []Binding{allow(clusterT, ClusterName, literal, "User:broker", "*", opCA)}, req: Request{Principal: "User:broker", Host: "h"}, op: opCA, res: Cluster, allow: true},
		{name: "transactional id", acls: []Binding{allow(txnT, "tx-", prefixed, "User:alice", "*", opWrite)}, req: alice, op: opWrite, res: TransactionalID("tx-1"), allow: true},
		{name: "transactional write implies describe", acls: []Binding{allow(txnT, "tx", literal, "User:alice", "*", opWrite)}, req: alice, op: opDesc, res: TransactionalID("tx"), allow: true},
	}
	for _, tc := range tests {
		if got := tc.auth.Authorize(tc.acls, tc.req, tc.op, tc.res); got != tc.allow {
			t.Errorf("%s: Authorize = %v, want %v", tc.name, got, tc.allow)
		}
	}
}

// TestAuthorizeAny is Kafka's authorizeByResourceType (InitProducerId of
// an idempotent producer: WRITE on any topic).
func TestAuthorizeAny(t *testing.T) {
	alice := Request{Principal: "User:alice", Host: "h"}
	tests := []struct {
		name  string
		auth  Authorizer
		acls  []Binding
		allow bool
	}{
		{name: "nothing"},
		{name: "allow everyone, no acls", auth: Authorizer{AllowEveryoneIfNoACLFound: true}, allow: true},
		{name: "super user", auth: Authorizer{SuperUsers: []string{"User:alice"}}, allow: true},
		{name: "literal", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opWrite)}, allow: true},
		{name: "all", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opAll)}, allow: true},
		{name: "no implication", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opRead)}},
		{name: "other principal", acls: []Binding{allow(topicT, "t", literal, "User:bob", "*", opWrite)}},
		{name: "literal denied literally", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opWrite), deny(topicT, "t", literal, "User:alice", "*", opWrite)}},
		{name: "literal denied by prefix", acls: []Binding{allow(topicT, "top", literal, "User:alice", "*", opWrite), deny(topicT, "to", prefixed, "User:alice", "*", opWrite)}},
		{name: "prefix not dominated", acls: []Binding{allow(topicT, "to", prefixed, "User:alice", "*", opWrite), deny(topicT, "top", prefixed, "User:alice", "*", opWrite)}, allow: true},
		{name: "wildcard allow", acls: []Binding{allow(topicT, "*", literal, "User:*", "*", opWrite), deny(topicT, "t", literal, "User:alice", "*", opWrite)}, allow: true},
		{name: "wildcard deny", acls: []Binding{allow(topicT, "t", literal, "User:alice", "*", opWrite), deny(topicT, "*", literal, "User:alice", "*", opWrite)}},
	}
	for _, tc := range tests {
		if got := tc.auth.AuthorizeAny(tc.acls, alice, opWrite, topicT); got != tc.allow {
			t.Errorf("%s: AuthorizeAny = %v, want %v", tc.name, got, tc.allow)
		}
	}
}

func TestAuthorizedOperations(t *testing.T) {
	a := Authorizer{}
	acls := []Binding{allow(topicT, "t", literal, "User:alice", "*", opRead), allow(topicT, "t", literal, "User:alice", "*", opAC)}
	got := a.AuthorizedOperations(acls, Request{Principal: "User:alice", Host: "h"}, Topic("t"))
	want := int32(1<<opRead | 1<<opDesc | 1<<opDC | 1<<opAC)
	if got != want {
		t.Errorf("AuthorizedOperations = %b, want %b", got, want)
	}
}

// TestFilterMatches covers DescribeAcls / DeleteAcls filters: ANY,
// MATCH (what applies to a name: its literal, the wildcard and the
// prefixes), exact pattern types, and entry fields.
func TestFilterMatches(t *testing.T) {
	str := func(s string) *string { return &s }
	lit := allow(topicT, "orders", literal, "User:alice", "*", opRead)
	star := allow(topicT, "*", literal, "User:alice", "*", opRead)
	pre := allow(topicT, "ord", prefixed, "User:bob", "h1", opWrite)
	anyF := Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	tests := []struct {
		name string
		f    func(Filter) Filter
		want [3]bool // lit, star, pre
	}{
		{"any", func(f Filter) Filter { return f }, [3]bool{true, true, true}},
		{"match orders", func(f Filter) Filter {
			f.PatternType = kmsg.ACLResourcePatternTypeMatch
			f.ResourceName = str("orders")
			return f
		}, [3]bool{true, true, true}},
		{"match other", func(f Filter) Filter {
			f.PatternType = kmsg.ACLResourcePatternTypeMatch
			f.ResourceName = str("x")
			return f
		}, [3]bool{false, true, false}},
		{"any name exact", func(f Filter) Filter { f.ResourceName = str("ord"); return f }, [3]bool{false, false, true}},
		{"literal", func(f Filter) Filter { f.PatternType = literal; return f }, [3]bool{true, true, false}},
		{"literal star is exact", func(f Filter) Filter { f.PatternType = literal; f.ResourceName = str("*"); return f }, [3]bool{false, true, false}},
		{"prefixed", func(f Filter) Filter { f.PatternType = prefixed; return f }, [3]bool{false, false, true}},
		{"group type", func(f Filter) Filter { f.ResourceType = groupT; return f }, [3]bool{false, false, false}},
		{"principal", func(f Filter) Filter { f.Principal = str("User:bob"); return f }, [3]bool{false, false, true}},
		{"host", func(f Filter) Filter { f.Host = str("*"); return f }, [3]bool{true, true, false}},
		{"operation", func(f Filter) Filter { f.Operation = opWrite; return f }, [3]bool{false, false, true}},
		{"permission", func(f Filter) Filter { f.Permission = kmsg.ACLPermissionTypeDeny; return f }, [3]bool{false, false, false}},
	}
	for _, tc := range tests {
		f := tc.f(anyF)
		got := [3]bool{f.Matches(lit), f.Matches(star), f.Matches(pre)}
		if got != tc.want {
			t.Errorf("%s: matches %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestValidateNew(t *testing.T) {
	ok := allow(topicT, "t", literal, "User:a", "*", opRead)
	tests := []struct {
		f    func(*Binding)
		want string
	}{
		{func(*Binding) {}, ""},
		{func(b *Binding) { b.ResourceType = clusterT }, "The only valid name for the CLUSTER resource is kafka-cluster"},
		{func(b *Binding) { b.ResourceName = "" }, "Invalid empty resource name"},
		{func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeAny }, "Invalid resourceType ANY"},
		{func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeMatch }, "Invalid patternType MATCH"},
		{func(b *Binding) { b.Operation = kmsg.ACLOperationAny }, "Invalid operation ANY"},
		{func(b *Binding) { b.Operation = 15 }, ""},
		{func(b *Binding) { b.Operation = 16 }, "Invalid operation UNKNOWN"},
		{func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeAny }, "Invalid permissionType ANY"},
	}
	for i, tc := range tests {
		b := ok
		tc.f(&b)
		if got := ValidateNew(b); got != tc.want {
			t.Errorf("%d: %q, want %q", i, got, tc.want)
		}
	}
}

// TestIndexDecidesAsAll: deciding over an index's candidates gives the
// same answers as over every ACL.
func TestIndexDecidesAsAll(t *testing.T) {
	acls := []Binding{
		allow(topicT, "orders", literal, "User:alice", "*", opRead),
		allow(topicT, "*", literal, "User:bob", "*", opWrite),
		deny(topicT, "ord", prefixed, "User:bob", "*", opWrite),
		allow(topicT, "o", prefixed, "User:carol", "*", opAll),
		allow(groupT, "orders", literal, "User:alice", "*", opRead),
		allow(clusterT, ClusterName, literal, "User:alice", "*", opDesc),
	}
	ix := NewIndex(acls)
	for _, a := range []Authorizer{{}, {AllowEveryoneIfNoACLFound: true}} {
		for _, p := range []string{"User:alice", "User:bob", "User:carol", "User:dave"} {
			req := Request{Principal: p, Host: "h"}
			for _, res := range []Resource{Topic("orders"), Topic("other"), Topic("o"), Topic("*"), Group("orders"), Group("x"), Cluster, TransactionalID("t")} {
				for _, op := range []kmsg.ACLOperation{opRead, opWrite, opDesc, opAlter} {
					if got, want := a.Authorize(ix.Candidates(res), req, op, res), a.Authorize(acls, req, op, res); got != want {
						t.Errorf("%+v %s %s %v: indexed %v, all %v", a, p, op, res, got, want)
					}
				}
			}
			if got, want := a.AuthorizeAny(ix.OfType(topicT), req, opWrite, topicT), a.AuthorizeAny(acls, req, opWrite, topicT); got != want {
				t.Errorf("AuthorizeAny %+v %s: indexed %v, all %v", a, p, got, want)
			}
		}
	}
}
