package diff

import "github.com/twmb/franz-go/pkg/kmsg"

// scriptACLs sends the ACL APIs, every version, to the two brokers of the
// suite, which run without an authorizer: Kafka then answers
// SECURITY_DISABLED for each describe, creation and deletion filter. The
// answers with an authorizer (validation, filters, matches) are compared
// with Kafka by compat-tests/acl_matrix_test.go, which configures one.
func scriptACLs(s *Session) error {
	each(kmsg.DescribeACLs, func(v int16) {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		s.Do("no-authorizer", v, req)
	})
	each(kmsg.CreateACLs, func(v int16) {
		req := kmsg.NewPtrCreateACLsRequest()
		for _, name := range []string{"diff-acl-a", "diff-acl-b"} {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, name, kmsg.ACLResourcePatternTypeLiteral
			c.Principal, c.Host, c.Operation, c.PermissionType = "User:diff", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, c)
		}
		s.Do("no-authorizer", v, req)
	})
	each(kmsg.DeleteACLs, func(v int16) {
		req := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
		f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		req.Filters = append(req.Filters, f)
		s.Do("no-authorizer", v, req)
	})
	return nil
}
