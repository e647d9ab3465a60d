package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller/acl"
)

// ACLs in the metadata log, as Kafka's AccessControlEntryRecord and
// RemoveAccessControlEntryRecord: each ACL has an id, given when it is
// created, and a removal names the id. The broker's authorizer reads them
// from the published image (Image.ACLs).

// Record types of ACLs.
const (
	RecordACL       RecordType = 10
	RecordRemoveACL RecordType = 11
)

// ACLRecord adds the ACL Binding under ID. Enums are Kafka's codes.
type ACLRecord struct {
	ID           Uuid   `json:"id"`
	ResourceType int8   `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  int8   `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    int8   `json:"operation"`
	Permission   int8   `json:"permission"`
}

// RemoveACLRecord removes the ACL of ID.
type RemoveACLRecord struct {
	ID Uuid `json:"id"`
}

func (ACLRecord) recordType() RecordType       { return RecordACL }
func (RemoveACLRecord) recordType() RecordType { return RecordRemoveACL }

func (r ACLRecord) binding() acl.Binding {
	return acl.Binding{
		ResourceType: kmsg.ACLResourceType(r.ResourceType), ResourceName: r.ResourceName,
		PatternType: kmsg.ACLResourcePatternType(r.PatternType), Principal: r.Principal, Host: r.Host,
		Operation: kmsg.ACLOperation(r.Operation), Permission: kmsg.ACLPermissionType(r.Permission),
	}
}

func aclRecord(id Uuid, b acl.Binding) ACLRecord {
	return ACLRecord{ID: id, ResourceType: int8(b.ResourceType), ResourceName: b.ResourceName, PatternType: int8(b.PatternType),
		Principal: b.Principal, Host: b.Host, Operation: int8(b.Operation), Permission: int8(b.Permission)}
}

// ACLSet is the ACLs of an image: Bindings[i] has id IDs[i], in creation
// order. It is immutable like the rest of the image.
type ACLSet struct {
	IDs      []Uuid
	Bindings []acl.Binding
}

// Len returns the number of ACLs.
func (s ACLSet) Len() int { return len(s.IDs) }

// applyACL adds or removes one ACL, copying the set.
func (b *builder) applyACL(rec Record) error {
	set := b.img.ACLs
	switch r := rec.(type) {
	case ACLRecord:
		if r.ID.IsZero() {
			return fmt.Errorf("%w: ACL without id", ErrApply)
		}
		if slices.Contains(set.IDs, r.ID) {
			return fmt.Errorf("%w: ACL id %s exists", ErrApply, r.ID)
		}
		b.img.ACLs = ACLSet{IDs: append(slices.Clip(set.IDs), r.ID), Bindings: append(slices.Clip(set.Bindings), r.binding())}
	case RemoveACLRecord:
		i := slices.Index(set.IDs, r.ID)
		if i < 0 {
			return fmt.Errorf("%w: removal of unknown ACL id %s", ErrApply, r.ID)
		}
		b.img.ACLs = ACLSet{IDs: slices.Delete(slices.Clone(set.IDs), i, i+1), Bindings: slices.Delete(slices.Clone(set.Bindings), i, i+1)}
	}
	return nil
}

// aclRecords returns the records that rebuild img's ACLs, for snapshots.
func aclRecords(recs []Record, img *Image) []Record {
	for i, id := range img.ACLs.IDs {
		recs = append(recs, aclRecord(id, img.ACLs.Bindings[i]))
	}
	return recs
}

// ACLResult is the outcome of one creation of CreateAcls.
type ACLResult struct {
	ErrorCode int16
	Message   string
}

// CreateACLs stores bindings, as Kafka's AclControlManager: each is
// validated alone (INVALID_REQUEST with Kafka's message), an ACL that
// exists already succeeds without a record, and results are in request
// order.
func (c *Controller) CreateACLs(bindings []acl.Binding) []ACLResult {
	results := make([]ACLResult, len(bindings))
	err := c.write(false, func(img *Image) []Record {
		var recs []Record
		have := slices.Clone(img.ACLs.Bindings)
		var ids []Uuid
		for i, b := range bindings {
			results[i] = ACLResult{}
			if msg := acl.ValidateNew(b); msg != "" {
				results[i] = ACLResult{ErrorCode: kerr.InvalidRequest.Code, Message: msg}
				continue
			}
			if slices.Contains(have, b) {
				continue
			}
			id := NewUuid(c.opts.Rand)
			for slices.Contains(img.ACLs.IDs, id) || slices.Contains(ids, id) {
				id = NewUuid(c.opts.Rand)
			}
			ids = append(ids, id)
			have = append(have, b)
			recs = append(recs, aclRecord(id, b))
		}
		return recs
	})
	failResults(results, err, func(r *ACLResult) (*int16, *string) { return &r.ErrorCode, &r.Message })
	return results
}

// ACLDeleteResult is the outcome of one filter of DeleteAcls: the ACLs it
// matched (and deleted), or an error.
type ACLDeleteResult struct {
	ErrorCode int16
	Message   string
	Deleted   []acl.Binding
}

// DeleteACLs removes every ACL matched by any of filters, atomically, as
// Kafka's AclControlManager: a filter with an UNKNOWN field is
// INVALID_REQUEST, an ACL matched by two filters is listed in both
// results and removed once.
func (c *Controller) DeleteACLs(filters []acl.Filter) []ACLDeleteResult {
	results := make([]ACLDeleteResult, len(filters))
	err := c.write(false, func(img *Image) []Record {
		var recs []Record
		removed := map[Uuid]bool{}
		for i, f := range filters {
			results[i] = ACLDeleteResult{}
			if msg := f.FilterError(); msg != "" {
				results[i] = ACLDeleteResult{ErrorCode: kerr.InvalidRequest.Code, Message: msg}
				continue
			}
			for j, b := range img.ACLs.Bindings {
				if !f.Matches(b) {
					continue
				}
				results[i].Deleted = append(results[i].Deleted, b)
				if id := img.ACLs.IDs[j]; !removed[id] {
					removed[id] = true
					recs = append(recs, RemoveACLRecord{ID: id})
				}
			}
		}
		return recs
	})
	if err != nil {
		code, msg := errorCode(err)
		for i := range results {
			if overrides(results[i].ErrorCode, err) {
				results[i] = ACLDeleteResult{ErrorCode: code, Message: msg}
			}
		}
	}
	return results
}

// DescribeACLs returns the ACLs of img matched by f.
func DescribeACLs(img *Image, f acl.Filter) []acl.Binding {
	var out []acl.Binding
	for _, b := range img.ACLs.Bindings {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}
