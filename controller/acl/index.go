package acl

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Index groups ACLs by resource type and name so that a decision looks at
// the ACLs that may apply to its resource only (Kafka's StandardAuthorizer
// keeps them sorted for the same reason), instead of at every ACL of the
// cluster. Build it once per set of ACLs; it is immutable.
type Index struct {
	byType map[kmsg.ACLResourceType]*typeIndex
}

type typeIndex struct {
	literal  map[string][]Binding
	prefixed []Binding
}

// NewIndex indexes acls.
func NewIndex(acls []Binding) *Index {
	ix := &Index{byType: map[kmsg.ACLResourceType]*typeIndex{}}
	for _, b := range acls {
		t := ix.byType[b.ResourceType]
		if t == nil {
			t = &typeIndex{literal: map[string][]Binding{}}
			ix.byType[b.ResourceType] = t
		}
		switch b.PatternType {
		case kmsg.ACLResourcePatternTypeLiteral:
			t.literal[b.ResourceName] = append(t.literal[b.ResourceName], b)
		case kmsg.ACLResourcePatternTypePrefixed:
			t.prefixed = append(t.prefixed, b)
		}
	}
	return ix
}

// Candidates returns the ACLs whose resource pattern covers r: its
// literal ACLs, the wildcard ones of its type and the prefixes of its
// name. Authorize over them decides as over all ACLs.
func (ix *Index) Candidates(r Resource) []Binding {
	t := ix.byType[r.Type]
	if t == nil {
		return nil
	}
	out := append([]Binding(nil), t.literal[r.Name]...)
	if r.Name != Wildcard {
		out = append(out, t.literal[Wildcard]...)
	}
	for _, b := range t.prefixed {
		if strings.HasPrefix(r.Name, b.ResourceName) {
			out = append(out, b)
		}
	}
	return out
}

// OfType returns the ACLs of resource type typ (AuthorizeAny).
func (ix *Index) OfType(typ kmsg.ACLResourceType) []Binding {
	t := ix.byType[typ]
	if t == nil {
		return nil
	}
	var out []Binding
	for _, bs := range t.literal {
		out = append(out, bs...)
	}
	return append(out, t.prefixed...)
}
