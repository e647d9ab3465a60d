package handlers

import (
	"errors"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/acl"
)

// Authorization: with authorizer.class.name set to Kafka's
// StandardAuthorizer, Deps.Authz is set and Serve runs each request past
// the check Kafka's KafkaApis makes for its API (authz_*.go) before, or
// around, its handler. With Authz nil nothing is checked and the ACL APIs
// answer SECURITY_DISABLED, as Kafka without an authorizer.
//
// The ACLs come from the published metadata image on every check, so a
// CreateAcls is in force on a node as soon as that node has applied it.

// Authz is the broker's authorizer: the decision rules of acl.Authorizer
// over the ACLs of the current image, indexed once per set of ACLs.
type Authz struct {
	acl.Authorizer
	index atomic.Pointer[aclIndex]
}

// aclIndex is the index of one image's ACLs. first (the address of the
// set's first id) and n identify the set: every change of the ACLs makes
// new slices (controller/acl.go), so a set with the same first element
// and length is the same set.
type aclIndex struct {
	first *controller.Uuid
	n     int
	ix    *acl.Index
}

// indexFor returns the index of set, building it on the first call for a
// new set. Concurrent callers may build it twice; either result is right.
func (a *Authz) indexFor(set controller.ACLSet) *acl.Index {
	var first *controller.Uuid
	if len(set.IDs) > 0 {
		first = &set.IDs[0]
	}
	if c := a.index.Load(); c != nil && c.first == first && c.n == len(set.IDs) {
		return c.ix
	}
	c := &aclIndex{first: first, n: len(set.IDs), ix: acl.NewIndex(set.Bindings)}
	a.index.Store(c)
	return c.ix
}

// NewAuthz returns the authorizer of the configuration, or nil when
// authorizer.class.name is unset.
func NewAuthz(c config.Authorizer) *Authz {
	if !c.Enabled {
		return nil
	}
	return &Authz{Authorizer: acl.Authorizer{SuperUsers: c.SuperUsers, AllowEveryoneIfNoACLFound: c.AllowEveryoneIfNoACLFound}}
}

// aclIndex returns the index of the current image's ACLs.
func (d *Deps) aclIndex() *acl.Index {
	return d.Authz.indexFor(d.Controller.Image().ACLs)
}

func aclRequest(r *Request) acl.Request {
	return acl.Request{Principal: r.Principal, Host: r.ClientHost}
}

// authorized reports whether r's principal may perform op on res; always
// true without an authorizer.
func (d *Deps) authorized(r *Request, op kmsg.ACLOperation, res acl.Resource) bool {
	if d.Authz == nil {
		return true
	}
	return d.Authz.Authorize(d.aclIndex().Candidates(res), aclRequest(r), op, res)
}

// authorizedCluster is authorized for the CLUSTER resource.
func (d *Deps) authorizedCluster(r *Request, op kmsg.ACLOperation) bool {
	return d.authorized(r, op, acl.Cluster)
}

// authorizedAny reports whether r may perform op on some resource of
// typ (Kafka's authorizeByResourceType).
func (d *Deps) authorizedAny(r *Request, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	if d.Authz == nil {
		return true
	}
	return d.Authz.AuthorizeAny(d.aclIndex().OfType(typ), aclRequest(r), op, typ)
}

// authorizedOperations is the authorized-operations bit field of res for
// r; without an authorizer every supported operation.
func (d *Deps) authorizedOperations(r *Request, res acl.Resource) int32 {
	if d.Authz == nil {
		var bits int32
		for _, op := range acl.SupportedOperations(res.Type) {
			bits |= 1 << uint(op)
		}
		return bits
	}
	return d.Authz.AuthorizedOperations(d.aclIndex().Candidates(res), aclRequest(r), res)
}

// Serve runs request r with the handler of entry e, after the
// authorization Kafka makes for the API when an authorizer is configured.
// The broker's connections call it for every request, and the Envelope
// handler for the requests other nodes forward.
func Serve(e Entry, d *Deps, r *Request) (kmsg.Response, error) {
	if d.Authz != nil {
		if check := authzCheck(e.Key); check != nil {
			return check(d, r, e.Handle)
		}
	}
	return e.Handle(d, r)
}

// ErrUnknownACLElements closes the connection of a CreateAcls, DescribeAcls
// or DeleteAcls holding an UNKNOWN resource type, pattern type, operation
// or permission: Kafka fails to parse such a request and closes the
// connection (checked against Kafka 4.4 by compat-tests/acl_tools_test.go).
var ErrUnknownACLElements = errors.New("handlers: ACL request with UNKNOWN elements")

// authzFunc authorizes r and answers it: with next (the API's handler)
// for what is allowed, and with Kafka's authorization errors for the rest.
type authzFunc func(d *Deps, r *Request, next Handler) (kmsg.Response, error)
