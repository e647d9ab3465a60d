package acl

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's names for the special values of ACLs.
const (
	// Wildcard is the LITERAL resource name matching every resource of its
	// type, and the host matching every host.
	Wildcard = "*"
	// WildcardPrincipal matches every principal.
	WildcardPrincipal = "User:*"
	// ClusterName is the only name of the CLUSTER resource.
	ClusterName = "kafka-cluster"
)

// maxOperation is the highest operation code Kafka 4.4 knows,
// TWO_PHASE_COMMIT (KIP-939); higher codes are UNKNOWN to it.
const maxOperation kmsg.ACLOperation = 15

// Binding is one ACL: a resource pattern and an access control entry,
// as Kafka's AclBinding.
type Binding struct {
	ResourceType kmsg.ACLResourceType
	ResourceName string
	PatternType  kmsg.ACLResourcePatternType
	Principal    string
	Host         string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// String describes b as Kafka's AclBinding does, for messages.
func (b Binding) String() string {
	return fmt.Sprintf("(pattern=ResourcePattern(resourceType=%s, name=%s, patternType=%s), entry=(principal=%s, host=%s, operation=%s, permissionType=%s))",
		b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Host, b.Operation, b.Permission)
}

// Filter selects bindings (DescribeAcls, DeleteAcls). Nil strings match
// anything; ANY enums match anything; PatternType MATCH matches the
// bindings that would apply to the resource named ResourceName.
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Matches reports whether f selects b, as Kafka's AclBindingFilter.
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	switch f.PatternType {
	case kmsg.ACLResourcePatternTypeAny, kmsg.ACLResourcePatternTypeMatch:
	default:
		if f.PatternType != b.PatternType {
			return false
		}
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		switch {
		case f.PatternType != kmsg.ACLResourcePatternTypeMatch:
			if name != b.ResourceName {
				return false
			}
		case b.PatternType == kmsg.ACLResourcePatternTypeLiteral:
			if name != b.ResourceName && b.ResourceName != Wildcard {
				return false
			}
		case b.PatternType == kmsg.ACLResourcePatternTypePrefixed:
			if !strings.HasPrefix(name, b.ResourceName) {
				return false
			}
		default:
			return false
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission
}

// FilterError returns Kafka's message when f holds an UNKNOWN value (the
// INVALID_REQUEST of DeleteAcls), or "".
func (f Filter) FilterError() string {
	if f.ResourceType == kmsg.ACLResourceTypeUnknown || f.PatternType == kmsg.ACLResourcePatternTypeUnknown {
		return "Unknown patternFilter."
	}
	if f.Operation == kmsg.ACLOperationUnknown || f.Permission == kmsg.ACLPermissionTypeUnknown {
		return "Unknown entryFilter."
	}
	return ""
}

// ValidateNew returns Kafka's INVALID_REQUEST message for a binding that
// CreateAcls must refuse, or "" when it may be stored.
func ValidateNew(b Binding) string {
	// The broker's checks (Kafka's AclApis), then the controller's
	// (AclControlManager.validateNewAcl), in Kafka's order.
	if b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterName {
		return "The only valid name for the CLUSTER resource is " + ClusterName
	}
	if b.ResourceName == "" {
		return "Invalid empty resource name"
	}
	switch b.ResourceType {
	case kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster,
		kmsg.ACLResourceTypeTransactionalId, kmsg.ACLResourceTypeDelegationToken, kmsg.ACLResourceTypeUser:
	default:
		return "Invalid resourceType " + b.ResourceType.String()
	}
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed:
	default:
		return "Invalid patternType " + b.PatternType.String()
	}
	switch {
	case b.Operation == kmsg.ACLOperationUnknown || b.Operation == kmsg.ACLOperationAny:
		return "Invalid operation " + b.Operation.String()
	case b.Operation > maxOperation:
		return "Invalid operation UNKNOWN"
	}
	switch b.Permission {
	case kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny:
	default:
		return "Invalid permissionType " + b.Permission.String()
	}
	return ""
}

// ParsePrincipal checks a principal is "Type:name" and returns Kafka's
// message (SecurityUtils.parseKafkaPrincipal) when it is not, or "".
func ParsePrincipal(p string) string {
	if p == "" {
		return "expected a string in format principalType:principalName but got " + p
	}
	if !strings.Contains(p, ":") {
		return "Could not parse principal from `" + p + "` (no colon is present separating the principal type from the principal name)"
	}
	return ""
}

// Highest codes Kafka 4.4 knows of each enum; a higher code is UNKNOWN
// to it, like 0.
const (
	maxResourceType = kmsg.ACLResourceTypeUser
	maxPatternType  = kmsg.ACLResourcePatternTypePrefixed
	maxPermission   = kmsg.ACLPermissionTypeAllow
)

func unknownValues(typ kmsg.ACLResourceType, pat kmsg.ACLResourcePatternType, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) bool {
	return typ <= 0 || typ > maxResourceType || pat <= 0 || pat > maxPatternType ||
		op <= 0 || op > maxOperation || perm <= 0 || perm > maxPermission
}

// HasUnknown reports whether b holds an UNKNOWN (or unknown) enum value.
// Kafka refuses such a CreateAcls while parsing it, and closes the
// connection.
func (b Binding) HasUnknown() bool {
	return unknownValues(b.ResourceType, b.PatternType, b.Operation, b.Permission)
}

// HasUnknown reports whether f holds an UNKNOWN (or unknown) enum value;
// Kafka refuses such a DescribeAcls or DeleteAcls while parsing it, and
// closes the connection.
func (f Filter) HasUnknown() bool {
	return unknownValues(f.ResourceType, f.PatternType, f.Operation, f.Permission)
}
